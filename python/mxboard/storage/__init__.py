"""Where a writer's files go: one interface, three homes.

- `LocalStorage` (local.py): a directory.
- `RemoteStorage` (remote/): an object store under a logdir URL (`s3://bucket/prefix`, any
  fsspec URL); an event file there is a series of objects. What mxboard knows of each kind of
  store is in remote/profiles.py, and nowhere else.
- `Nowhere` (local.py): `write_to_disk=False`, which writes nothing.

Each offers `Storage` and its event files `EventFile` (protocols.py). `Destination(logdir,
...).open()` picks one. The writer thread writes event files through it, the projector whole
files, and the writer names sub-runs with `subdir`: no caller asks which home it has.
`checked_logdir(logdir)` is the one check of a logdir (a `file://` URL as its path, a mistyped
scheme refused with its fix). `open_filesystem(url)` is the one way to a store's fsspec
filesystem, with mxboard's settings (one try a request, bounded); the reader and the bundled
server use it. What a name below a logdir may be, whether a logdir is a URL, and a directory's
run: ../_format/names.py.
"""
from dataclasses import dataclass, field
from typing import Optional

from .._format.names import components, is_url, run_of
from .bounds import within
from .local import LocalEventFile, LocalStorage, Nowhere
from .protocols import EventFile, Storage
from .remote import S3_REQUESTS, RemoteStorage, UploadPolicy, checked_logdir, open_filesystem
from .remote.spool import SpoolSettings

__all__ = ["Destination", "EventFile", "LocalEventFile", "LocalStorage", "Nowhere", "RemoteStorage", "SpoolSettings",
           "Storage", "UploadPolicy", "checked_logdir", "components", "is_url", "open_filesystem", "run_of",
           "S3_REQUESTS", "within"]


@dataclass(frozen=True)
class Destination:
    """Where a writer's files go, as its user said: `logdir`, a directory or a store's URL;
    `to_disk` (False: nowhere); for a store, how its files upload (`upload`) and where what it
    has not taken waits (`spool`: None, as the environment says when it is opened)."""

    logdir: str
    to_disk: bool = True
    upload: UploadPolicy = field(default_factory=UploadPolicy)
    spool: Optional[SpoolSettings] = None

    def open(self) -> Storage:
        """The storage: Nowhere unless `to_disk`, a store for a URL (checked: it must answer),
        else a directory (made)."""
        if self.to_disk and is_url(self.logdir):
            return RemoteStorage(self.logdir, self.upload, self.spool)
        return LocalStorage(self.logdir) if self.to_disk else Nowhere(self.logdir)
