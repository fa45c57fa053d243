"""Where a writer's files go: a directory, an object store, or nowhere, behind one interface.

`LocalStorage` (local.py) writes to a directory. `RemoteStorage` (remote/) writes to an object
store under a logdir URL such as `s3://bucket/prefix`, where an event file becomes a series of
objects. `Nowhere` (local.py) is `write_to_disk=False` and writes nothing. Each of them offers the
`Storage` protocol and opens `EventFile`s (protocols.py), so no caller asks which one it has.
`Destination.of(logdir, ...)` makes a writer's storage settings, every default among them, and
its `open()` picks the storage. `checked_logdir(logdir)` checks a logdir, and
`open_filesystem(url)` opens a store's fsspec filesystem with mxboard's settings: the reader and
the bundled server use both. `is_url(logdir)` says whether a logdir is in an object store, as a
writer decides it; it is public (`from mxboard.storage import is_url`), for integrations and users.
"""
from dataclasses import dataclass
from typing import Optional

from .._format.names import components, is_url, run_of
from .bounds import call_with_timeout
from .local import LocalEventFile, LocalStorage, Nowhere
from .protocols import EventFile, Storage
from .remote import S3_REQUESTS, RemoteStorage, SpoolSettings, UploadPolicy, checked_logdir, open_filesystem
from .remote.policy import DEFAULT_POLICY

__all__ = ["Destination", "EventFile", "LocalEventFile", "LocalStorage", "Nowhere", "RemoteStorage", "SpoolSettings",
           "Storage", "UploadPolicy", "call_with_timeout", "checked_logdir", "components", "is_url", "open_filesystem",
           "run_of", "S3_REQUESTS"]


@dataclass(frozen=True)
class Destination:
    """Where a writer's files go, as its user said. Make one with `Destination.of`, which makes
    the defaults.

    Attributes:
        logdir: a directory or a store's URL.
        to_disk: False writes nothing.
        upload: how a store's event files upload.
        spool: where what a store has not taken waits on disk (unused for a directory).
    """

    logdir: str
    to_disk: bool
    upload: UploadPolicy
    spool: SpoolSettings

    @classmethod
    def of(cls, logdir: str, to_disk: bool = True, upload: Optional[UploadPolicy] = None,
           spool: Optional[SpoolSettings] = None) -> "Destination":
        """The destination, with the one place that makes its defaults: `upload` None is
        DEFAULT_POLICY; `spool` None is what MXBOARD_SPOOL_DIR and MXBOARD_SPOOL_MAX_BYTES say
        now, read only for a store (a value that cannot be used raises here)."""
        if spool is None:
            spool = SpoolSettings.from_environment() if to_disk and is_url(logdir) else SpoolSettings()
        return cls(logdir, to_disk, upload or DEFAULT_POLICY, spool)

    def open(self) -> Storage:
        """The storage: Nowhere unless `to_disk`, a store for a URL (checked: it must answer),
        else a directory (made)."""
        if self.to_disk and is_url(self.logdir):
            return RemoteStorage(self.logdir, self.upload, self.spool)
        return LocalStorage(self.logdir) if self.to_disk else Nowhere(self.logdir)
