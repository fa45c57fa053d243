"""Read event files at disk speed, for `mxboard.reader`'s scalars table and for `mxboard.report`.

numpy frames a window of a file. The simple scalar Events in it (a wall time, a step, and one
value with a tag and a `simple_value`, as mxboard, tensorboardX and torch write them) are decoded
many at once: every Event laid out as one of them, whatever its tag, is decoded together, its CRC
checked. Every other record is handed on as bytes for protobuf, once its CRC is checked. The work
grows with the records and bytes read, not with the number of tags. Small files are scanned many
at once, as one window (`scan_together`, for small_files.py). docs/architecture.md ("Reading event
files back") says more."""
from __future__ import annotations

import warnings
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .._format._crc32c import masked_crc32c, masked_crc32c_rows
from .._format.events import whole_records
from ..errors import CorruptRecordWarning, DataLossError
from ..proto import SummaryMetadata
from .records import open_at, read_records, torn

__all__ = ["Tags", "Window", "joined", "scan", "scan_file", "scan_together"]

# A payload longer than this is not a simple scalar, and is handed on untried.
TEMPLATE_MOST = 512
# The most layouts tried among the records of one length in a window. The records left after that
# (each laid out its own way: a description per tag, say) are handed on to protobuf, so that the
# work stays linear.
LAYOUTS_MOST = 32

# (tag ids, record numbers, steps, walls, values): the rows of one layout, as numpy arrays
Chunk = Tuple[Any, Any, Any, Any, Any]
# The starts of a window read record by record: none known.
_NO_STARTS = np.zeros(0, np.int64)


class Tags:
    """The tags of one file's decoded scalars, each given an id in the order first met.

    The ids are shared by all the windows of the file, so a tag is decoded from UTF-8 once a
    window at most, and a reader maps each id to its series once."""

    __slots__ = ("names", "_ids")

    def __init__(self) -> None:
        self.names: List[str] = []
        self._ids: Dict[bytes, int] = {}

    def ids(self, columns: Any) -> Tuple[Any, Any]:
        """The id of the tag in each row of `columns` (k x n uint8), and a mask of the rows whose
        tag was read.

        Rows are grouped by a hash of their bytes, and each group's first row is looked up by its
        bytes. A row is left out of the mask where its tag is not UTF-8, or where its bytes differ
        from its group's first row (two tags with one hash): protobuf then reads it."""
        keys = _keys(columns)
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        width = columns.shape[1]
        blob = np.ascontiguousarray(columns[first]).tobytes()
        raws = [blob[at:at + width] for at in range(0, len(unique) * width, width)]
        found = list(map(self._ids.get, raws))
        ids = np.array([-1 if known is None else known for known in found], np.int64)
        if None in found:
            missing = [i for i, known in enumerate(found) if known is None]
            ids[missing] = self._added([raws[i] for i in missing])
        row_ids = ids[inverse]
        read = row_ids >= 0
        if len(unique) < len(columns):
            read &= (columns == columns[first[inverse]]).all(axis=1)
        return row_ids, read

    def _added(self, raws: List[bytes]) -> Any:
        """The ids given to tags met for the first time (distinct), -1 for those that are not
        UTF-8."""
        try:
            names = [raw.decode("utf-8") for raw in raws]
        except UnicodeDecodeError:
            return np.array([self._added([raw])[0] if _utf8(raw) else -1 for raw in raws], np.int64)
        start = len(self.names)
        self.names.extend(names)
        self._ids.update(zip(raws, range(start, start + len(raws))))
        return np.arange(start, start + len(raws))


def _utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class Window:
    """What one window of a file held. Record numbers count from the file's first record.

    Attributes:
        scalars: the simple scalar Events, as chunks of (tag ids, record numbers, steps, walls,
            values), numpy arrays; a tag id indexes `tags`.
        tensors: the same, of float32 scalar tensors without metadata. They are scalars if the
            tag's plugin, named in its first event, is "scalars".
        tags: the names of the file's decoded tags, by id (one list for all its windows).
        plugins: `{tag: the plugin that its decoded events' metadata named}`.
        named: the (tag ids, record numbers) of the decoded events whose metadata named the
            scalars plugin, as numpy arrays: where a window holds several files
            (`scan_together`), each file's plugins are told by them.
        others: `[(record number, payload)]` of the other records, their CRCs checked.
        records: how many records the window framed.
        starts: where each framed record starts in the bytes scanned, by its number less the
            window's first (numpy int64; empty where the window was read record by record).
    """

    __slots__ = ("scalars", "tensors", "tags", "plugins", "named", "others", "records", "starts")

    def __init__(self, tags: Optional[Tags] = None) -> None:
        self.scalars: List[Chunk] = []
        self.tensors: List[Chunk] = []
        self.tags: List[str] = (tags or Tags()).names
        self.plugins: Dict[str, str] = {}
        self.named: List[Tuple[Any, Any]] = []
        self.others: List[Tuple[int, bytes]] = []
        self.records = 0
        self.starts: Any = _NO_STARTS


def joined(chunks: List[Chunk]) -> Chunk:
    """The chunks' rows as one chunk (empty arrays where there are none)."""
    if not chunks:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, np.zeros(0), np.zeros(0, np.float32)
    if len(chunks) == 1:
        return chunks[0]
    columns = [np.concatenate([chunk[i] for chunk in chunks]) for i in range(5)]
    return columns[0], columns[1], columns[2], columns[3], columns[4]


def _frame(d: Any) -> Optional[Tuple[Any, Any, int]]:
    """The (starts, lengths, consumed) of the whole records of `d` (uint8) from byte 0, or None
    where numpy cannot frame them, and the caller reads record by record.

    A record is where a header's length (under 2**24, so its high bytes are zero) passes its
    checksum, and the records so found must follow one another from byte 0."""
    n = len(d)
    if n < 12:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    # A header at i needs bytes i..i+11.
    m = n - 11
    # The length's high bytes (3 to 7) are zero: one pass over the bytes for each, without
    # indexing (a payload's zero bytes are many).
    zero = d == 0
    candidate = zero[7:m + 7].copy()
    for high in (6, 5, 4, 3):
        candidate &= zero[high:m + high]
    at = np.flatnonzero(candidate)
    # Two bytes of memory a byte of the window: freed before the headers are read.
    del zero, candidate
    if not len(at) or at[0] != 0:
        return None
    header = _rows(d, at, 12)
    stored = np.ascontiguousarray(header[:, 8:12]).view("<u4").ravel()
    # Only the length's low bytes differ between the headers: the others are zero in all.
    valid = masked_crc32c_rows(np.ascontiguousarray(header[:, :8]), range(3)) == stored
    starts = at[valid].astype(np.int64)
    if not len(starts) or starts[0] != 0:
        # the first header fails its checksum: the shared framing says where and why
        return None
    lengths = np.ascontiguousarray(header[valid, :8]).view("<u8").ravel().astype(np.int64)
    ends = starts + 16 + lengths
    fits = ends <= n
    # The first record that is not whole in `d`.
    whole = len(ends) if fits.all() else int(np.argmin(fits))
    if whole > 1 and not np.array_equal(starts[1:whole], ends[:whole - 1]):
        # A header found inside a payload, or a corrupt one missing: the records do not chain.
        return None
    consumed = int(ends[whole - 1]) if whole else 0
    if n - consumed >= 12 and (whole == len(starts) or starts[whole] != consumed):
        # A header there that fails its checksum, or a length of 2**24 or more.
        return None
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


# (the wall's offset, the step's byte range, the value's offset, the tag's byte range, the plugin)
Layout = Tuple[Optional[int], Optional[Tuple[int, int]], int, Tuple[int, int], Optional[str]]


def _layout(p: bytes) -> Optional[Layout]:
    """The layout of a payload that is a simple scalar Event, else None.

    Such an Event holds a wall time, a step and a summary of one tagged value, and nothing else.
    The value is a `simple_value`, or a float32 scalar tensor whose metadata, if any, names the
    scalars plugin. The plugin of the layout is "scalars" where the metadata says so, "" for a
    tensor without metadata (the tag's plugin, named in its first event, must then say
    "scalars"), and None for a plain simple_value."""
    try:
        wall = step = value = tag = None
        tensor, metadata = False, None
        at, n = 0, len(p)
        while at < n:
            key = p[at]
            at += 1
            # wall_time, a fixed64
            if key == 0x09 and wall is None:
                wall, at = at, at + 8
            # step, a varint
            elif key == 0x10 and step is None:
                start = at
                _, at = _varint(p, at)
                step = (start, at)
            # the summary, last, with one value in it
            elif key == 0x2A and value is None:
                found = _summary_value(p, at, n)
                if found is None:
                    return None
                tag, value, tensor, metadata, at = found
            else:
                return None
        if value is None or tag is None or at != n:
            return None
        if metadata is not None:
            if SummaryMetadata.FromString(metadata).plugin_data.plugin_name != "scalars":
                return None
            return wall, step, value, tag, "scalars"
        return wall, step, value, tag, "" if tensor else None
    # Any payload that is not this layout is read by protobuf.
    except Exception:  # noqa: BLE001
        return None


def _summary_value(p: bytes, at: int, n: int) -> Optional[Tuple[Tuple[int, int], int, bool, Optional[bytes], int]]:
    """(tag, value, whether a tensor, metadata, where it ends) of the one-value Summary that runs
    from `at` (its length's varint) to `n`, the end of the payload; None for any other summary."""
    tag: Optional[Tuple[int, int]] = None
    value: Optional[int] = None
    tensor, metadata = False, None
    size, at = _varint(p, at)
    if at + size != n or p[at] != 0x0A:
        return None
    inner, at = _varint(p, at + 1)
    if at + inner != n:
        return None
    while at < n:
        key = p[at]
        at += 1
        if key == 0x0A and tag is None:
            size, at = _varint(p, at)
            p[at:at + size].decode("utf-8")
            tag, at = (at, at + size), at + size
        # simple_value, a float32
        elif key == 0x15 and value is None:
            value, at = at, at + 4
        elif key == 0x42 and value is None:
            size, at = _varint(p, at)
            value = _scalar_tensor(p, at, at + size)
            if value is None:
                return None
            tensor, at = True, at + size
        elif key == 0x4A and metadata is None:
            size, at = _varint(p, at)
            metadata, at = p[at:at + size], at + size
        else:
            return None
    if tag is None or value is None:
        return None
    return tag, value, tensor, metadata, at


def _scalar_tensor(p: bytes, at: int, end: int) -> Optional[int]:
    """The offset of the float32 of a TensorProto holding one float32 and no shape (as float_val,
    packed or not, or as tensor_content), else None."""
    dtype, value = None, None
    while at < end:
        key = p[at]
        at += 1
        # Field 1 is dtype.
        if key == 0x08:
            dtype, at = _varint(p, at)
        # Field 2 is tensor_shape: a scalar's is empty.
        elif key == 0x12:
            size, at = _varint(p, at)
            if size:
                return None
        # Field 5 (float_val, packed) or field 4 (tensor_content) holds 4 bytes.
        elif key in (0x2A, 0x22) and value is None:
            size, at = _varint(p, at)
            if size != 4:
                return None
            value, at = at, at + 4
        # Field 5 is float_val, one fixed32.
        elif key == 0x2D and value is None:
            value, at = at, at + 4
        else:
            return None
    return value if dtype == 1 and at == end else None


def _decode(rows: Any, numbers: Any, offsets: Any, crcs: Any, window: Window, tags: Tags, corrupt: List[int]) -> None:
    """Decode the records of one payload length (`rows`, k x length).

    The first record not yet decided is parsed. If it is a simple scalar, every record laid out as
    it is (the same bytes but for the tag, wall, step and value, each step a varint of the same
    length) is decoded with it at once, whatever its tag. Otherwise it is handed on, and so is
    every record laid out as it is but for its wall time, where the next record is (the
    file_version Event that begins each file of a sweep). Either way, no record is believed before
    its CRC is checked."""
    left = np.arange(len(rows))
    layouts = alike = 0
    while len(left):
        first = int(left[0])
        payload = rows[first].tobytes()
        layout = _layout(payload) if layouts < LAYOUTS_MOST else None
        if layout is None and alike < LAYOUTS_MOST and _wall_first(payload) and len(left) > 1 and \
                _but_wall(rows[int(left[1])].tobytes()) == _but_wall(payload):
            # The wall time is never read by _layout: these records are no simple scalars either.
            alike += 1
            left = _hand_on_alike(rows, left, numbers, offsets, crcs, window, corrupt)
        elif layout is None:
            if masked_crc32c(payload) == int(crcs[first]):
                window.others.append((int(numbers[first]), payload))
            else:
                corrupt.append(int(offsets[first]))
            left = left[1:]
        else:
            layouts += 1
            left = _decode_layout(layout, rows, left, numbers, offsets, crcs, window, tags, corrupt)


def _hand_on_alike(rows: Any, left: Any, numbers: Any, offsets: Any, crcs: Any, window: Window,
                   corrupt: List[int]) -> Any:
    """Hand on, CRC-checked, every record of `left` laid out as its first but for the wall time;
    returns the records left."""
    block = rows[left]
    same = (block[:, 9:] == block[0, 9:]).all(axis=1) & (block[:, 0] == 0x09)
    members, left = left[same], left[~same]
    good = (masked_crc32c_rows(block[same], range(1, 9)) == crcs[members]).tolist()
    for i, number, offset, ok in zip(members.tolist(), numbers[members].tolist(), offsets[members].tolist(), good):
        if ok:
            window.others.append((number, rows[i].tobytes()))
        else:
            corrupt.append(offset)
    return left


def _decode_layout(layout: Layout, rows: Any, left: Any, numbers: Any, offsets: Any, crcs: Any, window: Window,
                   tags: Tags, corrupt: List[int]) -> Any:
    """Decode every record of `left` laid out as `layout` (its first's), CRC-checked, into
    `window`'s scalars or tensors; returns the records left."""
    wall, step, value, (tag_start, tag_end), plugin = layout
    varying = _varying(layout)
    shape = np.ones(rows.shape[1], bool)
    shape[varying] = False
    shape[tag_start:tag_end] = False
    block = rows[left]
    same = (block[:, shape] == block[0, shape]).all(axis=1)
    if step is not None:
        # A step's bytes but the last have their high bit set: the varint ends where first's does.
        same &= block[:, step[1] - 1] < 0x80
        if step[1] - step[0] > 1:
            same &= (block[:, step[0]:step[1] - 1] >= 0x80).all(axis=1)
    members, block, rest = left[same], block[same], left[~same]
    ids, read = tags.ids(block[:, tag_start:tag_end])
    if not read.all():
        rest = np.sort(np.concatenate([rest, members[~read]]))
        members, block, ids = members[read], block[read], ids[read]
    good = masked_crc32c_rows(block, varying + list(range(tag_start, tag_end))) == crcs[members]
    if not good.all():
        corrupt.extend(int(offsets[i]) for i in members[~good])
        members, block, ids = members[good], block[good], ids[good]
    if not len(members):
        return rest
    steps = np.zeros(len(members), np.uint64)
    if step is not None:
        for j, column in enumerate(range(*step)):
            steps |= (block[:, column] & 0x7F).astype(np.uint64) << np.uint64(7 * j)
    walls = (np.ascontiguousarray(block[:, wall:wall + 8]).view("<f8").ravel() if wall is not None
             else np.zeros(len(members)))
    values = np.ascontiguousarray(block[:, value:value + 4]).view("<f4").ravel()
    if plugin:
        for tag_id in np.unique(ids).tolist():
            window.plugins[tags.names[tag_id]] = plugin
        window.named.append((ids, numbers[members]))
    (window.tensors if plugin == "" else window.scalars).append(
        (ids, numbers[members], steps.view(np.int64), walls, values))
    return rest


def _wall_first(payload: bytes) -> bool:
    """Whether `payload` begins with an Event's wall time (field 1, a fixed64), as every writer's
    Events do."""
    return len(payload) >= 9 and payload[0] == 0x09


def _but_wall(payload: bytes) -> bytes:
    """`payload` without the wall time it begins with."""
    return payload[9:]


def _varying(layout: Layout) -> List[int]:
    """The columns of the wall, the step and the value: those that differ between records of one
    layout and tag."""
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


def scan(data: bytes, first: int = 0, tags: Optional[Tags] = None) -> Optional[Tuple[Window, int, List[int]]]:
    """Read the whole records at the start of `data`, numbered from `first`, their tags given ids
    in `tags` (the file's, shared by its windows; a new one by default).

    Returns (the window, the bytes consumed, the byte offsets of the records whose payload fails
    its CRC), or None where numpy cannot frame the records."""
    d = np.frombuffer(data, np.uint8)
    framed = _frame(d)
    if framed is None:
        return None
    starts, lengths, consumed = framed
    window, corrupt = _records(data, d, starts, lengths, first, tags if tags is not None else Tags())
    return window, consumed, corrupt


def scan_together(pieces: List[bytes]) -> Optional[Tuple[Window, Any, List[int]]]:
    """Read several files' bytes (`pieces`, each a whole file) as one window, so that many small
    files cost one pass of numpy, not one each.

    The records are numbered from 0 across the pieces, and their tags given ids in one Tags.
    Returns (the window, the number of each piece's first record followed by the number of
    records, the byte offsets in the joined pieces of the records whose payload fails its CRC),
    or None where a piece is not whole records that numpy can frame (a torn end, a corrupt
    length): the caller then reads its pieces one at a time."""
    data = b"".join(pieces)
    offsets = np.cumsum([0] + [len(piece) for piece in pieces], dtype=np.int64)
    d = np.frombuffer(data, np.uint8)
    framed = _frame(d)
    if framed is None or framed[2] != len(data):
        return None
    starts, lengths, _ = framed
    # Each piece must start a record: a torn file would otherwise take the first bytes of the
    # file after it into its last record.
    firsts = np.searchsorted(starts, offsets)
    sized = np.flatnonzero(offsets[1:] > offsets[:-1])
    if len(sized) and not np.array_equal(starts[np.minimum(firsts[sized], len(starts) - 1)], offsets[sized]):
        return None
    window, corrupt = _records(data, d, starts, lengths, 0, Tags())
    return window, firsts, corrupt


def _records(data: bytes, d: Any, starts: Any, lengths: Any, first: int, tags: Tags) -> Tuple[Window, List[int]]:
    """The window of the framed records of `data` (`d`, its bytes as uint8), numbered from
    `first`, and the byte offsets of those whose payload fails its CRC."""
    window, corrupt = Window(tags), []  # type: Window, List[int]
    window.records = len(starts)
    window.starts = starts
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
        _decode(rows, numbers[chosen], starts[chosen], crcs[chosen], window, tags, corrupt)
    window.others.sort(key=lambda other: other[0])
    corrupt.sort()
    return window, corrupt


def scan_file(path: str, window_bytes: int = 8 << 20, strict: bool = False) -> Iterator[Window]:
    """The windows of one event file (a path or a store's URL), in order.

    A corrupt record or a torn end is warned about as `mxboard.reader.read_records` warns, and with
    `strict` a corrupt record raises its DataLossError. Where numpy cannot frame a window, the
    shared framing (`events.whole_records`) frames it; what that cannot frame either (a header
    found inside a payload) is read record by record from there."""
    tags = Tags()
    with _bounded(path, open_at, path, 0) as f:
        carry, base, number = b"", 0, 0
        while True:
            piece = _bounded(path, f.read, window_bytes)
            data = carry + piece if carry else piece
            if not data:
                return
            problem = None
            scanned = scan(data, number, tags)
            if scanned is None:
                whole, problem = whole_records(data, 1 << 64, start=0, check_from=0)
                scanned = scan(data[:whole], number, tags)
                if scanned is None or scanned[1] != whole:
                    yield from _record_by_record(path, base, number, strict, tags)
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


def _record_by_record(path: str, offset: int, number: int, strict: bool, tags: Tags) -> Iterator[Window]:
    window = Window(tags)
    for payload in read_records(path, offset, strict=strict):
        window.others.append((number, payload))
        number += 1
        if len(window.others) >= 4096:
            window.records = len(window.others)
            yield window
            window = Window(tags)
    window.records = len(window.others)
    if window.others:
        yield window
