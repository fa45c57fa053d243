"""Where an object store's records wait on local disk once memory is full: the loop never blocks
on the store (storage/remote.py).

A `Spool` is one event file's: whole records appended in call order to `<dir>/<key>.spooling`,
read back in that order when the store returns, and emptied once all of it is uploaded. Its
directory is MXBOARD_SPOOL_DIR (default: `mxboard-spool-<user>` in the temporary directory);
all spools of a process together hold at most MXBOARD_SPOOL_MAX_BYTES (default: a quarter of the
space free there when the first one starts, at most 16 GiB; suffixes K, M, G, T). What the store
did not take by close() is left there as `<dir>/<key>`: a valid event file named as the object it
would have become, to upload or to serve (storage/remote.py).
"""
from __future__ import annotations

import getpass
import os
import re
import shutil
import tempfile
import threading
from typing import NamedTuple

from .sizes import parse_bytes

__all__ = ["Spool", "Spooled", "spool_dir", "spool_limit"]

_DEFAULT_MAX = 16 << 30
_LOCK = threading.Lock()  # guards _USED
_USED = [0]  # bytes spooled by every Spool of this process


class Spooled(NamedTuple):
    """Records in a spool file: `length` bytes from `offset`."""
    spool: Spool
    offset: int
    length: int


def spool_dir() -> str:
    """MXBOARD_SPOOL_DIR, or `mxboard-spool-<user>` in the temporary directory."""
    configured = os.environ.get("MXBOARD_SPOOL_DIR")
    if configured:
        return os.path.expanduser(configured)
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return os.path.join(tempfile.gettempdir(), "mxboard-spool-%s" % re.sub(r"[^\w.-]", "_", user))


def spool_limit(directory: str) -> int:
    """MXBOARD_SPOOL_MAX_BYTES (a number, with K, M, G or T after it if you like), else a
    quarter of the space free in `directory`, at most 16 GiB."""
    configured = os.environ.get("MXBOARD_SPOOL_MAX_BYTES")
    if configured:
        return parse_bytes(configured, "MXBOARD_SPOOL_MAX_BYTES")
    return min(_DEFAULT_MAX, shutil.disk_usage(directory).free // 4)


class Spool:
    """The spooled records of the event file `key` (a path in the store, bucket first): appended
    in order, read in order, the file emptied whenever nothing of it waits. One writer thread
    appends; the uploader reads under its file's lock."""

    def __init__(self, key: str) -> None:
        self.directory = spool_dir()
        self.path = os.path.join(self.directory, *key.split("/")) + ".spooling"
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.limit = spool_limit(self.directory)
        self._file = open(self.path, "w+b")
        self._end = 0  # where the next append goes
        self.waiting = 0  # bytes appended and not yet read back

    def room_for(self, size: int) -> bool:
        """Whether `size` more bytes fit within the limit (of all the process's spools)."""
        return _USED[0] + size <= self.limit

    def append(self, data: bytes) -> Spooled:
        self._file.seek(self._end)
        self._file.write(data)
        self._file.flush()
        piece = Spooled(self, self._end, len(data))
        self._end += len(data)
        self.waiting += len(data)
        with _LOCK:
            _USED[0] += len(data)
        return piece

    def read(self, piece: Spooled) -> bytes:
        """The bytes of `piece`, which then no longer wait here (read each piece once, in order)."""
        self._file.seek(piece.offset)
        data = self._file.read(piece.length)
        if len(data) != piece.length:
            raise OSError("%s: %d bytes at %d are gone" % (self.path, piece.length, piece.offset))
        self.waiting -= piece.length
        with _LOCK:
            _USED[0] -= piece.length
        if not self.waiting:  # all read back: the file starts over
            self._file.truncate(0)
            self._end = 0
        return data

    def close(self) -> None:
        """Remove the spool file (what waits in it was read back, or written elsewhere)."""
        with _LOCK:
            _USED[0] -= self.waiting
        self.waiting = 0
        self._file.close()
        try:
            os.remove(self.path)
        except OSError:
            pass
