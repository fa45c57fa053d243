"""An event file in an object store (`RemoteEventFile`): a logdir URL's (`s3://bucket/prefix/run`,
and any fsspec URL whose filesystem is installed: `gs://`, `az://`, `hdfs://`, `memory://`...).

Objects cannot be appended to, so an event file becomes a series of objects, each a valid event
file on its own, named so that they sort in creation order for ever (`<file>`, `<file>.part0001`,
... `<file>.part9999`, `<file>.partz10000`, ... `<file>.partzz100000`: a `z` for each digit past
four, which sorts after every digit). A file's name carries a random token besides host and pid
(ranks in containers may share both, and a store has no exclusive create), and a name already
taken in the store is never used:

- An uploader thread of the file's own puts objects (uploader.py), so a slow or hung store never holds the
  writer thread: it goes on draining the callers' queue into the bytes that wait.
- Every `upload_secs` (the writer's UploadPolicy), on `flush()`/`close()`, and as soon as an
  object's worth waits, what waits is uploaded. It extends the current object (re-uploaded whole:
  a reader that read its start carries on from where it stopped) while that keeps the bytes
  uploaded for the file within twice the bytes logged and the object within `max_object`;
  otherwise it starts the next part. Objects hold whole records, so each is a valid event file,
  and none passes max_object (but a single larger record).
- Memory: the current object (<= max_object) and what waits for the store (<= max_unsent).
  Beyond that, what waits goes to a local spool (../spool.py: bounded, said once in a
  warning), uploaded in order when the store returns: the writer thread, and so the training
  loop, never waits on the store (but for a full spool).
- Exactly once: a put that was not acknowledged (a lost answer, a timeout: the store may hold
  it) is repeated on the same object, with the same bytes first, before the next part begins.
- Bounded waits: every request is bounded as a whole (request_secs: connecting, the wait for
  100-continue, the body, the answer), with one try per request (botocore's and s3fs's own
  retries are off; the uploader retries with backoff). A store that is down or hung keeps the
  data (within the bounds) until uploads have failed for give_up_secs; then writing stops and
  the error reaches the caller (a WriterError on later calls). `flush()` waits for the store at
  most flush_secs; `close()` too, and raises if the store did not take everything, naming the
  file in the spool's directory that holds it (a valid event file, named as the object it would
  have become: upload it there, or serve it).
"""
from __future__ import annotations

import collections
import errno
import logging
import os
import posixpath
import threading
import time
from typing import Any, Callable, Deque, List, Optional, Tuple, Union

from ..._format.sizes import readable
from .parts import Parts, take_records
from .policy import UploadPolicy
from .spool import Spool, Spooled, SpoolSettings, create_private, limit_of, place
from .uploader import MIN_PUT, Uploader, put_within

__all__ = ["RemoteEventFile"]

log = logging.getLogger("mxboard")


class RemoteEventFile:
    """An event file as objects in a store (see the module's docstring). The writer thread
    `write`s whole records; an uploader thread of the file's own puts them, so that a slow or
    hung store never holds the thread that drains the callers' queue."""

    holds_writes_after_error = True  # records written after the uploader gave up wait for a retry (output.py)

    def __init__(self, fs: Any, url: Callable[[str], str], policy: UploadPolicy, spool: SpoolSettings,
                 directory: str, suffix: str = "") -> None:
        """`fs`: the store's filesystem; `url`: a key as the URL the user knows it by."""
        self._fs = fs
        self._url = url
        self._policy = policy
        self._spool_settings = spool
        self.directory: Optional[str] = directory
        self._parts = Parts(directory, suffix, policy.first_part)
        self.path: Optional[str] = url(self._parts.base)
        self.lock = threading.Condition(threading.Lock())  # guards everything below
        # whole records not yet in an upload, in order: in memory, or in the spool past max_unsent
        self._waiting: Deque[Union[bytes, Spooled]] = collections.deque()
        self._waiting_bytes = 0
        self._memory = 0  # of which in memory
        self._spool: Optional[Spool] = None
        self._spool_failed = False  # the spool could not take a batch (its disk full): memory only from then on
        self._wants_room = False  # the writer thread waits for room in memory (no spool takes its batch)
        self._interrupted = False  # close() is coming: a write never waits for room
        self._logged = 0
        self.flushes = 0  # forced uploads asked for
        self._flushing = 0  # flushes (or close()) waiting now: each put follows the last, not upload_secs
        self._error: Optional[OSError] = None  # the OSError after which the uploader gave up
        self.closing = False  # close(): the uploader stops once nothing is left
        self._uploader: Optional[threading.Thread] = None
        self._taken = 0  # bytes ever taken from _waiting into puts
        # (position in that stream, spool, its generation, offset): where a read-back spooled piece ends
        self._marks: Deque[Tuple[int, Spool, int, int]] = collections.deque()

    # -- the writer thread's side -----------------------------------------------------------
    def write(self, data: bytes) -> None:
        """Queue whole records for upload: in memory up to max_unsent bytes, then in the spool.
        Waits only while the spool is full too (until close() comes); raises the OSError of an
        uploader that gave up. Where no spool can take the batch (a limit below its size, a
        spool whose disk filled), it waits in memory: the call waits until the store has taken
        enough (memory stays bounded, one batch past max_unsent at most)."""
        with self.lock:
            if self._error is not None:  # given up: kept all the same (close() keeps it), the error raised
                self._hold_after_give_up(data)
                self._raise_error()
            spooled = None
            if self._memory + len(data) > self._policy.max_unsent:
                spooled = self._spooled(data)
            if spooled is None:
                while self._memory and self._memory + len(data) > self._policy.max_unsent and not self._interrupted:
                    self._raise_error()
                    self._wants_room = True  # the uploader puts now, not at its next upload
                    self.lock.notify_all()
                    self.lock.wait(1)  # the uploader makes room
                self._wants_room = False
                self._waiting.append(bytes(data))
                self._memory += len(data)
            else:
                self._waiting.extend(spooled)
            self._waiting_bytes += len(data)
            self._logged += len(data)
            if self._uploader is None:
                self._start_uploader()
            self.lock.notify_all()  # the uploader: at its time, or now if a part's worth waits

    def _hold_after_give_up(self, data: bytes) -> None:
        """Records written after the uploader gave up: never waiting (no one uploads), in the spool
        where it has room, else in memory, until a flush or close() tries the store again or
        keeps them."""
        spool = self._spool
        if spool is not None and not self._spool_failed and spool.room_for(len(data)):
            try:
                self._waiting.extend(pieces_of(spool.append(data), data))
            except OSError as exc:
                self._spool_fails(exc)
            else:
                self._waiting_bytes += len(data)
                return
        self._waiting.append(bytes(data))
        self._memory += len(data)
        self._waiting_bytes += len(data)

    def _spooled(self, data: bytes) -> Optional[List[Spooled]]:
        """`data` appended to this file's spool (made, and said, the first time); while the spool
        is full, wait for room (under the lock: the uploader makes room). None where no spool
        can take it: a batch larger than the limit (0: no disk spool), or a spool that failed."""
        if self._spool_failed:
            return None
        if self._spool is None:
            try:
                directory = place(self._spool_settings)  # made now, the first time one is needed
                if directory is None:  # nowhere on disk (said once): memory only
                    self._spool_failed = True
                    return None
                limit = limit_of(self._spool_settings, directory)
                if len(data) > limit:
                    return None
                self._spool = Spool(self._parts.base, directory, limit)
            except OSError as exc:
                self._spool_fails(exc)
                return None
            log.warning("mxboard: %s: the store has not taken %s; what follows waits on disk in %s (at most %s: "
                        "MXBOARD_SPOOL_DIR, MXBOARD_SPOOL_MAX_BYTES), and is uploaded in order when the store "
                        "returns", self.path, readable(self._memory), self._spool.directory,
                        readable(self._spool.limit))
        if len(data) > self._spool.limit:
            return None
        while not self._spool.room_for(len(data)) and not self._interrupted:  # at close, the last batches
            self._raise_error()                                                   # pass the bound: kept
            self.lock.wait(1)
        try:
            return pieces_of(self._spool.append(data), data)
        except OSError as exc:
            self._spool_fails(exc)
            return None

    def _spool_fails(self, exc: OSError) -> None:
        """A spool that cannot take more (its disk full, its directory gone) never stops the
        writer: what follows waits in memory, said once."""
        self._spool_failed = True
        where = self._spool.directory if self._spool is not None else self._spool_settings.directory or "its directory"
        log.warning("mxboard: %s: the spool in %s cannot take more (%s); what follows waits in memory until the "
                    "store takes it", self.path, where, exc)

    def _try_again(self) -> None:
        """After the uploader gave up, a flush or close() tries the store once more (under the
        lock): a store that is back takes what waits, which is better than keeping it."""
        self._error = None
        self._start_uploader()  # its link measured afresh: one counted as down may be back (a hang is no slow link)

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
                        if self._error is not None:  # gave up meanwhile (a request of the outage failing late)
                            if retried or self.closing:
                                break
                            self._try_again()  # once more: the store may be back by now
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
        them. A KeyboardInterrupt during the wait keeps what waits there too (said in a warning)."""
        failed: Optional[OSError] = None
        try:
            self.sync(force=True, deadline=deadline)
        except OSError as exc:  # the uploader gave up: what waits is kept all the same
            failed = exc
        except BaseException:  # Ctrl-C during the wait: nothing accepted is lost
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
            self._interrupted = True  # no write waits for room any more
        try:
            self.sync(force=True, deadline=deadline)
        except OSError:
            pass  # given up again: kept below
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
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        return None

    def _save_now(self) -> str:
        """Keep what waits (under the lock); the sentence that says where."""
        waiting = self.pending()
        paths, keys, directory = self._write_as_objects()
        if len(paths) == 1:
            where, target = paths[0], self._url(keys[0])
        else:
            where = "%s and %d more files beside it (to %s)" % (paths[0], len(paths) - 1, os.path.basename(paths[-1]))
            target = "%s ... %s (each to the name it has)" % (self._url(keys[0]), posixpath.basename(keys[-1]))
        return ("%s: the store did not take %s in time; it is kept in %s: upload it to %s, or serve it "
                "(tensorboard --logdir %s)" % (self.path, readable(waiting), where, target, directory))

    def _write_as_objects(self) -> Tuple[List[str], List[str], str]:
        """What the store did not take (under the lock), written to the spool's directory as the
        objects that would have held it: the current part put again with the rest after it (no
        record is ever in two objects), then the next parts, each within max_object (but a
        single larger record). Streamed: memory holds one batch at a time, never the spool.
        Returns (local paths, keys, the spool's directory)."""
        directory = self._spool.directory if self._spool is not None else place(self._spool_settings)
        if directory is None:
            raise OSError(errno.EIO, "%s: the store did not take %s, and no directory can keep it (set "
                          "MXBOARD_SPOOL_DIR to a writable directory)" % (self.path, readable(self.pending())))
        part = self._parts.pending_part()
        paths: List[str] = []
        keys: List[str] = []
        kept: Optional[Any] = None
        size = 0
        try:
            for piece in [self._parts.unconfirmed_bytes()] + list(self._waiting):
                data = collections.deque([piece if isinstance(piece, bytes) else piece.spool.read(piece)])
                while data and data[0]:
                    if kept is None:
                        kept, path = _create_kept(directory, self._parts.key(part))
                        paths.append(path)
                        keys.append(self._parts.key(part))
                    taken = take_records(data, self._policy.max_object - size, at_least_one=not size)
                    if not taken:  # the next record does not fit: the next part
                        kept.close()
                        kept, size, part = None, 0, part + 1
                        continue
                    for records in taken:
                        kept.write(records)
                        size += len(records)
        finally:
            if kept is not None:
                kept.close()
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        self._waiting.clear()  # kept there now: the uploader has nothing more to put
        self._marks.clear()
        self._waiting_bytes = self._memory = 0
        self._parts.kept(part if size else part - 1)
        return paths, keys, directory

    def abandon(self) -> None:
        """In a forked child: drop the parent's data (the parent uploads it)."""
        self._waiting.clear()
        self._waiting_bytes = self._memory = 0
        self._spool = None  # the parent's (its file, its count)
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
        return self._waiting_bytes or self._parts.unconfirmed()

    def waiting_bytes(self) -> int:
        return self._waiting_bytes

    def urgent(self, cap: int) -> bool:
        return self._waiting_bytes >= cap or self.closing or self._wants_room or self._flushing > 0

    def put(self, part: int, body: bytes, seconds: float) -> None:
        put_within(self._fs, self._parts.key(part), body, seconds)

    def stored(self, part: int, body: bytes, upto: int) -> None:
        self._parts.acknowledge(part, body)
        self._spool_stored(upto)
        self.lock.notify_all()

    def gave_up(self, error: OSError) -> None:
        if self._error is None:
            self._error = error
        self.lock.notify_all()

    def _spool_stored(self, upto: int) -> None:
        """Everything taken up to `upto` is in the store (under the lock): the spool's file says so,
        so that a leftover of it (the process killed now) never keeps it twice."""
        last = None
        while self._marks and self._marks[0][0] <= upto:
            last = self._marks.popleft()
        if last is not None and last[1] is self._spool:
            try:
                last[1].stored(last[3], last[2])
            except OSError as exc:  # a leftover would hold more than it must: said, never fatal
                log.debug("mxboard: %s: could not mark the spool: %s", self.path, exc)

    def next_body(self, cap: int) -> Tuple[int, bytes, int]:
        """(part, body, all the bytes taken so far) of the next put (under the lock): whole
        records taken from the waiting ones into the current or the next part (Parts.body),
        within what the link carries in a put; spooled ones read back first, as many as that
        holds (where each ends in its spool file is marked, for `_spool_stored`)."""
        front = 0
        for i, piece in enumerate(self._waiting):
            if front >= cap or self._parts.unconfirmed():  # a part put again takes nothing: nothing read
                break
            if not isinstance(piece, bytes):
                spool, end = piece.spool, piece.offset + piece.length
                piece = self._waiting[i] = spool.read(piece)
                self._memory += len(piece)
                if spool.waiting:  # not emptied (and started over) by this read
                    self._marks.append((self._taken + front + len(piece), spool, spool.generation, end))
            front += len(piece)
        part, body, taken = self._parts.body(self._waiting, self._waiting_bytes, self._logged,  # type: ignore[arg-type]
                                             cap)
        self._waiting_bytes -= taken
        self._memory -= taken
        self._taken += taken
        self.lock.notify_all()  # room for the writer thread
        return part, body, self._taken


def pieces_of(piece: Spooled, data: bytes) -> List[Spooled]:
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


def _create_kept(directory: str, key: str) -> Tuple[Any, str]:
    """(a new private file for `key` in `directory`, its path): `<key>`, else `<key>.kept1`...
    where a name is taken (a file, a planted symlink: never written through)."""
    parts = key.split("/")
    for attempt in range(100):
        name = parts[:-1] + [parts[-1] + (".kept%d" % attempt if attempt else "")]
        try:
            return create_private(directory, name, "wb"), os.path.join(directory, *name)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name to keep what waits", os.path.join(directory, *parts))
