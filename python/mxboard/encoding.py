"""Queued data to the bytes of event files. Pure: data in, bytes out, no I/O.

Two kinds of input:
- scalars, as numpy columns (series id, value, step, wall time, call order), a series being one
  tag in one file (`ScalarSeries`). They are by far the most frequent event, so they are encoded
  by hand and vectorized over the whole batch (the tests check that protobuf parses them to the
  expected messages): building three messages per scalar would cost more than everything else
  a scalar goes through (`encode_scalar_rows`);
- a built Summary or Event, at a step and wall time (`encode_event`).
"""
import numpy as np

from ._crc32c import masked_crc32c_rows
from .events import frame, record_header
from .proto import Event

__all__ = ["ScalarSeries", "encode_event", "encode_scalar_rows", "encode_scalars", "scalar_prefix"]


class ScalarSeries:
    """The scalars of one tag in one file: where they go and the bytes their records share."""

    __slots__ = ("file", "prefix")

    def __init__(self, file, tag):
        self.file = file
        self.prefix = scalar_prefix(tag)


def varint(number):
    """Protobuf base-128 varint of a non-negative int (negative int64s: pass `n & 2**64-1`)."""
    out = bytearray()
    while number > 0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def scalar_prefix(tag):
    """The bytes of a scalar event between its step and its 4-byte float value:
    `Event.summary` (field 5) holding one `Summary.value` (field 1) with `tag` (field 1) and the
    key of `simple_value` (field 2, fixed32). Depends on the tag only, so it is built once a tag."""
    tag = tag.encode("utf-8")
    value = b"\x0a" + varint(len(tag)) + tag + b"\x15"
    value_len = len(value) + 4
    summary_len = 1 + len(varint(value_len)) + value_len
    return b"\x2a" + varint(summary_len) + b"\x0a" + varint(value_len) + value


_VARINT_LIMITS = np.array([1 << shift for shift in range(7, 64, 7)], dtype=np.uint64)


def encode_scalars(prefix, values, steps, walls):
    """Framed records of many scalar events of one tag, vectorized over the events.

    `values`, `steps`, `walls`: equal-length sequences. Returns a list of 2-D uint8 arrays, one
    record a row, whose rows in order are the events in order (records differ in size with the
    step's varint, so there is a block for every run of equal sizes). Each record parses as
    `Event(wall_time, step, summary{value{tag, simple_value}})`; the step is always written, also
    when 0 (valid protobuf, the same message).
    """
    steps = np.asarray(steps, dtype=np.int64).view(np.uint64)  # int64 varints: two's complement
    step_len = 1 + np.searchsorted(_VARINT_LIMITS, steps, side="right")
    with np.errstate(over="ignore"):  # beyond float32: infinity, as protobuf does it
        value_bytes = np.asarray(values, dtype=np.float64).astype("<f4").view(np.uint8).reshape(-1, 4)
    wall_bytes = np.asarray(walls, dtype="<f8").view(np.uint8).reshape(-1, 8)
    prefix = np.frombuffer(prefix, dtype=np.uint8)
    by_length = {}
    lengths = np.unique(step_len).tolist()
    for length in lengths:
        rows = slice(None) if len(lengths) == 1 else step_len == length
        by_length[length] = _scalar_records(prefix, length, value_bytes[rows], steps[rows], wall_bytes[rows])
    if len(by_length) == 1:
        return list(by_length.values())
    starts = np.concatenate(([0], np.flatnonzero(np.diff(step_len)) + 1, [len(step_len)]))
    taken = dict.fromkeys(by_length, 0)
    blocks = []
    for start, end in zip(starts[:-1].tolist(), starts[1:].tolist()):
        length = int(step_len[start])
        blocks.append(by_length[length][taken[length]:taken[length] + end - start])
        taken[length] += end - start
    return blocks


def _scalar_records(prefix, step_len, value_bytes, steps, wall_bytes):
    """Records of scalar events whose steps all have a varint of `step_len` bytes."""
    size = 9 + 1 + step_len + len(prefix) + 4  # wall_time, step, summary, value
    records = np.empty((len(steps), 12 + size + 4), dtype=np.uint8)
    records[:, :12] = np.frombuffer(record_header(size), np.uint8)
    payload = records[:, 12:12 + size]
    payload[:, 0] = 0x09  # field 1, fixed64: wall_time
    payload[:, 1:9] = wall_bytes
    payload[:, 9] = 0x10  # field 2, varint: step
    for j in range(step_len):
        payload[:, 10 + j] = ((steps >> np.uint64(7 * j)) & np.uint64(0x7F)) | (0x80 if j < step_len - 1 else 0)
    payload[:, 10 + step_len:size - 4] = prefix
    payload[:, size - 4:] = value_bytes
    varying = list(range(1, 9)) + list(range(10, 10 + step_len)) + list(range(size - 4, size))
    records[:, 12 + size:] = masked_crc32c_rows(payload, varying).astype("<u4").view(np.uint8).reshape(-1, 4)
    return records


def encode_event(message, step, wall_time):
    """A Summary (or a whole Event) at `step` and `wall_time` to one framed record."""
    if type(message) is not Event:
        message = Event(summary=message)
    message.wall_time = wall_time
    message.step = step
    return frame(message.SerializeToString())


def encode_scalar_rows(series, ids, values, steps, walls, seqs):
    """Scalar rows (numpy columns; `ids` index `series`, the ScalarSeries) to framed records,
    as `(file, bytes)` pairs: each series' records in the order of `seqs` (call order)."""
    if (ids == ids[0]).all():  # the common case: one tag
        order = np.argsort(seqs, kind="stable") if (np.diff(seqs) < 0).any() else slice(None)
        groups = [(int(ids[0]), order)]
    else:
        order = np.lexsort((seqs, ids))
        present, starts = np.unique(ids[order], return_index=True)
        ends = list(starts[1:]) + [len(ids)]
        groups = [(int(i), order[start:end]) for i, start, end in zip(present, starts, ends)]
    for sid, rows in groups:
        target = series[sid]
        blocks = encode_scalars(target.prefix, values[rows], steps[rows], walls[rows])
        yield target.file, b"".join(block.tobytes() for block in blocks)
