"""Read event files at disk speed, for `mxboard.reader`'s scalars table and for `mxboard.report`.

numpy frames a window of a file and checks every CRC. The simple scalar Events in it (a wall time,
a step, and one value with a tag and a `simple_value`, as mxboard, tensorboardX and torch write
them) are decoded many at once from the layout of one of them, and every other record is handed
on as bytes, for protobuf. docs/architecture.md ("Reading event files back") says more."""
from __future__ import annotations

import warnings
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .._format._crc32c import masked_crc32c, masked_crc32c_rows
from .._format.events import whole_records
from ..errors import CorruptRecordWarning, DataLossError
from ..proto import SummaryMetadata
from .records import open_at, read_records, torn

__all__ = ["Window", "scan", "scan_file"]

TEMPLATE_MOST = 512  # a payload longer than this is not a simple scalar, and is handed on untried


class Window:
    """What one window of a file held, in record order. Record numbers count from the file's first
    record.

    Attributes:
        scalars: `{tag: [(record numbers, steps, walls, values)]}` of its scalar Events, as numpy
            arrays.
        tensors: the same, of float32 scalar tensors without metadata. They are scalars if the
            tag's plugin, named in its first event, is "scalars".
        plugins: `{tag: the plugin that its decoded events' metadata named}`.
        others: `[(record number, payload)]` of the other records, their CRCs checked.
        records: how many records the window framed.
    """

    __slots__ = ("scalars", "tensors", "plugins", "others", "records")

    def __init__(self) -> None:
        self.scalars: Dict[str, List[Tuple[Any, Any, Any, Any]]] = {}
        self.tensors: Dict[str, List[Tuple[Any, Any, Any, Any]]] = {}
        self.plugins: Dict[str, str] = {}
        self.others: List[Tuple[int, bytes]] = []
        self.records = 0


def _frame(d: Any) -> Optional[Tuple[Any, Any, int]]:
    """The (starts, lengths, consumed) of the whole records of `d` (uint8) from byte 0, or None
    where numpy cannot frame them, and the caller reads record by record.

    A record is where a header's length (under 2**24, so its high bytes are zero) passes its
    checksum, and the records so found must follow one another from byte 0."""
    n = len(d)
    if n < 12:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    m = n - 11  # a header at i needs bytes i..i+11
    at = np.flatnonzero(d[7:m + 7] == 0)  # the length's high bytes are zero: test byte 7 first, then 3 to 6
    for high in (6, 5, 4, 3):
        at = at[d[at + high] == 0]
    if not len(at) or at[0] != 0:
        return None
    header = _rows(d, at, 12)
    stored = np.ascontiguousarray(header[:, 8:12]).view("<u4").ravel()
    valid = masked_crc32c_rows(np.ascontiguousarray(header[:, :8]), range(8)) == stored
    starts = at[valid].astype(np.int64)
    lengths = np.ascontiguousarray(header[valid, :8]).view("<u8").ravel().astype(np.int64)
    ends = starts + 16 + lengths
    fits = ends <= n
    whole = len(ends) if fits.all() else int(np.argmin(fits))  # the first record that is not whole in `d`
    if whole > 1 and not np.array_equal(starts[1:whole], ends[:whole - 1]):
        return None  # a header found inside a payload, or a corrupt one missing: the records do not chain
    consumed = int(ends[whole - 1]) if whole else 0
    if n - consumed >= 12 and (whole == len(starts) or starts[whole] != consumed):
        return None  # a header there that fails its checksum, or a length of 2**24 or more
    return starts[:whole], lengths[:whole], consumed


def _rows(d: Any, at: Any, width: int) -> Any:
    """The `width` bytes from each of the offsets `at`, as a (len(at), width) array. Only those
    bytes are copied; no index array of that size is made."""
    return np.lib.stride_tricks.sliding_window_view(d, width)[at]


def _varint(p: bytes, at: int) -> Tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = p[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


Layout = Tuple[Optional[int], Optional[Tuple[int, int]], int, str, Optional[str]]


def _layout(p: bytes) -> Optional[Layout]:
    """The layout of a payload that is a simple scalar Event, else None.

    Such an Event holds a wall time, a step and a summary of one tagged value, and nothing else.
    The value is a `simple_value`, or a float32 scalar tensor whose metadata, if any, names the
    scalars plugin. The layout is (the wall's offset, the step's byte range, the value's offset,
    the tag, the plugin): the plugin is "scalars" where the metadata says so, "" for a tensor
    without metadata (the tag's plugin, named in its first event, must then say "scalars"), and
    None for a plain simple_value."""
    try:
        wall = step = value = tag = None
        tensor, metadata = False, None
        at, n = 0, len(p)
        while at < n:
            key = p[at]
            at += 1
            if key == 0x09 and wall is None:  # wall_time, fixed64
                wall, at = at, at + 8
            elif key == 0x10 and step is None:  # step, varint
                start = at
                _, at = _varint(p, at)
                step = (start, at)
            elif key == 0x2A and value is None:  # summary
                size, at = _varint(p, at)
                if at + size != n or p[at] != 0x0A:  # the summary last, and one value in it
                    return None
                inner, at = _varint(p, at + 1)
                if at + inner != n:
                    return None
                while at < n:
                    key = p[at]
                    at += 1
                    if key == 0x0A and tag is None:
                        size, at = _varint(p, at)
                        tag = p[at:at + size].decode("utf-8")
                        at += size
                    elif key == 0x15 and value is None:  # simple_value
                        value, at = at, at + 4
                    elif key == 0x42 and value is None:  # tensor
                        size, at = _varint(p, at)
                        value = _scalar_tensor(p, at, at + size)
                        if value is None:
                            return None
                        tensor, at = True, at + size
                    elif key == 0x4A and metadata is None:  # metadata
                        size, at = _varint(p, at)
                        metadata, at = p[at:at + size], at + size
                    else:
                        return None
            else:
                return None
        if value is None or tag is None or at != n:
            return None
        if metadata is not None:
            if SummaryMetadata.FromString(metadata).plugin_data.plugin_name != "scalars":
                return None
            return wall, step, value, tag, "scalars"
        return wall, step, value, tag, "" if tensor else None
    except Exception:  # noqa: BLE001 (any payload that is not this layout: protobuf reads it)
        return None


def _scalar_tensor(p: bytes, at: int, end: int) -> Optional[int]:
    """The offset of the float32 of a TensorProto holding one float32 and no shape (as float_val,
    packed or not, or as tensor_content), else None."""
    dtype, value = None, None
    while at < end:
        key = p[at]
        at += 1
        if key == 0x08:  # dtype
            dtype, at = _varint(p, at)
        elif key == 0x12:  # tensor_shape: a scalar's is empty
            size, at = _varint(p, at)
            if size:
                return None
        elif key in (0x2A, 0x22) and value is None:  # float_val packed, tensor_content: 4 bytes
            size, at = _varint(p, at)
            if size != 4:
                return None
            value, at = at, at + 4
        elif key == 0x2D and value is None:  # float_val, one fixed32
            value, at = at, at + 4
        else:
            return None
    return value if dtype == 1 and at == end else None


def _scalars(rows: Any, numbers: Any, offsets: Any, crcs: Any, window: Window, corrupt: List[int]) -> None:
    """Decode the records of one payload length (`rows`, k x length): each simple scalar layout
    found is decoded for all its rows at once, and the other records are handed on."""
    undecided = np.ones(len(rows), bool)
    width = rows.shape[1]
    while True:
        left = np.flatnonzero(undecided)
        if not len(left):
            return
        first = int(left[0])
        layout = _layout(rows[first].tobytes())
        if layout is None:
            undecided[first] = False
            window.others.append((int(numbers[first]), rows[first].tobytes()))
            continue
        varying = _varying(layout)
        fixed = np.ones(width, bool)
        fixed[varying] = False
        # Find the rows of this layout, whatever their tag: group them by their fixed bytes (by a
        # hash, then comparing each group's bytes), and check the layout of each group's first row.
        keys = _keys(rows[left][:, fixed])
        unique, inverse = np.unique(keys, return_inverse=True)
        for group in range(len(unique)):
            members = left[inverse == group]
            head = int(members[0])
            found = layout if head == first else _layout(rows[head].tobytes())
            if found is None or _varying(found) != varying:
                continue
            members = members[(rows[members][:, fixed] == rows[head, fixed]).all(axis=1)]
            undecided[members] = False
            _decoded(rows[members], members, found, varying, numbers, offsets, crcs, window, corrupt)


def _varying(layout: Layout) -> List[int]:
    wall, step, value, _, _ = layout
    varying = list(range(value, value + 4))
    if wall is not None:
        varying += range(wall, wall + 8)
    if step is not None:
        varying += range(*step)
    return sorted(varying)


def _keys(block: Any) -> Any:
    """A 64-bit hash of each row of a uint8 block."""
    width = block.shape[1]
    padded = np.zeros((len(block), (width + 7) // 8 * 8), np.uint8)
    padded[:, :width] = block
    words = padded.view("<u8")
    key = np.zeros(len(block), np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            key = (key * np.uint64(0x100000001B3)) ^ words[:, j]
    return key


def _decoded(block: Any, members: Any, layout: Layout, varying: List[int], numbers: Any, offsets: Any, crcs: Any,
             window: Window, corrupt: List[int]) -> None:
    """The rows of one layout and tag: CRCs checked, wall, step and value decoded."""
    wall, step, value, tag, plugin = layout
    good = masked_crc32c_rows(block, varying) == crcs[members]
    if not good.all():
        corrupt.extend(int(offsets[i]) for i in members[~good])
        members, block = members[good], block[good]
    steps = np.zeros(len(members), np.uint64)
    if step is not None:
        for j, column in enumerate(range(*step)):
            steps |= (block[:, column] & 0x7F).astype(np.uint64) << np.uint64(7 * j)
    walls = (np.ascontiguousarray(block[:, wall:wall + 8]).view("<f8").ravel() if wall is not None
             else np.zeros(len(members)))
    values = np.ascontiguousarray(block[:, value:value + 4]).view("<f4").ravel()
    if plugin:
        window.plugins[tag] = plugin
    (window.tensors if plugin == "" else window.scalars).setdefault(tag, []).append(
        (numbers[members], steps.view(np.int64), walls, values))


def scan(data: bytes, first: int = 0) -> Optional[Tuple[Window, int, List[int]]]:
    """Read the whole records at the start of `data`, numbered from `first`.

    Returns (the window, the bytes consumed, the byte offsets of the records whose payload fails
    its CRC), or None where numpy cannot frame the records."""
    d = np.frombuffer(data, np.uint8)
    framed = _frame(d)
    if framed is None:
        return None
    starts, lengths, consumed = framed
    window, corrupt = Window(), []  # type: Window, List[int]
    window.records = len(starts)
    numbers = np.arange(first, first + len(starts), dtype=np.int64)
    trailer_at = starts + 12 + lengths
    crcs = _rows(d, trailer_at, 4).view("<u4").ravel() if len(starts) else np.zeros(0, np.uint32)
    for length in np.unique(lengths):
        chosen = np.flatnonzero(lengths == length)
        if length > TEMPLATE_MOST or length == 0:
            for i in chosen:
                payload = data[int(starts[i]) + 12:int(starts[i]) + 12 + int(length)]
                if masked_crc32c(payload) == int(crcs[i]):
                    window.others.append((int(numbers[i]), payload))
                else:
                    corrupt.append(int(starts[i]))
            continue
        rows = _rows(d, starts[chosen] + 12, int(length))
        _scalars(rows, numbers[chosen], starts[chosen], crcs[chosen], window, corrupt)
    window.others.sort(key=lambda other: other[0])
    return window, consumed, corrupt


def scan_file(path: str, window_bytes: int = 8 << 20, strict: bool = False) -> Iterator[Window]:
    """The windows of one event file (a path or a store's URL), in order.

    A corrupt record or a torn end is warned about as `mxboard.reader.read_records` warns, and with
    `strict` a corrupt record raises its DataLossError. Where numpy cannot frame a window, the
    shared framing (`events.whole_records`) frames it; what that cannot frame either (a header
    found inside a payload) is read record by record from there."""
    with _bounded(path, open_at, path, 0) as f:
        carry, base, number = b"", 0, 0
        while True:
            piece = _bounded(path, f.read, window_bytes)
            data = carry + piece if carry else piece
            if not data:
                return
            problem = None
            scanned = scan(data, number)
            if scanned is None:
                whole, problem = whole_records(data, 1 << 64, start=0, check_from=0)
                scanned = scan(data[:whole], number)
                if scanned is None or scanned[1] != whole:
                    yield from _record_by_record(path, base, number, strict)
                    return
            window, consumed, corrupt = scanned
            for bad in corrupt:
                _corrupt("%s: corrupt record payload at byte %d; the record is skipped" % (path, base + bad), strict)
            number += window.records
            if window.records:
                yield window
            if problem is not None:
                _corrupt("%s: corrupt record length at byte %d; the rest of the file cannot be framed"
                         % (path, base + consumed), strict)
                return
            carry, base = data[consumed:], base + consumed
            if not piece:
                if carry:
                    torn(path, base, base + len(carry))
                return


def _bounded(path: str, call: Any, *args: Any) -> Any:
    """`call(*args)`. For a store's file, the call must end within the writer's bound on one
    request (UploadPolicy.request_secs; storage/bounds.py), or a TimeoutError is raised."""
    if "://" not in path:
        return call(*args)
    from ..storage.bounds import call_with_timeout
    from ..storage.remote.policy import DEFAULT_POLICY

    return call_with_timeout(DEFAULT_POLICY.request_secs, call, *args)


def _corrupt(message: str, strict: bool) -> None:
    if strict:
        raise DataLossError(message)
    warnings.warn(CorruptRecordWarning(message), stacklevel=3)


def _record_by_record(path: str, offset: int, number: int, strict: bool) -> Iterator[Window]:
    window = Window()
    for payload in read_records(path, offset, strict=strict):
        window.others.append((number, payload))
        number += 1
        if len(window.others) >= 4096:
            window.records = len(window.others)
            yield window
            window = Window()
    window.records = len(window.others)
    if window.others:
        yield window
