"""mxboard.reader and `python -m mxboard export`: what they return is what TensorBoard shows (a
resumed run, a corrupt record skipped with a warning), in little memory, never crashing nor
passing a bad record on fuzzed files; the command says what went wrong in one line."""
import contextlib
import json
import os
import pathlib
import re
import struct
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from mxboard import SummaryWriter
from mxboard._format._crc32c import masked_crc32c
from mxboard._format.events import frame
from mxboard._reading import records
from mxboard.reader import DataLossError, TornRecordWarning, read_records


@contextlib.contextmanager
def _window(size):
    saved, records.WINDOW = records.WINDOW, size
    try:
        yield
    finally:
        records.WINDOW = saved


@pytest.mark.slow
def test_a_large_file_is_read_in_little_memory(tmp_path):
    """Records are read in windows (records.WINDOW), never the whole file: 256 MB of 1 MB records
    cost a few windows of memory (on 802362c: the whole file). `make bench` reads 1 GB."""
    path = tmp_path / "events.out.tfevents.big"
    record = frame(b"\x00" * (1 << 20))
    with open(path, "wb") as f:
        for _ in range(256):
            f.write(record)
    code = ("import resource, sys\nfrom mxboard.reader import read_records\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "count = sum(1 for _ in read_records(sys.argv[1]))\n"
            "print(count, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    count, grown_mb = map(int, out.stdout.split())
    assert count == 256 and grown_mb < 40, out.stdout


def _records(payloads):
    return b"".join(frame(p) for p in payloads)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=64), max_size=8), st.data())
def test_fuzzed_files_never_crash_the_reader_nor_pass_a_bad_record(tmp_path, payloads, data):
    good = _records(payloads)
    mutation = data.draw(st.sampled_from(["none", "truncate", "flip", "garbage"]))
    blob = bytearray(good)
    if mutation == "truncate":
        blob = blob[:data.draw(st.integers(0, len(blob)))]
    elif mutation == "flip" and blob:
        blob[data.draw(st.integers(0, len(blob) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    elif mutation == "garbage":
        blob = bytearray(data.draw(st.binary(max_size=200)))
    path = tmp_path / "events.out.tfevents.fuzz"
    path.write_bytes(bytes(blob))
    returned = []
    # the reader's window: a record across windows, or longer than one, is read whole
    window = data.draw(st.sampled_from([1, 5, 12, 16, 17, 64, records.WINDOW]))
    with warnings.catch_warnings(), _window(window):
        warnings.simplefilter("ignore", TornRecordWarning)
        try:
            for payload in read_records(str(path), strict=True):
                returned.append(payload)
        except DataLossError:
            pass
    # whatever came back is a prefix of what was written, each record intact
    assert returned == payloads[:len(returned)] or mutation == "garbage" and all(
        _records([p]) in bytes(blob) for p in returned)
    for payload in returned:
        assert masked_crc32c(payload) == struct.unpack("<I", _records([payload])[-4:])[0]
    if mutation == "none":
        assert returned == payloads


@pytest.mark.slow
def test_the_command_says_what_went_wrong_in_one_line(tmp_path):
    """On 802362c a missing logdir wrote a header and exited 0, an unwritable --output ended in a
    traceback, and --help had no description, no examples and no --version."""
    def command(*args):
        return subprocess.run([sys.executable, "-m", "mxboard", *args], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))

    with SummaryWriter(str(tmp_path / "run")) as writer:
        writer.add_scalar("loss", 1.0, 0)
    cases = [(("export", str(tmp_path / "missing"), "--csv"), 1, "mxboard export: logdir %r does not exist"
              % str(tmp_path / "missing")),
             (("export", str(tmp_path), "--csv", "--kind", "text"), 1, "mxboard export: no text in %s (nothing "
              "written; --kind says which: histograms, hparams, scalars, text)" % tmp_path),
             (("export", str(tmp_path), "--csv", "-o", "/nonexistent/x.csv"), 1,
              "mxboard export: cannot write /nonexistent/x.csv: No such file or directory")]
    for args, status, message in cases:
        done = command(*args)
        assert (done.returncode, done.stdout, done.stderr.strip()) == (status, "", message)
    shown = command("--help").stdout
    assert "TensorBoard event files from MXNet and numpy" in shown and "examples:" in shown
    flags = command("export", "--help").stdout  # every flag explained
    said = " ".join(flags.split())
    for help_text in ("logdir a logdir (a directory",
                      "which table (one per call, as their columns differ): histograms, hparams, scalars, text; "
                      "default: scalars", "--csv comma-separated rows", "--json a list of row",
                      "a file to write", "--raw every record", "--strict a corrupt record is an error"):
        assert help_text in said, flags
    assert command("--version").stdout.strip() == "mxboard %s" % __import__("mxboard").__version__


def _resumed_run(module, logdir):
    """A run resumed from a checkpoint at step 50 (tensorboardX's and torch's purge_step): 100 + 30 points logged."""
    with module.SummaryWriter(logdir) as writer:
        for step in range(100):
            writer.add_scalar("loss", float(step), step)
    time.sleep(1.1)  # resumed later: tensorboardX's file name, to the second, would be the first's
    with module.SummaryWriter(logdir, purge_step=50) as writer:
        for step in range(50, 80):
            writer.add_scalar("loss", 1000.0 + step, step)


@pytest.mark.slow
def test_the_reader_returns_what_tensorboard_shows_of_a_resumed_run(tmp_path, serve):
    """A resumed run (purge_step), by mxboard and by tensorboardX: the reader and the export
    return the 80 points the server shows, not the 130 written; raw=True gives all 130."""
    tensorboardx = pytest.importorskip("tensorboardX")
    import mxboard
    from mxboard import reader

    _resumed_run(mxboard, str(tmp_path / "mxb"))
    _resumed_run(tensorboardx, str(tmp_path / "tbx"))
    server = serve(tmp_path)
    expected = [(s, float(s)) for s in range(50)] + [(s, 1000.0 + s) for s in range(50, 80)]
    for run in ("mxb", "tbx"):
        served = [(s, v) for _, s, v in server.json("/data/plugin/scalars/scalars", {"run": run, "tag": "loss"},
                                                     until=lambda rows: len(rows) == 80)]
        assert served == expected, run
        columns = reader.table(str(tmp_path / run))
        assert list(zip(columns["step"], columns["value"])) == served
        assert len(reader.table(str(tmp_path / run), raw=True)["step"]) == 130
    printed = subprocess.run([sys.executable, "-m", "mxboard", "export", str(tmp_path), "--json"],
                             env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")), capture_output=True,
                             text=True, timeout=120, check=True).stdout
    assert len([r for r in json.loads(printed) if r["run"] == "mxb"]) == 80


def test_the_scalars_frame_holds_the_tables_rows_made_without_a_python_object_a_row(tmp_path):
    """`reader.scalars` builds its DataFrame from the numpy columns (at 2M rows its peak memory
    was 608 MB from lists, 335 MB now): the same rows, order, values and dtypes as the table's
    (which the test above checks against what the server serves), raw or not, and empty."""
    pd = pytest.importorskip("pandas")
    import mxboard
    from mxboard import reader

    _resumed_run(mxboard, str(tmp_path / "a"))
    with SummaryWriter(str(tmp_path / "b")) as writer:
        writer.add_scalars("pair", {"x": 1.0, "y": 2.0}, 3)  # two sub-runs
        writer.add_scalar("loss", 0.5, 7)
    for raw in (False, True):
        frame = reader.scalars(str(tmp_path), raw=raw)
        expected = pd.DataFrame(reader.table(str(tmp_path), raw=raw))
        assert len(frame) == (80 if not raw else 130) + 3
        pd.testing.assert_frame_equal(frame, expected)
    (tmp_path / "empty").mkdir()
    empty = reader.scalars(str(tmp_path / "empty"))
    assert list(empty.columns) == ["run", "tag", "step", "wall_time", "value"] and len(empty) == 0


@pytest.mark.slow
def test_one_corrupt_record_is_skipped_with_a_warning_as_tensorboard_does(tmp_path, serve):
    """A flipped byte in one record: TensorBoard warns and serves the rest; so do the reader and
    `python -m mxboard export` (naming the file and the byte), unless asked to be strict."""
    import struct

    from mxboard import reader

    for run in ("good", "bad"):
        with SummaryWriter(str(tmp_path / run)) as writer:
            for step in range(20):
                writer.add_scalar("loss", float(step), step)
    (path,) = [str(tmp_path / "bad" / n) for n in os.listdir(tmp_path / "bad")]
    data = bytearray(pathlib.Path(path).read_bytes())
    offset = 0
    for _ in range(6):  # the file-version record, then steps 0-4: step 5's record is hit
        offset += 16 + struct.unpack("<Q", data[offset:offset + 8])[0]
    data[offset + 14] ^= 0x40
    pathlib.Path(path).write_bytes(bytes(data))
    server = serve(tmp_path)
    served = {run: [(s, v) for _, s, v in server.json("/data/plugin/scalars/scalars", {"run": run, "tag": "loss"},
                                                       until=lambda rows, run=run: len(rows) >= 19)]
              for run in ("good", "bad")}
    assert served["good"] == [(s, float(s)) for s in range(20)]
    with pytest.warns(reader.CorruptRecordWarning, match="%s: corrupt record payload at byte %d" % (re.escape(path),
                                                                                                    offset)):
        columns = reader.table(str(tmp_path))
    # the rest as served (the fast loader checks no payload CRC: it serves the corrupt record as it
    # parses, where the reader skips it)
    for run in ("good", "bad"):
        assert [(s, v) for r, s, v in zip(columns["run"], columns["step"], columns["value"]) if r == run] == [
            (s, v) for s, v in served[run] if run == "good" or s != 5]
    proc = subprocess.run([sys.executable, "-m", "mxboard", "export", str(tmp_path), "--json"],
                          env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "corrupt record payload at byte %d" % offset in proc.stderr
    assert len(json.loads(proc.stdout)) == 39
    strict = subprocess.run([sys.executable, "-m", "mxboard", "export", str(tmp_path), "--json", "--strict"],
                            env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")), capture_output=True,
                            text=True, timeout=120)
    assert strict.returncode == 1 and "corrupt record payload" in strict.stderr and not strict.stdout


@pytest.mark.slow
def test_the_export_takes_one_event_file_and_a_closed_pipe_ends_it_quietly(tmp_path):
    """On b621f0a a single event file was refused ("is not a directory"), which reader.table reads,
    and `| head -5` printed the rows, then a BrokenPipeError traceback."""
    with SummaryWriter(str(tmp_path)) as writer:
        for step in range(20_000):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
    (path,) = [os.path.join(tmp_path, n) for n in os.listdir(tmp_path) if "tfevents" in n]
    one = subprocess.run([sys.executable, "-m", "mxboard", "export", path, "--csv"], capture_output=True, text=True,
                         timeout=120)
    assert one.returncode == 0 and len(one.stdout.splitlines()) == 20_001, one.stderr
    for fmt in ("--csv", "--json"):
        piped = subprocess.run("%s -m mxboard export %s %s | head -c 100" % (sys.executable, tmp_path, fmt),
                               shell=True, capture_output=True, text=True, timeout=120)
        assert len(piped.stdout) == 100 and piped.stderr == "", piped.stderr


def test_a_value_not_of_its_kinds_shape_is_skipped_saying_so_and_the_rest_is_read(tmp_path):
    """A histogram whose tensor is not k x 3, a text of numbers and an empty scalar tensor ended
    `reader.table` with a traceback: each is skipped with one warning naming it (strict: raised),
    and every other value is read."""
    from mxboard import reader
    from mxboard.proto import Summary, TensorProto

    def odd(tag, plugin, tensor):
        value = Summary.Value(tag=tag, tensor=tensor)
        value.metadata.plugin_data.plugin_name = plugin
        return Summary(value=[value])

    flat = TensorProto(dtype=1, float_val=[1.0, 2.0, 3.0, 4.0])
    flat.tensor_shape.dim.add(size=4)
    numbers = TensorProto(dtype=1, float_val=[1.0])
    empty = TensorProto(dtype=1)
    empty.tensor_shape.dim.add(size=0)
    with SummaryWriter(str(tmp_path / "run")) as w:
        w.add_histogram("good", np.arange(10.0), 1)
        w.add_text("good", "words", 1)
        w.add_scalar("good", 0.5, 1)
        w.add_summary(odd("odd_histogram", "histograms", flat), 2)
        w.add_summary(odd("odd_text", "text", numbers), 2)
        w.add_summary(odd("odd_scalar", "scalars", empty), 2)
    for kind, tag in (("histograms", "odd_histogram"), ("text", "odd_text"), ("scalars", "odd_scalar")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = reader.table(tmp_path, kind)
        assert table["tag"] == ["good"], (kind, table["tag"])
        said = [str(w.message) for w in caught if issubclass(w.category, reader.CorruptRecordWarning)]
        assert len(said) == 1 and "%r at step 2 is not a value of the %s kind" % (tag, kind) in said[0], said
        with pytest.raises(reader.DataLossError, match=tag):
            reader.table(tmp_path, kind, strict=True)
