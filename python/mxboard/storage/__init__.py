"""Where a writer's files go: one interface, three homes.

- `LocalStorage` (local.py): a directory.
- `RemoteStorage` (remote.py): an object store under a logdir URL (`s3://bucket/prefix`, any
  fsspec URL); an event file there is a series of objects.
- `Nowhere` (local.py): `write_to_disk=False`, which writes nothing.

`open_storage(logdir)` picks one. The writer thread writes event files through it, the projector
whole files, and the writer names sub-runs with `subdir`: no caller asks which home it has.
`open_filesystem(url)` is the one way to a store's fsspec filesystem, with mxboard's settings
(one try a request, bounded); the reader and the bundled server use it. What a name below a
logdir may be, whether a logdir is a URL, and a directory's run: ../_format/names.py.
"""
from typing import Any, ContextManager, List, Optional, Protocol, Tuple

from .._format.names import components, is_url, run_of
from .bounds import within
from .local import LocalEventFile, LocalStorage, Nowhere
from .remote import S3_REQUESTS, RemoteStorage, open_filesystem

__all__ = ["EventFile", "LocalEventFile", "LocalStorage", "Nowhere", "RemoteStorage", "Storage", "components", "is_url",
           "open_storage", "open_filesystem", "run_of", "S3_REQUESTS", "within"]


class EventFile(Protocol):
    """An event file being written, by the writer thread only.

    Attributes:
        path: where it is, a local path or a URL (None for Nowhere).
        directory: the directory (or prefix in a store) it is in.
        keeps_after_error: whether records written after a write error are still kept (a store's
            file, whose uploader gave up: a later flush or close tries the store again); a local
            file's error stops its writes (a full disk would tear records).
    """

    path: Optional[str]
    directory: Optional[str]
    keeps_after_error: bool

    def write(self, data: bytes) -> None:
        """Append whole records (a batch, framed). Raises OSError when they cannot be kept."""

    def sync(self, force: bool) -> None:
        """Called after every batch: a file that holds bytes back (an object store's) sends them
        if it is time, or now if `force` (flush, close). Raises OSError when the store has failed
        for good."""

    def pieces(self) -> List[Tuple[str, int]]:
        """(path or URL, bytes) of what holds the records so far, in reading order."""

    def interrupt(self) -> None:
        """close() is coming: a write never waits for room (a full spool) any more."""

    def close(self, deadline: Optional[float] = None) -> None:
        """Make everything written durable (fsync, or the last upload, waiting at most until
        `deadline`, a time.monotonic()) and release the file."""

    def abandon(self) -> None:
        """A forked child's copy: let go of the file without writing anything more."""

    def keep_at_end(self, deadline: float) -> None:
        """A signal ends the process: wait until `deadline` for what is not yet durable, then keep
        the rest where it can be found (a store's file: on disk, said in a warning); a local
        file has nothing to wait for."""


class Storage(Protocol):
    """A logdir and what lies below it. Paths are the storage's own (a local path, or a key in
    the store); the writer builds them only with `subdir` and `join`.

    Attributes:
        root: the logdir's path (a store's: without its protocol).
    """

    root: str

    def subdir(self, *names: str) -> str:
        """`root/<name>/...`, every name made a safe path below the logdir (names.components).
        Raises ValueError where a link would lead out of the logdir."""

    def join(self, base: str, *names: str) -> str:
        """`base/names...`, for names the caller made (projector files)."""

    def run(self, directory: str) -> str:
        """The run of `directory`: its path below root, '.' for root itself."""

    def open_event_file(self, directory: str, suffix: str) -> EventFile:
        """A new event file in `directory`, never one that exists."""

    def makedirs(self, path: str) -> None:
        """Make `path` a directory (nothing, where a store needs none)."""

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a whole file at once: a reader sees the old one or the new one."""

    def read_text(self, path: str) -> str:
        """A file's text (UTF-8). Raises FileNotFoundError."""

    def listdir(self, path: str) -> List[str]:
        """The names in `path` ([] if there is none)."""

    def lock(self, path: str) -> ContextManager[Any]:
        """An exclusive lock between threads and processes where the storage has one, else a
        context that does nothing (callers check their result instead)."""


def open_storage(logdir: str, to_disk: bool = True) -> Storage:
    """The storage of `logdir`: Nowhere unless `to_disk`, a store for a URL (checked: it must
    answer), else a directory (made)."""
    if to_disk and is_url(logdir):
        return RemoteStorage(logdir)
    return LocalStorage(logdir) if to_disk else Nowhere(logdir)
