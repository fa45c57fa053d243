"""The vectorized reading of event files (mxboard._reading.scan, used by the reader and the report): every record
it decodes by numpy is what protobuf parses from the same bytes, every other record is handed on
whole, in any writer's files and across window boundaries; a corrupt payload, a corrupt length
and a torn end are warned of as mxboard.reader warns of them, and the rest is read."""
import os
import pathlib
import signal
import warnings

import numpy as np
import pytest

from mxboard import SummaryWriter, reader
from mxboard._reading.scan import scan_file
from mxboard.proto import Event


def _by_scan(path, window_bytes):
    """{record number: (tag, step, wall, value)} of the decoded scalars, {number: Event} of the rest."""
    decoded, others = {}, {}
    for window in scan_file(path, window_bytes):
        for ids, numbers, steps, walls, values in window.scalars + window.tensors:
            for i, n, s, w, v in zip(ids.tolist(), numbers.tolist(), steps.tolist(), walls.tolist(), values.tolist()):
                assert n not in decoded
                decoded[n] = (window.tags[i], s, w, v)
        for n, payload in window.others:
            others[n] = Event.FromString(payload)
    return decoded, others


def _same(path, window_bytes):
    """The scan's records, in order, are the Events protobuf parses (the corrupt ones skipped by both)."""
    decoded, others = _by_scan(path, window_bytes)
    assert not set(decoded) & set(others)
    events = list(reader.read_events(path))
    numbers = sorted(list(decoded) + list(others))
    assert len(numbers) == len(events)
    for n, event in zip(numbers, events):
        if n in others:
            assert others[n] == event
            continue
        tag, step, wall, value = decoded[n]
        (one,) = event.summary.value
        assert (one.tag, event.step, event.wall_time) == (tag, step, wall)
        logged = one.simple_value if one.WhichOneof("value") == "simple_value" else \
            float(reader._ndarray(one.tensor).reshape(-1)[0])
        assert np.float32(logged) == np.float32(value) or (np.isnan(logged) and np.isnan(value))
    simple = [e for e in events if e.HasField("summary") and len(e.summary.value) == 1
              and e.summary.value[0].WhichOneof("value") == "simple_value"
              and not e.summary.value[0].HasField("metadata")]
    tensors = [e for e in events if e.HasField("summary") and len(e.summary.value) == 1
               and e.summary.value[0].WhichOneof("value") == "tensor"
               and e.summary.value[0].metadata.plugin_data.plugin_name == "scalars"]
    assert len(decoded) >= len(simple) + len(tensors)  # every scalar Event takes the vectorized path
    return decoded, others


def _writers(logdir):
    rng = np.random.default_rng(1)
    with SummaryWriter(str(logdir / "mxboard")) as w:
        for step in [0, 1, 127, 128, 16383, 16384, 2 ** 35, 2 ** 35 + 1]:
            for tag in ("loss", "a/much/longer/tag/name/ü", "x"):
                w.add_scalar(tag, float(rng.normal()), step)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the NaN, said
            w.add_scalar("special", float("nan"), 3)
            w.add_scalar("special", float("inf"), 4)
        w.add_scalar("special", 0.0, 5)
        w.add_histogram("h", rng.normal(size=100), 1)
        w.add_text("t", "words", 1)
        for step in range(40):
            w.add_scalar("loss", 1.0 / (step + 1), step)  # a resumed run: the steps again
    written = {"mxboard": 67}  # the scalars of each writer's files (3 x 8, 3 special, 40 resumed)
    try:  # tensorboardX and torch where they are installed (not in the plain environments)
        from tensorboardX import SummaryWriter as TensorboardX
    except ImportError:
        pass
    else:
        with TensorboardX(str(logdir / "tensorboardx")) as w:
            for step in range(200):
                w.add_scalar("loss", 1.0 / (step + 1), step)
                w.add_scalars("pair", {"a": step, "b": -step}, step)
        written["tensorboardx"] = 600
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.scalar import metadata as scalar_metadata
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    writer = EventFileWriter(str(logdir / "tensorflow"))  # TensorFlow 2's form: tensors, the metadata first only
    for step in range(100):
        value = summary_pb2.Summary.Value(tag="loss", tensor=tensor_util.make_tensor_proto(np.float32(1 / (step + 1))))
        if step == 0:
            value.metadata.CopyFrom(scalar_metadata.create_summary_metadata("", ""))
        writer.add_event(event_pb2.Event(wall_time=1.7e9 + step, step=step, summary=summary_pb2.Summary(value=[value])))
    writer.close()
    written["tensorflow"] = 100
    try:
        from torch.utils.tensorboard import SummaryWriter as Torch
    except ImportError:
        return written
    with Torch(str(logdir / "torch")) as w:
        for step in range(200):
            w.add_scalar("loss", 1.0 / (step + 1), step, new_style=step % 2 == 0)  # new_style: a tensor scalar
    written["torch"] = 200
    return written


@pytest.mark.parametrize("window_bytes", [1 << 20, 333, 64])
def test_the_decoded_scalars_are_what_protobuf_parses_in_every_writers_files(tmp_path, window_bytes):
    written = _writers(tmp_path)
    paths = reader.event_files(tmp_path)
    assert {os.path.relpath(path, tmp_path).split(os.sep)[0] for path in paths} == set(written)
    assert sum(len(_same(path, window_bytes)[0]) for path in paths) == sum(written.values())


def _file(tmp_path):
    with SummaryWriter(str(tmp_path / "run")) as w:
        for step in range(300):
            w.add_scalar("loss", 1.0 / (step + 1), step)
    (path,) = reader.event_files(tmp_path)
    return path


def _warnings(read):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = read()
    return result, [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize("damage", ["payload", "length", "torn"])
def test_damage_is_warned_of_as_the_reader_warns_and_the_rest_is_read(tmp_path, damage):
    path = _file(tmp_path)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    offsets = record_offsets(data)
    if damage == "payload":
        data[offsets[150] + 14] ^= 0xFF  # a byte of the 150th record's wall time
    elif damage == "length":
        data[offsets[150]] ^= 0x01
    else:
        data = data[:-5]
    with open(path, "wb") as f:
        f.write(bytes(data))
    (decoded, _), said = _warnings(lambda: _by_scan(path, 1 << 20))
    _, expected = _warnings(lambda: list(reader.read_records(path)))
    assert said and said == expected
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(path, 1 << 20)
    assert len(decoded) > (100 if damage == "length" else 250)
    assert os.path.getsize(path)  # untouched by reading


def record_offsets(data):
    """Where each record of an event file's bytes `data` starts, by the lengths alone."""
    offsets, at = [], 0
    while at < len(data):
        offsets.append(at)
        at += 16 + int.from_bytes(data[at:at + 8], "little")
    return offsets


def protobuf_rows(logdir):
    """The scalar rows (run, tag, step, wall, value) of every file below `logdir`, each Event
    parsed by protobuf, record by record, in file order."""
    rows = []
    for path in reader.event_files(logdir):
        run = reader.run_of(str(logdir), os.path.dirname(path))
        plugins = {}
        for event in reader.read_events(path):
            for value in event.summary.value if event.HasField("summary") else ():
                if value.HasField("metadata"):
                    plugins[value.tag] = value.metadata.plugin_data.plugin_name or plugins.get(value.tag)
                row = reader._row("scalars", value, plugins.get(value.tag))
                if row is not None:
                    rows.append((run, value.tag, event.step, event.wall_time) + row)
    return rows


def test_the_readers_scalars_table_is_the_one_protobuf_gives(tmp_path):
    """mxboard.reader.table(logdir, "scalars") reads by the vectorized path: its rows, shown and
    raw, are those of every Event parsed by protobuf (tensor scalars, a resumed run, NaN)."""
    written = _writers(tmp_path)
    rows = protobuf_rows(tmp_path)
    for raw, expected in ((True, rows), (False, reader._shown(rows))):
        table = reader.table(tmp_path, "scalars", raw=raw)
        got = list(zip(*(table[name] for name in reader.KINDS["scalars"])))
        assert len(got) == len(expected) > sum(written.values()) // 2  # every writer's scalars, most of them
        assert [r[:4] for r in got] == [r[:4] for r in expected]
        assert np.array_equal(np.array([r[4] for r in got]), np.array([r[4] for r in expected]), equal_nan=True)
    assert len(reader._shown(rows)) < len(rows)  # the resumed run's hidden points


def _records(data):
    """The byte offset and payload length of each record of an event file's bytes."""
    found, at = [], 0
    while at < len(data):
        length = int.from_bytes(data[at:at + 8], "little")
        found.append((at, length))
        at += 16 + length
    return found


@pytest.mark.parametrize("kind", ["scalar step", "text", "histogram", "hparams"])
@pytest.mark.parametrize("window_bytes", [1 << 20, 64])
def test_a_small_record_of_any_kind_is_believed_only_after_its_crc(tmp_path, kind, window_bytes):
    """A small record that is not a simple scalar, or a scalar whose damage changes its layout,
    goes to protobuf only once its CRC is checked: a flipped bit in the step of the step-500
    record of a 1,000-point curve hid 499 points (read as a point at step 0), with no warning."""
    with SummaryWriter(str(tmp_path / "run")) as w:
        for step in range(1000):
            w.add_scalar("loss", float(step), step)
        w.add_text("note", "hello", 1)
        w.add_histogram_raw("h", 0, 2, 2, 3, 5, [1, 2], [1, 1], 1)
        w.add_hparams({"lr": 0.1}, {"loss": None}, in_run=True)
    (path,) = reader.event_files(tmp_path)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    damaged = None
    for at, length in _records(data):
        event = Event.FromString(bytes(data[at + 12:at + 12 + length]))
        values = event.summary.value if event.HasField("summary") else ()
        plugin = values[0].metadata.plugin_data.plugin_name if values else ""
        if kind == "scalar step" and event.step == 500 and values and values[0].tag == "loss":
            # the step's first byte: its high bit cleared, the varint ends a byte early
            step_at = at + 12 + bytes(data[at + 12:at + 12 + length]).index(b"\x10\xf4\x03") + 1
            data[step_at] ^= 0x80
            damaged = at
        elif (kind == "text" and plugin == "text") or (kind == "histogram" and values and values[0].tag == "h") or \
                (kind == "hparams" and plugin == "hparams" and damaged is None):
            data[at + 12 + length - 2] ^= 0x04
            damaged = at
    assert damaged is not None
    with open(path, "wb") as f:
        f.write(bytes(data))
    (decoded, others), said = _warnings(lambda: _by_scan(path, window_bytes))
    _, expected = _warnings(lambda: list(reader.read_records(path)))
    assert said == expected == [(reader.CorruptRecordWarning, "%s: corrupt record payload at byte %d; the record is "
                                 "skipped" % (path, damaged))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = reader.table(tmp_path, "scalars")
        assert table["step"] == [s for s in range(1000) if not (kind == "scalar step" and s == 500)]
        with pytest.raises(reader.DataLossError, match="byte %d" % damaged):
            reader.table(tmp_path, "scalars", strict=True)
        from conftest import tb_events

        # TensorBoard's Python loader stops at a corrupt record (its next reload starts there
        # again): the events before it are the same
        told = tb_events(path)
        assert 0 < len(told) <= len(decoded) + len(others)
        assert [(e.wall_time, e.step) for e in told] == [
            (e.wall_time, e.step) for e in list(reader.read_events(path))[:len(told)]]


def test_the_scans_work_does_not_grow_with_the_number_of_tags(tmp_path, monkeypatch):
    """The records of one layout are decoded together whatever their tag: the number of layouts
    parsed in Python, and the scan's numpy passes, are the same for 20 tags as for 2,000 (the
    scan made a pass per tag and window: 200,000 events took 0.16 s at 20 tags, 4.37 s at 20,000)."""
    from mxboard._reading import scan

    parsed = []
    real = scan._layout
    monkeypatch.setattr(scan, "_layout", lambda p: parsed.append(p) or real(p))
    counts = {}
    for tags in (20, 2000):
        logdir = tmp_path / str(tags)
        with SummaryWriter(str(logdir)) as w:
            for step in range(20000 // tags):
                for t in range(tags):
                    w.add_scalar("tag/%04d" % t, float(step * t), step)
        (path,) = reader.event_files(logdir)
        parsed.clear()
        rows = 0
        for window in scan_file(path, 1 << 20):
            rows += sum(len(chunk[0]) for chunk in window.scalars)
            assert len(window.tags) == tags
        counts[tags] = len(parsed)
        assert rows == 20000
        table = reader.table(logdir, "scalars")
        assert len(table["tag"]) == 20000 and len(set(table["tag"])) == tags
    # a few layouts a window (the step's length, the file's first record), whatever the tags
    assert counts[2000] <= counts[20] + 2 <= 12, counts


def _scan_as_builtins(found):
    """scan_together's answer as builtins: each chunk's rows, the others, the starts, the firsts,
    the corrupt offsets."""
    if found is None:
        return None
    window, firsts, corrupt = found
    chunks = [[column.tolist() for column in chunk] for chunk in window.scalars + window.tensors]
    return (chunks, window.tags, window.plugins, [[a.tolist() for a in pair] for pair in window.named],
            window.others, window.records, window.starts.tolist(), firsts.tolist(), corrupt)


def _pieces(tmp_path):
    """Batches of whole files from several writers (scalars, a histogram, text), one with a
    damaged payload, and one that cannot be framed together (a torn end)."""
    files = []
    for number in range(6):
        with SummaryWriter(str(tmp_path / ("run%d" % number))) as writer:
            for step in range(40):
                writer.add_scalar("loss", step / (number + 1), step)
                writer.add_scalar("acc/%d" % number, 1 - step / 40, step)
                if step % 10 == 0:
                    writer.add_histogram("w", np.arange(10.0) * step, step)
                    writer.add_text("note", "step %d" % step, step)
        (name,) = os.listdir(str(tmp_path / ("run%d" % number)))
        with open(str(tmp_path / ("run%d" % number) / name), "rb") as f:
            files.append(f.read())
    damaged = bytearray(files[2])
    damaged[len(damaged) // 2] ^= 0x10
    return [files[:3], files[3:] + [bytes(damaged)], [files[0], files[1][:-7]]]


def _children_since(before):
    """This process's children not among `before` (their pids), alive: those a test started (a
    session's store server, started by another test of this worker, is among `before`)."""
    import psutil

    return [child for child in psutil.Process().children() if child.pid not in before
            and child.is_running() and child.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.slow
def test_a_scan_process_answers_what_scan_together_answers_here_and_its_child_ends_with_it(tmp_path):
    """ScanProcess (the loader's second core) answers each batch as scan_together does in this
    process, in the order submitted, a Ctrl-C at the terminal notwithstanding; its child is gone
    once it is closed."""
    import psutil

    from mxboard._reading.scan import scan_together
    from mxboard._reading.scan_process import ScanProcess

    batches = _pieces(tmp_path)
    before = {child.pid for child in psutil.Process().children()}
    with ScanProcess() as scanner:
        (child,) = _children_since(before)
        # A Ctrl-C at the terminal reaches the child too: it goes on (the parent decides).
        assert _scan_as_builtins(scanner.submit(batches[0]).result(timeout=60)) is not None
        child.send_signal(signal.SIGINT)
        futures = [scanner.submit(pieces) for pieces in batches]
        answers = [_scan_as_builtins(future.result(timeout=60)) for future in futures]
        assert child.is_running() and child.status() != psutil.STATUS_ZOMBIE
    assert answers == [_scan_as_builtins(scan_together(pieces)) for pieces in batches]
    assert answers[1] is not None and answers[1][-1] and answers[2] is None
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert not _children_since(before)


@pytest.mark.slow
def test_a_scan_process_whose_child_died_or_never_started_scans_here(tmp_path, monkeypatch, caplog):
    """Where the child is killed, or cannot start (no such Python, or a frozen application's
    executable), each batch is scanned in this process: the answers are the same, and why is said."""
    import logging
    import sys

    import psutil

    from mxboard._reading import scan_process
    from mxboard._reading.scan import scan_together

    batches = _pieces(tmp_path)
    expected = [_scan_as_builtins(scan_together(pieces)) for pieces in batches]
    caplog.set_level(logging.INFO, "mxboard._reading.scan_process")
    before = {child.pid for child in psutil.Process().children()}
    with scan_process.ScanProcess() as scanner:
        assert _scan_as_builtins(scanner.submit(batches[0]).result(timeout=60)) == expected[0]
        (child,) = _children_since(before)
        child.kill()
        child.wait(30)
        assert [_scan_as_builtins(scanner.submit(pieces).result(timeout=60)) for pieces in batches] == expected
    assert any("child process ended" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    with scan_process.ScanProcess() as scanner:
        assert [_scan_as_builtins(scanner.submit(pieces).result(timeout=60)) for pieces in batches] == expected
    assert any("cannot start" in r.getMessage() for r in caplog.records)
    # A frozen application (PyInstaller, say): its executable would run the application itself.
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    with scan_process.ScanProcess() as scanner:
        assert not _children_since(before)
        assert [_scan_as_builtins(scanner.submit(pieces).result(timeout=60)) for pieces in batches] == expected
    assert any("no Python to run" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_a_scan_process_started_in_a_directory_imports_nothing_from_it(tmp_path, monkeypatch):
    """The child starts isolated: a module planted in the directory the server starts in (a shared
    directory, say) is not imported by it."""
    from mxboard._reading.scan import scan_together
    from mxboard._reading.scan_process import ScanProcess

    batches = _pieces(tmp_path / "runs")
    planted = tmp_path / "planted"
    planted.mkdir()
    for name in ("pickle", "sys", "struct", "numpy"):
        (planted / (name + ".py")).write_text("open(%r, 'w').write('imported')\n" % str(tmp_path / (name + ".ran")))
    monkeypatch.chdir(planted)
    # As a user's shell has it (the tests' own processes are started with it set).
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    with ScanProcess() as scanner:
        assert _scan_as_builtins(scanner.submit(batches[0]).result(timeout=60)) == \
            _scan_as_builtins(scan_together(batches[0]))
    assert not list(tmp_path.glob("*.ran"))


def _point(step, value, tag="loss"):
    """One framed record of a point of `tag`."""
    from mxboard._format.events import frame
    from mxboard.proto import Summary

    return frame(Event(step=step, wall_time=1.7e9, summary=Summary(value=[
        Summary.Value(tag=tag, simple_value=value)])).SerializeToString())


def _many_runs(directory, count, filler=0):
    """`count` runs, each of one small event file: `filler` points of "acc", then one point (step 3)
    of "loss"."""
    from mxboard._format.events import frame

    head = frame(Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString()) + b"".join(
        _point(step, 0.5, "acc") for step in range(filler))
    for number in range(count):
        (directory / ("run%04d" % number)).mkdir()
        (directory / ("run%04d" % number) / "events.out.tfevents.1").write_bytes(head + _point(3, number / 7))


@pytest.mark.slow
def test_a_first_pass_of_many_runs_starts_the_scanners_child_as_it_lists_them_and_ends_it(tmp_path, monkeypatch):
    """A first pass on a local disk that lists 2,000 runs or more starts the scanner's child while
    it lists them (its start then costs the pass nothing) and has it scan the runs, however little
    they hold. Every run is read, and no child is left once the pass ends."""
    import psutil

    from mxboard._reading.scan_process import ScanProcess
    from tensorboard_bundle.loader import ahead, logdir

    _many_runs(tmp_path, ahead.SPREAD_RUNS)
    started = []
    monkeypatch.setattr(logdir, "ScanProcess", lambda: started.append(ScanProcess()) or started[-1])
    before = {child.pid for child in psutil.Process().children()}
    loaded = logdir.Logdir(str(tmp_path))
    loaded.reload()
    assert len(started) == 1 and started[0]._process is None
    assert not _children_since(before)
    assert len(loaded.runs) == ahead.SPREAD_RUNS
    assert all(run.index.series["loss"].columns.view()[0].tolist() == [3] for run in loaded.runs.values())


@pytest.mark.slow
def test_a_first_pass_started_ahead_takes_the_scans_made_before_it_asked(tmp_path, monkeypatch):
    """The launcher's scanning process (loader/ahead.py), started before the pass: the pass takes
    it (none other is started), the batches it sends were scanned ahead (their bytes not sent),
    and every run holds what a pass without it reads. Runs written after the child read them (a
    point more; the same size, another value) are read as they are now."""
    import time

    from tensorboard_bundle.loader import ahead, logdir

    # About 140 runs a batch: 15 batches of the first 2,000 runs, 5 of the rest.
    _many_runs(tmp_path, 2_600, filler=200)
    ahead.start(str(tmp_path))
    scanner = ahead._started[str(tmp_path)]
    time.sleep(1.5)
    grown = tmp_path / "run0007" / "events.out.tfevents.1"
    grown.write_bytes(grown.read_bytes() + _point(4, 0.5))
    rewritten = tmp_path / "run2100" / "events.out.tfevents.1"
    before = rewritten.read_bytes()
    time.sleep(0.05)
    version = before[:before.index(_point(0, 0.5, "acc"))]
    rewritten.write_bytes(version + b"".join(_point(step, 0.25, "acc") for step in range(200)) + _point(3, -1.0))
    assert len(rewritten.read_bytes()) == len(before) != rewritten.read_bytes()
    monkeypatch.setattr(logdir, "ScanProcess", lambda: pytest.fail("a second scanning process was started"))
    with_ahead = logdir.Logdir(str(tmp_path))
    with_ahead.reload()
    assert not ahead._started and scanner._process is None
    monkeypatch.undo()
    plain = logdir.Logdir(str(tmp_path))
    plain.reload()

    def held(loaded):
        return {(name, tag): [column.tolist() for column in series.columns.view()]
                for name, run in loaded.runs.items() for tag, series in run.index.series.items()}

    assert held(with_ahead) == held(plain)
    assert held(plain)["run0007", "loss"][0] == [3, 4]
    assert held(plain)["run2100", "loss"][2] == [-1.0]
    assert held(plain)["run2100", "acc"][2] == [0.25] * 200
    # Every batch but the two holding a file written since.
    assert scanner.scanned_ahead >= 15, scanner.scanned_ahead


def test_scans_ahead_answer_only_the_batches_planned_and_unchanged_and_stop_where_the_order_differs(tmp_path):
    """mxboard._reading.scan_ahead in this process: a planned batch asked for with the lengths
    read is answered with its scan made ahead (as scan_together makes it); one of a file grown
    since, or asked with other lengths, is not (the asker then sends its bytes); a batch never
    planned stops the scans ahead, and nothing is answered from them after."""
    from mxboard._reading.scan import scan_together
    from mxboard._reading.scan_ahead import Ahead, Plan

    _many_runs(tmp_path, 60, filler=200)
    ahead = Ahead(Plan(str(tmp_path), 2_000, 64 << 10, 1 << 20, 1 << 20))
    with ahead._lock:
        assert ahead._lock.wait_for(lambda: ahead._scanned == len(ahead._numbers) > 3, timeout=60)
    batches = sorted(ahead._numbers, key=ahead._numbers.get)

    def lengths(paths):
        return [os.path.getsize(path) for path in paths]

    def pieces(paths):
        return [pathlib.Path(path).read_bytes() for path in paths]

    first = batches[0]
    scanned, found = ahead.answer(first, lengths(first))
    assert scanned and _scan_as_builtins(found) == _scan_as_builtins(scan_together(pieces(first)))
    with open(batches[1][0], "ab") as f:
        f.write(_point(4, 0.5))
    assert ahead.answer(batches[1], lengths(batches[1])) == (False, None)
    assert ahead.answer(batches[2], [1] + lengths(batches[2])[1:]) == (False, None)
    assert ahead.answer(batches[3][1:], lengths(batches[3][1:])) == (False, None)
    assert ahead._stopped
    assert ahead.answer(batches[-1], lengths(batches[-1])) == (False, None)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_scans_ahead_that_wait_on_a_slow_share_linked_below_the_logdir_let_the_asker_go(tmp_path, monkeypatch):
    """A logdir on a local disk holds a link to a share behind a slow filesystem (tests/slow_fs.py,
    0.2 s a call): the scans ahead, still listing it, stop once an asker has waited WAIT seconds,
    and the asker is told to send its bytes, not held for the listing."""
    import time

    from slow_fs import SlowFilesystem, why_unavailable

    from mxboard._reading import scan_ahead

    reason = why_unavailable()
    if reason is not None:
        pytest.skip("needs a FUSE mount (make test-tools, pip install '.[test]'): " + reason)
    share, logdir = tmp_path / "share", tmp_path / "logdir"
    share.mkdir()
    logdir.mkdir()
    _many_runs(share, 40, filler=20)
    _many_runs(logdir, 4, filler=20)
    monkeypatch.setattr(scan_ahead, "WAIT", 0.5)
    with SlowFilesystem(share, latency=0.2) as fs:
        (logdir / "linked").symlink_to(fs.mountpoint)
        ahead = scan_ahead.Ahead(scan_ahead.Plan(str(logdir), 2_000, 1 << 20, 1 << 20, 1 << 20))
        paths = tuple(str(logdir / ("run%04d" % number) / "events.out.tfevents.1") for number in range(4))
        started = time.monotonic()
        assert ahead.answer(paths, [os.path.getsize(path) for path in paths]) == (False, None)
        assert time.monotonic() - started < 5 and ahead._stopped
