"""Logdirs in object stores (`s3://bucket/prefix/run`, and any fsspec URL whose filesystem is
installed: `gs://`, `az://`, `hdfs://`, `memory://`...).

Objects cannot be appended to, so an event file becomes a series of objects, each a valid event
file on its own, named so that they sort in creation order for ever (`<file>`, `<file>.part0001`,
... `<file>.part9999`, `<file>.partz10000`, ... `<file>.partzz100000`: a `z` for each digit past
four, which sorts after every digit). A file's name carries a random token besides host and pid
(ranks in containers may share both, and a store has no exclusive create), and a name already
taken in the store is never used:

- Every `UPLOAD_SECS` (and on `flush()`/`close()`), what was written since the last upload is
  uploaded. It extends the current object (re-uploaded whole: a reader that read its start
  carries on from where it stopped) while that keeps the bytes uploaded for the file within
  twice the bytes logged and the object within `MAX_OBJECT`; otherwise it starts the next part.
  So uploads stay within 2x what is logged, and an object is closed at least every 16 MiB (with
  slow, steady logging about every third upload: `make bench` counts them).
- Memory: the current object (<= MAX_OBJECT) and what waits for the store (<= MAX_UNSENT).
- The store going away: uploads are retried with backoff (data kept, uploaded when the store
  returns) until MAX_UNSENT waits or MAX_FAILURES uploads in a row failed; then writing stops
  and the error reaches the caller (a WriterError on later calls). `close()` tries once more
  and raises if it cannot. Every request is bounded by the client's timeouts: nothing hangs.
"""
import contextlib
import errno
import logging
import posixpath
import secrets
import time

from ..events import event_file_name
from .names import components, run_of

__all__ = ["RemoteEventFile", "RemoteStorage", "UPLOAD_SECS", "MAX_OBJECT"]

log = logging.getLogger("mxboard")

UPLOAD_SECS = 10  # seconds between uploads: with the bundle's 2 s reload, a point is served within seconds
MAX_OBJECT = 16 << 20  # bytes an object grows to before the next part starts
MAX_UNSENT = 64 << 20  # bytes kept for a store that does not answer
MAX_FAILURES = 8  # uploads in a row that may fail (backoff 2, 4 ... 60 s: about 3 minutes)
RETRY_SECS = 2  # the first backoff, doubled at each failure, at most 60 s
FIRST_PART = 1  # the number of a file's second object (a test knob: parts past 9999 without 10,000 uploads)


class RemoteStorage:
    """An fsspec filesystem under a logdir URL: where event files, sub-runs and projector files
    go. Checked at construction: an unknown scheme, a missing package, a store that cannot be
    reached or refuses the credentials is a clear error there. Paths are the store's own (no
    protocol); `url` makes one a URL again."""

    def __init__(self, url):
        try:
            import fsspec
        except ImportError:
            raise ImportError("logdir %r is a URL: install fsspec and the package of its filesystem "
                              "(for S3: pip install 'mxboard[s3]')" % url) from None
        protocol = url.split("://", 1)[0].lower()
        if protocol not in fsspec.available_protocols():
            raise ValueError("logdir %r: unknown URL scheme %r (fsspec knows %s)"
                             % (url, protocol + "://", ", ".join(sorted(fsspec.available_protocols())[:12]) + "..."))
        options = {}
        if protocol in ("s3", "s3a"):  # bounded requests: an unreachable endpoint fails in seconds
            options["config_kwargs"] = {"connect_timeout": 5, "read_timeout": 20,
                                        "retries": {"max_attempts": 2, "mode": "standard"}}
            options["skip_instance_cache"] = True
        try:
            self.fs, self.root = fsspec.core.url_to_fs(url, **options)
        except ImportError as exc:
            raise ImportError("logdir %r needs a package for %s:// (for S3: pip install 'mxboard[s3]'): %s"
                              % (url, protocol, exc)) from None
        self.root = self.root.rstrip("/")
        try:
            self.fs.makedirs(self.root, exist_ok=True)
            self.fs.ls(self.root, detail=False)
        except PermissionError as exc:
            raise PermissionError("logdir %r: the store refused the credentials or the access (%s)"
                                  % (url, exc)) from None
        except FileNotFoundError:
            pass  # an object store has no directories until something is written under them
        except Exception as exc:  # noqa: BLE001 - the endpoint's own errors vary by library
            raise ConnectionError("logdir %r: the store cannot be reached: %s: %s"
                                  % (url, type(exc).__name__, exc)) from None

    def url(self, path):
        return self.fs.unstrip_protocol(path)

    def subdir(self, *names):
        return "/".join([self.root] + components(*names))  # no links to leave the logdir by

    def join(self, base, *names):
        return posixpath.join(base, *names)

    def run(self, directory):
        return run_of(self.root, directory)

    def open_event_file(self, directory, suffix):
        return RemoteEventFile(self, directory, suffix)

    def write_bytes(self, path, data):
        self.fs.pipe_file(path, data)

    def read_text(self, path):
        return self.fs.cat_file(path).decode("utf-8")

    def listdir(self, path):
        try:
            return [posixpath.basename(p.rstrip("/")) for p in self.fs.ls(path, detail=False, refresh=True)]
        except FileNotFoundError:
            return []

    def makedirs(self, path):
        pass  # objects need no directories

    def lock(self, path):
        return contextlib.nullcontext()  # no locks in object stores: see projector.rebuild_config


class RemoteEventFile:
    """An event file as objects in a store (see the module's docstring); `sync(force)`, which
    the writer thread calls after every batch, uploads."""

    def __init__(self, storage, directory, suffix=""):
        self._fs = storage.fs
        self._url = storage.url
        self.directory = directory
        self._base = self._free_name(directory, suffix)
        self.path = storage.url(self._base)
        self._object = b""  # the current object, as uploaded
        self._sizes = []  # bytes of each object, as uploaded
        self._unsent = bytearray()
        self._logged = self._uploaded = 0
        self._last_upload = time.monotonic() - UPLOAD_SECS  # the first batch goes at once
        self._failures = 0
        self._next_try = 0.0

    def write(self, data):
        self._unsent += data
        self._logged += len(data)
        self.sync(force=False)

    def sync(self, force):
        """Upload what waits, if it is time (or `force`d); raise OSError once the store has
        failed too often or too much waits."""
        if not self._unsent:
            return
        now = time.monotonic()
        if not force and (now - self._last_upload < UPLOAD_SECS or now < self._next_try):
            return
        try:
            self._upload()
        except Exception as exc:  # any failure of the store is retried
            self._failures += 1
            if force or self._failures >= MAX_FAILURES or len(self._unsent) > MAX_UNSENT:
                raise OSError(errno.EIO, "%s: the store did not take %d bytes after %d tries: %s: %s"
                              % (self.path, len(self._unsent), self._failures, type(exc).__name__, exc)) from exc
            self._next_try = now + min(60, RETRY_SECS * 2 ** (self._failures - 1))
            log.warning("mxboard: upload to %s failed (%s); %d bytes kept, retrying in %d s",
                        self.path, exc, len(self._unsent), self._next_try - now)
        else:
            self._failures = 0

    def _upload(self):
        new = bytes(self._unsent)
        extend = len(self._object) + len(new)
        if self._object and (extend > MAX_OBJECT or self._uploaded + extend > 2 * self._logged):
            self._object = b""  # the current object stays as it is; the next part begins
        body = self._object + new
        part = len(self._sizes) - (1 if self._object else 0)
        self._fs.pipe_file(self._key(part), body)
        if not self._object:
            self._sizes.append(0)
        self._sizes[part] = len(body)
        self._object, self._uploaded = body, self._uploaded + len(body)
        del self._unsent[:len(new)]
        self._last_upload = time.monotonic()

    def _free_name(self, directory, suffix):
        """A new event file's key: with a random token, and never one the store holds already."""
        while True:
            key = posixpath.join(directory, event_file_name(suffix, token=".%s" % secrets.token_hex(4)))
            if not self._fs.exists(key):
                return key

    def _key(self, part):
        if part == 0:
            return self._base
        digits = "%04d" % (part - 1 + FIRST_PART)
        return "%s.part%s%s" % (self._base, "z" * (len(digits) - 4), digits)

    def pieces(self):
        """(URL, bytes) of each object uploaded so far, in order."""
        return [(self._url(self._key(i)), size) for i, size in enumerate(self._sizes)]

    def close(self):
        self.sync(force=True)

    def abandon(self):
        self._unsent = bytearray()
