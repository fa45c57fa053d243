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

from ._crc32c import crc32c_linear_rows, masked_crc32c_rows
from .events import frame, record_header
from .proto import Event

__all__ = ["ScalarSeries", "encode_event", "encode_scalar_rows", "scalar_prefix"]


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


def _records(prefixes, tags, values, steps, walls):
    """Records of scalar rows, vectorized over all rows whatever their tags: `tags[i]` indexes
    `prefixes` (each a tag's `scalar_prefix`). A record's layout is set by its prefix's length
    and its step's varint length; rows are built a layout at a time, each tag's bytes gathered by
    row, and their CRC part computed once a tag (CRC32C is affine). Returns `(first row, block)`
    pairs in row order, a block the 2-D records of a run of rows of one tag and one layout. Each
    record parses as `Event(wall_time, step, summary{value{tag, simple_value}})`; the step is
    always written, also when 0 (valid protobuf, the same message)."""
    steps = np.asarray(steps, dtype=np.int64).view(np.uint64)  # int64 varints: two's complement
    step_len = 1 + np.searchsorted(_VARINT_LIMITS, steps, side="right")
    with np.errstate(over="ignore"):  # beyond float32: infinity, as protobuf does it
        value_bytes = np.asarray(values, dtype=np.float64).astype("<f4").view(np.uint8).reshape(-1, 4)
    wall_bytes = np.asarray(walls, dtype="<f8").view(np.uint8).reshape(-1, 8)
    prefix_len = np.array([len(p) for p in prefixes], dtype=np.int64)
    table = np.zeros((len(prefixes), int(prefix_len.max())), dtype=np.uint8)  # a tag's prefix a row
    for i, prefix in enumerate(prefixes):
        table[i, :len(prefix)] = np.frombuffer(prefix, np.uint8)
    layout = prefix_len[tags] * 16 + step_len  # varints are at most 10 bytes
    starts = np.flatnonzero(np.diff(tags) | np.diff(layout)) + 1  # runs of one tag and one layout
    runs = np.concatenate(([0], starts, [len(tags)]))
    blocks = {}
    for key in np.unique(layout).tolist():
        rows = np.flatnonzero(layout == key) if len(blocks) or (layout != key).any() else slice(None)
        blocks[key] = _layout_records(table, prefix_len, key // 16, key % 16, tags[rows], value_bytes[rows],
                                      steps[rows], wall_bytes[rows])
    taken = dict.fromkeys(blocks, 0)
    out = []
    for first, end in zip(runs[:-1].tolist(), runs[1:].tolist()):
        key = int(layout[first])
        out.append((first, blocks[key][taken[key]:taken[key] + end - first]))
        taken[key] += end - first
    return out


def _layout_records(table, prefix_len, size_of_prefix, step_len, tags, value_bytes, steps, wall_bytes):
    """Records of rows that share a layout: prefixes of `size_of_prefix` bytes, steps whose
    varint is `step_len` bytes."""
    size = 9 + 1 + step_len + size_of_prefix + 4  # wall_time, step, summary, value
    records = np.empty((len(steps), 12 + size + 4), dtype=np.uint8)
    records[:, :12] = np.frombuffer(record_header(size), np.uint8)
    payload = records[:, 12:12 + size]
    payload[:, 0] = 0x09  # field 1, fixed64: wall_time
    payload[:, 1:9] = wall_bytes
    payload[:, 9] = 0x10  # field 2, varint: step
    for j in range(step_len):
        payload[:, 10 + j] = ((steps >> np.uint64(7 * j)) & np.uint64(0x7F)) | (0x80 if j < step_len - 1 else 0)
    start = 10 + step_len
    present, which = np.unique(tags, return_inverse=True)
    payload[:, start:size - 4] = 0
    tag_part = crc32c_linear_rows(table[present, :size_of_prefix], after=4)[which]  # once a tag
    payload[:, size - 4:] = value_bytes
    varying = list(range(1, 9)) + list(range(10, start)) + list(range(size - 4, size))
    crc = masked_crc32c_rows(payload, varying, extra=tag_part)
    records[:, 12 + size:] = crc.astype("<u4").view(np.uint8).reshape(-1, 4)
    payload[:, start:size - 4] = table[tags if len(present) > 1 else present[0], :size_of_prefix]
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
    as `(file, bytes)` pairs: each series' records in the order of `seqs` (call order). One
    vectorized pass over the batch, however many tags it holds (`_records`)."""
    present, tags = np.unique(ids, return_inverse=True)
    targets = [series[i] for i in present.tolist()]
    file_index = {}
    file_of = np.array([file_index.setdefault(t.file, len(file_index)) for t in targets], dtype=np.intp)
    if len(present) == 1 and not (np.diff(seqs) < 0).any():
        order = slice(None)
    else:
        order = np.lexsort((seqs, tags, file_of[tags]))  # by file, then tag, then call
        tags = tags[order]
    runs = _records([t.prefix for t in targets], tags, values[order], steps[order], walls[order])
    files = list(file_index)
    pieces = [[] for _ in files]
    for first, block in runs:
        pieces[file_of[tags[first]]].append(block)
    for event_file, blocks in zip(files, pieces):
        yield event_file, b"".join(blocks)
