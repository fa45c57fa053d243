"""`RemoteStorage`: a logdir in an object store, checked when a writer is made."""
from __future__ import annotations

import contextlib
import errno
import posixpath
import time
from typing import Any, ContextManager, List

from ..._format.names import components, run_of
from ..bounds import call_with_timeout, put_with_timeout
from .event_file import RemoteEventFile
from .policy import UploadPolicy
from .profiles import open_filesystem, profile_of
from .spool_settings import SpoolSettings, checked_settings
from .uploader import ASSUMED_RATE

__all__ = ["RemoteStorage", "check", "refused"]


class RemoteStorage:
    """An fsspec filesystem under a logdir URL: where event files, sub-runs and projector files
    go. Checked at construction, within the policy's check_secs, creating nothing: an unknown scheme, a missing
    package, a bucket or container that does not exist (FileNotFoundError), refused credentials
    (PermissionError), a store that cannot be reached (ConnectionError) or does not answer
    (TimeoutError) is a clear error there. Paths are the store's own (no protocol); `url` makes
    a path a URL again, as the user wrote its scheme. `policy`: how its event files upload;
    `spool`: where what the store has not taken waits, checked now, not in the middle of an outage.
    Both come from the writer's storage.Destination, which makes their defaults."""

    def __init__(self, url: str, policy: UploadPolicy, spool: SpoolSettings) -> None:
        self.policy = policy
        self.spool = checked_settings(spool)
        self.fs, self.root = open_filesystem(url)
        self._scheme = url.split("://", 1)[0]
        check(self.fs, self.root, url, profile_of(url).bucketed, self.policy.check_secs)

    def url(self, path: str) -> str:
        # adlfs says abfs:// for az://.
        written = str(self.fs.unstrip_protocol(path))
        return self._scheme + written[written.index("://"):] if "://" in written else written

    def subdir(self, *names: str) -> str:
        # A store has no links to leave the logdir by.
        return "/".join([self.root] + components(*names))

    def join(self, base: str, *names: str) -> str:
        return posixpath.join(base, *names)

    def run(self, directory: str) -> str:
        return run_of(self.root, directory)

    def open_event_file(self, directory: str, suffix: str) -> RemoteEventFile:
        return RemoteEventFile(self.fs, self.url, self.policy, self.spool, directory, suffix)

    def write_bytes(self, path: str, data: bytes) -> None:
        put_with_timeout(self.fs, path, data, self.policy.request_secs + len(data) / ASSUMED_RATE)

    def read_text(self, path: str) -> str:
        return bytes(call_with_timeout(self.policy.request_secs, self.fs.cat_file, path)).decode("utf-8")

    def listdir(self, path: str) -> List[str]:
        try:
            listed = call_with_timeout(self.policy.request_secs, self.fs.ls, path, detail=False, refresh=True)
        except FileNotFoundError:
            return []
        return [posixpath.basename(p.rstrip("/")) for p in listed]

    def makedirs(self, path: str) -> None:
        # Objects need no directories, so nothing is made.
        pass

    def lock(self, path: str) -> ContextManager[None]:
        # No locks in object stores: see projector.rebuild_config.
        return contextlib.nullcontext()


def check(fs: Any, root: str, url: str, bucketed: bool, seconds: float) -> None:
    """The constructor's check of a store, all within `seconds`, creating nothing (a logger never
    makes a bucket: a typo would become one, with its costs and permissions): the bucket or
    container exists, and `root` can be listed. Each failure is one error naming the logdir."""
    deadline = time.monotonic() + seconds
    bucket = root.lstrip("/").split("/", 1)[0]
    try:
        if bucketed:
            try:
                call_with_timeout(seconds, fs.info, bucket)
            except FileNotFoundError:
                raise FileNotFoundError(errno.ENOENT, "logdir %r: the store has no bucket or container %r (mxboard "
                                        "creates none: create it, or check the name)" % (url, bucket)) from None
        try:
            call_with_timeout(deadline - time.monotonic(), fs.ls, root, detail=False)
        except FileNotFoundError:
            # An object store has no directories until something is written under them.
            pass
    except FileNotFoundError:
        raise
    except TimeoutError:
        raise TimeoutError(errno.ETIMEDOUT, "logdir %r: the store did not answer within %g s" % (url, seconds)) \
            from None
    # The endpoint's own errors vary by library.
    except Exception as exc:  # noqa: BLE001
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
