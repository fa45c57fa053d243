"""Queued data to the bytes of event files. Pure: data in, bytes out, no I/O.

Two kinds of input:
- scalars, as numpy columns (series id, value, step, wall time, call order), a series being one
  tag in one file (`ScalarSeries`). They are by far the most frequent event, so they are encoded
  by hand and vectorized over the whole batch (the tests check that protobuf parses them to the
  expected messages): building three messages per scalar would cost more than everything else
  a scalar goes through (`encode_scalar_rows`);
- a built Summary or Event, at a step and wall time (`encode_event`).
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

from .._format._crc32c import crc32c_linear_rows, masked_crc32c_rows
from .._format.events import frame, record_header
from ..proto import Event

__all__ = ["ScalarSeries", "encode_event", "encode_scalar_rows", "scalar_prefix"]


class ScalarSeries:
    """The scalars of one tag in one file (`file`: its id; None: the main file) and the bytes
    their records share."""

    __slots__ = ("file", "prefix")

    def __init__(self, file: Optional[int], tag: str) -> None:
        self.file = file
        self.prefix = scalar_prefix(tag)


def varint(number: int) -> bytes:
    """Protobuf base-128 varint of a non-negative int (negative int64s: pass `n & 2**64-1`)."""
    out = bytearray()
    while number > 0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def scalar_prefix(tag: str) -> bytes:
    """The bytes of a scalar event between its step and its 4-byte float value:
    `Event.summary` (field 5) holding one `Summary.value` (field 1) with `tag` (field 1) and the
    key of `simple_value` (field 2, fixed32). Depends on the tag only, so it is built once a tag."""
    encoded = tag.encode("utf-8")
    value = b"\x0a" + varint(len(encoded)) + encoded + b"\x15"
    value_len = len(value) + 4
    summary_len = 1 + len(varint(value_len)) + value_len
    return b"\x2a" + varint(summary_len) + b"\x0a" + varint(value_len) + value


_VARINT_LIMITS = np.array([1 << shift for shift in range(7, 64, 7)], dtype=np.uint64)


def _records(prefixes: Sequence[bytes], tags: npt.NDArray[np.intp], values: npt.NDArray[np.float64],
             steps: npt.NDArray[np.int64], walls: npt.NDArray[np.float64],
             segments: Optional[npt.NDArray[np.intp]] = None) -> List[Tuple[int, npt.NDArray[np.uint8]]]:
    """Records of scalar rows, vectorized over all rows whatever their tags: `tags[i]` indexes
    `prefixes` (each a tag's `scalar_prefix`). A record's layout is set by its prefix's length
    and its step's varint length; rows are built a layout at a time, each tag's bytes gathered by
    row, and their CRC part computed once a tag (CRC32C is affine). Returns `(first row, block)`
    pairs in row order, a block the 2-D records of a run of rows of one tag and one layout (and one
    of `segments`, where given: a run never spans two). Each
    record parses as `Event(wall_time, step, summary{value{tag, simple_value}})`; the step is
    always written, also when 0 (valid protobuf, the same message)."""
    # int64 varints are two's complement.
    unsigned = np.asarray(steps, dtype=np.int64).view(np.uint64)
    step_len = 1 + np.searchsorted(_VARINT_LIMITS, unsigned, side="right")
    # Beyond float32: infinity, as protobuf does it.
    with np.errstate(over="ignore", invalid="ignore"):
        value_bytes = np.asarray(values, dtype=np.float64).astype("<f4").view(np.uint8).reshape(-1, 4)
    wall_bytes = np.asarray(walls, dtype="<f8").view(np.uint8).reshape(-1, 8)
    prefix_len = np.array([len(p) for p in prefixes], dtype=np.int64)
    # The table holds one tag's prefix in each row.
    table = np.zeros((len(prefixes), int(prefix_len.max())), dtype=np.uint8)
    for i, prefix in enumerate(prefixes):
        table[i, :len(prefix)] = np.frombuffer(prefix, np.uint8)
    # Varints are at most 10 bytes, so 16 separates the layouts.
    layout = prefix_len[tags] * 16 + step_len
    changes = np.diff(tags) | np.diff(layout)
    if segments is not None:
        changes |= np.diff(segments)
    # Runs of one tag and one layout (and segment).
    starts = np.flatnonzero(changes) + 1
    runs = np.concatenate(([0], starts, [len(tags)]))
    blocks: Dict[int, npt.NDArray[np.uint8]] = {}
    for key in np.unique(layout).tolist():
        rows = np.flatnonzero(layout == key) if len(blocks) or (layout != key).any() else slice(None)
        blocks[key] = _layout_records(table, prefix_len, key // 16, key % 16, tags[rows], value_bytes[rows],
                                      unsigned[rows], wall_bytes[rows])
    taken = dict.fromkeys(blocks, 0)
    out = []
    for first, end in zip(runs[:-1].tolist(), runs[1:].tolist()):
        key = int(layout[first])
        out.append((first, blocks[key][taken[key]:taken[key] + end - first]))
        taken[key] += end - first
    return out


def _layout_records(table: npt.NDArray[np.uint8], prefix_len: npt.NDArray[np.int64], size_of_prefix: int, step_len: int,
                    tags: npt.NDArray[np.intp], value_bytes: npt.NDArray[np.uint8], steps: npt.NDArray[np.uint64],
                    wall_bytes: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """Records of rows that share a layout: prefixes of `size_of_prefix` bytes, steps whose
    varint is `step_len` bytes."""
    # The size adds up wall_time, step, summary and value.
    size = 9 + 1 + step_len + size_of_prefix + 4
    records = np.empty((len(steps), 12 + size + 4), dtype=np.uint8)
    records[:, :12] = np.frombuffer(record_header(size), np.uint8)
    payload = records[:, 12:12 + size]
    # Field 1, fixed64: wall_time.
    payload[:, 0] = 0x09
    payload[:, 1:9] = wall_bytes
    # Field 2, varint: step.
    payload[:, 9] = 0x10
    for j in range(step_len):
        payload[:, 10 + j] = ((steps >> np.uint64(7 * j)) & np.uint64(0x7F)) | (0x80 if j < step_len - 1 else 0)
    start = 10 + step_len
    present, which = np.unique(tags, return_inverse=True)
    payload[:, start:size - 4] = 0
    # The tag's part is computed once for each tag.
    tag_part = crc32c_linear_rows(table[present, :size_of_prefix], after=4)[which]
    payload[:, size - 4:] = value_bytes
    varying = list(range(1, 9)) + list(range(10, start)) + list(range(size - 4, size))
    crc = masked_crc32c_rows(payload, varying, extra=tag_part)
    records[:, 12 + size:] = crc.astype("<u4").view(np.uint8).reshape(-1, 4)
    payload[:, start:size - 4] = table[tags if len(present) > 1 else present[0], :size_of_prefix]
    return records


def encode_event(message: Any, step: int, wall_time: float) -> bytes:
    """A Summary (or a whole Event) at `step` and `wall_time` to one framed record."""
    if type(message) is not Event:
        message = Event(summary=message)
    message.wall_time = wall_time
    message.step = step
    return frame(message.SerializeToString())


def encode_scalar_rows(series: Sequence[ScalarSeries], ids: npt.NDArray[np.int64], values: npt.NDArray[np.float64],
                       steps: npt.NDArray[np.int64], walls: npt.NDArray[np.float64],
                       seqs: npt.NDArray[np.int64],
                       cuts: Optional[Dict[Optional[int], npt.NDArray[np.int64]]] = None,
                       ) -> Iterator[Tuple[Optional[int], int, bytes]]:
    """Scalar rows (numpy columns; `ids` index `series`, the ScalarSeries) to framed records,
    as `(file, segment, bytes)`: each series' records in the order of `seqs` (call order). `cuts`:
    for a file, the call numbers (sorted) of the other records the batch writes there; its rows
    come in segments between them (segment i: the rows after i of those records), so that the
    file can hold every record in call order. One vectorized pass over the batch, however many
    tags it holds (`_records`)."""
    present, tags = np.unique(ids, return_inverse=True)
    targets = [series[i] for i in present.tolist()]
    file_index: Dict[Optional[int], int] = {}
    file_of = np.array([file_index.setdefault(t.file, len(file_index)) for t in targets], dtype=np.intp)
    segments = None
    if cuts and any(f in cuts for f in file_index):
        segments = np.zeros(len(seqs), dtype=np.intp)
        row_files = file_of[tags]
        for event_file, index in file_index.items():
            if event_file in cuts:
                rows = row_files == index
                segments[rows] = np.searchsorted(cuts[event_file], seqs[rows])
    if segments is None and len(present) == 1 and not (np.diff(seqs) < 0).any():
        order: Any = slice(None)
    # Otherwise rows are sorted by file, then segment, then tag, then call.
    else:
        order = np.lexsort((seqs, tags) + (() if segments is None else (segments,)) + (file_of[tags],))
        tags = tags[order]
        if segments is not None:
            segments = segments[order]
    runs = _records([t.prefix for t in targets], tags, values[order], steps[order], walls[order], segments)
    files = list(file_index)
    pieces: Dict[Tuple[int, int], List[npt.NDArray[np.uint8]]] = {}
    for first, block in runs:
        key = (int(file_of[tags[first]]), 0 if segments is None else int(segments[first]))
        pieces.setdefault(key, []).append(block)
    for (index, segment), blocks in pieces.items():
        # An ndarray is a buffer (numpy 1.23's stubs do not say so; numpy 2's do).
        yield files[index], segment, b"".join(blocks)  # type: ignore[arg-type,unused-ignore]
