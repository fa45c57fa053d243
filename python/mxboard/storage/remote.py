"""Logdirs in object stores (`s3://bucket/prefix/run`, and any fsspec URL whose filesystem is
installed: `gs://`, `az://`, `hdfs://`, `memory://`...).

Objects cannot be appended to, so an event file becomes a series of objects, each a valid event
file on its own, named so that they sort in creation order for ever (`<file>`, `<file>.part0001`,
... `<file>.part9999`, `<file>.partz10000`, ... `<file>.partzz100000`: a `z` for each digit past
four, which sorts after every digit). A file's name carries a random token besides host and pid
(ranks in containers may share both, and a store has no exclusive create), and a name already
taken in the store is never used:

- An uploader thread of the file's own puts objects, so a slow or hung store never holds the
  writer thread: it goes on draining the callers' queue into the bytes that wait.
- Every `UPLOAD_SECS`, on `flush()`/`close()`, and as soon as MAX_OBJECT bytes wait, what waits
  is uploaded. It extends the current object (re-uploaded whole: a reader that read its start
  carries on from where it stopped) while that keeps the bytes uploaded for the file within
  twice the bytes logged and the object within `MAX_OBJECT`; otherwise it starts the next part.
  Objects hold whole records, so each is a valid event file, and none passes MAX_OBJECT (but a
  single larger record).
- Memory: the current object (<= MAX_OBJECT) and what waits for the store (<= MAX_UNSENT).
  Beyond that, what waits goes to a local spool (storage/spool.py: bounded, said once in a
  warning), uploaded in order when the store returns: the writer thread, and so the training
  loop, never waits on the store (but for a full spool).
- Exactly once: a put that was not acknowledged (a lost answer, a timeout: the store may hold
  it) is repeated on the same object, with the same bytes first, before the next part begins.
- Bounded waits: every request is bounded as a whole (REQUEST_SECS: connecting, the wait for
  100-continue, the body, the answer), with one try per request (botocore's and s3fs's own
  retries are off; the uploader retries with backoff). A store that is down or hung keeps the
  data (within the bounds) until uploads have failed for GIVE_UP_SECS; then writing stops and
  the error reaches the caller (a WriterError on later calls). `flush()` waits for the store at
  most FLUSH_SECS; `close()` too, and raises if the store did not take everything, naming the
  file in the spool's directory that holds it (a valid event file, named as the object it would
  have become: upload it there, or serve it).
"""
from __future__ import annotations

import collections
import contextlib
import errno
import functools
import logging
import os
import posixpath
import secrets
import threading
import time
from typing import Any, ContextManager, Deque, Dict, List, Optional, Tuple, Union

from .._format.events import event_file_name, whole_records
from .._format.names import components, part_key, run_of
from .._format.sizes import readable
from ..threads import keep_signals_off_this_thread
from .bounds import within
from .spool import Settings, Spool, Spooled, create_private, limit_of, place, settings

__all__ = ["RemoteEventFile", "RemoteStorage", "open_filesystem", "S3_REQUESTS", "UPLOAD_SECS", "MAX_OBJECT"]

log = logging.getLogger("mxboard")

UPLOAD_SECS = 10  # seconds between uploads: with the bundle's 2 s reload, a point is served within seconds
MAX_OBJECT = 16 << 20  # bytes an object grows to before the next part starts (and that start an upload)
MAX_UNSENT = 64 << 20  # bytes that may wait for the store before the writer thread waits
REQUEST_SECS = 30  # one request, as a whole (connection, 100-continue, body, answer), beyond its bytes' time
CHECK_SECS = 10  # the constructor's check of the store, all its requests together
LIBRARY_READ_SECS = 60  # the client libraries' own bound on a stalled answer, above ours (a fallback)
RETRY_SECS = 2  # the first backoff, doubled at each failure, at most 60 s
GIVE_UP_SECS = 180  # uploads failing for this long: writing stops, the caller hears of it
FLUSH_SECS = 30  # flush() and close() wait at most this long for the store
MAX_OBJECT_RECORD = 1 << 62  # the writer's own records: any length it wrote is whole
PUT_SECS = 10  # a put carries about this many seconds of the link's measured throughput...
MIN_PUT = 256 << 10  # ...but never fewer bytes than this (a slow link's objects: smaller, never tiny)
ASSUMED_RATE = 256 << 10  # bytes a second a link is taken to carry before a put measured it
FLOOR_RATE = 16 << 10  # the slowest link a put waits for (a MIN_PUT put's bound: REQUEST_SECS + 32 s)
MEASURED_FROM = 64 << 10  # a put of at least this many bytes measures the link
FIRST_PART = 1  # the number of a file's second object (a test knob: parts past 9999 without 10,000 uploads)
# botocore's settings for every S3 request of the writer and the server's mirror: an unreachable
# endpoint fails in seconds, and one try a request (each caller retries on its own clock)
S3_REQUESTS: Dict[str, Any] = {"connect_timeout": 5, "read_timeout": 20,
                               "retries": {"max_attempts": 1, "mode": "standard"}}


def open_filesystem(url: str, shared: bool = False) -> Tuple[Any, str]:
    """(fsspec filesystem, path) of a URL, a new instance (a writer's uploader, the mirror: never
    fsspec's shared one, whose connections a forked child or another thread must not share), or
    with `shared` fsspec's one for these settings (a reader's, made once a process). An unknown
    scheme or a missing package is a clear error. On S3, every request is bounded (an
    unreachable endpoint fails in seconds); on every store, each is tried once: callers retry on
    their own clock, not botocore's times s3fs's."""
    try:
        import fsspec
    except ImportError:
        raise ImportError("logdir %r is a URL: install fsspec and the package of its filesystem "
                          "(for S3: pip install 'mxboard[s3]'; for GCS: 'mxboard[gcs]'; for Azure: "
                          "'mxboard[azure]')" % url) from None
    protocol = url.split("://", 1)[0].lower()
    if protocol not in fsspec.available_protocols():
        raise ValueError("logdir %r: unknown URL scheme %r (fsspec knows %s)"
                         % (url, protocol + "://", ", ".join(sorted(fsspec.available_protocols())[:12]) + "..."))
    options: Dict[str, Any] = {"skip_instance_cache": not shared}
    if protocol in ("s3", "s3a"):
        options["config_kwargs"] = dict(S3_REQUESTS)
    if protocol in ("az", "abfs", "abfss"):  # the Azure SDK's own bounds (mxboard's `within` is above them)
        options.update(connection_timeout=5, read_timeout=LIBRARY_READ_SECS)
    try:
        if protocol in ("gs", "gcs"):
            fs, root = _gcs(url, options)
        else:
            fs, root = fsspec.core.url_to_fs(url, **options)
    except ImportError as exc:
        extra = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure",
                 "abfss": "azure"}.get(protocol)
        hint = "pip install 'mxboard[%s]'" % extra if extra else "for S3: pip install 'mxboard[s3]'"
        raise ImportError("logdir %r needs a package for %s:// (%s): %s" % (url, protocol, hint, exc)) from None
    if protocol in ("s3", "s3a"):
        fs.retries = 1
    if protocol in ("az", "abfs", "abfss"):
        _one_try(getattr(fs, "service_client", None))
    return fs, root.rstrip("/")


def _one_try(client: Any) -> None:
    """An Azure client's requests tried once, as S3's: its SDK's own policy waits 15 s, then 18,
    then 24 before a retry (a lost answer cost a minute); the uploader retries on its own clock."""
    policy = getattr(getattr(client, "_config", None), "retry_policy", None)
    for name in ("total_retries", "connect_retries", "read_retries", "status_retries"):
        if hasattr(policy, name):
            setattr(policy, name, 0)


def _gcs(url: str, options: Dict[str, Any]) -> Tuple[Any, str]:
    """gcsfs' plain filesystem: its default one probes each bucket's type over gRPC first (60 s
    against an emulator, and a warning without Google credentials), which writing never needs.
    An emulator's endpoint (STORAGE_EMULATOR_HOST) is gcsfs' own convention, taken as is."""
    import aiohttp

    # gcsfs' default is no timeout at all: a hung store held its caller for good. A socket read
    # (an answer that stalls) is bounded; a slow upload is not cut by it (mxboard's `within` is)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=LIBRARY_READ_SECS)
    fs = _gcs_one_try()(requests_timeout=timeout, **options)
    return fs, fs._strip_protocol(url)


@functools.lru_cache(maxsize=None)
def _gcs_one_try() -> Any:
    """gcsfs' filesystem with each request tried once, as S3's: its own policy tries six times
    over 31 s; the uploader retries on its own clock. A gcsfs without that decorator keeps its own
    (still bounded by REQUEST_SECS)."""
    from gcsfs.core import GCSFileSystem
    from gcsfs.retry import retry_request

    request = getattr(GCSFileSystem._request, "__wrapped__", None)
    if request is None:
        return GCSFileSystem
    return type("GCSFileSystem", (GCSFileSystem,), {"_request": retry_request(retries=1)(request)})


BUCKETS = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")  # schemes whose path starts with a bucket or container


class RemoteStorage:
    """An fsspec filesystem under a logdir URL: where event files, sub-runs and projector files
    go. Checked at construction, within CHECK_SECS, creating nothing: an unknown scheme, a missing
    package, a bucket or container that does not exist (FileNotFoundError), refused credentials
    (PermissionError), a store that cannot be reached (ConnectionError) or does not answer
    (TimeoutError) is a clear error there. Paths are the store's own (no protocol); `url` makes
    one a URL again, as the user wrote its scheme."""

    def __init__(self, url: str) -> None:
        self.spool: Settings = settings()  # MXBOARD_SPOOL_DIR, _MAX_BYTES checked now, not mid-outage
        self.fs, self.root = open_filesystem(url)
        self._scheme = url.split("://", 1)[0]
        check(self.fs, self.root, url, self._scheme.lower() in BUCKETS)

    def url(self, path: str) -> str:
        written = str(self.fs.unstrip_protocol(path))  # adlfs says abfs:// for az://
        return self._scheme + written[written.index("://"):] if "://" in written else written

    def subdir(self, *names: str) -> str:
        return "/".join([self.root] + components(*names))  # no links to leave the logdir by

    def join(self, base: str, *names: str) -> str:
        return posixpath.join(base, *names)

    def run(self, directory: str) -> str:
        return run_of(self.root, directory)

    def open_event_file(self, directory: str, suffix: str) -> RemoteEventFile:
        return RemoteEventFile(self, directory, suffix)

    def write_bytes(self, path: str, data: bytes) -> None:
        put_within(self.fs, path, data, REQUEST_SECS + len(data) / ASSUMED_RATE)

    def read_text(self, path: str) -> str:
        return bytes(within(REQUEST_SECS, self.fs.cat_file, path)).decode("utf-8")

    def listdir(self, path: str) -> List[str]:
        try:
            listed = within(REQUEST_SECS, self.fs.ls, path, detail=False, refresh=True)
        except FileNotFoundError:
            return []
        return [posixpath.basename(p.rstrip("/")) for p in listed]

    def makedirs(self, path: str) -> None:
        pass  # objects need no directories

    def lock(self, path: str) -> ContextManager[None]:
        return contextlib.nullcontext()  # no locks in object stores: see projector.rebuild_config


def check(fs: Any, root: str, url: str, bucketed: bool) -> None:
    """The constructor's check of a store, all within CHECK_SECS, creating nothing (a logger never
    makes a bucket: a typo would become one, with its costs and permissions): the bucket or
    container exists, and `root` can be listed. Each failure is one error naming the logdir."""
    deadline = time.monotonic() + CHECK_SECS
    bucket = root.lstrip("/").split("/", 1)[0]
    try:
        if bucketed:
            try:
                within(CHECK_SECS, fs.info, bucket)
            except FileNotFoundError:
                raise FileNotFoundError(errno.ENOENT, "logdir %r: the store has no bucket or container %r (mxboard "
                                        "creates none: create it, or check the name)" % (url, bucket)) from None
        try:
            within(deadline - time.monotonic(), fs.ls, root, detail=False)
        except FileNotFoundError:
            pass  # an object store has no directories until something is written under them
    except FileNotFoundError:
        raise
    except TimeoutError:
        raise TimeoutError(errno.ETIMEDOUT, "logdir %r: the store did not answer within %d s" % (url, CHECK_SECS)) \
            from None
    except Exception as exc:  # noqa: BLE001 - the endpoint's own errors vary by library
        if refused(exc):
            raise PermissionError(errno.EACCES, "logdir %r: the store refused the credentials or the access (%s: %s)"
                                  % (url, type(exc).__name__, _first_line(exc))) from None
        raise ConnectionError("logdir %r: the store cannot be reached: %s: %s"
                              % (url, type(exc).__name__, _first_line(exc))) from None


def refused(exc: BaseException) -> bool:
    """Whether a store's error means "not with these credentials": s3fs' PermissionError, gcsfs'
    "Forbidden" (403) or HttpError 401, the Azure SDK's 401 or 403."""
    if isinstance(exc, PermissionError):
        return True
    status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
    return status in (401, 403) or str(exc).startswith("Forbidden")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0]


class RemoteEventFile:
    """An event file as objects in a store (see the module's docstring). The writer thread
    `write`s whole records; an uploader thread of the file's own puts them, so that a slow or
    hung store never holds the thread that drains the callers' queue."""

    keeps_after_error = True  # records written after the uploader gave up are kept (output.py)

    def __init__(self, storage: RemoteStorage, directory: str, suffix: str = "") -> None:
        self._fs = storage.fs
        self._url = storage.url
        self._spool_settings = storage.spool
        self.directory: Optional[str] = directory
        self._parts = Parts(directory, suffix)
        self.path: Optional[str] = storage.url(self._parts.base)
        self._lock = threading.Condition(threading.Lock())  # guards everything below
        # whole records not yet in an upload, in order: in memory, or in the spool past MAX_UNSENT
        self._waiting: Deque[Union[bytes, Spooled]] = collections.deque()
        self._waiting_bytes = 0
        self._memory = 0  # of which in memory
        self._spool: Optional[Spool] = None
        self._spool_failed = False  # the spool could not take a batch (its disk full): memory only from then on
        self._wants_room = False  # the writer thread waits for room in memory (no spool takes its batch)
        self._interrupted = False  # close() is coming: a write never waits for room
        self._logged = 0
        self._flushes = 0  # forced uploads asked for
        self._flushing = 0  # flushes (or close()) waiting now: each put follows the last, not UPLOAD_SECS
        self._error: Optional[OSError] = None  # the OSError after which the uploader gave up
        self._stopping = False
        self._uploader: Optional[threading.Thread] = None
        self._link = Link()  # the uploader's: what a put may carry, and for how long
        self._taken = 0  # bytes ever taken from _waiting into puts
        # (position in that stream, spool, its generation, offset): where a read-back spooled piece ends
        self._marks: Deque[Tuple[int, Spool, int, int]] = collections.deque()

    # -- the writer thread's side -----------------------------------------------------------
    def write(self, data: bytes) -> None:
        """Queue whole records for upload: in memory up to MAX_UNSENT bytes, then in the spool.
        Waits only while the spool is full too (until close() comes); raises the OSError of an
        uploader that gave up. Where no spool can take the batch (a limit below its size, a
        spool whose disk filled), it waits in memory: the call waits until the store has taken
        enough (memory stays bounded, one batch past MAX_UNSENT at most)."""
        with self._lock:
            if self._error is not None:  # given up: kept all the same (close() keeps it), the error raised
                self._keep_after_error(data)
                self._raise_error()
            spooled = None
            if self._memory + len(data) > MAX_UNSENT:
                spooled = self._spooled(data)
            if spooled is None:
                while self._memory and self._memory + len(data) > MAX_UNSENT and not self._interrupted:
                    self._raise_error()
                    self._wants_room = True  # the uploader puts now, not at its next UPLOAD_SECS
                    self._lock.notify_all()
                    self._lock.wait(1)  # the uploader makes room
                self._wants_room = False
                self._waiting.append(bytes(data))
                self._memory += len(data)
            else:
                self._waiting.extend(spooled)
            self._waiting_bytes += len(data)
            self._logged += len(data)
            if self._uploader is None:
                self._uploader = threading.Thread(target=self._upload_loop, name="mxboard-upload", daemon=True)
                self._uploader.start()
            self._lock.notify_all()  # the uploader: at its time, or now if a part's worth waits

    def _keep_after_error(self, data: bytes) -> None:
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
            self._lock.wait(1)
        try:
            return pieces_of(self._spool.append(data), data)
        except OSError as exc:
            self._spool_fails(exc)
            return None

    def _spool_fails(self, exc: OSError) -> None:
        """A spool that cannot take more (its disk full, its directory gone) never stops the
        writer: what follows waits in memory, said once."""
        self._spool_failed = True
        where = self._spool.directory if self._spool is not None else self._spool_settings.named or "its directory"
        log.warning("mxboard: %s: the spool in %s cannot take more (%s); what follows waits in memory until the "
                    "store takes it", self.path, where, exc)

    def _try_again(self) -> None:
        """After the uploader gave up, a flush or close() tries the store once more (under the
        lock): a store that is back takes what waits, which is better than keeping it."""
        self._error = None
        self._link = Link()  # the link counted as down: measured afresh (a hang is no slow link)
        self._uploader = threading.Thread(target=self._upload_loop, name="mxboard-upload", daemon=True)
        self._uploader.start()

    def interrupt(self) -> None:
        """close() is coming: a write never waits for room in a full spool (the bound is passed by
        what close() writes, which it keeps)."""
        with self._lock:
            self._interrupted = True
            self._lock.notify_all()

    def sync(self, force: bool, deadline: Optional[float] = None) -> None:
        """Raise the uploader's error; `force` (flush): wait until what was written is in the
        store, at most FLUSH_SECS or until `deadline` (time.monotonic()) (a store that is down
        keeps the data, and is retried)."""
        with self._lock:
            retried = False
            if force and self._error is not None and self._pending() and not self._stopping:
                self._try_again()
                retried = True
            self._raise_error()
            if force and self._pending():
                self._flushes += 1
                self._flushing += 1
                self._lock.notify_all()
                deadline = time.monotonic() + FLUSH_SECS if deadline is None else deadline
                try:
                    while self._pending() and time.monotonic() < deadline:
                        if self._error is not None:  # gave up meanwhile (a request of the outage failing late)
                            if retried or self._stopping:
                                break
                            self._try_again()  # once more: the store may be back by now
                            retried = True
                        self._lock.wait(deadline - time.monotonic())
                finally:
                    self._flushing -= 1
                self._raise_error()
                if self._pending() and not self._interrupted:
                    log.warning("mxboard: %s: the store has not taken %s after %d s; they are kept and retried",
                                self.path, readable(self._pending()), FLUSH_SECS)

    def close(self, deadline: Optional[float] = None) -> None:
        """Upload what waits (until `deadline`, time.monotonic(); by default FLUSH_SECS from now)
        and stop the uploader. If the store did not take it all, it is left in the spool's
        directory as valid event files named as their objects, and the OSError raised names
        them. A KeyboardInterrupt during the wait keeps what waits there too (said in a warning)."""
        failed: Optional[OSError] = None
        try:
            self.sync(force=True, deadline=deadline)
        except OSError as exc:  # the uploader gave up: what waits is kept all the same
            failed = exc
        except BaseException:  # Ctrl-C during the wait: nothing accepted is lost
            kept = self._stop_and_keep()
            if kept is not None:
                log.warning("mxboard: %s", kept)
            raise
        kept = self._stop_and_keep()
        if kept is not None:
            raise OSError(errno.EIO, kept) from failed
        if failed is not None:
            raise failed

    def keep_at_end(self, deadline: float) -> None:
        """A signal ends the process: wait for the store until `deadline` (trying it again if the
        uploader gave up), then keep what it has not taken in the spool's directory, said in a
        warning. The file stays usable: records written later wait for the store, in memory or
        in the spool."""
        with self._lock:
            self._interrupted = True  # no write waits for room any more
        try:
            self.sync(force=True, deadline=deadline)
        except OSError:
            pass  # given up again: kept below
        with self._lock:
            kept = self._keep_or_clear()
        if kept is not None:
            log.warning("mxboard: %s", kept)

    def _stop_and_keep(self) -> Optional[str]:
        """Stop the uploader, then `_keep_or_clear`."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
            return self._keep_or_clear()

    def _keep_or_clear(self) -> Optional[str]:
        """Keep what waits (under the lock), returning the sentence that says where; with nothing
        waiting, remove the spool file (none outlives the process, for the next writer to take
        for a killed one's)."""
        if self._pending():
            return self._kept_now()
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        return None

    def _kept_now(self) -> str:
        """Keep what waits (under the lock); the sentence that says where."""
        waiting = self._pending()
        paths, keys, directory = self._keep()
        if len(paths) == 1:
            where, target = paths[0], self._url(keys[0])
        else:
            where = "%s and %d more files beside it (to %s)" % (paths[0], len(paths) - 1, os.path.basename(paths[-1]))
            target = "%s ... %s (each to the name it has)" % (self._url(keys[0]), posixpath.basename(keys[-1]))
        return ("%s: the store did not take %s in time; it is kept in %s: upload it to %s, or serve it "
                "(tensorboard --logdir %s)" % (self.path, readable(waiting), where, target, directory))

    def _keep(self) -> Tuple[List[str], List[str], str]:
        """What the store did not take (under the lock), written to the spool's directory as the
        objects that would have held it: the current part put again with the rest after it (no
        record is ever in two objects), then the next parts, each within MAX_OBJECT (but a
        single larger record). Streamed: memory holds one batch at a time, never the spool.
        Returns (local paths, keys, the spool's directory)."""
        directory = self._spool.directory if self._spool is not None else place(self._spool_settings)
        if directory is None:
            raise OSError(errno.EIO, "%s: the store did not take %s, and no directory can keep it (set "
                          "MXBOARD_SPOOL_DIR to a writable directory)" % (self.path, readable(self._pending())))
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
                    taken = take_records(data, MAX_OBJECT - size, at_least_one=not size)
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
        self._stopping = True

    def pieces(self) -> List[Tuple[str, int]]:
        """(URL, bytes) of each object the store acknowledged, in order."""
        with self._lock:
            return [(self._url(key), size) for key, size in self._parts.acknowledged()]

    def _pending(self) -> int:
        return self._waiting_bytes or self._parts.unconfirmed()

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    # -- the uploader thread ----------------------------------------------------------------
    def _upload_loop(self) -> None:
        """The uploader thread. It cannot die of an error: anything unexpected (a spool that can
        no longer be read) stops uploads as a give-up does, said once; what waits is kept, the
        writer's next call raises it, and a flush or close() tries again."""
        keep_signals_off_this_thread()
        try:
            self._uploads()
        except BaseException as exc:  # noqa: BLE001 - held for the caller, never a dead thread's traceback
            with self._lock:
                if self._error is None:
                    self._error = OSError(errno.EIO, "%s: uploads stopped: %s: %s" % (self.path, type(exc).__name__,
                                                                                        exc))
                    self._error.__cause__ = exc
                self._lock.notify_all()
            log.error("mxboard: %s: uploads stopped (%s: %s); what waits is kept, and the next call raises it",
                      self.path, type(exc).__name__, exc)

    def _uploads(self) -> None:
        last_upload, failures, next_try, flushes = float("-inf"), 0, 0.0, 0
        failing_since: Optional[float] = None
        while True:
            with self._lock:
                while True:
                    if not self._pending():
                        if self._stopping:
                            return
                        self._lock.wait()
                        continue
                    urgent = (self._waiting_bytes >= self._link.cap() or self._stopping or self._wants_room
                              or self._flushing > 0)
                    when = next_try if urgent else max(next_try, last_upload + UPLOAD_SECS)
                    if self._flushes != flushes:
                        when = 0.0  # a flush, or close(): one more try now, whatever the backoff
                    now = time.monotonic()
                    if now >= when:
                        break
                    self._lock.wait(when - now)
                flushes = self._flushes
                part, body, upto = self._next_body()
            started = time.monotonic()
            try:
                put_within(self._fs, self._parts.key(part), body, self._link.bound(len(body)))
            except Exception as exc:  # noqa: BLE001 - any failure of the store is retried
                failures += 1
                now = time.monotonic()
                if isinstance(exc, TimeoutError):
                    self._link.timed_out(len(body), now - started)
                failing_since = failing_since or now
                with self._lock:
                    if now - failing_since >= GIVE_UP_SECS or self._stopping:
                        self._error = OSError(errno.EIO, "%s: the store did not take %d bytes after %d tries in %d s: "
                                              "%s: %s" % (self.path, self._waiting_bytes + len(body), failures,
                                                          now - failing_since, type(exc).__name__, exc))
                        self._error.__cause__ = exc
                        self._lock.notify_all()
                        return
                    next_try = now + min(60, RETRY_SECS * 2 ** (failures - 1))
                    kept = self._waiting_bytes + len(body)
                # one warning an outage (its first failure), one at its end; each try in the debug log
                (log.warning if failures == 1 else log.debug)(
                    "mxboard: upload to %s failed (%s: %s); %s kept, retried (with backoff) for up to %d s",
                    self.path, type(exc).__name__, exc, readable(kept), GIVE_UP_SECS)
                continue
            self._link.took(len(body), time.monotonic() - started)
            with self._lock:
                if failures:
                    log.warning("mxboard: the store took %s again, after %d failed tries in %.0f s",
                                self.path, failures, time.monotonic() - (failing_since or 0.0))
                failures, failing_since, last_upload = 0, None, time.monotonic()
                self._parts.acknowledge(part, body)
                self._spool_stored(upto)
                self._lock.notify_all()

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

    def _next_body(self) -> Tuple[int, bytes, int]:
        """(part, body, all the bytes taken so far) of the next put (under the lock): whole
        records taken from the waiting ones into the current or the next part (Parts.body),
        within what the link carries in a put; spooled ones read back first, as many as that
        holds (where each ends in its spool file is marked, for `_spool_stored`)."""
        cap, front = self._link.cap(), 0
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
        self._lock.notify_all()  # room for the writer thread
        return part, body, self._taken


class Link:
    """What the puts measured of the way to the store: its throughput (bytes a second), which sets
    how much one put carries (`cap`: about PUT_SECS of it, within [MIN_PUT, MAX_OBJECT]; MIN_PUT
    until a put of MEASURED_FROM bytes or more measured it) and how long one may take (`bound`:
    REQUEST_SECS beyond twice its bytes' time at that rate, ASSUMED_RATE before it is known). A
    put whose bytes are moving is slow, not dead: a slow link gets smaller objects, each within
    its bound. A put that timed out says the link carries at most half of what it got: the same
    bytes are put again with twice the time, and so on until they are stored or the rate is at
    FLOOR_RATE (the link then counts as down, and the give-up clock runs). Read and written by the
    uploader thread only."""

    def __init__(self) -> None:
        self.rate: Optional[float] = None

    def cap(self) -> int:
        if self.rate is None:
            return min(MAX_OBJECT, MIN_PUT)
        return int(min(MAX_OBJECT, max(MIN_PUT, self.rate * PUT_SECS)))

    def bound(self, size: int) -> float:
        rate = ASSUMED_RATE if self.rate is None else self.rate
        return REQUEST_SECS + 2 * size / max(rate, FLOOR_RATE)

    def took(self, size: int, seconds: float) -> None:
        if size >= MEASURED_FROM:
            self.rate = size / max(seconds, 1e-3)

    def timed_out(self, size: int, seconds: float) -> None:
        rate = ASSUMED_RATE if self.rate is None else self.rate
        self.rate = max(FLOOR_RATE, min(rate, size / max(seconds, 1e-3)) / 2)


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


def take_records(waiting: Deque[bytes], room: int, at_least_one: bool) -> List[bytes]:
    """Take whole records from the front of `waiting` (a deque of bytes, each whole records)
    within `room` bytes (the first record alone if it is longer and `at_least_one`), splitting a
    piece at a record boundary where it does not fit. Returns the pieces taken."""
    taken: List[bytes] = []
    while waiting and (room > 0 or at_least_one and not taken):
        piece = waiting[0]
        if len(piece) > room:
            cut, _ = whole_records(piece, MAX_OBJECT_RECORD, room=room, at_least_one=at_least_one and not taken)
            if not cut:
                break
            if cut < len(piece):
                waiting[0], piece = piece[cut:], piece[:cut]
            else:
                waiting.popleft()
        else:
            waiting.popleft()
        taken.append(piece)
        room -= len(piece)
    return taken


def put_within(fs: Any, key: str, body: bytes, seconds: float) -> None:
    """One PUT, bounded as a whole by `seconds` (the connection, the wait for 100-continue, the
    body, the answer: bounds.within); the request is cancelled when it passes."""
    within(seconds, fs.pipe_file, key, body)


class Parts:
    """The objects of an event file: their keys, `base` (named with no request to the store, so
    that opening a file never waits on it: a random 64-bit token, so that it is another writer's
    key only if that one had the same host, pid, second and token), then `<base>.part0001` ...
    `.part9999`, `.partz10000`, `.partzz100000` (a `z` a digit past four: names sort in creation
    order for ever); the current part's bytes as last put, whether the store acknowledged them,
    and the acknowledged size of each part. Its owner's lock guards it."""

    def __init__(self, directory: str, suffix: str) -> None:
        self.base = posixpath.join(directory, event_file_name(suffix, token=".%s" % secrets.token_hex(8)))
        self._part, self._object, self._confirmed = 0, b"", True
        self._sizes: List[int] = []
        self._uploaded = 0  # bytes put, for the 2x budget

    def abandon(self) -> None:
        """In a forked child: nothing left to confirm (the parent uploads it)."""
        self._confirmed = True

    def key(self, part: int) -> str:
        return part_key(self.base, part - 1 + FIRST_PART) if part else self.base

    def body(self, waiting: Deque[bytes], waiting_bytes: int, logged: int,
             cap: int = MAX_OBJECT) -> Tuple[int, bytes, int]:
        """(part, body, bytes taken from `waiting`) of the next put. The current part is extended
        while it stays within `cap` (MAX_OBJECT, or less on a slow link) and the file's uploads
        within twice its `logged` bytes; otherwise the next part begins. A part whose last put
        was not acknowledged (the store may hold it) is put again with the same bytes, nothing
        added: no record is ever in two objects, and a put that was cut but lands late (its bytes
        were still on their way) holds what the store holds anyway."""
        if not self._confirmed:
            return self._part, self._object, 0
        extend = len(self._object) + waiting_bytes
        if self._object and (extend > cap or self._uploaded + extend > 2 * logged):
            self._part, self._object = self._part + 1, b""  # the current part stays as it is
        taken = take_records(waiting, cap - len(self._object), at_least_one=not self._object)
        self._object = self._object + b"".join(taken)
        self._confirmed = False
        return self._part, self._object, sum(len(piece) for piece in taken)

    def acknowledge(self, part: int, body: bytes) -> None:
        if part == len(self._sizes):
            self._sizes.append(0)
        self._sizes[part] = len(body)
        self._uploaded += len(body)
        self._confirmed = True

    def unconfirmed(self) -> int:
        """Bytes of the current part that the store has not acknowledged."""
        return 0 if self._confirmed else len(self._object)

    def unconfirmed_bytes(self) -> bytes:
        return b"" if self._confirmed else self._object

    def pending_part(self) -> int:
        """The part that what is not yet stored goes to: the current one while the store may
        hold it (its put not acknowledged) or it is empty, else the next."""
        if not self._confirmed or not self._object:
            return self._part
        return self._part + 1

    def kept(self, last: int) -> None:
        """What was pending is kept on disk up to part `last`: the next put starts the part after."""
        self._part, self._object, self._confirmed = last + 1, b"", True

    def acknowledged(self) -> List[Tuple[str, int]]:
        """(key, bytes) of each object the store acknowledged, in order."""
        return [(self.key(i), size) for i, size in enumerate(self._sizes)]
