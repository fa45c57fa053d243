"""Read event files' new records, each checked against its CRCs, from where the last read
stopped.

An `EventFile` remembers how far its file was read. `read` reads what many files added since, in
their order, with mxboard's vectorised scanner (`mxboard._reading.scan`): small files' new bytes
scanned together (`scan_together`, as `_reading/small_files.py` reads a sweep), a big file's a
window at a time (`scan`). It gives a `Scanned` for each file: the simple scalar Events as numpy
rows, the other records as payloads. Where the scanner cannot frame a file (a damaged length, a
header inside a payload), the rest of it is read record by record (`Records`, with
`events.whole_records`). Every payload's CRC is checked: a damaged record is skipped and said
once, a damaged length ends what can be read of the file (said once), a torn last record is read
again at the next reload, and a file is not opened while its size is the one last seen.
"""
import bisect
import collections
import logging
import os
from concurrent.futures import Executor, Future
from typing import Any, Deque, Dict, Generator, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from mxboard._format._crc32c import masked_crc32c
from mxboard._format.events import RECORD_HEADER, RECORD_TRAILER, whole_records
from mxboard._reading import small_files
from mxboard._reading.scan import Tags, Window, joined, scan, scan_together
from mxboard._reading.scan_process import ScanProcess

__all__ = ["AHEAD", "BATCH", "EventFile", "Records", "SMALL", "SPREAD_BATCH", "Scanned", "WINDOW", "Whole", "read",
           "read_whole"]

logger = logging.getLogger(__name__)

# The bytes read at a time: a file of any size is read in about this much memory.
WINDOW = 4 << 20
# A file that added at most this many bytes is read whole and scanned with its neighbours.
SMALL = small_files.SMALL
# The most bytes of small files scanned together.
BATCH = 8 << 20
# The most bytes of small files scanned together by a scanner's process: small, so that the
# caller waits little for the first; and how many of them it may have to scan at once.
SPREAD_BATCH = 1 << 20
AHEAD = 4
# Above any u64: a record is bounded by what its file holds, not by a size.
_NO_LIMIT = 1 << 64
# The "scan" of a batch of one file, never sent to a scanner's process: a file alone is read alone
# (`_together`), and `found` False leaves that to it.
_SCANNED_HERE: "Future[Any]" = Future()
_SCANNED_HERE.set_result(False)


class EventFile:
    """One event file of a run, and how far it was read.

    Attributes:
        path: the file.
        offset: where its next record starts (after the last whole record read).
        size: the file's size at the last read (-1 before the first).
        ended: a damaged length was found at `offset`: nothing after it can be framed.
        bytes_read: every byte read from the file so far (a torn end is read again).
        initial_metadata: upstream's state of the file's migration (dataclass_compat), kept for
            reading a blob's record back as it was read first.
        gave_points: a summary of the file was taken (index.py: a restart's START heads a file).
    """

    __slots__ = ("path", "offset", "size", "ended", "bytes_read", "initial_metadata", "gave_points")

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.size = -1
        self.ended = False
        self.bytes_read = 0
        self.initial_metadata: Dict[str, Any] = {}
        self.gave_points = False


class Scanned:
    """What the scanner read of one file's new bytes: `rows`, the simple scalar Events (tag ids
    into `tags`, record numbers, steps, walls, values: numpy arrays, in record order), and
    `others`, [(record number, payload)] of the other records, in order. `offset(number)` and
    `payload(number)` find any record of them in the file."""

    __slots__ = ("file", "tags", "rows", "others", "_data", "_starts", "_base", "_shift")

    def __init__(self, file: EventFile, tags: List[str], rows: Tuple[Any, Any, Any, Any, Any],
                 others: List[Tuple[int, bytes]], data: bytes, starts: Any, base: int, shift: int = 0) -> None:
        self.file = file
        self.tags = tags
        self.rows = rows
        self.others = others
        # The file's new bytes, and where each record starts in the bytes scanned with them
        # (`starts`, less `shift`: the file's first byte there).
        self._data = data
        self._starts = starts
        self._shift = shift
        # The file's byte offset of the bytes scanned.
        self._base = base

    def offset(self, number: int) -> int:
        """The byte offset in the file of record `number`."""
        return self._base + int(self._starts[number])

    def payload(self, number: int) -> bytes:
        """The payload of record `number` (its CRC checked by the scan)."""
        start = int(self._starts[number]) - self._shift
        return self._data[start + 12:start + 12 + RECORD_HEADER.unpack_from(self._data, start)[0]]


class Records:
    """The rest of a file that the scanner cannot frame: `records`, its (byte offset, payload)
    read one at a time."""

    __slots__ = ("file", "records")

    def __init__(self, file: EventFile, records: Iterator[Tuple[int, bytes]]) -> None:
        self.file = file
        self.records = records


Read = Union[Scanned, Records]


def read(files: Sequence[Tuple[EventFile, Optional[int]]], fetch: Optional[Executor] = None,
         scanner: Optional[ScanProcess] = None, given: Optional[Mapping[str, bytes]] = None) -> Iterator[Read]:
    """What each of `files` added since its last read, in their order: (file, its size where the
    caller knows it, None to stat it). Each Scanned or Records is to be taken before the next is
    asked for. `fetch`: threads that read the small files' new bytes ahead (each read waits on a
    network filesystem's server), BATCH bytes ahead at most; else each is read in its turn.
    `scanner`: a process that scans each batch of small files while the caller takes the batch
    before (AHEAD batches ahead at most). `given`: files read whole already, by path."""
    pending: List[Tuple[EventFile, bytes]] = []
    # Batches sent to `scanner`: (their files, their scan to come, the index in `files` after them).
    sent: Deque[Tuple[List[Tuple[EventFile, bytes]], "Future[Any]", int]] = collections.deque()
    held = handed = 0  # the bytes pending; the files handed to the caller so far (in part at least)
    noted = [file.size for file, _ in files]
    sized = [(file, _new_size(file, size)) for file, size in files]
    # Told before any is read (a file read alone moves its offset).
    small = [size is not None and size - file.offset <= SMALL for file, size in sized]
    reads = _small_reads([(file, size) for (file, size), is_small in zip(sized, small)
                          if is_small and size is not None], fetch, given or {})

    def batch(at: int, most: int) -> Iterator[Read]:
        """The pending files (those before `at`) scanned, once no more than `most` batches are sent."""
        nonlocal pending, held, handed
        if scanner is not None:
            if pending:
                sent.append((pending, _SCANNED_HERE if len(pending) == 1 else
                             scanner.submit([data for _, data in pending], [file.path for file, _ in pending]), at))
                pending, held = [], 0
            while len(sent) > most:
                done, found, handed = sent.popleft()
                yield from _together(done, found=found.result())
            return
        handed = at
        yield from _together(pending)
        pending, held = [], 0

    try:
        for at, ((file, size), is_small) in enumerate(zip(sized, small)):
            if size is None:
                continue
            if is_small:
                data = next(reads)
                if data is None:
                    continue
                if held + len(data) > (BATCH if scanner is None else SPREAD_BATCH):
                    yield from batch(at, AHEAD)
                pending.append((file, data))
                held += len(data)
                continue
            yield from batch(at, 0)
            handed = at + 1
            yield from _alone(file)
        yield from batch(len(sized), 0)
    finally:
        # Stopped early (an error of the caller's): the files never handed over are read at the
        # next reload, not only once they grow.
        for (file, _), before in zip(files[handed:], noted[handed:]):
            file.size = before
        for _, found, _ in sent:
            found.cancel()
        reads.close()


def _small_reads(small: List[Tuple[EventFile, int]], fetch: Optional[Executor],
                 given: Mapping[str, bytes]) -> Generator[Optional[bytes], None, None]:
    """The new bytes of each of the `small` files (with their sizes), in order, each when asked
    for: a file's bytes in `given` where it is read from its start up to its size and they are
    that many; the others read ahead on `fetch` (`_read_ahead`), else when asked for."""
    whole = [given.get(file.path) for file, _ in small]
    whole = [data if data is not None and file.offset == 0 and len(data) == size else None
             for (file, size), data in zip(small, whole)]
    ahead = _read_ahead([each for each, data in zip(small, whole) if data is None], fetch) if fetch else None
    try:
        for (file, size), data in zip(small, whole):
            if data is not None:
                file.bytes_read += len(data)
                yield data
            else:
                yield next(ahead).result() if ahead is not None else _read_small(file, size)
    finally:
        if ahead is not None:
            ahead.close()


def _read_ahead(small: List[Tuple[EventFile, int]],
                fetch: Executor) -> Generator["Future[Optional[bytes]]", None, None]:
    """`_read_small` of each of the `small` files (with their sizes) on `fetch`, in order, each
    started while those started and not yet asked for hold at most BATCH bytes."""
    started: Deque[Tuple["Future[Optional[bytes]]", int]] = collections.deque()
    held = at = 0
    try:
        while at < len(small) or started:
            while at < len(small) and (not started or held + small[at][1] - small[at][0].offset <= BATCH):
                file, size = small[at]
                started.append((fetch.submit(_read_small, file, size), size - file.offset))
                held += size - file.offset
                at += 1
            future, planned = started.popleft()
            held -= planned
            yield future
    finally:
        # The caller stopped early: nothing read for it is left running.
        for future, _ in started:
            future.cancel()


def _new_size(file: EventFile, size: Optional[int]) -> Optional[int]:
    """The size of `file` to read it up to, now noted as its size, or None where it is not to be
    read: its size is the one last seen, it ended, it shrank, or it is gone."""
    if size is None:
        try:
            size = os.stat(file.path).st_size
        except OSError:
            # Gone (a run deleted while served): the caller finds that out when it walks the logdir.
            return None
    if size == file.size or file.ended:
        return None
    if size < file.offset:
        logger.warning("%s: the file shrank from %d to %d bytes: it is read no more (what was read is served)",
                       file.path, file.offset, size)
        file.ended = True
        return None
    file.size = size
    return size


class Whole(NamedTuple):
    """A small file read whole before its run's read (`read_whole`): its bytes, and its mtime."""

    data: bytes
    mtime: float


def read_whole(directory: Optional[int], name: str) -> Optional[Whole]:
    """The file `name` (opened in the directory open as `directory`; a path where None) read whole,
    where it is a regular file of 1 to SMALL bytes; else None (it is then read as any file is, which
    says why it cannot be)."""
    found = small_files.read_whole(name, directory)
    return Whole(found[0], found[1].st_mtime) if found is not None else None


def _read_small(file: EventFile, size: int) -> Optional[bytes]:
    """The bytes of `file` from its offset to `size` (fewer where it shrank meanwhile), or None
    where it cannot be read (said, and read again at the next reload)."""
    try:
        fd = os.open(file.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            pieces, at = [], file.offset
            while at < size:
                piece = os.pread(fd, size - at, at)
                if not piece:
                    break
                pieces.append(piece)
                at += len(piece)
        finally:
            os.close(fd)
    except OSError as exc:
        logger.warning("%s: cannot be read from byte %d: %s", file.path, file.offset, exc)
        file.size = -1
        return None
    data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    file.bytes_read += len(data)
    return data


def _together(files: List[Tuple[EventFile, bytes]], told: bool = False, found: Any = False) -> Iterator[Read]:
    """`files` (each with its new bytes) scanned together. Where one of them cannot be framed,
    those that end inside a record, told by their lengths alone, are read alone and the others
    scanned together again; where one still cannot be, they are scanned in halves, down to the one
    file that cannot, which is read alone (as are the files in the order they come). `found`:
    `scan_together`'s answer for `files` where it was asked already (a scanner's process), False
    to ask it here."""
    if not files:
        return
    if len(files) == 1:
        yield from _alone(*files[0])
        return
    if found is False:
        found = scan_together([data for _, data in files])
    if found is not None:
        yield from _split(files, *found)
    elif not told:
        start = 0
        for at, (file, data) in enumerate(files):
            if whole_records(data, _NO_LIMIT, check_from=_NO_LIMIT)[0] != len(data):
                yield from _together(files[start:at], True)
                yield from _alone(file, data)
                start = at + 1
        yield from _together(files[start:], True)
    else:
        half = len(files) // 2
        yield from _together(files[:half], True)
        yield from _together(files[half:], True)


def _split(files: List[Tuple[EventFile, bytes]], window: Window, firsts: Any, corrupt: List[int]) -> Iterator[Read]:
    """The window of files scanned together, file by file; each file's offset moves past its
    bytes once it is taken."""
    data_at = np.cumsum([0] + [len(data) for _, data in files], dtype=np.int64)
    for at in corrupt:
        index = int(np.searchsorted(data_at, at, side="right")) - 1
        _say_corrupt(files[index][0], files[index][0].offset + at - int(data_at[index]))
    ids, numbers, steps, walls, values = _sorted_rows(window)
    row_at = np.searchsorted(numbers, firsts).tolist()
    other_numbers = [number for number, _ in window.others]
    for index, (file, piece) in enumerate(files):
        first, last = int(firsts[index]), int(firsts[index + 1])
        a, b = row_at[index], row_at[index + 1]
        others = window.others[bisect.bisect_left(other_numbers, first):bisect.bisect_left(other_numbers, last)]
        at = int(data_at[index])
        yield Scanned(file, window.tags, (ids[a:b], numbers[a:b], steps[a:b], walls[a:b], values[a:b]), others,
                      piece, window.starts, file.offset - at, at)
        file.offset += len(piece)


def _alone(file: EventFile, data: Optional[bytes] = None) -> Iterator[Read]:
    """One file's new records, scanned a window at a time from its offset: `data`, its new bytes
    where they were read already, else read now from the file."""
    tags = Tags()
    if data is not None:
        scanned = scan(data, 0, tags)
        if scanned is None:
            yield Records(file, _record_by_record(file))
        else:
            yield from _window(file, data, scanned)
        return
    try:
        with open(file.path, "rb") as f:
            f.seek(file.offset)
            carry, need = b"", 1
            while True:
                data, more = _refill(file, f, carry, need)
                scanned = scan(data, 0, tags)
                if scanned is None:
                    yield Records(file, _record_by_record(file))
                    return
                yield from _window(file, data, scanned)
                carry = data[scanned[1]:]
                if not more:
                    # A torn last record, if any, is read again at the next reload.
                    return
                need = 16 + RECORD_HEADER.unpack_from(carry, 0)[0] if len(carry) >= 12 else 12
    except OSError as exc:
        logger.warning("%s: cannot be read from byte %d: %s", file.path, file.offset, exc)
        file.size = -1


def _window(file: EventFile, data: bytes, scanned: Tuple[Window, int, List[int]]) -> Iterator[Read]:
    """One window of one file (`data`, from the file's offset), as scanned; the file's offset
    moves past its whole records once it is taken."""
    window, consumed, corrupt = scanned
    for at in corrupt:
        _say_corrupt(file, file.offset + at)
    yield Scanned(file, window.tags, _sorted_rows(window), window.others, data, window.starts, file.offset)
    file.offset += consumed


def _sorted_rows(window: Window) -> Tuple[Any, Any, Any, Any, Any]:
    """The window's decoded scalars and scalar tensors as one chunk, in record order."""
    ids, numbers, steps, walls, values = joined(window.scalars + window.tensors)
    if len(window.scalars) + len(window.tensors) > 1:
        order = np.argsort(numbers, kind="stable")
        return ids[order], numbers[order], steps[order], walls[order], values[order]
    return ids, numbers, steps, walls, values


def _say_corrupt(file: EventFile, offset: int) -> None:
    logger.warning("%s: the record at byte %d fails its checksum: it is skipped, the rest of the file is served",
                   file.path, offset)


def _record_by_record(file: EventFile) -> Iterator[Tuple[int, bytes]]:
    """The records of `file` from its offset, one at a time."""
    try:
        with open(file.path, "rb") as f:
            f.seek(file.offset)
            yield from _records(file, f)
    except OSError as exc:
        logger.warning("%s: cannot be read from byte %d: %s", file.path, file.offset, exc)
        file.size = -1


def _records(file: EventFile, f: Any) -> Iterator[Tuple[int, bytes]]:
    """The records of `f` from `file.offset`, a window at a time."""
    length_at, trailer_at = RECORD_HEADER.unpack_from, RECORD_TRAILER.unpack_from
    # data[0:] starts at byte `file.offset` of the file; `need`: the bytes the next record needs.
    data, need = b"", 1
    while True:
        data, more = _refill(file, f, data, need)
        end, problem = whole_records(data, _NO_LIMIT, check_from=0)
        at = 0
        while at < end:
            # 16: RECORD_HEADER.size + RECORD_TRAILER.size.
            stop = at + 16 + length_at(data, at)[0]
            payload = data[at + 12:stop - 4]
            if masked_crc32c(payload) == trailer_at(data, stop - 4)[0]:
                yield file.offset + at, payload
            else:
                _say_corrupt(file, file.offset + at)
            at = stop
        data = data[end:]
        file.offset += end
        if problem is not None:
            logger.warning("%s: the length of the record at byte %d fails its checksum: the rest of the file "
                           "cannot be read (what comes before it is served)", file.path, file.offset)
            file.ended = True
            return
        if not more:
            # A torn last record, if any, is read again at the next reload.
            return
        need = 16 + length_at(data, 0)[0] if len(data) >= 12 else 12


def _refill(file: EventFile, f: Any, data: bytes, need: int) -> Tuple[bytes, bool]:
    """`data` and windows read after it, until it holds `need` bytes and one window more was read,
    or the file ends: (the bytes, whether the file may hold more). A length claiming more than the
    file holds (2^62, say) costs what the file holds, never what it claims."""
    pieces, have = [data], len(data)
    while have < need or len(pieces) == 1:
        piece = f.read(WINDOW)
        file.bytes_read += len(piece)
        if not piece:
            return b"".join(pieces), False
        pieces.append(piece)
        have += len(piece)
    return b"".join(pieces), True
