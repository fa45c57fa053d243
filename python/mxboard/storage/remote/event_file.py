"""An event file in an object store (`RemoteEventFile`), written by the writer thread.

Objects cannot be appended to, so an event file becomes a series of objects (parts.py), which an
uploader thread of the file's own puts (uploader.py): a slow or hung store never holds the writer
thread. What no put has taken yet waits in memory and then in the spool (unsent.py). After the
uploader gives up, a flush or close() tries the store once more. What the store did not take by
the end is kept on disk (keep.py). docs/architecture.md tells the whole design.
"""
from __future__ import annotations

import errno
import logging
import threading
import time
from typing import Any, Callable, List, Optional, Tuple

from ..._format.sizes import readable
from ..bounds import put_with_timeout
from .keep import keep_on_disk
from .parts import Parts
from .policy import UploadPolicy
from .spool_settings import SpoolSettings
from .unsent import Unsent
from .uploader import Uploader

__all__ = ["RemoteEventFile"]

log = logging.getLogger("mxboard")


class RemoteEventFile:
    """An event file as objects in a store: the writer thread `write`s whole records, and an
    uploader thread of the file's own puts them."""

    # Records written after the uploader gave up wait for a retry (event_files.py).
    holds_writes_after_error = True

    def __init__(self, fs: Any, url: Callable[[str], str], policy: UploadPolicy, spool: SpoolSettings,
                 directory: str, suffix: str = "") -> None:
        """`fs`: the store's filesystem; `url`: a key as the URL the user knows it by."""
        self._fs = fs
        self._url = url
        self._policy = policy
        self.directory: Optional[str] = directory
        self._parts = Parts(directory, suffix, policy.first_part)
        self.path: Optional[str] = url(self._parts.base)
        # The lock guards everything below.
        self.lock = threading.Condition(threading.Lock())
        # Whole records not yet in a put, in order.
        self._unsent = Unsent(self._parts.base, self.path, spool)
        # The writer thread waits for room in memory (no spool takes its batch).
        self._wants_room = False
        # close() is coming: a write never waits for room.
        self._interrupted = False
        self._logged = 0
        # The count of forced uploads asked for.
        self.flushes = 0
        # The flushes (or close()) waiting now: each put follows the last, not upload_secs.
        self._flushing = 0
        # The OSError after which the uploader gave up.
        self._error: Optional[OSError] = None
        # close(): the uploader stops once nothing is left.
        self.closing = False
        self._uploader: Optional[threading.Thread] = None

    # -- the writer thread's side -----------------------------------------------------------
    def write(self, data: bytes) -> None:
        """Queue whole records for upload: in memory up to max_unsent bytes, then in the spool.
        Waits only while the spool is full too (until close() comes); raises the OSError of an
        uploader that gave up. Where no spool can take the batch (a limit below its size, a
        spool whose disk filled), it waits in memory: the call waits until the store has taken
        enough (memory stays bounded, one batch past max_unsent at most)."""
        with self.lock:
            unsent = self._unsent
            # Given up: kept all the same (close() keeps it), the error raised.
            if self._error is not None:
                unsent.add_without_waiting(data)
                self._raise_error()
            if unsent.memory + len(data) <= self._policy.max_unsent or not self._spooled(data):
                while unsent.memory and unsent.memory + len(data) > self._policy.max_unsent and not self._interrupted:
                    self._raise_error()
                    # The uploader puts now, not at its next upload.
                    self._wants_room = True
                    self.lock.notify_all()
                    # The uploader makes room meanwhile.
                    self.lock.wait(1)
                self._wants_room = False
                unsent.add_to_memory(data)
            self._logged += len(data)
            if self._uploader is None:
                self._start_uploader()
            # The uploader: at its time, or now if a part's worth waits.
            self.lock.notify_all()

    def _spooled(self, data: bytes) -> bool:
        """Whether `data` went to the spool; while the spool is full, wait for room (under the
        lock: the uploader makes room). False where no spool can take it."""
        spool = self._unsent.usable_spool(len(data))
        if spool is None:
            return False
        # At close, the last batches pass the bound: they are kept.
        while not spool.room_for(len(data)) and not self._interrupted:
            self._raise_error()
            self.lock.wait(1)
        return self._unsent.add_to_spool(data)

    def _try_again(self) -> None:
        """After the uploader gave up, a flush or close() tries the store once more (under the
        lock): a store that is back takes what waits, which is better than keeping it."""
        self._error = None
        # Its link measured afresh: one counted as down may be back (a hang is no slow link).
        self._start_uploader()

    def _start_uploader(self) -> None:
        uploader = Uploader(self, self._policy)
        self._uploader = threading.Thread(target=uploader.run, name="mxboard-upload", daemon=True)
        self._uploader.start()

    def interrupt(self) -> None:
        """close() is coming: a write never waits for room in a full spool (the bound is passed by
        what close() writes, which it keeps)."""
        with self.lock:
            self._interrupted = True
            self.lock.notify_all()

    def sync(self, force: bool, deadline: Optional[float] = None) -> None:
        """Raise the uploader's error; `force` (flush): wait until what was written is in the
        store, at most flush_secs or until `deadline` (time.monotonic()) (a store that is down
        keeps the data, and is retried)."""
        with self.lock:
            retried = False
            if force and self._error is not None and self.pending() and not self.closing:
                self._try_again()
                retried = True
            self._raise_error()
            if force and self.pending():
                self.flushes += 1
                self._flushing += 1
                self.lock.notify_all()
                deadline = time.monotonic() + self._policy.flush_secs if deadline is None else deadline
                try:
                    while self.pending() and time.monotonic() < deadline:
                        # Gave up meanwhile (a request of the outage failing late).
                        if self._error is not None:
                            if retried or self.closing:
                                break
                            # Once more: the store may be back by now.
                            self._try_again()
                            retried = True
                        self.lock.wait(deadline - time.monotonic())
                finally:
                    self._flushing -= 1
                self._raise_error()
                if self.pending() and not self._interrupted:
                    log.warning("mxboard: %s: the store has not taken %s after %d s; they are kept and retried",
                                self.path, readable(self.pending()), self._policy.flush_secs)

    def close(self, deadline: Optional[float] = None) -> None:
        """Upload what waits (until `deadline`, time.monotonic(); by default flush_secs from now)
        and stop the uploader. If the store did not take it all, it is left in the spool's
        directory as valid event files named as their objects, and the OSError raised names
        them. A KeyboardInterrupt during the wait keeps what waits there too, and a warning says so."""
        failed: Optional[OSError] = None
        try:
            self.sync(force=True, deadline=deadline)
        # The uploader gave up: what waits is kept all the same.
        except OSError as exc:
            failed = exc
        # Ctrl-C during the wait: nothing accepted is lost.
        except BaseException:
            kept = self._stop_and_save()
            if kept is not None:
                log.warning("mxboard: %s", kept)
            raise
        kept = self._stop_and_save()
        if kept is not None:
            raise OSError(errno.EIO, kept) from failed
        if failed is not None:
            raise failed

    def save_what_waits(self, deadline: float) -> None:
        """A signal ends the process: wait for the store until `deadline` (trying it again if the
        uploader gave up), then keep what it has not taken in the spool's directory, said in a
        warning. The file stays usable: records written later wait for the store, in memory or
        in the spool."""
        with self.lock:
            # No write waits for room any more.
            self._interrupted = True
        try:
            self.sync(force=True, deadline=deadline)
        except OSError:
            # Given up again: kept below.
            pass
        with self.lock:
            kept = self._save_or_drop_spool()
        if kept is not None:
            log.warning("mxboard: %s", kept)

    def _stop_and_save(self) -> Optional[str]:
        """Stop the uploader, then `_save_or_drop_spool`."""
        with self.lock:
            self.closing = True
            self.lock.notify_all()
            return self._save_or_drop_spool()

    def _save_or_drop_spool(self) -> Optional[str]:
        """Keep what waits (under the lock), returning the sentence that says where; with nothing
        waiting, remove the spool file (none outlives the process, for the next writer to take
        for a killed one's)."""
        if self.pending():
            return self._save_now()
        self._unsent.close_spool()
        return None

    def _save_now(self) -> str:
        """Keep what waits (under the lock) on disk; the sentence that says where."""
        return keep_on_disk(str(self.path), self.pending(), self._parts, self._unsent, self._policy.max_object,
                            self._url)

    def abandon(self) -> None:
        """In a forked child: drop the parent's data (the parent uploads it)."""
        self._unsent.abandon()
        self._parts.abandon()
        self.closing = True

    def pieces(self) -> List[Tuple[str, int]]:
        """(URL, bytes) of each object the store acknowledged, in order."""
        with self.lock:
            return [(self._url(key), size) for key, size in self._parts.acknowledged()]

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    # -- the uploader's side (uploader.Uploads), under the lock but `put` -------------------
    def pending(self) -> int:
        return self._unsent.size or self._parts.unconfirmed()

    def waiting_bytes(self) -> int:
        return self._unsent.size

    def urgent(self, cap: int) -> bool:
        return self._unsent.size >= cap or self.closing or self._wants_room or self._flushing > 0

    def put(self, part: int, body: bytes, seconds: float) -> None:
        put_with_timeout(self._fs, self._parts.key(part), body, seconds)

    def stored(self, part: int, body: bytes, upto: int) -> None:
        self._parts.acknowledge(part, body)
        self._unsent.stored(upto)
        self.lock.notify_all()

    def gave_up(self, error: OSError) -> None:
        if self._error is None:
            self._error = error
        self.lock.notify_all()

    def next_body(self, cap: int) -> Tuple[int, bytes, int]:
        """(part, body, all the bytes taken so far) of the next put (under the lock): whole
        records taken from the unsent ones into the current or the next part (Parts.body), within
        what the link carries in a put; spooled ones read back first, as many as that holds."""
        # A part put again takes nothing: nothing read.
        if not self._parts.unconfirmed():
            self._unsent.read_back(cap)
        part, body, taken = self._parts.body(self._unsent.pieces, self._unsent.size, self._logged,  # type: ignore[arg-type]
                                             cap)
        upto = self._unsent.taken(taken)
        # Room for the writer thread.
        self.lock.notify_all()
        return part, body, upto
