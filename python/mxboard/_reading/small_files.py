"""Many small event files read as one: a sweep's thousands of runs of a few points each.

Scanning a file costs numpy a fixed millisecond or two however few its records (its framing and
its decoding each make some dozens of numpy calls), so 3,000 runs of 10 points were read 15 times
slower than record by record. Here consecutive small local files are read whole and scanned
together (`scan.scan_together`): one pass of numpy for up to `BATCH` bytes of them, every record's
CRCs checked as for one file. A file that the joint pass cannot frame (a torn end, a corrupt
length) is handed back by its path, to be read alone by `scan.scan_file`, which warns of it as it
warns of any file; so is a big file, a store's, and one that cannot be opened.
"""
from __future__ import annotations

import os
import stat
from typing import Any, Iterator, List, Optional, Tuple, Union

import numpy as np

from .._format.events import whole_records
from .scan import Window, scan_together

__all__ = ["BATCH", "SMALL", "Batch", "batches"]

# A local file of at most this many bytes is read whole and scanned with its neighbours.
SMALL = 1 << 20
# The most bytes of small files scanned together (scan_file's window).
BATCH = 8 << 20


class Batch:
    """Small files scanned together.

    Attributes:
        paths: the files, in order.
        window: their records as one Window: numbered from 0 across the files, in their order;
            their tags given ids in one list (`window.tags`).
        firsts: the number of each file's first record, then the number of records (numpy int64).
        corrupt: for each file, the byte offsets in it of the records whose payload fails its
            CRC (skipped), in order.
    """

    __slots__ = ("paths", "window", "firsts", "corrupt")

    def __init__(self, paths: List[str], window: Window, firsts: Any, corrupt: List[List[int]]) -> None:
        self.paths = paths
        self.window = window
        self.firsts = firsts
        self.corrupt = corrupt

    def file_of(self, numbers: Any) -> Any:
        """The index in `paths` of the file of each record number (numpy)."""
        return np.searchsorted(self.firsts[:-1], numbers, side="right") - 1


def batches(paths: List[str]) -> Iterator[Tuple[int, Union[str, Batch]]]:
    """(the index in `paths` of the first file, a Batch of small files or the path of a file to
    read alone), for all of `paths`, in their order."""
    pending: List[Tuple[str, bytes]] = []
    start, size = 0, 0
    for index, path in enumerate(paths):
        data = _small(path)
        if data is not None and size + len(data) <= BATCH:
            pending.append((path, data))
            size += len(data)
            continue
        yield from _scanned(start, pending)
        if data is None:
            pending, start, size = [], index + 1, 0
            yield index, path
        else:
            pending, start, size = [(path, data)], index, len(data)
    yield from _scanned(start, pending)


def _small(path: str) -> Optional[bytes]:
    """The bytes of the local regular file `path` if it holds at most SMALL, else None (a big
    file, a store's, or one that cannot be opened: scan_file then reads it, or says why not)."""
    if "://" in path:
        return None
    found = read_whole(path)
    return found[0] if found is not None else None


def read_whole(path: str, dir_fd: Optional[int] = None) -> Optional[Tuple[bytes, os.stat_result]]:
    """The bytes of the regular file `path` (a name in the directory open as `dir_fd`, where
    given), and its stat, where it holds 1 to SMALL bytes; else None (a big file, an empty one, one
    that is no regular file or cannot be opened: a reader then reads it alone, or says why not)."""
    try:
        # Not blocking: a FIFO put in a file's place since the listing is refused below.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        # An empty file is read alone too: a size of 0 may be no size at all (/proc's files, whose
        # read fails or gives bytes), and scan_file says why a read fails.
        if not stat.S_ISREG(found.st_mode) or not 0 < found.st_size <= SMALL:
            return None
        # The bytes there when it was opened: a record being written reads as torn, and the file
        # is then read alone, which warns of it.
        pieces, left = [], found.st_size
        while left > 0:
            piece = os.read(fd, left)
            if not piece:
                break
            pieces.append(piece)
            left -= len(piece)
        return (pieces[0] if len(pieces) == 1 else b"".join(pieces)), found
    except OSError:
        return None
    finally:
        os.close(fd)


def _scanned(index: int, files: List[Tuple[str, bytes]], told: bool = False) -> Iterator[Tuple[int, Union[str, Batch]]]:
    """`files` (path, bytes), the first at `index`, scanned together. Where one of them cannot be
    framed, the files that end inside a record (being written, or cut), told by their lengths
    alone, are handed back by their path and the others scanned together again; where one still
    cannot be, they are scanned in halves, down to the one file that cannot, whose path is handed
    back."""
    if not files:
        return
    pieces = [data for _, data in files]
    found = scan_together(pieces)
    if found is not None:
        window, firsts, corrupt = found
        offsets = np.cumsum([0] + [len(piece) for piece in pieces[:-1]], dtype=np.int64)
        by_file: List[List[int]] = [[] for _ in files]
        for at in corrupt:
            file = int(np.searchsorted(offsets, at, side="right")) - 1
            by_file[file].append(at - int(offsets[file]))
        yield index, Batch([path for path, _ in files], window, firsts, by_file)
    elif len(files) == 1:
        yield index, files[0][0]
    elif not told:
        start = 0
        for at, (path, data) in enumerate(files):
            if whole_records(data, _NO_LIMIT, check_from=_NO_LIMIT)[0] != len(data):
                yield from _scanned(index + start, files[start:at], True)
                yield index + at, path
                start = at + 1
        yield from _scanned(index + start, files[start:], True)
    else:
        half = len(files) // 2
        yield from _scanned(index, files[:half], True)
        yield from _scanned(index + half, files[half:], True)


# Above any u64: the lengths alone, none of their CRCs checked.
_NO_LIMIT = 1 << 64
