"""The bundle's own loader, the bundled server's default, over HTTP: a spike in
100,000 points is served, with the first and the last point, within the scalars route's budget;
a damaged record is skipped, said once in the server's log, and the rest of its file served."""
import os
import time

import numpy as np
import pytest

from mxboard import SummaryWriter, reader
from mxboard._format.events import RECORD_HEADER
from mxboard.proto import Event

pytestmark = pytest.mark.slow

SPIKE_STEP = 51_234


def _write_curve(run, points, spike_at=None):
    with SummaryWriter(str(run)) as writer:
        for step in range(points):
            writer.add_scalar("loss", 100.0 if step == spike_at else 1.0 + (step % 13) / 100.0, step)
    (path,) = reader.event_files(str(run))
    return path


def _flip_a_bit_of_the_step(path, step):
    """Flip one bit in the step (its varint's first byte) of the Event of `step`; returns its offset."""
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at < len(data):
        (length, _) = RECORD_HEADER.unpack_from(data, at)
        payload = data[at + 12:at + 12 + length]
        if Event.FromString(payload).step == step:
            # The step is Event's field 2, a varint (its key byte 0x10).
            where = at + 12 + payload.index(b"\x10" + bytes([step & 0x7F | 0x80]))
            with open(path, "r+b") as f:
                f.seek(where + 1)
                f.write(bytes([data[where + 1] ^ 0x04]))
            return at
        at += 16 + length
    raise AssertionError("no step %d in %s" % (step, path))


def _served(server, run, expected, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        try:
            rows = server.json("/data/plugin/scalars/scalars", {"run": run, "tag": "loss"})
        except OSError:
            rows = []
        if (rows and rows[-1][1] == expected) or time.monotonic() > deadline:
            return rows
        time.sleep(0.25)


def test_the_banner_names_the_loader_and_a_spike_is_served_with_the_first_and_last_points(tmp_path, serve):
    _write_curve(tmp_path / "run", 100_000, spike_at=SPIKE_STEP)
    server = serve(str(tmp_path))
    assert "data loader: mxboard (in-process)" in server.banner
    rows = _served(server, "run", 99_999)
    steps = [step for _, step, _ in rows]
    # The route's budget is upstream's (1,000 points a scalar series).
    assert 900 <= len(rows) <= 1000
    assert steps[0] == 0 and steps[-1] == 99_999 and steps == sorted(steps)
    assert [value for _, step, value in rows if step == SPIKE_STEP] == [100.0]


def test_a_damaged_record_is_skipped_said_once_and_the_rest_served(tmp_path, serve):
    path = _write_curve(tmp_path / "run", 1000)
    offset = _flip_a_bit_of_the_step(path, 500)
    server = serve(str(tmp_path))
    rows = _served(server, "run", 999)
    assert [step for _, step, _ in rows] == [step for step in range(1000) if step != 500]
    # A few reloads later (one a second), still said once.
    time.sleep(3)
    said = [line for line in server.output if "fails its checksum" in line]
    assert len(said) == 1, server.output
    assert "%s: the record at byte %d fails its checksum" % (os.path.basename(path), offset) in said[0]


def test_every_step_of_an_image_tag_is_served_when_asked_and_ten_evenly_spaced_by_default(tmp_path, serve):
    """Blobs are read from their file on request: with --samples_per_plugin images=0 every one of
    25 steps is served, its PNG the one logged; by default upstream's budget of 10, evenly spaced,
    the first and the last step among them."""
    import numpy as np

    rng = np.random.default_rng(0)
    logged = {}
    with SummaryWriter(str(tmp_path / "run")) as writer:
        for step in range(25):
            image = rng.integers(0, 255, (3, 4, 4), dtype=np.uint8)
            writer.add_image("picture", image, step)
            logged[step] = image
    every = serve(str(tmp_path), "--samples_per_plugin", "images=0")
    some = serve(str(tmp_path))
    deadline = time.monotonic() + 60
    while True:
        rows = every.json("/data/plugin/images/images", {"run": "run", "tag": "picture"})
        if len(rows) == 25 or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert [row["step"] for row in rows] == list(range(25))
    import io

    from PIL import Image

    for row in rows:
        _, png = every.get("/data/plugin/images/individualImage?" + row["query"])
        pixels = np.asarray(Image.open(io.BytesIO(png))).transpose(2, 0, 1)
        assert np.array_equal(pixels, logged[row["step"]]), row["step"]
    rows = some.json("/data/plugin/images/images", {"run": "run", "tag": "picture"},
                     until=lambda rows: rows and rows[-1]["step"] == 24)
    steps = [row["step"] for row in rows]
    assert len(steps) == 10 and steps[0] == 0 and steps[-1] == 24 and steps == sorted(steps)


# Each plugin's tags route, and the route of one tag's data.
_ROUTES = {"scalars": "scalars", "histograms": "histograms", "images": "images", "audio": "audio",
           "pr_curves": "pr_curves", "mesh": "meshes", "text": "text"}
_EVERY_SAMPLE = "scalars=0,histograms=0,images=0,audio=0,pr_curves=0,mesh=0,text=0,hparams=0,custom_scalars=0"


def test_every_dashboards_routes_answer_as_upstreams_python_loader_keeping_every_sample(tmp_path, serve):
    """Over HTTP, what the dashboards read: the bundle's loader and upstream's Python loader, both
    keeping and showing every sample (--samples_per_plugin NAME=0), answer every tags and data route
    of every plugin alike (the Time Series dashboard's tags too), each blob's bytes too."""
    import every_kind_corpus

    every_kind_corpus.write(str(tmp_path))
    ours = serve(str(tmp_path), "--samples_per_plugin", _EVERY_SAMPLE)
    theirs = serve(str(tmp_path), "--load_fast=false", "--samples_per_plugin", _EVERY_SAMPLE)
    # Both load on a thread of their own: wait until each serves the last run's scalars.
    for server in (ours, theirs):
        server.json("/data/plugin/scalars/tags", until=lambda tags: "nested/restarted" in tags and "intact" in tags
                    and "train" in tags)
    assert sorted(ours.json("/data/runs")) == sorted(theirs.json("/data/runs"))
    compared = 0
    for plugin, route in _ROUTES.items():
        tags = ours.json("/data/plugin/%s/tags" % plugin)
        assert tags == theirs.json("/data/plugin/%s/tags" % plugin), plugin
        for run, tags_of_run in tags.items():
            for tag in tags_of_run:
                params = {"run": run, "tag": tag}
                answer = ours.json("/data/plugin/%s/%s" % (plugin, route), params)
                assert answer == theirs.json("/data/plugin/%s/%s" % (plugin, route), params), (plugin, run, tag)
                compared += 1
                for item in answer if plugin in ("images", "audio") else []:
                    blob = "/data/plugin/%s/%s?%s" % (plugin, "individualImage" if plugin == "images" else
                                                      "individualAudio", item["query"])
                    assert ours.get(blob) == theirs.get(blob), (plugin, run, tag, item["step"])
    assert compared >= 10
    for path in ("/data/plugin/graphs/info", "/data/plugin/custom_scalars/layout"):
        assert ours.json(path) == theirs.json(path), path
    # The Time Series dashboard's tags (the bundle's from each run's kept part: kept_tags.py).
    series = ours.json("/data/plugin/timeseries/tags")
    assert series == theirs.json("/data/plugin/timeseries/tags")
    assert series["scalars"]["runTagInfo"] and series["histograms"]["runTagInfo"]
    assert series["images"]["tagRunSampledInfo"]
    assert ours.get("/data/plugin/graphs/graph?run=train") == theirs.get("/data/plugin/graphs/graph?run=train")


def test_a_first_load_big_enough_for_a_second_process_serves_what_upstreams_rust_loader_serves(tmp_path, serve):
    """A first load of more small files' bytes than SPREAD_BYTES is scanned by a second process
    (mxboard._reading.scan_process) while the server takes what it scanned: every run lists the
    tags logged to it, as upstream's Rust loader does, and each of four runs serves every point
    logged to it, the rows Rust serves."""
    from tensorboard_bundle.loader.logdir import SPREAD_BYTES

    runs, tags, points = 170, 5, 1000
    for run in range(runs):
        with SummaryWriter(str(tmp_path / ("run%03d" % run))) as writer:
            for step in range(points):
                for tag in range(tags):
                    writer.add_scalar("tag%d" % tag, run * 1000 + step + tag / 10, step)
    sizes = [os.path.getsize(os.path.join(folder, name)) for folder, _, names in os.walk(str(tmp_path))
             for name in names]
    assert sum(sizes) >= SPREAD_BYTES and max(sizes) <= 1 << 20
    ours, theirs = serve(str(tmp_path)), serve(str(tmp_path), "--load_fast=true")
    every_tag = {"run%03d" % run: tags for run in range(runs)}
    listed = [server.json("/data/plugin/scalars/tags", until=lambda found: {
        run: len(found.get(run, ())) for run in every_tag} == every_tag, timeout=120) for server in (ours, theirs)]
    # (Rust's listing leaves each display name empty; the Python loader's is compared elsewhere.)
    assert [{run: sorted(found) for run, found in each.items()} for each in listed] == [
        {run: ["tag%d" % tag for tag in range(tags)] for run in every_tag}] * 2
    for run in (0, 57, 113, 169):
        for tag in range(tags):
            params = {"run": "run%03d" % run, "tag": "tag%d" % tag}
            rows = ours.json("/data/plugin/scalars/scalars", params)
            assert rows == theirs.json("/data/plugin/scalars/scalars", params), params
            assert [(step, value) for _, step, value in rows] == [
                (step, float(np.float32(run * 1000 + step + tag / 10))) for step in range(points)], params


def test_a_ctrl_c_during_a_large_first_load_ends_the_server_and_its_scanner_at_once(tmp_path, serve):
    """A Ctrl-C at the terminal (SIGINT to the whole process group) while the scanner's child
    process scans a large first load: the server ends within seconds, the child with it, neither
    prints a traceback, and no run is said unreadable."""
    import signal

    import psutil

    first = tmp_path / "run00000"
    with SummaryWriter(str(first)) as writer:
        for step in range(100):
            for tag in ("loss", "accuracy", "lr"):
                writer.add_scalar(tag, 1.0 / (step + 1), step)
    (name,) = os.listdir(str(first))
    data = (first / name).read_bytes()
    for run in range(1, 12_000):
        (tmp_path / ("run%05d" % run)).mkdir()
        (tmp_path / ("run%05d" % run) / name).write_bytes(data)
    server = serve(str(tmp_path), start_new_session=True)
    main = psutil.Process(server.proc.pid)
    deadline, scanners = time.monotonic() + 60, []
    while not scanners and time.monotonic() < deadline and server.proc.poll() is None:
        scanners = [child for child in main.children(recursive=True)
                    if "scan_process" in " ".join(child.cmdline())]
        time.sleep(0.01)
    assert scanners, "no scanner's child process seen during the first load"
    os.killpg(server.proc.pid, signal.SIGINT)
    server.proc.wait(20)
    scanners[0].wait(10)
    output = "".join(server.output)
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    # Nor is a run said unreadable because the interpreter was ending.
    assert "cannot be read" not in output, output


def test_a_logdir_of_thousands_of_runs_scanned_before_the_server_asks_serves_what_rusts_loader_serves(
        tmp_path, serve):
    """A logdir of 2,400 runs: the launcher starts the scanning process before TensorBoard's imports
    (loader/ahead.py), and the first load takes the scans it made ahead. Every run lists the tags
    logged to it, as upstream's Rust loader lists them, and runs across the logdir (one with a
    damaged record, one with a point more than the rest) serve the rows Rust serves."""
    from tensorboard_bundle.loader import ahead

    runs = 2_400
    first = tmp_path / "run0000"
    with SummaryWriter(str(first)) as writer:
        for step in range(150):
            for tag in ("loss", "accuracy"):
                writer.add_scalar(tag, 1.0 / (step + 1), step)
    (name,) = os.listdir(str(first))
    data = (first / name).read_bytes()
    for run in range(1, runs):
        (tmp_path / ("run%04d" % run)).mkdir()
        (tmp_path / ("run%04d" % run) / name).write_bytes(data)
    assert runs >= ahead.SPREAD_RUNS
    _flip_a_bit_of_the_step(str(tmp_path / "run1234" / name), 130)
    with SummaryWriter(str(tmp_path / "run2222")) as writer:
        writer.add_scalar("loss", 7.0, 150)
    ours, theirs = serve(str(tmp_path)), serve(str(tmp_path), "--load_fast=true")
    every_tag = {"run%04d" % run: 2 for run in range(runs)}
    listed = [server.json("/data/plugin/scalars/tags", until=lambda found: {
        run: len(found.get(run, ())) for run in every_tag} == every_tag, timeout=120) for server in (ours, theirs)]
    assert [{run: sorted(tags) for run, tags in found.items()} for found in listed] == [
        {run: ["accuracy", "loss"] for run in every_tag}] * 2
    for run in ("run0000", "run0777", "run1234", "run2222", "run2399"):
        for tag in ("loss", "accuracy"):
            params = {"run": run, "tag": tag}
            rows = ours.json("/data/plugin/scalars/scalars", params)
            assert rows == theirs.json("/data/plugin/scalars/scalars", params), params
            expected = [step for step in range(150) if (run, tag) != ("run1234", "loss") or step != 130]
            expected += [150] if (run, tag) == ("run2222", "loss") else []
            assert [step for _, step, _ in rows] == expected, params


def test_a_small_logdir_is_served_whole_from_the_banner_on(tmp_path, serve):
    """A page opened at the server's banner lists every run of a logdir whose first pass takes
    less than FIRST_PASS_WAIT (loader/provider.py): the runs' list asked for at once, without waiting, is the whole one,
    as upstream's Rust loader lists it once loaded (a run's runs below it among them)."""
    for run in ("a", "a/train", "a/eval", "b", "c/deep/er"):
        with SummaryWriter(str(tmp_path / run)) as writer:
            for step in range(200):
                writer.add_scalar("loss", 1.0 / (step + 1), step)
                writer.add_histogram("weights", np.arange(10.0) * step, step)
    expected = ["a", "a/eval", "a/train", "b", "c/deep/er"]
    for attempt in range(3):
        server = serve(str(tmp_path))
        assert sorted(server.json("/data/runs")) == expected, attempt
        server.close()
    rust = serve(str(tmp_path), "--load_fast=true")
    assert sorted(rust.json("/data/runs", until=lambda runs: len(runs) == len(expected))) == expected
