"""The damaged event files of test_damaged_files.py, and what a reader should make of each.

One intact file holds every kind of record: mxboard's simple scalars (tags of 1, 4 and 25 bytes,
steps of 1 to 5 varint bytes), torch's and TensorFlow's tensor scalars, a text, a small and a
large histogram, an image and hparams. `corpus` damages copies of it: one bit flipped in every
field of every kind of record, truncations, zeroed runs, inserted bytes and hostile lengths.
`reference` reads a file by the TFRecord rules alone, and `rows` decodes Events to comparable rows.
"""
import struct
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from mxboard import SummaryWriter, reader
from mxboard._format._crc32c import masked_crc32c
from mxboard._format.events import frame
from mxboard.proto import Event, Summary, SummaryMetadata, TensorProto, TensorShapeProto

# The steps of the simple scalars: varints of 1 byte (0 too, which mxboard writes), 2, 3, 4 and 5 bytes.
STEPS = [0, 1, 127, 128, 16383, 16384, 2 ** 21 - 1, 2 ** 21, 2 ** 28, 2 ** 35 - 1]
TAGS = ["x", "loss", "a/much/longer/tag/name/ü"]


def write_intact(directory: str) -> str:
    """Write the intact file into `directory` and return its path."""
    with SummaryWriter(directory) as writer:
        for number, tag in enumerate(TAGS):
            for step in STEPS if tag == "loss" else STEPS[::4]:
                writer.add_scalar(tag, step / 7.0 - number, step)
        writer.add_text("notes", "a **text**, line one\nline two", 3)
        writer.add_histogram("weights/small", np.arange(20.0), 3, bins=4)
        writer.add_histogram("weights/large", np.random.default_rng(0).normal(size=1000), 4, bins=60)
        writer.add_image("picture", np.full((3, 4, 4), 100, np.uint8), 5)
        writer.add_hparams({"lr": 0.1, "optimizer": "sgd"}, {"x": None}, in_run=True)
    (path,) = reader.event_files(directory)
    with open(path, "ab") as f:
        for payload in foreign_payloads():
            f.write(frame(payload))
    return path


def foreign_payloads() -> List[bytes]:
    """Scalars as torch and TensorFlow write them: a float32 scalar tensor, with the scalars
    plugin's metadata on every event (torch's `new_style=True`), or on the tag's first event only
    and the value as `tensor_content` (TensorFlow 2)."""
    scalars = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    payloads = []
    for step in (1, 300, 70000):
        value = Summary.Value(tag="torch/new_style", metadata=scalars,
                              tensor=TensorProto(dtype=1, tensor_shape=TensorShapeProto(), float_val=[step / 3.0]))
        payloads.append(Event(wall_time=1.7e9 + step, step=step, summary=Summary(value=[value])).SerializeToString())
    for step in (2, 200, 90000):
        value = Summary.Value(tag="tf2", tensor=TensorProto(dtype=1, tensor_shape=TensorShapeProto(),
                                                            tensor_content=struct.pack("<f", step / 9.0)))
        if step == 2:
            value.metadata.CopyFrom(scalars)
        payloads.append(Event(wall_time=1.7e9 + step, step=step, summary=Summary(value=[value])).SerializeToString())
    return payloads


class Record(NamedTuple):
    """One record of an intact file: where it starts, its payload, and what its Event holds."""
    start: int
    payload: bytes
    kind: str

    @property
    def end(self) -> int:
        """Where the record's trailer ends."""
        return self.start + 16 + len(self.payload)


def records(data: bytes) -> List[Record]:
    """The records of an intact file. A record's kind is its first summary value's plugin, or
    else that value's field ("simple_value", "histo"...), or else the Event's ("file_version")."""
    found, at = [], 0
    while at < len(data):
        length = struct.unpack_from("<Q", data, at)[0]
        payload = data[at + 12:at + 12 + length]
        event = Event.FromString(payload)
        if event.HasField("summary"):
            value = event.summary.value[0]
            plugin = value.metadata.plugin_data.plugin_name
            kind = plugin or value.WhichOneof("value")
        else:
            kind = event.WhichOneof("what")
        found.append(Record(at, payload, kind))
        at += 16 + length
    return found


def fields(payload: bytes, at: int = 0, end: Optional[int] = None, path: str = "") -> List[Tuple[str, int, int]]:
    """Every field of a protobuf message as (its path of field numbers and part, first byte, end).

    Each field gives its key, and its value; a length-delimited field gives its length, and the
    fields inside it where its bytes read as a message (down to five levels: an Event's summary
    value's tensor or plugin data), else its value. Nothing is assumed of the schema."""
    end = len(payload) if end is None else end
    found = []
    while at < end:
        key_at = at
        key, at = _varint(payload, at)
        name = "%s%d" % (path, key >> 3)
        found.append((name + ".key", key_at, at))
        wire = key & 7
        if wire == 0:
            after = _varint(payload, at)[1]
        elif wire in (1, 5):
            after = at + (8 if wire == 1 else 4)
        elif wire == 2:
            size, inner = _varint(payload, at)
            found.append((name + ".length", at, inner))
            at, after = inner, inner + size
            nested = []  # type: List[Tuple[str, int, int]]
            if name.count(".") < 4 and size:
                try:
                    nested = fields(payload, inner, after, name + ".")
                except (IndexError, ValueError):
                    nested = []
            if nested:
                found.extend(nested)
                at = after
        else:
            raise ValueError("wire type %d" % wire)
        if after > end:
            raise ValueError("a field past its message")
        if at < after:
            found.append((name + ".value", at, after))
        at = after
    return found


def _varint(data: bytes, at: int) -> Tuple[int, int]:
    """(the varint at `at`, the offset after it)."""
    value, shift = 0, 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7


class Case(NamedTuple):
    """A damaged copy of the intact file. `header` is where the record whose header is damaged
    starts (a length or its checksum), else None."""
    name: str
    data: bytes
    header: Optional[int] = None


def flipped(data: bytes, offset: int, bit: int) -> bytes:
    """`data` with one bit flipped."""
    damaged = bytearray(data)
    damaged[offset] ^= 1 << bit
    return bytes(damaged)


def with_length(data: bytes, record: Record, length: int) -> bytes:
    """The file with `record`'s header claiming `length`, its checksum right."""
    header = struct.pack("<Q", length)
    return data[:record.start] + header + struct.pack("<I", masked_crc32c(header)) + data[record.start + 12:]


def representatives(found: List[Record]) -> List[int]:
    """The records whose every field is damaged: the file version; the simple scalars of "loss" at
    step 0 and at steps of 1 to 5 varint bytes, and the first of the 25-byte tag; a
    text, a histogram under and one over the scanner's 512 bytes, an image, hparams, torch's tensor
    scalar, and TensorFlow's first tensor scalar (with metadata) and a later one (without): the
    first record of each tag of each kind."""
    chosen, seen = [], set()
    for index, record in enumerate(found):
        kind = record.kind
        if kind == "simple_value":
            event = Event.FromString(record.payload)
            tag = event.summary.value[0].tag
            kind = "%s/%s/%d" % (kind, tag, len(_step_bytes(event.step)) if tag == "loss" else 0)
            if tag == "x":
                continue
        elif kind != "file_version":
            kind = "%s/%s" % (kind, Event.FromString(record.payload).summary.value[0].tag)
        if kind not in seen:
            seen.add(kind)
            chosen.append(index)
    return chosen


def _step_bytes(step: int) -> bytes:
    """A step's varint, without the byte of a 0."""
    out = bytearray()
    while step:
        out.append(step & 0x7F | (0x80 if step >> 7 else 0))
        step >>= 7
    return bytes(out)


def flips(payload: bytes) -> List[Tuple[str, int, int]]:
    """(what, byte, bit) of the bit flips that damage every field of a payload once.

    A key's bit 3 (another field number) and, at the top level, its bit 1 (another wire type); a
    length's bit 0; a value's first byte's bit 0, and a varint's last byte's bit 7 too (its
    continuation). A field repeated at the same path (the values of an hparams summary) is
    damaged at its first occurrence."""
    found, seen, varints = [], set(), set()  # type: List[Tuple[str, int, int]], set, set
    for name, first, end in fields(payload):
        if name in seen:
            continue
        seen.add(name)
        if name.endswith(".key"):
            spots = [(first, 3)] + ([(first, 1)] if name.count(".") == 1 else [])
            if payload[first] & 7 == 0:
                varints.add(name[:-4])
        elif name.endswith(".length"):
            spots = [(first, 0)]
        else:
            spots = [(first, 0)] + ([(end - 1, 7)] if name[:-6] in varints else [])
        found.extend(("%s byte %d bit %d" % (name, byte, bit), byte, bit) for byte, bit in spots)
    return found


def corpus(data: bytes) -> List[Case]:
    """The damaged copies of the intact file `data`.

    - A bit flip in every field of every representative record: the length (its low and a high
      byte) and the length's checksum, each payload field (`flips`), and the payload's checksum.
    - Truncation at the start, inside the header, payload and trailer of records of every kind.
    - Zeroed runs of 4 to 40 bytes, and inserted bytes, at several places; three records'
      payloads damaged in one file.
    - Hostile lengths: 2**62, 2**24, one pointing past the end, one shorter than the payload,
      and one pointing exactly at a later record's start (the records between are swallowed).
    """
    found = records(data)
    chosen = representatives(found)
    cases = []
    for index in chosen:
        record = found[index]
        name = "record %d (%s)" % (index, record.kind)
        for offset, bit, what in ((0, 0, "length low byte"), (5, 2, "length high byte"), (9, 4, "length crc")):
            cases.append(Case("%s: flip %s" % (name, what), flipped(data, record.start + offset, bit), record.start))
        for what, byte, bit in flips(record.payload):
            cases.append(Case("%s: flip payload %s" % (name, what), flipped(data, record.start + 12 + byte, bit)))
        cases.append(Case("%s: flip payload crc" % name, flipped(data, record.end - 2, 5)))
    size = len(data)
    for index in sorted(set(chosen[::3] + [len(found) - 1])):
        record = found[index]
        for cut, where in ((record.start, "start"), (record.start + 7, "header"),
                           (record.start + 12 + len(record.payload) // 2, "payload"), (record.end - 1, "trailer")):
            cases.append(Case("truncated in record %d (%s) at its %s" % (index, record.kind, where), data[:cut]))
    for at, count in ((found[3].start + 5, 4), (found[9].start + 14, 4), (found[20].start, 40), (size // 2, 40),
                      (size - 10, 10)):
        cases.append(Case("zeroed %d bytes at %d" % (count, at), data[:at] + bytes(count) + data[at + count:]))
    several = data
    for index in (5, len(found) // 2, len(found) - 2):
        several = flipped(several, found[index].start + 14, 2)
    cases.append(Case("flipped payloads of records 5, %d and %d" % (len(found) // 2, len(found) - 2), several))
    for at, inserted in ((found[4].start, b"\x00"), (found[5].start + 3, b"\x00\x00\x00\x00"),
                         (found[6].start + 20, b"\xff"), (found[len(found) // 2].start + 13, b"\x01\x02\x03"),
                         (size, b"\x00" * 5), (found[-1].start + 14, b"\x7f")):
        cases.append(Case("inserted %d bytes at %d" % (len(inserted), at), data[:at] + inserted + data[at:]))
    for index in (2, len(found) // 2, len(found) - 1):
        record = found[index]
        for length, what in ((2 ** 62, "2**62"), (2 ** 24, "2**24"), (size - record.start, "past the end"),
                             (len(record.payload) - 3, "short")):
            cases.append(Case("record %d length %s" % (index, what), with_length(data, record, length), record.start))
        if index + 3 < len(found):
            swallowed = found[index + 3].start - record.start - 16
            cases.append(Case("record %d length swallowing 2 records" % index, with_length(data, record, swallowed),
                              record.start))
    return cases


class Outcome(NamedTuple):
    """What a TFRecord reader reads of a file.

    `payloads` are (offset, payload) of the records read; `skipped` the offsets of those whose
    payload fails its checksum (only when payloads are checked); `end` None (a clean end), or
    ("corrupt", offset) of a header whose length fails its checksum, or ("torn", offset) of an
    incomplete last record."""
    payloads: List[Tuple[int, bytes]]
    skipped: List[int]
    end: Optional[Tuple[str, int]]


def reference(data: bytes, check_payloads: bool = True) -> Outcome:
    """Read `data` by the TFRecord rules alone: a header whose length fails its checksum ends the
    file (nothing after it can be framed), a record the file does not hold whole ends it as torn,
    and a record whose payload fails its checksum is skipped (or, unchecked, read as it is)."""
    payloads, skipped, at = [], [], 0
    while at < len(data):
        if len(data) - at < 12:
            return Outcome(payloads, skipped, ("torn", at))
        length, length_crc = struct.unpack_from("<QI", data, at)
        if masked_crc32c(data[at:at + 8]) != length_crc:
            return Outcome(payloads, skipped, ("corrupt", at))
        end = at + 16 + length
        if end > len(data):
            return Outcome(payloads, skipped, ("torn", at))
        payload = data[at + 12:end - 4]
        if not check_payloads or masked_crc32c(payload) == struct.unpack_from("<I", data, end - 4)[0]:
            payloads.append((at, payload))
        else:
            skipped.append(at)
        at = end
    return Outcome(payloads, skipped, None)


def rows(events: Any) -> List[Tuple[Any, ...]]:
    """The scalars, texts and histograms of Events, in order, as `event_rows` gives them."""
    plugins = {}  # type: Dict[str, str]
    return [row for event in events for row in event_rows(event, plugins)]


def event_rows(event: Any, plugins: Dict[str, str]) -> List[Tuple[Any, ...]]:
    """The scalars, texts and histograms of one Event (TensorBoard's compat proto, as its loader
    gives it or parsed from a payload) as rows `(kind, tag, step, wall, value...)`.

    A scalar's value is its float32's bits. A histogram is its inner bucket edges and its counts as
    float32 bits, with the empty buckets at either end left out: the form TensorBoard's loader
    migrates a `histo` into, so that its rows and mxboard's compare. A tag's plugin is the one the
    metadata of its first event names (`plugins`, updated here), as both readers take it."""
    from tensorboard.util import tensor_util

    found = []
    for value in event.summary.value:
        tag = value.tag
        if value.HasField("metadata"):
            plugins[tag] = value.metadata.plugin_data.plugin_name or plugins.get(tag, "")
        field, plugin = value.WhichOneof("value"), plugins.get(tag)
        head = (tag, event.step, event.wall_time)
        if field == "simple_value":
            found.append(("scalars",) + head + (float_bits(value.simple_value),))
        elif field == "histo":
            found.append(("histograms",) + head + histogram(value.histo.bucket_limit, value.histo.bucket))
        elif field == "tensor" and plugin in ("scalars", "text", "histograms"):
            try:
                array = tensor_util.make_ndarray(value.tensor)
            except (TypeError, ValueError, KeyError, IndexError) as exc:  # a damaged record that was read
                found.append(("no %s" % plugin,) + head + ("%s: %s" % (type(exc).__name__, exc),))
                continue
            if plugin == "scalars":
                found.append(("scalars",) + head + (float_bits(array.reshape(-1)[0]),))
            elif plugin == "text":
                found.append(("text",) + head + ("\n".join(s.decode("utf-8", "replace") for s in array.reshape(-1)),))
            else:
                buckets = array.reshape(-1, 3)
                found.append(("histograms",) + head + histogram(buckets[:, 1], buckets[:, 2], migrated=True))
    return found


def float_bits(value: float) -> int:
    """The bits of `value` as a float32: NaN compares, and 0.0 differs from -0.0."""
    return struct.unpack("<I", struct.pack("<f", value))[0]


def histogram(limits: Any, counts: Any, migrated: bool = False) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    """A histogram's inner edges and counts as float32 bits, its empty end buckets left out.

    `limits` are the buckets' right edges. A `migrated` histogram has only its non-empty buckets,
    and its last right edge is the maximum, not a limit."""
    limits, counts = np.asarray(limits, np.float64), np.asarray(counts, np.float64)
    if not migrated:
        filled = np.flatnonzero(counts > 0)
        if not len(filled):
            return (), ()
        limits, counts = limits[filled[0]:filled[-1] + 1], counts[filled[0]:filled[-1] + 1]
    inner = limits[:-1]
    return (tuple(inner.astype(np.float32).view(np.uint32).tolist()),
            tuple(counts.astype(np.float32).view(np.uint32).tolist()))
