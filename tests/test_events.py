"""Event files: framing, CRC, names, and the reader."""
import os
import pathlib
import re
import struct
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import event_files, run_python, tb_events, tb_scalars
from mxboard import SummaryWriter
from mxboard._format._crc32c import _crc32c_python, crc32c, masked_crc32c, masked_crc32c_rows
from mxboard._format.events import frame
from mxboard.reader import CorruptRecordWarning, DataLossError, TornRecordWarning, read_events, read_records
from mxboard.storage import LocalEventFile as EventFile


def test_crc32c_known_answers():
    # RFC 3720 B.4 and the classic check value
    assert crc32c(b"123456789") == _crc32c_python(b"123456789") == 0xE3069283
    assert crc32c(bytes(32)) == _crc32c_python(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == _crc32c_python(b"\xff" * 32) == 0x62A8AB43


def test_the_plain_install_has_the_c_crc32c():
    from mxboard._format._crc32c import IMPLEMENTATION

    assert IMPLEMENTATION == "google-crc32c"  # a dependency: `pip install mxboard` has it


def test_every_kind_of_record_has_the_same_crc_with_and_without_the_c_implementation(logdir):
    """Every record of every summary kind (and scalar rows, encoded in bulk), written with the C
    CRC32C, checks against the pure-Python one: header and payload."""
    import numpy as np

    from mxboard._format.events import RECORD_HEADER, RECORD_TRAILER

    rng = np.random.default_rng(0)
    with SummaryWriter(logdir) as w:
        for step in range(3):
            w.add_scalar("s", float(step), step)
            w.add_scalar("g", {"a": 1.0, "b": 2.0}, step)
        w.add_histogram("h", rng.normal(size=1000), 0)
        w.add_histogram_raw("r", 0, 3, 6, 9, 17, [1, 2, 3], [1, 2, 3])
        w.add_image("i", rng.random((3, 64, 64)), 0)
        w.add_images("n", rng.random((4, 3, 8, 8)), 0)
        w.add_image_with_boxes("b", rng.random((3, 16, 16)), [[1, 1, 8, 8]], labels=["x"])
        w.add_video("v", rng.random((4, 3, 8, 8)), 0)
        w.add_audio("a", np.sin(np.arange(16000) / 10), sample_rate=16000)
        w.add_text("t", "**text**")
        w.add_pr_curve("p", rng.integers(0, 2, 50), rng.random(50))
        w.add_pr_curve_raw("q", [3, 1], [2, 0], [0, 2], [0, 2], [0.6, 1.0], [1.0, 0.3], num_thresholds=2)
        w.add_mesh("m", rng.random((5, 3)), colors=np.full((5, 3), 7))
        w.add_hparams({"lr": 0.1}, {"hparam/acc": 0.5})
        w.add_custom_scalars_multilinechart(["s"])
    checked = 0
    for path in event_files(logdir) + event_files(logdir + "/g/a") + event_files(next(
            os.path.join(logdir, d) for d in os.listdir(logdir) if d[0].isdigit())):
        data = pathlib.Path(path).read_bytes()
        offset = 0
        while offset < len(data):
            length, length_crc = RECORD_HEADER.unpack_from(data, offset)
            assert length_crc == _masked_python(data[offset:offset + 8])
            payload = data[offset + 12:offset + 12 + length]
            assert RECORD_TRAILER.unpack_from(data, offset + 12 + length)[0] == _masked_python(payload)
            offset += 16 + length
            checked += 1
    assert checked >= 20  # every record of the three files


def _masked_python(data):
    crc = _crc32c_python(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_row_crc_matches_bytewise_crc():
    import numpy as np

    rows = np.random.default_rng(0).integers(0, 256, (300, 37), dtype=np.uint8)
    rows[:, 5:20] = rows[0, 5:20]  # constant columns, as in scalar records
    varying = [c for c in range(37) if not 5 <= c < 20]
    assert masked_crc32c_rows(rows, varying).tolist() == [masked_crc32c(r.tobytes()) for r in rows]


def test_record_framing_is_tfrecord():
    record = frame(b"hello")
    length, length_crc = struct.unpack("<QI", record[:12])
    assert length == 5 and length_crc == masked_crc32c(record[:8])
    assert record[12:17] == b"hello"
    assert struct.unpack("<I", record[17:])[0] == masked_crc32c(b"hello")


def test_first_record_is_file_version_and_names_carry_host_pid_counter(logdir):
    with SummaryWriter(logdir, filename_suffix=".mx"):
        pass
    (path,) = event_files(logdir)
    name = os.path.basename(path)
    assert name.startswith("events.out.tfevents.") and name.endswith(".mx")
    secs, host, pid, counter = name[len("events.out.tfevents."):-len(".mx")].rsplit(".", 3)
    assert secs.isdigit() and pid == str(os.getpid()) and counter.isdigit() and host
    first = tb_events(path)[0]
    assert first.file_version == "brain.Event:2" and first.wall_time > 0


def test_two_writers_in_one_second_get_two_files_and_keep_all_data(logdir):
    a, b = SummaryWriter(logdir), SummaryWriter(logdir)
    a.add_scalar("a", 1.0, 1)
    b.add_scalar("b", 2.0, 1)
    a.close()
    b.close()
    files = event_files(logdir)
    assert len(files) == 2
    secs = {os.path.basename(f).split(".")[3] for f in files}
    tags = sorted(v.tag for f in files for e in tb_events(f) for v in e.summary.value)
    assert tags == ["a", "b"], secs


def test_a_name_clash_picks_another_name_and_never_overwrites(tmp_path, monkeypatch):
    # a restarted container: same host, same pid, same second, counter back at 0
    import mxboard._format.events as events
    import mxboard.storage.local as local

    taken, free = events.event_file_name(), events.event_file_name()
    (tmp_path / taken).write_bytes(b"first")
    names = iter([taken, free])
    monkeypatch.setattr(local, "event_file_name", lambda suffix="": next(names))
    second = EventFile(str(tmp_path))
    assert os.path.basename(second.path) == free
    assert (tmp_path / taken).read_bytes() == b"first"
    monkeypatch.setattr(local, "event_file_name", lambda suffix="": taken)
    with pytest.raises(FileExistsError, match="no free event file name"):  # bounded, never a hang
        EventFile(str(tmp_path))


def _written(logdir):
    with SummaryWriter(logdir) as w:
        for step in range(5):
            w.add_scalar("x", step, step)
    (path,) = event_files(logdir)
    return path


def test_reader_reads_what_tensorboard_reads(logdir):
    path = _written(logdir)
    ours = [(v.tag, e.step, v.simple_value) for e in read_events(logdir) for v in e.summary.value]
    assert ours == tb_scalars(path) == [("x", s, float(s)) for s in range(5)]


@pytest.mark.parametrize("cut", [1, 11, 13, 20])
def test_reader_tolerates_and_reports_a_torn_last_record(logdir, cut):
    path = _written(logdir)
    data = pathlib.Path(path).read_bytes()
    with open(path, "wb") as f:
        f.write(data[:-cut])
    with pytest.warns(TornRecordWarning, match="incomplete"):
        events = list(read_events(path))
    assert [e.step for e in events[1:]] == [0, 1, 2, 3]
    assert len(tb_events(path)) == 5  # TensorBoard agrees: the torn one is dropped


@pytest.mark.parametrize("claims", [1 << 40, 1 << 62])
def test_a_header_claiming_more_than_any_file_holds_is_a_torn_record_and_the_export_goes_on(tmp_path, capsys, claims):
    """An 80-byte file whose header claims 2^40 or 2^62 bytes (its length's checksum right): on
    b621f0a the reader and `python -m mxboard export` died with MemoryError, good runs included.
    It is a torn record (what the file has is read, a window at a time), and the other runs are
    exported."""
    from mxboard._format.events import record_header

    good = _written(str(tmp_path / "good"))
    bad = tmp_path / "bad" / "events.out.tfevents.1.host.1.000000"
    bad.parent.mkdir()
    bad.write_bytes(record_header(claims) + b"\0" * 68)
    with pytest.warns(TornRecordWarning, match="incomplete"):
        assert list(read_records(str(bad))) == []
    from mxboard.__main__ import main

    with pytest.warns(TornRecordWarning, match="incomplete"):
        main(["export", str(tmp_path), "--csv"])
    assert capsys.readouterr().out.count("good") == 5
    assert tb_scalars(good) == [("x", s, float(s)) for s in range(5)]


@pytest.mark.parametrize("where", ["length", "payload"])
def test_reader_skips_a_bad_crc_with_a_warning_or_raises_when_strict(logdir, where):
    path = _written(logdir)
    data = bytearray(pathlib.Path(path).read_bytes())
    first_len = struct.unpack("<Q", data[:8])[0] + 16
    offset = first_len + (2 if where == "length" else 20)
    data[offset] ^= 0x01
    pathlib.Path(path).write_bytes(bytes(data))
    with pytest.raises(DataLossError, match=where):
        list(read_records(path, strict=True))
    with pytest.warns(CorruptRecordWarning, match="%s: corrupt record %s at byte %d" % (re.escape(path), where,
                                                                                          first_len)):
        steps = [e.step for e in read_events(path)][1:]
    # a bad payload skips its record; a bad length leaves nothing after it that can be framed
    assert steps == ([1, 2, 3, 4] if where == "payload" else [])


def test_reader_of_an_empty_file_yields_nothing(tmp_path):
    path = tmp_path / "events.out.tfevents.empty"
    path.write_bytes(b"")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(read_events(str(path))) == []


def test_a_crc_valid_record_that_is_no_event_is_data_loss(tmp_path):
    path = tmp_path / "events.out.tfevents.garbage"
    path.write_bytes(frame(b"\xff\xff\xff"))  # framed correctly, but no protobuf message
    with pytest.raises(DataLossError, match="record 0 has a valid CRC but is no Event"):
        list(read_events(str(path), strict=True))
    with pytest.warns(CorruptRecordWarning, match="record 0 has a valid CRC but is no Event"):
        assert list(read_events(str(path))) == []


def test_a_fifo_named_like_an_event_file_is_skipped_not_waited_on(logdir):
    path = _written(logdir)
    os.mkfifo(os.path.join(logdir, "events.out.tfevents.0.fifo"))  # nobody ever writes into it
    assert event_files_read(logdir) == [path]
    assert [e.step for e in read_events(logdir)][1:] == [0, 1, 2, 3, 4]


def event_files_read(logdir):
    from mxboard.reader import event_files

    return event_files(logdir)


@pytest.mark.slow
def test_the_pure_python_fallback_writes_what_the_c_crc_reads(tmp_path):
    """Where no C CRC32C can be had, the pure-Python one is used, and its files check out against
    the C one (and TensorBoard's loader)."""
    run_python("LOGDIR = %r\n" % str(tmp_path) + r"""
import sys
sys.modules["google_crc32c"] = sys.modules["crc32c"] = None  # neither can be imported
import numpy as np
import mxboard
from mxboard._format import _crc32c
assert _crc32c.IMPLEMENTATION == "python", _crc32c.IMPLEMENTATION
with mxboard.SummaryWriter(LOGDIR) as w:
    for step in range(100):
        w.add_scalar("x", float(step), step)
    w.add_image("i", np.random.default_rng(0).random((3, 32, 32)), 0)
""")
    assert [s for _, s, _ in tb_scalars(event_files(str(tmp_path))[0])] == list(range(100))
    assert len(list(read_events(str(tmp_path)))) == 102  # file version, 100 scalars, the image


@settings(max_examples=200, deadline=None, derandomize=True)
@given(sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=12), cut=st.integers(0, 40000),
       room=st.integers(0, 40000), at_least_one=st.booleans())
def test_the_one_record_scanner_frames_alike_for_the_reader_the_uploader_and_the_mirror(tmp_path_factory, sizes, cut,
                                                                                        room, at_least_one):
    """events.whole_records is the framing the uploader cuts its objects with (take_records) and
    the mirror copies by; the reader frames the same bytes the same way (each record checked)."""
    import collections

    from mxboard._format.events import frame, whole_records
    from mxboard.storage.remote.parts import take_records

    payloads = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    records = [frame(p) for p in payloads]
    stream = b"".join(records)
    bounds = [sum(len(r) for r in records[:i]) for i in range(len(records) + 1)]
    cut = min(cut, len(stream))
    whole = max(b for b in bounds if b <= cut)
    assert whole_records(stream[:cut], 1 << 30) == (whole, None)  # the mirror's: up to the last whole record
    path = str(tmp_path_factory.mktemp("scan") / "events.out.tfevents.1.h.1.000000")
    with open(path, "wb") as f:
        f.write(stream[:cut])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornRecordWarning)  # a cut inside a record: torn, as expected
        assert list(read_records(path)) == payloads[:bounds.index(whole)]  # the reader's: the same records
    waiting = collections.deque([stream])
    taken = b"".join(take_records(waiting, room, at_least_one))  # the uploader's: whole records within room
    assert taken + b"".join(waiting) == stream and len(taken) in bounds
    first = bounds[1]
    assert len(taken) == max(b for b in bounds if b <= room or (at_least_one and b == first and room < first))
