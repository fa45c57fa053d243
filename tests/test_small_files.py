"""Many small event files scanned together (mxboard._reading.small_files, behind
`reader.table(..., "scalars")`; issue 74, item 5): a sweep of many runs of a few points each
reads as each file read alone reads. Its rows are those protobuf parses, file by file; each
tensor scalar is kept by its own file's plugin; a torn file, a corrupt length, a corrupt payload
and a record that is no Event are warned of in the same words and order as when each file is
read alone, and with `strict` the first of them raises; and only the files that the joint pass
cannot frame are scanned alone."""
import importlib
import os
import re
import warnings

import numpy as np
import pytest
from test_scan import protobuf_rows, record_offsets

from mxboard import SummaryWriter, reader
from mxboard._format.events import frame
from mxboard._reading import scan, small_files
from mxboard.errors import DataLossError


def _tensorflow_run(directory, named):
    """A run of float32 tensor scalars, as TensorFlow 2 writes them: the metadata naming the
    scalars plugin in the first event only, or (`named` false) nowhere, so that they are no
    scalars to TensorBoard."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.scalar import metadata as scalar_metadata
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    writer = EventFileWriter(str(directory))
    for step in range(5):
        value = summary_pb2.Summary.Value(tag="loss", tensor=tensor_util.make_tensor_proto(np.float32(step / 7)))
        if step == 0 and named:
            value.metadata.CopyFrom(scalar_metadata.create_summary_metadata("", ""))
        writer.add_event(event_pb2.Event(wall_time=1.7e9 + step, step=step, summary=summary_pb2.Summary(value=[value])))
    writer.close()


def _only_file(directory):
    (name,) = [name for name in os.listdir(directory) if "tfevents" in name]
    return os.path.join(directory, name)


def _damage(path, how):
    """Damage the third record of the file at `path`: its payload or its length, or cut the
    file inside its last record, or add a record that is no Event (its CRCs valid)."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    offsets = record_offsets(data)
    if how == "payload":
        data[offsets[2] + 14] ^= 0xFF
    elif how == "length":
        data[offsets[2]] ^= 0x01
    elif how == "torn":
        data = data[:-3]
    else:
        data[offsets[2]:offsets[2]] = frame(b"\xff\xff\xff")
    with open(path, "wb") as f:
        f.write(bytes(data))


def _sweep(logdir):
    """A sweep of small runs, some damaged, some of tensor scalars; returns the damaged files
    that cannot be framed (read alone)."""
    rng = np.random.default_rng(3)
    for run in range(24):
        with SummaryWriter(str(logdir / ("run%02d" % run))) as w:
            for step in range(int(rng.integers(1, 12))):
                w.add_scalar("loss", float(rng.normal()), step)
                if run % 3 == 0:
                    w.add_scalar("accuracy/with a longer name %d" % run, float(rng.random()), step)
            if run == 5:
                w.add_text("note", "words", 0)
                w.add_histogram("h", rng.normal(size=50), 0)
    # A run resumed in a second file: the steps again, its earlier points hidden.
    with SummaryWriter(str(logdir / "run03")) as w:
        for step in range(4):
            w.add_scalar("loss", float(step), step)
    _tensorflow_run(logdir / "tensors_named", True)
    _tensorflow_run(logdir / "tensors_unnamed", False)
    os.makedirs(logdir / "empty")
    open(logdir / "empty" / "events.out.tfevents.0.empty", "wb").close()
    unframed = []
    for run, how in (("run07", "payload"), ("run11", "length"), ("run13", "torn"), ("run17", "no event"),
                     ("run20", "payload")):
        path = _only_file(logdir / run)
        _damage(path, how)
        if how in ("length", "torn"):
            unframed.append(path)
    return unframed


def _alone(logdir):
    """The rows (run, tag, step, wall, value) of every file read alone by protobuf, in order, and
    the warnings of reading them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = protobuf_rows(logdir)
    return rows, [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize("sizes", ["default", "small batches"])
def test_small_files_read_together_are_each_file_read_alone(tmp_path, monkeypatch, sizes):
    logdir = tmp_path / "sweep"
    unframed = _sweep(logdir)
    if sizes == "small batches":
        # Batches of a few files, and some files too big for one: read alone between them.
        monkeypatch.setattr(small_files, "BATCH", 900)
        monkeypatch.setattr(small_files, "SMALL", 500)
    alone = []
    real = scan.scan_file
    monkeypatch.setattr(scan, "scan_file", lambda path, *args, **kwargs: alone.append(path) or real(path, *args,
                                                                                                     **kwargs))
    rows, expected = _alone(logdir)
    assert any(tag == "loss" and run == "tensors_named" for run, tag, *_ in rows)
    assert not any(run == "tensors_unnamed" for run, *_ in rows)
    for raw, shown in ((True, rows), (False, reader._shown(rows))):
        alone.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = reader.table(logdir, "scalars", raw=raw)
        assert [(w.category, str(w.message)) for w in caught] == expected
        got = list(zip(*(table[name] for name in reader.KINDS["scalars"])))
        assert [r[:4] for r in got] == [r[:4] for r in shown]
        assert np.array_equal(np.array([r[4] for r in got]), np.array([r[4] for r in shown]), equal_nan=True)
        # An empty file is read alone too (a size of 0 may be no size: /proc's files).
        empty = [path for path in reader.event_files(logdir) if os.path.getsize(path) == 0]
        if sizes == "default":
            assert alone == [path for path in reader.event_files(logdir) if path in unframed + empty]
        else:
            big = [path for path in reader.event_files(logdir) if os.path.getsize(path) > 500]
            assert set(unframed + empty) <= set(alone) <= set(unframed + big + empty) and set(big) <= set(alone)
    assert len(reader._shown(rows)) < len(rows)
    # Each damage was said, the file named with the byte or record it is at.
    said = "\n".join(message for _, message in expected)
    for run in ("run07", "run11", "run13", "run17", "run20"):
        assert os.path.join("sweep", run) in said


def test_strict_raises_at_the_first_damaged_file_as_it_alone_does(tmp_path):
    logdir = tmp_path / "sweep"
    _sweep(logdir)
    first = None
    for path in reader.event_files(logdir):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                list(reader.read_events(path, strict=True))
        except DataLossError as exc:
            first = str(exc)
            break
    assert first is not None and "run07" in first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(DataLossError) as raised:
            reader.table(logdir, "scalars", strict=True)
    assert str(raised.value) == first


def test_a_sweep_is_scanned_in_one_pass(tmp_path, monkeypatch):
    """3,000 runs of a few points took 3,000 scans (1.7 to 5 ms of numpy each): they take one."""
    for run in range(300):
        with SummaryWriter(str(tmp_path / ("run%03d" % run))) as w:
            for step in range(3):
                w.add_scalar("loss", run + step / 10, step)
    joint, real = [], scan.scan_together
    monkeypatch.setattr(small_files, "scan_together", lambda pieces: joint.append(len(pieces)) or real(pieces))
    table = reader.table(tmp_path, "scalars")
    assert joint == [300]
    assert len(table["value"]) == 900 and table["run"][::3] == ["run%03d" % run for run in range(300)]
    assert table["value"][:4] == [0.0, np.float32(0.1), np.float32(0.2), 1.0]


def _collected(logdir, tags):
    """What the report collects of `logdir` (the tags `tags` finds): every field, each series'
    columns as lists."""
    # The module, which mxboard.report's function of the same name hides.
    collect = importlib.import_module("mxboard.report.collect")
    found = collect.collect(str(logdir), tags=tags and re.compile(tags))
    fields = {name: value for name, value in vars(found).items() if name not in ("scalars", "seconds")}
    series = [(key, [np.asarray(column).tolist() for column in found.scalars[key]]) for key in found.scalars]
    return series, repr(sorted(fields.items()))


@pytest.mark.parametrize("sizes, tags", [("default", None), ("small batches", None), ("default", "^(loss|acc)")])
def test_the_report_collects_a_sweep_scanned_together_as_each_file_alone(tmp_path, monkeypatch, sizes, tags):
    """The report reads a sweep's small files in batches, as the table does: its series (in their
    order), points, notes and every other kind are those of each file read alone."""
    _sweep(tmp_path)
    if sizes == "small batches":
        monkeypatch.setattr(small_files, "BATCH", 2000)
    together = _collected(tmp_path, tags)
    monkeypatch.setattr(small_files, "SMALL", -1)
    alone = _collected(tmp_path, tags)
    assert together[0] == alone[0]
    assert together[1] == alone[1]
    assert len(together[0]) > 20
