"""Damaged event files read alike by every reader (issue 66, item 1): the numpy scanner
(`_reading/scan.py`, behind `reader.table(..., "scalars")` and the report), `read_events` over
`read_records`, the public tables, TensorBoard's Python loader, and what the bundled server's Rust
loader serves over HTTP, and what the bundle's own loader (its default) serves: what mxboard's
reader reads.

The corpus (damaged_corpus.py) is one intact file holding every kind of record, and copies of it
with a bit flipped in every field of every kind of record, truncated, with bytes zeroed or
inserted, and with hostile lengths. The scanner reads each copy in windows of 29 to 1,000 bytes,
so that window boundaries cut every kind of record, and a copy whose header is damaged also in
windows that start at that header.

What each reader must make of a copy is decided by `damaged_corpus.reference`, which applies the
TFRecord rules alone: a record whose payload fails its checksum is skipped, a length that fails
its checksum ends the file, and a record the file does not hold whole ends it as torn. mxboard's
readers must read exactly that, warn of each damaged record with the byte it starts at, and raise
DataLossError with `strict`. TensorBoard's loaders agree but for one documented difference,
`what_tensorboard_reads`.
"""
import re
import struct
import warnings

import damaged_corpus
import numpy as np
import pytest
from damaged_corpus import event_rows, float_bits, histogram, reference, rows
from google.protobuf.message import DecodeError

from mxboard import reader
from mxboard.errors import CorruptRecordWarning, DataLossError, TornRecordWarning

# The scanner's windows, in bytes, one per damaged file in turn. 29 is less than any record of the
# corpus (40 bytes and more), so each record is carried across windows; the others cut some.
WINDOWS = (29, 80, 200, 1000)


def what_tensorboard_reads(data, loader):
    """The one documented difference between mxboard's readers and TensorBoard's loaders: a record
    whose payload fails its checksum (its header's length passing its own).

    mxboard skips that record, warns, and reads on, as the records after it are framed and intact.
    Neither of TensorBoard's loaders does so:

    - Its Python loader (`loader="python"`: RawEventFileLoader, over the record reader of
      TensorBoard's TensorFlow stub) ends the file there. The record reader raises DataLossError
      ("failed event crc32 check"); the loader takes every DataLossError for a record still being
      written, stops, and tries the same record again at its next reload. It reads the records
      before the first damaged one. Returns their payloads.
    - Its Rust loader (`loader="rust"`: tensorboard-data-server 0.7.2, the bundle's fast loader)
      never checks a payload's checksum. It parses the damaged payload and serves what prost
      makes of it: a step or a wall time as damaged (as the scanner did on issue 66's bug). A
      payload that is no Event to prost ends the file there; prost also refuses a known field of
      another wire type (`_of_another_wire_type`), which Python's protobuf keeps as unknown.
      Returns what it serves, {tag: [(step, wall, value bits)]} (`_served_scalars`).

    Every other damage (a length failing its checksum, a torn end, a hostile length) ends the file
    at the same record for all of them."""
    if loader == "python":
        outcome = reference(data)
        first = min(outcome.skipped, default=len(data))
        return [payload for at, payload in outcome.payloads if at < first]
    return _served_scalars(reference(data, check_payloads=False).payloads)


# -- what each reader makes of a file, as rows ----------------------------------------------------
def _notes(caught):
    """The damage mxboard's warnings name: ("payload", byte), ("length", byte), ("torn", byte),
    or ("other", message) for any other warning."""
    found = []
    for warning in caught:
        message = str(warning.message)
        for kind, pattern in (("payload", r"corrupt record payload at byte (\d+)"),
                              ("length", r"corrupt record length at byte (\d+)"),
                              ("torn", r"the last record is incomplete \(\d+ of its bytes from offset (\d+)\)")):
            match = re.search(pattern, message)
            if match:
                expected_class = TornRecordWarning if kind == "torn" else CorruptRecordWarning
                found.append((kind, int(match.group(1))) if warning.category is expected_class else ("other", message))
                break
        else:
            found.append(("other", "%s: %s" % (warning.category.__name__, message)))
    return sorted(found, key=repr)


class Raised:
    """What a reader raised where it should have returned rows (or raised DataLossError)."""

    def __init__(self, exc):
        self.exc = exc

    def __repr__(self):
        return "raised %s: %s" % (type(self.exc).__name__, self.exc)


def _caught(read, *args, **kwargs):
    """(what `read` returns, or a Raised, and the damage its warnings name)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = read(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 (a reader that fails on a damaged file is reported as such)
            result = Raised(exc)
    return result, _notes(caught)


def _tensorboard_event(payload):
    from tensorboard.compat.proto import event_pb2

    return event_pb2.Event.FromString(payload)


def by_read_events(path, strict=False):
    """The rows of `reader.read_events` (mxboard's Events, parsed again as TensorBoard's)."""
    return rows(_tensorboard_event(event.SerializeToString()) for event in reader.read_events(path, strict=strict))


def by_scan(path, window_bytes, strict=False):
    """The rows the scanner gives of a file read in windows of `window_bytes`, as the scalars table
    and the report take them: its decoded scalars, and its other records parsed by protobuf.

    This is the one place that knows the scanner's Window. A Window holds `scalars` and `tensors`
    (chunks of numpy arrays: tag ids, record numbers, steps, walls, values, of the records it
    decoded), `tags` (the file's decoded tags, by id), `plugins` ({tag: plugin} named by their
    metadata) and `others` ([(record number, payload)]). As `reader._scalar_arrays` does, a
    window's other records come first (a tag's plugin may be named in one of them), and a decoded
    tensor is a scalar where its tag's plugin is "scalars". A payload that is no Event is warned
    of (or raises, with `strict`) as the reader does."""
    from mxboard._reading.scan import scan_file

    numbered, plugins = [], {}
    for window in scan_file(path, window_bytes=window_bytes, strict=strict):
        for number, payload in window.others:
            try:
                event = _tensorboard_event(payload)
            except DecodeError as exc:
                message = "%s: record %d has a valid CRC but is no Event (%s)" % (path, number, exc)
                if strict:
                    raise DataLossError(message) from None
                warnings.warn(CorruptRecordWarning(message), stacklevel=2)
                continue
            numbered.extend((number, row) for row in event_rows(event, plugins))
        plugins.update(window.plugins)
        for chunks, tensors in ((window.scalars, False), (window.tensors, True)):
            for ids, numbers, steps, walls, values in chunks:
                for tag_id, number, step, wall, value in zip(ids.tolist(), numbers.tolist(), steps.tolist(),
                                                             walls.tolist(), values.tolist()):
                    tag = window.tags[tag_id]
                    if not tensors or plugins.get(tag) == "scalars":
                        numbered.append((number, ("scalars", tag, step, wall, float_bits(value))))
    numbered.sort(key=lambda item: item[0])  # stable: a record's values stay in their order
    return [row for _, row in numbered]


def by_tables(path, strict=False):
    """The rows of the public tables, `reader.table(path, kind, raw=True)`, kind by kind."""
    found = []
    for kind in ("scalars", "text", "histograms"):
        columns = reader.table(path, kind, raw=True, strict=strict)
        for i, tag in enumerate(columns["tag"]):
            head = (kind, tag, columns["step"][i], columns["wall_time"][i])
            if kind == "scalars":
                found.append(head + (float_bits(columns["value"][i]),))
            elif kind == "text":
                found.append(head + (columns["text"][i],))
            else:
                found.append(head + histogram(columns["limits"][i], columns["counts"][i]))
    return found


def by_kind(found):
    """Rows grouped kind by kind, each kind in file order (as the tables give them)."""
    return [row for kind in ("scalars", "text", "histograms") for row in found if row[0] == kind]


@pytest.fixture
def tensorboards_record_reader(monkeypatch):
    """TensorBoard's Python loader with the record reader the bundle ships (patches/0008), as the
    bundled server installs it (launcher._use_patched_record_reader). Upstream's reads a record's
    claimed length in one read: a length of 2**62 raises MemoryError there."""
    from tensorboard.compat.tensorflow_stub import pywrap_tensorflow as upstream

    from tensorboard_bundle._patched import pywrap_tensorflow as patched

    monkeypatch.setattr(upstream, "PyRecordReader_New", patched.PyRecordReader_New)


def by_tensorboard(path):
    """(the payloads of TensorBoard's RawEventFileLoader, the rows of its EventFileLoader): each
    reads the file once, as TensorBoard's Python loader does at a reload."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader, RawEventFileLoader

    return list(RawEventFileLoader(path).Load()), rows(EventFileLoader(path).Load())


# -- the corpus and what it should read as --------------------------------------------------------
class Expected:
    """What the TFRecord rules leave of a damaged file (`reference`), as rows and warnings."""

    def __init__(self, data, intact_payloads, header=None):
        # A window of this many bytes holds the records before the damaged header whole, so the
        # next window starts at that header (None: no header is damaged, or it is the first).
        self.window_to_header = header or None
        outcome = reference(data)
        self.payloads = [payload for _, payload in outcome.payloads]
        self.rows = rows(_tensorboard_event(p) for p in self.payloads)
        self.notes = sorted([("payload", at) for at in outcome.skipped] + (
            [("length" if outcome.end[0] == "corrupt" else "torn", outcome.end[1])] if outcome.end else []), key=repr)
        self.raises = bool(outcome.skipped) or bool(outcome.end and outcome.end[0] == "corrupt")
        self.tensorboard_payloads = what_tensorboard_reads(data, "python")
        self.tensorboard_rows = rows(_tensorboard_event(p) for p in self.tensorboard_payloads)
        # Nothing damaged is read: each payload read is one the intact file holds, in its order.
        left = iter(intact_payloads)
        self.all_intact = all(any(p == q for q in left) for p in self.payloads)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """[(case name, path, Expected)] of every damaged file, written once for the module's tests."""
    directory = tmp_path_factory.mktemp("damaged")
    intact = damaged_corpus.write_intact(str(directory / "intact"))
    with open(intact, "rb") as f:
        data = f.read()
    intact_payloads = [record.payload for record in damaged_corpus.records(data)]
    cases = []
    for number, case in enumerate(damaged_corpus.corpus(data)):
        path = str(directory / ("events.out.tfevents.%04d" % number))
        with open(path, "wb") as f:
            f.write(case.data)
        cases.append((case.name, path, Expected(case.data, intact_payloads, case.header)))
    return cases


def _report(failures, total):
    """A message naming how many of `total` files disagree, and the first few."""
    lines = ["%d of %d damaged files read otherwise:" % (len(failures), total)]
    lines += ["- %s: %s" % failure for failure in failures[:25]]
    return "\n".join(lines)


def _differs(got, want):
    if isinstance(got, Raised):
        return repr(got)
    missing = [row for row in want if row not in got]
    extra = [row for row in got if row not in want]
    return "missing %s, extra %s%s" % (missing[:3], extra[:3], "" if missing or extra else " (the order differs)")


# -- the tests ------------------------------------------------------------------------------------
@pytest.mark.timeout(120)
def test_the_corpus_damages_every_field_of_every_kind_of_record(corpus):
    """The corpus is what it claims: every kind of record damaged in every field, and each way of
    damage there; records skipped (two in one file too), files ended at a corrupt length, and torn
    ends; and nothing damaged is read by the rules."""
    names = [name for name, _, _ in corpus]
    for kind in ("file_version", "simple_value", "scalars", "tensor", "text", "histo", "image", "hparams"):
        for field in ("flip length low byte", "flip length crc", "flip payload 1.key", "flip payload 1.value",
                      "flip payload 5.1.1.value", "flip payload crc"):
            if kind == "file_version" and field == "flip payload 5.1.1.value":
                field = "flip payload 3.value"
            assert any("(%s): %s" % (kind, field) in name for name in names), (kind, field)
    for way in ("truncated", "zeroed", "inserted", "length 2**62", "length 2**24", "length past the end",
                "length short", "swallowing"):
        assert any(way in name for name in names), way
    outcomes = [expected for _, _, expected in corpus]
    assert all(e.all_intact for e in outcomes)
    assert sum(any(kind == "payload" for kind, _ in e.notes) for e in outcomes) > 300
    assert sum(len([kind for kind, _ in e.notes if kind == "payload"]) > 1 for e in outcomes) >= 1
    assert sum(any(kind == "length" for kind, _ in e.notes) for e in outcomes) > 40
    assert sum(any(kind == "torn" for kind, _ in e.notes) for e in outcomes) > 20
    # The steps of 1 to 5 varint bytes, each damaged: its first byte, and its last byte's continuation.
    assert sum("(simple_value): flip payload 2.value" in name for name in names) >= 12


@pytest.mark.timeout(120)
def test_read_events_reads_what_the_tfrecord_rules_leave_and_names_each_damaged_record(corpus):
    """`read_events` (over `read_records`) reads every record the rules leave, warns of each damaged
    one with the byte it starts at, and with `strict` raises DataLossError where a record is corrupt."""
    failures = []
    for name, path, expected in corpus:
        got, notes = _caught(by_read_events, path)
        if got != expected.rows:
            failures.append((name, _differs(got, expected.rows)))
        elif notes != expected.notes:
            failures.append((name, "warned of %s, not %s" % (notes, expected.notes)))
        else:
            raised = _strict_raises(by_read_events, path)
            if raised is not expected.raises:
                failures.append((name, _strict_failure(raised, expected)))
    assert not failures, _report(failures, len(corpus))


def _strict_raises(read, *args):
    """Whether `read(*args, strict=True)` raises DataLossError (a Raised: it raised something else)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornRecordWarning)
        try:
            read(*args, strict=True)
        except DataLossError:
            return True
        except Exception as exc:  # noqa: BLE001 (reported as the case's failure)
            return Raised(exc)
    return False


def _strict_failure(raised, expected):
    """What a failed strict read says of itself."""
    return "strict=True %s" % ("did not raise DataLossError" if expected.raises and raised is False else
                               "raised DataLossError" if raised is True else repr(raised))


@pytest.mark.timeout(120)
def test_the_scanner_reads_what_read_records_reads_at_every_window(corpus):
    """The scanner, in windows of 29 to 1,000 bytes, gives the rows read_events gives, warns of the
    same damaged records at the same bytes, and raises with `strict` where read_events does. A
    file whose header is damaged is also read in windows that end just before that header, so
    that it opens a window.

    On the scanner of 706ab3a this fails (issue 66, item 1): a small record that is not a simple
    scalar, or one whose damage breaks the simple layout, is handed to protobuf without its payload
    checked; and a header failing its checksum at a window's start is passed over, the scanner
    reading on from the next header that passes."""
    failures = []
    for number, (name, path, expected) in enumerate(corpus):
        windows = [WINDOWS[number % len(WINDOWS)]]
        if expected.window_to_header:
            windows.append(expected.window_to_header)
        for window in windows:
            label = "%s, window %d" % (name, window)
            got, notes = _caught(by_scan, path, window)
            if got != expected.rows:
                failures.append((label, _differs(got, expected.rows)))
            elif notes != expected.notes:
                failures.append((label, "warned of %s, not %s" % (notes, expected.notes)))
            else:
                raised = _strict_raises(by_scan, path, window)
                if raised is not expected.raises:
                    failures.append((label, _strict_failure(raised, expected)))
    assert not failures, _report(failures, len(corpus))


def _scalars_table(path, strict):
    return reader.table(path, "scalars", raw=True, strict=strict)


@pytest.mark.timeout(120)
def test_the_public_tables_hold_the_rows_read_events_reads(corpus):
    """`reader.table(path, kind, raw=True)` for scalars (the scanner, default window), text and
    histograms (read_events) holds the rows the rules leave, and `strict` raises where a record is
    corrupt. On 706ab3a the scalars table fails as the scanner does."""
    failures = []
    for name, path, expected in corpus:
        got, notes = _caught(by_tables, path)
        want = by_kind(expected.rows)
        if got != want:
            failures.append((name, _differs(got, want)))
        elif {note for note in notes} != set(expected.notes):  # each table reads the file: each warns
            failures.append((name, "warned of %s, not %s" % (sorted(set(notes), key=repr), expected.notes)))
        else:
            raised = _strict_raises(_scalars_table, path)
            if raised is not expected.raises:
                failures.append((name, _strict_failure(raised, expected)))
    assert not failures, _report(failures, len(corpus))


@pytest.mark.timeout(120)
def test_tensorboards_python_loader_reads_the_same_but_stops_at_a_damaged_payload(corpus, tensorboards_record_reader):
    """TensorBoard's Python loader reads the same records, byte for byte, and decodes the same rows
    (EventFileLoader: simple values and histograms migrated to tensors), up to the first record
    whose payload fails its checksum: there it stops, where mxboard skips it and reads on
    (`what_tensorboard_reads`)."""
    failures, stopped_early = [], 0
    for name, path, expected in corpus:
        payloads, got = by_tensorboard(path)
        if payloads != expected.tensorboard_payloads:
            failures.append((name, "read %d records, not %d" % (len(payloads), len(expected.tensorboard_payloads))))
        elif got != expected.tensorboard_rows:
            failures.append((name, _differs(got, expected.tensorboard_rows)))
        stopped_early += len(expected.tensorboard_payloads) < len(expected.payloads)
    assert not failures, _report(failures, len(corpus))
    # The difference is real: on most files mxboard reads records after one this loader stops at.
    assert stopped_early > 300


def _curve(directory, points=1000):
    """A 1,000-point curve written by mxboard, and the byte offset of the step-500 record's step key."""
    from mxboard import SummaryWriter

    with SummaryWriter(directory) as writer:
        for step in range(points):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
    (path,) = reader.event_files(directory)
    with open(path, "rb") as f:
        data = f.read()
    at, number = 0, 0
    while True:
        length = struct.unpack_from("<Q", data, at)[0]
        payload = data[at + 12:at + 12 + length]
        if number == 501:  # the file version, then steps 0 to 500
            assert payload[9] == 0x10 and payload[10:12] == b"\xf4\x03", payload  # wall, then step 500
            return path, data, at + 12 + 9
        at += 16 + length
        number += 1


@pytest.mark.timeout(60)
def test_one_flipped_bit_in_a_step_key_skips_that_point_and_hides_no_other(tmp_path):
    """Issue 66's case: one bit flipped in the step of the step-500 record of a 1,000-point curve.
    Bit 3 of its key makes the step field 3 (TensorBoard's file_version, of another wire type), so
    protobuf parses the record as a point at step 0: shown, it would hide the 499 points before it.
    The record fails its checksum: every reader of mxboard skips it, warns, and shows 999 points."""
    path, data, key = _curve(str(tmp_path / "run"))
    damaged = bytearray(data)
    damaged[key] ^= 1 << 3
    with open(path, "wb") as f:
        f.write(bytes(damaged))
    record = key - 12 - 9
    want = [(step, float(np.float32(1.0 / (step + 1)))) for step in range(1000) if step != 500]
    for read in (lambda: reader.table(path, "scalars"), lambda: reader.table(path, "scalars", raw=True)):
        with pytest.warns(CorruptRecordWarning, match="corrupt record payload at byte %d" % record):
            columns = read()
        assert list(zip(columns["step"], columns["value"])) == want
    for window in WINDOWS + (1 << 20,):
        got, notes = _caught(by_scan, path, window)
        assert [(row[2], row[4]) for row in got] == [(s, float_bits(v)) for s, v in want], window
        assert notes == [("payload", record)], window
    with pytest.raises(DataLossError, match="corrupt record payload at byte %d" % record):
        reader.table(path, "scalars", strict=True)


# -- the Rust loader, over HTTP -------------------------------------------------------------------
def _preempted(points, point):
    """Append (step, ...) `point` to a series as TensorBoard shows it: a step at or below the last
    one hides the series' points from that step on (the Rust loader's reservoir preempts them)."""
    while points and points[-1][0] >= point[0]:
        points.pop()
    points.append(point)


def _served_scalars(payloads):
    """{tag: [(step, wall, value bits)]}: what the Rust loader serves of the scalars of records
    read without their payloads checked (`what_tensorboard_reads`).

    It stops at a payload that is no Event to prost. An event whose wall time is NaN is dropped. A
    tag's first value fixes its kind: a scalar series where it is a simple_value, or a tensor whose
    metadata names the scalars plugin. Each later value of a scalar series preempts the series'
    points at its step or after, and is served where it holds one float."""
    from tensorboard.util import tensor_util

    series, scalar_tags = {}, {}
    for _, payload in payloads:
        try:
            event = _tensorboard_event(payload)
        except DecodeError:
            break
        if _of_another_wire_type(event):
            break
        if event.wall_time != event.wall_time:
            continue
        for value in event.summary.value:
            field = value.WhichOneof("value")
            if field is None:
                continue
            if value.tag not in scalar_tags:
                scalar_tags[value.tag] = field == "simple_value" or (
                    field == "tensor" and value.metadata.plugin_data.plugin_name == "scalars")
            if not scalar_tags[value.tag]:
                continue
            points = series.setdefault(value.tag, [])
            if field == "simple_value":
                _preempted(points, (event.step, event.wall_time, float_bits(value.simple_value)))
                continue
            try:
                array = tensor_util.make_ndarray(value.tensor) if field == "tensor" else None
            except (TypeError, ValueError, KeyError, IndexError):
                array = None
            if array is not None and array.size == 1 and array.dtype.kind == "f":
                _preempted(points, (event.step, event.wall_time, float_bits(array.reshape(-1)[0])))
            else:  # no float: it preempts, and is not served
                _preempted(points, (event.step, None, None))
                points.pop()
    return {tag: points for tag, points in series.items() if points}


def _of_another_wire_type(message):
    """Whether a message holds a field of its schema with another wire type (a varint's key
    damaged into a length's, say). Python's protobuf keeps such a field as an unknown one; prost,
    the Rust loader's, fails the payload (InvalidProto), and the file ends there."""
    from google.protobuf import unknown_fields

    if any(field.field_number in message.DESCRIPTOR.fields_by_number
           for field in unknown_fields.UnknownFieldSet(message)):
        return True
    for field, value in message.ListFields():
        if field.message_type is None or field.message_type.GetOptions().map_entry:
            continue
        # protobuf 7 has is_repeated and no label; protobuf before 5.28 has only label.
        repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED
        if any(_of_another_wire_type(item) for item in (value if repeated else [value])):
            return True
    return False


def _http_sample(corpus):
    """Twenty damaged files for the HTTP test: twelve bit flips spread over every kind of record,
    and eight of the other damage (truncation, zeroed and inserted bytes, hostile lengths).

    A length of 2**62 is left out: the Rust loader aborts on it (it allocates the length), and the
    launcher's watchdog then hands the whole logdir to the Python loader
    (test_bundle.py::test_a_hostile_event_file_in_a_local_logdir)."""
    flips = [case for case in corpus if ": flip" in case[0]]
    others = [case for case in corpus if ": flip" not in case[0] and "2**62" not in case[0]]
    return flips[::len(flips) // 12][:12] + others[::len(others) // 8][:8]


def _reader_shows(rules):
    """{tag: [(step, wall, value bits)]}: mxboard's scalars rows of a damaged file
    (`damaged_corpus`'s rules), as TensorBoard shows a series (`_preempted`)."""
    shows = {}
    for row in rules.rows:
        if row[0] == "scalars":
            _preempted(shows.setdefault(row[1], []), (row[2], row[3], row[4]))
    return shows


def _served_otherwise(server, expected):
    """[(case, what differs)] of the runs whose scalars `server` serves otherwise than `expected`
    says ({run: (case's name, {tag: [(step, wall, value bits)]})}). The files do not change: once
    every run with scalars to serve has its tags, all were read."""
    with_scalars = {run for run, (_, want) in expected.items() if want}
    tags = server.json("/data/plugin/scalars/tags", until=lambda found: set(found) >= with_scalars, timeout=60)
    failures = []
    for run, (name, want) in sorted(expected.items()):
        got = {}
        for tag in tags.get(run, {}):
            points = server.json("/data/plugin/scalars/scalars", {"run": run, "tag": tag})
            got[tag] = [(step, wall, float_bits(value)) for wall, step, value in points]
        if got != want:
            failures.append(("%s (%s)" % (name, run), "served %s, not %s" % (got, want)))
    return failures


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_rust_loader_serves_what_it_reads_of_twenty_damaged_files(corpus, serve, tmp_path):
    """Twenty damaged files, one run each, served by the bundled server's fast (Rust) loader over
    HTTP: each run's scalars are what `what_tensorboard_reads(data, "rust")` says. That differs
    from mxboard's scalars table only where a payload fails its checksum: mxboard skips it, the
    Rust loader serves it as prost parses it."""
    expected, differs = {}, 0
    for number, (name, path, rules) in enumerate(_http_sample(corpus)):
        run = tmp_path / ("run%02d" % number)
        run.mkdir()
        with open(path, "rb") as f:
            data = f.read()
        (run / "events.out.tfevents.1.damaged").write_bytes(data)
        expected[run.name] = (name, what_tensorboard_reads(data, "rust"))
        mxboard_shows = _reader_shows(rules)
        if any(kind == "payload" for kind, _ in rules.notes):
            differs += mxboard_shows != expected[run.name][1]
        else:  # no payload fails its checksum: the Rust loader shows what mxboard shows
            assert mxboard_shows == expected[run.name][1], name
    # The sample holds damaged payloads that the Rust loader serves where mxboard skips them.
    assert differs >= 3
    server = serve(tmp_path, "--load_fast=true")
    assert "fast (Rust data server)" in server.banner
    failures = _served_otherwise(server, expected)
    assert not failures, _report(failures, len(expected))


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_bundles_loader_serves_what_mxboards_reader_reads_of_damaged_files(corpus, serve, tmp_path):
    """The Rust loader's twenty damaged files and every hostile length (2**62 among them), one run
    each, served over HTTP by the bundled server's default loader: each run's scalars are what
    mxboard's scalars table reads of the file (a damaged record skipped, the rest served), as
    TensorBoard shows a series (a step at or below the last one preempts)."""
    sample = _http_sample(corpus) + [case for case in corpus if "2**" in case[0] and case not in _http_sample(corpus)]
    expected = {}
    for number, (name, path, rules) in enumerate(sample):
        run = tmp_path / ("run%02d" % number)
        run.mkdir()
        with open(path, "rb") as f:
            (run / "events.out.tfevents.1.damaged").write_bytes(f.read())
        expected[run.name] = (name, _reader_shows(rules))
    server = serve(tmp_path)
    assert "data loader: mxboard" in server.banner
    failures = _served_otherwise(server, expected)
    assert len(expected) >= 22
    assert not failures, _report(failures, len(expected))
