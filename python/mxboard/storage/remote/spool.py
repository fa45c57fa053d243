"""Where an object store's records wait on local disk once the memory for them is full.

A `Spool` belongs to one event file. Its file holds whole records, appended in call order and
read back in that order when the store returns; it is emptied once all of it is uploaded. Appends
are unbuffered (os.pwrite), so one that fails on a full disk leaves nothing half written, and
everything spooled before it stays readable. The file's first bytes (its header) say up to where
the store has taken its records. All spools of a process together hold at most their limit
(SpoolSettings.max_bytes). Where the spool's directory is and how big it may grow is decided in
spool_settings.py; docs/architecture.md tells the whole design.
"""
from __future__ import annotations

import errno
import os
import threading
from typing import NamedTuple

from .private_files import create_locked

__all__ = ["HEADER", "MAGIC", "Spool", "Spooled"]

MAGIC = b"mxbspool"
# A spool file's first bytes: MAGIC, then the offset up to which its records are in the store.
HEADER = 16


class _SpooledBytes:
    """The bytes that every Spool of this process holds, together."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = 0

    def add(self, size: int) -> None:
        with self._lock:
            self.total += size


_SPOOLED = _SpooledBytes()


class Spooled(NamedTuple):
    """Records in a spool file: `length` bytes from `offset`."""
    spool: Spool
    offset: int
    length: int


class Spool:
    """The spooled records of the event file `key` (a path in the store, bucket first): appended
    in order, read in order, the file emptied whenever nothing of it waits. One writer thread
    appends; the uploader reads under its file's lock."""

    def __init__(self, key: str, directory: str, limit: int) -> None:
        """`directory` and `limit`: from the writer's SpoolSettings, checked when it was made
        (`checked_settings`)."""
        self.directory, self.limit = directory, limit
        parts = key.split("/")
        # Never served as an event file.
        parts[-1] = parts[-1].replace("tfevents", "spooling")
        self.path = os.path.join(directory, *parts)
        self._file = create_locked(directory, parts)
        # Where the next append goes.
        self._end = HEADER
        # Bytes appended and not yet read back.
        self.waiting = 0
        # How often the file started over (marks of an earlier one mean nothing).
        self.generation = 0
        self._mark(HEADER)

    def room_for(self, size: int) -> bool:
        """Whether `size` more bytes fit within the limit (of all the process's spools)."""
        return _SPOOLED.total + size <= self.limit

    def append(self, data: bytes) -> Spooled:
        """`data` written at the end, unbuffered: a write that fails (its disk full) leaves
        nothing half-kept in a buffer, the end where it was, and every piece before it readable.
        Raises the OSError."""
        fd, view, written = self._file.fileno(), memoryview(data), 0
        while written < len(data):
            written += os.pwrite(fd, view[written:], self._end + written)
        piece = Spooled(self, self._end, len(data))
        self._end += len(data)
        self.waiting += len(data)
        _SPOOLED.add(len(data))
        return piece

    def read(self, piece: Spooled) -> bytes:
        """The bytes of `piece`, which then no longer wait here (read each piece once, in order)."""
        data = os.pread(self._file.fileno(), piece.length, piece.offset)
        if len(data) != piece.length:
            raise OSError(errno.EIO, "%s: %d bytes at %d are gone" % (self.path, piece.length, piece.offset))
        self.waiting -= piece.length
        _SPOOLED.add(-piece.length)
        # All read back: the file starts over.
        if not self.waiting:
            os.ftruncate(self._file.fileno(), HEADER)
            self._end = HEADER
            self.generation += 1
            self._mark(HEADER)
        return data

    def stored(self, offset: int, generation: int) -> None:
        """The store holds the records before `offset` (of the file's `generation`): a leftover of
        this file, if the process is killed now, keeps only what follows."""
        if generation == self.generation and not self._file.closed:
            self._mark(offset)

    def _mark(self, offset: int) -> None:
        os.pwrite(self._file.fileno(), MAGIC + offset.to_bytes(8, "little"), 0)

    def close(self) -> None:
        """Remove the spool file (what waits in it was read back, or written elsewhere): its name
        first, then its lock (closed before, a scan for leftovers could take it for one)."""
        _SPOOLED.add(-self.waiting)
        self.waiting = 0
        try:
            os.remove(self.path)
        except OSError:
            pass
        self._file.close()
