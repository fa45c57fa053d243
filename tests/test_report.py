"""`python -m mxboard report`: a logdir as one self-contained HTML file, opened from file:// in
headless Chromium: every chart, run and tag in its DOM, the values under the cursor equal to what
TensorBoard's loader reads, TensorBoard's smoothing, drawn pixels, no network request, hostile
names shown as text; bad logdirs said in a line; the 100 x 20 x 10,000 case's size and opening
time."""
import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from test_report_budget import scalars_by_tag

from conftest import accumulator, needs, run_python
from mxboard import ReportError, SummaryWriter

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # Chromium, the command

CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-default-apps", "--no-default-browser-check", "--hide-scrollbars",
            "--force-device-scale-factor=1"]
HOSTILE = ("<script>document.body.dataset.pwned=1</script> \"quoted\" 'ü∑' "
           "<img src=x onerror=\"document.body.dataset.pwned=2\">")


def _report(logdir, out, *extra, check=True):
    done = subprocess.run([sys.executable, "-m", "mxboard", "report", str(logdir), "-o", str(out), *extra],
                          capture_output=True, text=True, timeout=300)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def _open(page, tmp_path, *flags, budget=20000):
    """The page as headless Chromium has it after its scripts ran: (the DOM, what #selftest drew)."""
    dom = subprocess.run(CHROMIUM + ["--user-data-dir=" + str(tmp_path / "chrome-dom"), "--virtual-time-budget=%d"
                                     % budget, *flags, "--dump-dom", page.as_uri() + "#selftest"],
                         capture_output=True, text=True, timeout=180, check=True).stdout
    found = re.search(r'<pre id="selftest">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    import html

    return dom, json.loads(html.unescape(found.group(1)))


def _page_requests(net_log):
    """The URLs a page asked for, in a Chromium net log (not file: or data:, not the browser's own)."""
    log = json.loads(net_log.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"]["url"] for e in log["events"]
            if e["type"] == start and "url" in e.get("params", {}) and e["params"].get("initiator") != "not an origin"
            and not e["params"]["url"].startswith(("file:", "data:"))]


def _smoothed(values, weight):
    """TensorBoard's smoothing (its scalar card's debiased exponential moving average)."""
    last, count, out = 0.0, 0, []
    constant = all(v == values[0] for v in values)
    for v in values:
        if constant or not math.isfinite(v):
            out.append(v)
            continue
        last = last * weight + (1 - weight) * v
        count += 1
        out.append(last / (1 - weight ** count))
    return out


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("report") / "runs"
    rng = np.random.default_rng(3)
    for run, lr in (("lr0.1", 0.1), ("lr0.01", 0.01), (HOSTILE, 0.5)):
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(0, 300, 3):
                w.add_scalar("loss", float(np.exp(-lr * step) + rng.normal() * 0.01), step)
                w.add_scalar(HOSTILE, float(step), step)
            w.add_histogram("weights", rng.normal(size=1000) * lr, 0)
            w.add_histogram("weights", rng.normal(size=1000) * lr * 2, 10)
            for step in range(12):
                w.add_image("picture", rng.random((3, 8, 8)), step)
            w.add_text("notes", "**bold** and <script>document.body.dataset.pwned=3</script>", 5)
            w.add_hparams({"lr": lr, "optimizer": "adam"}, {"loss": None}, in_run=True, global_step=299)
    return logdir


@needs("chromium")
def test_the_report_opens_offline_with_every_chart_run_and_tag_and_the_loaders_values(logged, tmp_path):
    out = tmp_path / "report.html"
    said = _report(logged, out)
    assert "images: 6 left out" in said.stderr  # 12 a run, 10 kept (of 3 runs): said
    net = tmp_path / "net.json"
    dom, drawn = _open(out, tmp_path, "--log-net-log=%s" % net)
    runs = sorted(["lr0.1", "lr0.01", HOSTILE])
    assert sorted(drawn["charts"]) == sorted(["loss", HOSTILE]) and sorted(drawn["charts"]["loss"]) == runs
    assert drawn["resources"] == 0
    # the values under the cursor are what TensorBoard's loader reads, at that step
    cursor = drawn["cursor"]
    step = cursor["x"]
    for label, shown in zip(cursor["labels"][1:], cursor["legend"][1:]):
        if not label.endswith(" (raw)"):
            continue
        run = label[:-len(" (raw)")]
        (point,) = [e for e in accumulator(str(logged / run)).Scalars(cursor["tag"]) if e.step == step]
        assert float(shown) == pytest.approx(point.value, rel=1e-6), label
    # smoothing at 0.6 is TensorBoard's formula
    for run in ("lr0.1", "lr0.01"):
        values = [e.value for e in accumulator(str(logged / run)).Scalars("loss")]
        assert drawn["smoothed"]["loss"][run] == pytest.approx(_smoothed(values, 0.6), rel=1e-6)
    # hostile names are text: nothing of theirs ran (each would have marked the body)
    assert "data-pwned" not in dom
    assert "&lt;script&gt;document.body.dataset.pwned=1&lt;/script&gt;" in dom  # shown, as text
    assert "<strong>bold</strong>" in dom  # markdown rendered, its script dropped
    for section in ("scalars", "hparams", "images", "text", "distributions"):
        assert 'id="%s"' % section in dom
    # no network request of the page's: Chromium's own log (the browser's own, "not an origin", aside)
    assert _page_requests(net) == []
    control = tmp_path / "control.html"  # the check sees a page's request
    control.write_text('<img src="http://127.0.0.1:9/x.png">')
    subprocess.run(CHROMIUM + ["--user-data-dir=" + str(tmp_path / "chrome-control"), "--virtual-time-budget=3000",
                               "--log-net-log=%s" % (tmp_path / "control.json"), "--dump-dom", control.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert _page_requests(tmp_path / "control.json") == ["http://127.0.0.1:9/x.png"]


@needs("chromium")
def test_the_report_draws_pixels(logged, tmp_path):
    from PIL import Image

    out = tmp_path / "report.html"
    _report(logged, out, "--tags", "^loss$")
    counts = []
    for attempt in range(3):  # headless --screenshot may fire before the canvas's first paint (a loaded machine)
        shot = tmp_path / ("shot%d.png" % attempt)
        profile = "--user-data-dir=" + str(tmp_path / ("chrome%d" % attempt))
        subprocess.run(CHROMIUM + [profile, "--window-size=1280,900", "--virtual-time-budget=10000",
                                   "--screenshot=" + str(shot), out.as_uri()],
                       capture_output=True, timeout=180, check=True)
        pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
        orange = (abs(pixels[..., 0] - 0xff) < 40) & (abs(pixels[..., 1] - 0x70) < 40) \
            & (abs(pixels[..., 2] - 0x43) < 40)
        blue = (abs(pixels[..., 0] - 0x00) < 40) & (abs(pixels[..., 1] - 0x77) < 40) \
            & (abs(pixels[..., 2] - 0xbb) < 40)
        counts.append((int(orange[200:].sum()), int(blue[200:].sum())))
        if min(counts[-1]) > 200:
            break
    assert min(counts[-1]) > 200, counts  # two runs' lines, below the header


def test_a_missing_logdir_an_empty_one_and_a_torn_file_are_said_in_a_line(tmp_path):
    out = tmp_path / "r.html"
    missing = _report(tmp_path / "nowhere", out, check=False)
    assert missing.returncode == 1 and "mxboard report: logdir" in missing.stderr and "does not exist" in \
        missing.stderr and "Traceback" not in missing.stderr and not out.exists()
    (tmp_path / "empty").mkdir()
    empty = _report(tmp_path / "empty", out, check=False)
    assert empty.returncode == 1 and empty.stderr == "mxboard report: no event files in %s: nothing written\n" \
        % (tmp_path / "empty") and not out.exists()
    with SummaryWriter(str(tmp_path / "torn")) as w:
        for step in range(10):
            w.add_scalar("loss", 1.0 / (step + 1), step)
    (path,) = [p for p in (tmp_path / "torn").iterdir() if "tfevents" in p.name]
    path.write_bytes(path.read_bytes()[:-7])  # a writer killed mid-write
    torn = _report(tmp_path / "torn", out)
    assert "mxboard report: note: %s" % path in torn.stderr, torn.stderr
    assert '"loss"' in out.read_text() and "Traceback" not in torn.stderr
    bad = _report(tmp_path / "torn", out, "--runs", "(", check=False)
    assert bad.returncode == 1 and "--runs '(' is not a regular expression" in bad.stderr
    none = _report(tmp_path / "torn", tmp_path / "none.html", "--runs", "^nothing$", check=False)
    assert none.returncode == 1 and len(none.stderr.splitlines()) == 1 and "of the runs --runs" in none.stderr
    assert not (tmp_path / "none.html").exists()


def _data(out):
    """The report's data block (read as UTF-8, strictly: the page is valid UTF-8)."""
    text = out.read_bytes().decode("utf-8")
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S).group(1))
    data["scalars"] = scalars_by_tag(data["scalars"])
    return data


def _leftovers(directory):
    """The temporary files left beside an output (_format/files.replace_whole's names, and the
    old `.part` ones)."""
    return [p.name for p in directory.iterdir() if p.name.endswith(".part") or ".new-" in p.name]


def _two_runs(logdir, *names):
    for name in names:
        with SummaryWriter(os.path.join(str(logdir), name)) as w:
            for step in range(5):
                w.add_scalar("loss", 1.0 / (step + 1), step)


def test_a_run_named_with_bytes_that_are_not_utf8_is_reported_with_the_others(tmp_path):
    latin1 = os.fsdecode(b"caf\xe9")  # a directory made on a Latin-1 system
    _two_runs(tmp_path / "runs", "good", latin1)
    out = tmp_path / "out" / "r.html"
    out.parent.mkdir()
    said = _report(tmp_path / "runs", out)
    assert "run caf\\xe9: its directory's name is not UTF-8" in said.stderr
    assert sorted(e["run"] for e in _data(out)["scalars"]["loss"]) == ["caf\\xe9", "good"]
    assert _leftovers(out.parent) == []
    csv_file = tmp_path / "out" / "x.csv"  # export reads the same logdir: the name's own bytes, as on stdout
    done = subprocess.run([sys.executable, "-m", "mxboard", "export", str(tmp_path / "runs"), "--csv", "-o",
                           str(csv_file)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert csv_file.read_bytes().count(b"\ncaf\xe9,loss,") == 5


def test_an_hparam_of_every_value_kind_is_shown(tmp_path):
    """A list, a struct, a null, as TensorBoard's protobuf Value holds them (other writers log them)."""
    from google.protobuf import struct_pb2
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    info = plugin_data_pb2.SessionStartInfo()
    info.hparams["layers"].list_value.extend([64, 32])
    info.hparams["optimizer"].struct_value.update({"name": "adam", "beta": 0.9})
    info.hparams["schedule"].null_value = struct_pb2.NULL_VALUE
    info.hparams["lr"].number_value = 0.1
    content = plugin_data_pb2.HParamsPluginData(version=0, session_start_info=info).SerializeToString()
    value = summary_pb2.Summary.Value(tag="_hparams_/session_start_info", metadata=summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="hparams", content=content)))
    writer = EventFileWriter(str(tmp_path / "runs" / "listed"))
    writer.add_event(event_pb2.Event(wall_time=1.0, summary=summary_pb2.Summary(value=[value])))
    writer.add_event(event_pb2.Event(wall_time=2.0, step=1, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="loss", simple_value=0.5)])))
    writer.close()
    out = tmp_path / "r.html"
    _report(tmp_path / "runs", out)
    hparams = _data(out)["hparams"]
    assert hparams["columns"] == ["run", "layers", "lr", "optimizer", "schedule"]
    assert hparams["rows"] == [["listed", "[64.0, 32.0]", 0.1, '{"beta": 0.9, "name": "adam"}', None]]
    done = subprocess.run([sys.executable, "-m", "mxboard", "export", str(tmp_path / "runs"), "--kind", "hparams",
                           "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"run": "listed", "layers": [64.0, 32.0], "lr": 0.1,
                                        "optimizer": {"beta": 0.9, "name": "adam"}, "schedule": None}]


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs /proc/self/mem (a file whose read fails)")
def test_an_event_file_that_cannot_be_read_costs_only_itself_and_is_named(tmp_path):
    """A file whose read fails (EIO, as from a bad disk: /proc/self/mem at offset 0; the tests run
    as root, for whom no mode makes a file unreadable) is named as the input that failed."""
    _two_runs(tmp_path / "runs", "good", "bad")
    bad = tmp_path / "runs" / "bad" / "events.out.tfevents.1.unreadable"
    os.symlink("/proc/self/mem", str(bad))
    out = tmp_path / "r.html"
    said = _report(tmp_path / "runs", out)
    assert "%s: cannot be read (Input/output error)" % bad in said.stderr and "cannot write" not in said.stderr
    assert sorted(e["run"] for e in _data(out)["scalars"]["loss"]) == ["bad", "good"]  # bad's other file read


def test_the_output_is_written_whole_or_not_at_all_and_never_through_a_planted_link(tmp_path):
    _two_runs(tmp_path / "runs", "good")
    here = tmp_path / "out"
    (here / "taken").mkdir(parents=True)
    to_dir = _report(tmp_path / "runs", here / "taken", check=False)
    assert to_dir.returncode == 1 and to_dir.stderr.startswith("mxboard report: cannot write %s: it is a directory"
                                                               % (here / "taken"))
    nowhere = _report(tmp_path / "runs", here / "missing" / "r.html", check=False)
    assert nowhere.returncode == 1 and "cannot write %s: No such file" % (here / "missing" / "r.html") in nowhere.stderr
    victim = tmp_path / "victim"
    victim.write_text("the user's file")
    os.symlink(str(victim), str(here / "r.html.part"))  # planted where a fixed temporary name would be
    _report(tmp_path / "runs", here / "r.html")
    assert victim.read_text() == "the user's file" and '"loss"' in (here / "r.html").read_text()
    assert _leftovers(here) == ["r.html.part"] and os.path.islink(str(here / "r.html.part"))  # the planted one only


@needs("chromium")
def test_a_hundred_runs_of_twenty_tags_of_ten_thousand_points_and_many_images_is_small_and_opens_fast(tmp_path):
    from mxboard import __version__
    from mxboard.report.collect import Collected
    from mxboard.report.page import PAGE_BYTES, render

    found = Collected()
    rng = np.random.default_rng(0)
    steps = np.arange(10_000, dtype=np.float64)
    walls = 1.7e9 + steps * 0.1
    for run in range(100):
        found.runs.append("run%03d" % run)
        for tag in range(20):
            values = np.cumsum(rng.normal(size=10_000)).astype(np.float32).astype(np.float64)
            values[rng.integers(10_000)] = 1e6  # a spike: decimation keeps it
            found.scalars[("run%03d" % run, "tag%02d" % tag)] = (steps, values, walls)
    for run in range(10):  # and 40 MB of images (10 runs, 10 tags, 10 of 40 KB each): thinned to fit
        for tag in range(10):
            found.images[("run%03d" % run, "image%02d" % tag)] = [
                (step, ("image/png", rng.bytes(40_000))) for step in range(0, 100, 10)]
    text, said = render(found, "synthetic", 2000, __version__)
    out = tmp_path / "big.html"
    out.write_text(text, encoding="utf-8")
    assert out.stat().st_size <= PAGE_BYTES, out.stat().st_size
    assert any(line.startswith("note: images: ") and "so that the page stays within its bound of 18 MB" in line
               for line in said), said
    images = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', text,
                                  re.S).group(1))["images"]
    assert all(images["image%02d" % tag]["run%03d" % run][-1]["step"] == 90 for tag in range(10) for run in range(10))
    assert any(line.startswith("note: scalars: 2000 of 2000 series drawn from fewer points") for line in said), said
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S).group(1))
    kept = scalars_by_tag(data["scalars"])["tag00"][0]["value"]
    assert kept.max() == 1e6  # the spike was not averaged away
    _, drawn = _open(out, tmp_path, budget=60000)
    assert drawn["opened_ms"] < 3000, drawn["opened_ms"]
    assert len(drawn["charts"]) == 20 and all(len(runs) == 100 for runs in drawn["charts"].values())


def test_uplot_is_the_pinned_release(tmp_path):
    """The vendored uPlot is refused if changed (its SHA-256 is pinned), and named in NOTICE."""
    import shutil

    from mxboard.report import page as report_page
    from mxboard.report.page import ASSETS, UPLOT_VERSION, asset

    for name in ASSETS:
        asset(name)  # matches
    changed = tmp_path / "assets"
    shutil.copytree(report_page._HERE, changed)
    with open(changed / "uPlot.iife.min.js", "a") as f:
        f.write("\n// changed")
    report_page._HERE, here = str(changed), report_page._HERE
    try:
        with pytest.raises(ReportError, match="is not uPlot 1.6.32's"):
            asset("uPlot.iife.min.js")
    finally:
        report_page._HERE = here
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "NOTICE")) as f:
        assert "uPlot %s" % UPLOT_VERSION in f.read()


@needs("chromium")
def test_a_logdir_in_an_object_store_makes_the_same_report(store_url, tmp_path):
    """s3://, gs:// and az:// logdirs (real emulators on 127.0.0.1), read by mxboard.reader."""
    with SummaryWriter(store_url + "/run") as w:
        for step in range(20):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_histogram("weights", np.arange(100.0), 3)
    out = tmp_path / "remote.html"
    _report(store_url, out)
    _, drawn = _open(out, tmp_path)
    assert drawn["charts"] == {"loss": ["run"]}
    assert drawn["smoothed"]["loss"]["run"] == pytest.approx(_smoothed([1.0 / (s + 1) for s in range(20)], 0.6),
                                                              rel=1e-6)


@needs("chromium")
def test_the_demos_logdir_gives_a_report_of_every_dashboard_it_has(tmp_path):
    pytest.importorskip("sklearn")
    logdir = tmp_path / "demo"
    subprocess.run([sys.executable, "-m", "mxboard.demo", "--logdir", str(logdir), "--run", "cnn", "--epochs", "2",
                    "--batches", "3", "--histogram-every", "2", "--framework", "numpy", "--no-serve"],
                   check=True, timeout=300, capture_output=True)
    out = tmp_path / "demo.html"
    said = _report(logdir, out)
    for name in ("Mesh", "Projector"):  # the demo's embedding and point cloud: named, with the command
        assert "left out: %s (run: cnn)" % name in said.stderr and "`tensorboard --logdir %s`" % logdir in said.stderr
    dom, drawn = _open(out, tmp_path)
    assert set(drawn["charts"]) == {"accuracy", "learning_rate", "loss", "loss/batch"}
    for section in ("histograms", "audio", "pr_curves", "custom_scalars", "left-out"):
        assert 'id="%s"' % section in dom, section
    assert len(drawn["audio"]) == 1 and drawn["audio"][0]["duration"] > 0 and len(drawn["pr_curves"]) == 10
    assert [c["title"] for c in drawn["custom"]] and all(c["lines"] for c in drawn["custom"])
    assert sorted(drawn["charts"]["accuracy"]) == ["cnn/accuracy/train", "cnn/accuracy/validation"]
    for section in ("scalars", "hparams", "images", "text", "distributions"):
        assert 'id="%s"' % section in dom, section
    assert dom.count('class="card"') >= 4  # images: inputs, filters, the filters' video; the config's text
    assert "gradients/digits_conv0_bias" in dom and "weights/digits_dense1_weight" in dom  # distributions


def rebinned_as_drawn(buckets, lo, hi, count):
    """A histogram's counts in `count` equal bins over [lo, hi], each bucket's count shared by the
    bins it overlaps in proportion (as the page drew them before page.py rebinned: app.js's loop,
    transcribed)."""
    width = (hi - lo) / count
    out = [[lo + i * width, lo + (i + 1) * width, 0.0] for i in range(count)]
    for b in buckets.tolist():
        left, right, n = max(lo, b[0]), min(hi, b[1]), b[2]
        if not math.isfinite(n) or n == 0:
            continue
        if not right > left:
            out[min(count - 1, max(0, math.floor((left - lo) / width)))][2] += n
            continue
        for k in range(max(0, math.floor((left - lo) / width)), min(count - 1, math.floor((right - lo) / width)) + 1):
            overlap = min(right, out[k][1]) - max(left, out[k][0])
            if overlap > 0:
                out[k][2] += n * overlap / (right - left)
    return [c for _, _, c in out]


def _plugin_accumulator(path):
    """TensorBoard's server's loader over a run (every tensor kept): what its dashboards serve."""
    from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator

    acc = EventAccumulator(str(path), tensor_size_guidance={"histograms": 0, "pr_curves": 0, "audio": 0})
    acc.Reload()
    return acc


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory):
    """Two runs with every kind TensorBoard draws from a logdir: what the report draws, and a
    graph, a mesh and an embedding, which it names as left out."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.audio import metadata as audio_metadata
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    from mxboard.summaries.audio import encode_wav

    logdir = tmp_path_factory.mktemp("kinds") / "runs"
    rng = np.random.default_rng(5)
    for run in ("a", "b"):
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(0, 30, 5):
                w.add_histogram("weights", rng.normal(size=500) * (1 + step / 10), step)
                w.add_scalar("loss/train", 1.0 / (step + 1), step)
                w.add_scalar("loss/val", 1.2 / (step + 1), step)
                w.add_scalar("m/value", float(step), step)
                w.add_scalar("m/lower", step - 1.0, step)
                w.add_scalar("m/upper", step + 1.0, step)
            for step in range(3):
                labels = rng.random(200) < 0.3
                w.add_pr_curve("pr", labels, np.clip(labels * 0.4 + rng.random(200) * 0.6, 0, 1), num_thresholds=50,
                               global_step=step)
                w.add_audio("tone", np.sin(np.arange(8000) * (step + 1) / 20.0) * 0.5, sample_rate=8000,
                            global_step=step)
            w.add_custom_scalars({"losses": {"both": ["Multiline", ["loss/.*"]],
                                             "within": ["Margin", ["m/value", "m/lower", "m/upper"]]}})
            if run == "a":
                w.add_embedding("features", rng.random((10, 3)), global_step=0)
                w.add_mesh("cloud", rng.random((1, 20, 3)), global_step=0)
    # a graph and a labelled clip, as other writers log them
    writer = EventFileWriter(str(logdir / "b"))
    writer.add_event(event_pb2.Event(wall_time=1.0, graph_def=b"\n\x05\n\x01x\x12\x00"))
    clip = encode_wav(np.zeros((800, 1), np.int16), 8000)
    meta = audio_metadata.create_summary_metadata("", "", audio_metadata.Encoding.Value("WAV"))
    spoken = summary_pb2.Summary.Value(tag="spoken", metadata=meta, tensor=tensor_util.make_tensor_proto(
        np.array([[clip, b"<b>a label</b>"]], dtype=object)))
    writer.add_event(event_pb2.Event(wall_time=2.0, step=7, summary=summary_pb2.Summary(value=[spoken])))
    writer.close()
    return logdir


@needs("chromium")
def test_every_dashboard_is_in_the_report_or_named_as_left_out_with_tensorboards_values(every_kind, tmp_path):
    from tensorboard.plugins.pr_curve.pr_curves_plugin import PrCurvesPlugin
    from tensorboard.util import tensor_util

    out = tmp_path / "kinds.html"
    said = _report(every_kind, out)
    command = "tensorboard --logdir %s" % every_kind
    assert "read 2 runs in" in said.stderr and "histograms 1 tag (12 histograms)" in said.stderr, said.stderr
    assert "PR curves 1 tag (6 pr curves)" in said.stderr and "audio 2 tags (7 audio)" in said.stderr
    for name, run in (("Graph", "b"), ("Mesh", "a"), ("Projector", "a")):
        assert "left out: %s (run: %s)" % (name, run) in said.stderr and "shown by `%s`" % command in said.stderr
    dom, drawn = _open(out, tmp_path)
    for section in ("histograms", "distributions", "audio", "pr_curves", "custom_scalars", "left-out"):
        assert 'id="%s"' % section in dom, section
    assert dom.count("<code>%s</code>" % command) == 3  # the page names the three, and the command that shows them
    assert drawn["resources"] == 0
    assert drawn["histogram_modes"] == ["overlay:1", "overlay:1"]  # the overlay view, one canvas each, redrawn
    for run in ("a", "b"):
        served = _plugin_accumulator(every_kind / run)
        # histograms: every one TensorBoard serves, its buckets in the bins the page draws, counts kept
        tb = [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in served.Tensors("weights")]
        shown = drawn["histograms"]["weights"][run]
        assert [h["step"] for h in shown["items"]] == [step for step, _ in tb]
        for h, (_, buckets) in zip(shown["items"], tb):
            assert h["counts"] == pytest.approx(rebinned_as_drawn(buckets, shown["lo"], shown["hi"], 30), abs=1e-9)
            assert sum(h["counts"]) == pytest.approx(buckets[:, 2].sum())
        # PR curves: the points TensorBoard's plugin serves at the step each slider shows (last, then first)
        events = served.Tensors("pr")
        for shown, event in ((drawn["pr_curves"]["pr"][run], events[-1]), (drawn["pr_first"]["pr"][run], events[0])):
            entry = PrCurvesPlugin._make_pr_entry(None, event.step, event.wall_time,
                                                  tensor_util.make_ndarray(event.tensor_proto))
            assert shown["step"] == entry["step"]
            assert shown["precision"] == entry["precision"] and shown["recall"] == entry["recall"]
        # audio: the last clip of each tag, its logged bytes, playable (Chromium read its duration)
        import base64

        for clip in [c for c in drawn["audio"] if c["run"] == run]:
            logged = served.Tensors(clip["tag"])[-1]
            data = tensor_util.make_ndarray(logged.tensor_proto).reshape(-1)[0]
            assert base64.b64decode(clip["src"].split(",", 1)[1]) == data
            assert clip["error"] is None
            assert clip["duration"] == pytest.approx({"tone": 1.0, "spoken": 0.1}[clip["tag"]])
    assert sorted((c["tag"], c["run"]) for c in drawn["audio"]) == [("spoken", "b"), ("tone", "a"), ("tone", "b")]
    assert "&lt;b&gt;a label&lt;/b&gt;" in dom  # the label, as text
    # custom scalars: the user's layout; the multiline chart's lines are every run's tags its regex matches
    assert [c["title"] for c in drawn["custom"]] == ["both", "within"]
    lines = dict((label, values) for label, values in drawn["custom_values"]["both"])
    assert sorted(lines) == ["a: loss/train", "a: loss/val", "b: loss/train", "b: loss/val"]
    for label, values in lines.items():
        run, tag = label.split(": ")
        assert values == pytest.approx([e.value for e in accumulator(every_kind / run).Scalars(tag)], rel=1e-6)
    assert drawn["custom"][1]["lines"] == ["a: m/value", "b: m/value"]


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the peak from /proc/self/status")
def test_memory_follows_what_the_report_keeps_not_the_logdir(tmp_path):
    """300 images of 1 MB (a 300 MB logdir): 10 are kept, as they are read; the report is made in
    under 150 MB at its peak (the interpreter and TensorBoard's modules are about 65 MB of it)."""
    import struct

    from PIL import Image
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from mxboard._format._crc32c import masked_crc32c

    buffer = __import__("io").BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (580, 580, 3), dtype=np.uint8)).save(buffer, "PNG")
    png = buffer.getvalue()
    assert len(png) > 1e6
    (tmp_path / "runs" / "big").mkdir(parents=True)
    with open(tmp_path / "runs" / "big" / "events.out.tfevents.1.host", "wb") as f:
        for step in range(300):  # framed here: TensorBoard's own writer takes a minute over 300 MB
            image = summary_pb2.Summary.Image(height=580, width=580, colorspace=3, encoded_image_string=png)
            payload = event_pb2.Event(wall_time=1.0 + step, step=step, summary=summary_pb2.Summary(
                value=[summary_pb2.Summary.Value(tag="big", image=image)])).SerializeToString()
            header = struct.pack("<Q", len(payload))
            f.write(header + struct.pack("<I", masked_crc32c(header)) + payload
                    + struct.pack("<I", masked_crc32c(payload)))
    # the child's own peak: VmHWM (ru_maxrss survives exec: a big test runner's peak would be the child's)
    done = run_python("import mxboard.report\n"
                      "said = mxboard.report.write(%r, %r)\n"
                      "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])\n"
                      % (str(tmp_path / "runs"), str(tmp_path / "r.html")), timeout=300)
    peak = float(done.stdout.split()[-1]) / 1024
    assert peak < 150, peak
    assert len(_data(tmp_path / "r.html")["images"]["big"]["big"]) == 10


@needs("chromium")
def test_filters_colours_legend_downloads_zoom_grouped_runs_and_parallel_coordinates(logged, tmp_path):
    import csv
    import io

    out = tmp_path / "report.html"
    _report(logged, out)
    dom, drawn = _open(out, tmp_path)
    runs = sorted(["lr0.1", "lr0.01", HOSTILE])
    # one colour a run, the same in every chart, each run its own
    colours = drawn["colors"]
    assert all(colours[tag] == colours["loss"] for tag in colours) and len(set(colours["loss"].values())) == 3
    assert drawn["legend_rows"] == 1 + len(runs)  # x, then each run once (its raw line follows its entry)
    # the first chart's CSV and JSON, made in the page, are the loader's points
    rows = list(csv.DictReader(io.StringIO(drawn["csv"])))
    assert [r["run"] for r in rows] == [r["run"] for r in drawn["json"]] and sorted({r["run"] for r in rows}) == runs
    tag = drawn["cursor"]["tag"]
    for run in runs:
        mine = [r for r in rows if r["run"] == run]
        theirs = accumulator(str(logged / run)).Scalars(tag)
        assert [(r["tag"], int(float(r["step"]))) for r in mine] == [(tag, e.step) for e in theirs]
        assert [float(r["value"]) for r in mine] == pytest.approx([e.value for e in theirs], rel=1e-6)
        assert [float(r["wall_time"]) for r in mine] == pytest.approx([e.wall_time for e in theirs], abs=1e-3)
    # 8x8 images drawn pixel for pixel, at a whole multiple of their size
    assert drawn["images"] and all(i["natural"] == 8 and i["width"] % 8 == 0 and i["width"] >= 64
                                   for i in drawn["images"])
    # the header's runs grouped by their top directory
    assert dom.count('class="group"') == 3
    # the filters (regular expressions, as TensorBoard's): runs ^lr0\.1$ and tags ^loss$ leave one chart of one run
    assert drawn["filtered"]["charts"] == ["loss"] and drawn["filtered"]["cards"] == 0
    assert all(lines == ["lr0.1 (raw)", "lr0.1"] for lines in drawn["filtered"]["lines"].values())
    # HParams' parallel coordinates: an axis a column, a line a run through the table's values; the filter greys
    table = _data(out)["hparams"]
    assert drawn["parallel"]["axes"] == table["columns"][1:] == ["lr", "optimizer", "loss"]
    assert {run: line["values"] for run, line in drawn["parallel"]["lines"].items()} == \
        {row[0]: row[1:] for row in table["rows"]}
    assert {run for run, line in drawn["filtered_parallel"]["lines"].items() if line["shown"]} == {"lr0.1"}
    assert drawn["filtered_hparams"] == ["lr0.1"]


# Series whose y axes uPlot's default axis (50 px, fixed decimals) drew wrong: 132,000 as "2,000",
# -0.014 without its minus, a learning rate of 3e-4 as 0, 0, 0, 0, 0.001, 0.001.
_STEPS = np.arange(60, dtype=np.float64)
AXIS_SERIES = {
    "learning_rate": 3e-4 * (1 + 0.5 * np.sin(_STEPS / 9)),
    "tiny": 1e-9 * (1 + 0.3 * np.cos(_STEPS / 7)),
    "huge": 132_000 + 4_000 * np.sin(_STEPS / 5),
    "huge_1e12": 1e12 * (1 + 0.2 * np.sin(_STEPS / 11)),
    "negative": np.linspace(-0.014, -0.011, len(_STEPS)),
    "constant": np.full(len(_STEPS), 5.0),
    "mixed_sign": 0.02 * np.sin(_STEPS / 6),
    "long_negative": -1234567.0 - 98765.0 * np.cos(_STEPS / 8),
}


@needs("chromium")
def test_every_charts_y_axis_labels_are_distinct_unclipped_and_signed(tmp_path):
    """Each chart's y axis, read from the page as uPlot drew it (its ticks, their labels, the
    axis' width and the width the widest label needs), over tiny, huge, negative, constant and
    mixed-sign series: every label is distinct, reads back as its tick (its sign too), and fits
    the axis. Scalars charts and a Custom Scalars chart of the tiny and the huge together."""
    with SummaryWriter(str(tmp_path / "runs" / "run")) as w:
        for i, step in enumerate(_STEPS.astype(int).tolist()):
            for tag, values in AXIS_SERIES.items():
                w.add_scalar(tag, float(values[i]), step)
        w.add_custom_scalars({"together": {"tiny and huge": ["Multiline", ["tiny", "huge$"]]}})
    out = tmp_path / "r.html"
    _report(tmp_path / "runs", out)
    _, drawn = _open(out, tmp_path)
    axes = {axis["title"]: axis for axis in drawn["yaxes"]}
    assert set(AXIS_SERIES) | {"tiny and huge"} <= set(axes), sorted(axes)
    for title, axis in axes.items():
        ticks, labels = axis["ticks"], axis["labels"]
        assert len(ticks) >= 2 and len(labels) == len(ticks), (title, axis)
        assert len(set(labels)) == len(labels), (title, labels)
        assert axis["needed"] <= axis["size"], (title, axis)
        spacing = min(abs(b - a) for a, b in zip(ticks, ticks[1:]))
        for tick, label in zip(ticks, labels):
            assert float(label) == pytest.approx(tick, rel=1e-6, abs=spacing * 1e-6), (title, tick, label)
            if abs(tick) > spacing * 1e-6:
                assert label.startswith("-") == (tick < 0), (title, tick, label)
        low, high = axis["range"]
        assert low < high, (title, axis)
    # each series' values lie within its axis' range: its ticks label what is drawn
    for tag, values in AXIS_SERIES.items():
        low, high = axes[tag]["range"]
        assert low <= values.astype(np.float32).min() and values.astype(np.float32).max() <= high, (tag, low, high)
    assert all(label.startswith("-") for label in axes["negative"]["labels"] + axes["long_negative"]["labels"])
    assert any(label.startswith("-") for label in axes["mixed_sign"]["labels"]) and \
        any(not label.startswith("-") for label in axes["mixed_sign"]["labels"])
    # tiny and huge values in an exponent, the learning rate's ticks told apart
    assert all("e-" in label for label in axes["tiny"]["labels"] + axes["learning_rate"]["labels"] if label != "0")
    assert all(re.fullmatch(r"-?[0-9.]+e1[12]", label) for label in axes["huge_1e12"]["labels"])


@needs("chromium")
def test_torchs_add_hparams_metrics_are_drawn_around_their_one_step(tmp_path):
    """torch's add_hparams logs each metric once, in a sub-run a call: a chart of one point a run
    is drawn around its step (it was drawn on an x axis of 0 to 100)."""
    torch_writer = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    for lr in (0.1, 0.01):
        with torch_writer(str(tmp_path / "runs" / ("lr%s" % lr))) as w:
            w.add_hparams({"lr": lr}, {"hparam/accuracy": 0.9 - lr})
    out = tmp_path / "r.html"
    _report(tmp_path / "runs", out)
    _, drawn = _open(out, tmp_path)
    assert len(drawn["charts"]["hparam/accuracy"]) == 2
    assert drawn["xranges"]["hparam/accuracy"] == [-1, 1]


@pytest.mark.timeout(300)
def test_a_hung_store_is_said_as_such_within_the_writers_bounds_in_one_line(store_proxy, tmp_path):
    """A store that takes the connection and never answers: the report ends within the writer's
    own bounds (storage/bounds.py) with one line naming the logdir, never blaming the output."""
    import time

    proxy, url = store_proxy
    with SummaryWriter(url + "/hung") as w:
        w.add_scalar("loss", 1.0, 0)
    proxy.set("hang")
    out = tmp_path / "r.html"
    start = time.monotonic()
    done = _report(url + "/hung", out, check=False)
    took = time.monotonic() - start
    assert done.returncode == 1 and not out.exists(), done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr and "cannot write" not in done.stderr, done.stderr
    assert url + "/hung" in lines[0] and "did not answer" in lines[0], lines[0]
    assert took < 40, took
    proxy.set("pass")
