"""The records of one event file in a store that no put has taken yet (`Unsent`).

They wait in memory up to the policy's max_unsent bytes, and past that in the file's spool on
disk, in the order they were written. The uploader takes them from the front, reading spooled
ones back as it goes. The event file's lock guards all of it.
"""
from __future__ import annotations

import collections
import logging
from typing import Deque, Iterator, List, Optional, Tuple, Union

from ..._format.sizes import readable
from .parts import take_records
from .spool import Spool, Spooled
from .spool_settings import SpoolSettings, byte_limit, spool_directory
from .uploader import MIN_PUT

__all__ = ["Unsent"]

log = logging.getLogger("mxboard")


class Unsent:
    """What waits for the store, in order: bytes in memory, or `Spooled` pieces in the spool.

    Attributes:
        pieces: whole records, each bytes (in memory) or a Spooled piece (on disk).
        size: the bytes of all pieces.
        memory: the bytes of the pieces in memory.
        spool: the spool, made when it is first needed (None before, or after it was closed).
    """

    def __init__(self, key: str, path: Optional[str], settings: SpoolSettings) -> None:
        """`key`: the event file's first object, which names its spool file; `path`: its URL,
        for messages; `settings`: the writer's spool settings, checked when it was made."""
        self._key = key
        self._path = path
        self._settings = settings
        self.pieces: Deque[Union[bytes, Spooled]] = collections.deque()
        self.size = 0
        self.memory = 0
        self.spool: Optional[Spool] = None
        # The spool could not take a batch (its disk full): memory only from then on.
        self._spool_failed = False
        # Bytes ever taken from the front into puts.
        self._taken = 0
        # (position in that stream, spool, its generation, offset): where a read-back spooled piece ends
        self._marks: Deque[Tuple[int, Spool, int, int]] = collections.deque()

    def add_to_memory(self, data: bytes) -> None:
        self.pieces.append(bytes(data))
        self.memory += len(data)
        self.size += len(data)

    def usable_spool(self, size: int) -> Optional[Spool]:
        """The spool, where it can ever take a batch of `size` bytes (it may have to wait for
        room). It is made the first time, and a warning says so. None where none can: a batch larger
        than the limit (0: no disk spool), no directory, or a spool that failed."""
        if self._spool_failed:
            return None
        if self.spool is None:
            try:
                # Made now, the first time one is needed.
                directory = spool_directory(self._settings)
                # No directory on disk (a warning said so): memory only.
                if directory is None:
                    self._spool_failed = True
                    return None
                limit = byte_limit(self._settings, directory)
                if size > limit:
                    return None
                self.spool = Spool(self._key, directory, limit)
            except OSError as exc:
                self._spool_fails(exc)
                return None
            log.warning("mxboard: %s: the store has not taken %s; what follows waits on disk in %s (at most %s: "
                        "MXBOARD_SPOOL_DIR, MXBOARD_SPOOL_MAX_BYTES), and is uploaded in order when the store "
                        "returns", self._path, readable(self.memory), self.spool.directory, readable(self.spool.limit))
        return None if size > self.spool.limit else self.spool

    def add_to_spool(self, data: bytes) -> bool:
        """Append `data` to the spool, which has room for it. False where the spool failed (said
        once): `data` then goes to memory, and so does everything after it."""
        # Closed meanwhile, by the end of the process keeping what waited.
        if self.spool is None:
            return False
        try:
            self.pieces.extend(_pieces_of(self.spool.append(data), data))
        except OSError as exc:
            self._spool_fails(exc)
            return False
        self.size += len(data)
        return True

    def add_without_waiting(self, data: bytes) -> None:
        """After the uploader gave up (no one takes anything): in the spool where it has room,
        else in memory."""
        spool = self.spool
        if spool is not None and not self._spool_failed and spool.room_for(len(data)) and self.add_to_spool(data):
            return
        self.add_to_memory(data)

    def _spool_fails(self, exc: OSError) -> None:
        """A spool that cannot take more (its disk full, its directory gone) never stops the
        writer: what follows waits in memory, and one warning says so."""
        self._spool_failed = True
        where = self.spool.directory if self.spool is not None else self._settings.directory or "its directory"
        log.warning("mxboard: %s: the spool in %s cannot take more (%s); what follows waits in memory until the "
                    "store takes it", self._path, where, exc)

    def read_back(self, cap: int) -> None:
        """Read spooled pieces at the front into memory, as many as one put of `cap` bytes holds;
        where each ends in its spool file is marked, for `stored`."""
        front = 0
        for i, piece in enumerate(self.pieces):
            if front >= cap:
                break
            if not isinstance(piece, bytes):
                spool, end = piece.spool, piece.offset + piece.length
                piece = self.pieces[i] = spool.read(piece)
                self.memory += len(piece)
                # Not emptied (and started over) by this read.
                if spool.waiting:
                    self._marks.append((self._taken + front + len(piece), spool, spool.generation, end))
            front += len(piece)

    def taken(self, size: int) -> int:
        """`size` bytes were taken from the front into a put; returns all the bytes ever taken."""
        self.size -= size
        self.memory -= size
        self._taken += size
        return self._taken

    def stored(self, upto: int) -> None:
        """Everything taken up to `upto` is in the store: the spool's file says so, so that a
        leftover of it (the process killed now) never keeps it twice."""
        last = None
        while self._marks and self._marks[0][0] <= upto:
            last = self._marks.popleft()
        if last is not None and last[1] is self.spool:
            try:
                last[1].stored(last[3], last[2])
            # A leftover would hold more than it must: said, never fatal.
            except OSError as exc:
                log.debug("mxboard: %s: could not mark the spool: %s", self._path, exc)

    def directory_to_keep(self) -> Optional[str]:
        """Where what waits is kept at the end: the spool's directory (made now if need be), or None."""
        return self.spool.directory if self.spool is not None else spool_directory(self._settings)

    def contents(self) -> Iterator[bytes]:
        """The pieces' bytes in order, spooled ones read back one at a time."""
        for piece in list(self.pieces):
            yield piece if isinstance(piece, bytes) else piece.spool.read(piece)

    def close_spool(self) -> None:
        """Remove the spool's file (nothing in it waits any more)."""
        if self.spool is not None:
            self.spool.close()
            self.spool = None

    def clear(self) -> None:
        """Everything was kept elsewhere: nothing waits any more."""
        self.close_spool()
        self.pieces.clear()
        self._marks.clear()
        self.size = self.memory = 0

    def abandon(self) -> None:
        """In a forked child: drop the parent's pieces and spool (the parent uploads them)."""
        self.pieces.clear()
        self.size = self.memory = 0
        # The parent's (its file, its count).
        self.spool = None


def _pieces_of(piece: Spooled, data: bytes) -> List[Spooled]:
    """`piece` (a batch of records, `data`, appended at once) as pieces of whole records within
    MIN_PUT each: the uploader reads back what one put carries, not a whole batch, so the spool's
    header can say up to where the store took them."""
    if len(data) <= MIN_PUT:
        return [piece]
    pieces, offset, rest = [], piece.offset, collections.deque([data])
    while rest:
        for chunk in take_records(rest, MIN_PUT, at_least_one=True):
            pieces.append(Spooled(piece.spool, offset, len(chunk)))
            offset += len(chunk)
    return pieces
