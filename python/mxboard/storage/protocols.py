"""The interfaces that every storage offers (`Storage`) and every event file in one
(`EventFile`): the writer thread, the projector and the writer use only these."""
from __future__ import annotations

from typing import Any, ContextManager, List, Optional, Protocol, Tuple

__all__ = ["EventFile", "Storage"]


class EventFile(Protocol):
    """An event file being written, by the writer thread only.

    Attributes:
        path: where it is, a local path or a URL (None for Nowhere).
        directory: the directory (or prefix in a store) it is in.
        holds_writes_after_error: whether records written after a write error are still held (a
            store's file, whose uploader gave up: a later flush or close tries the store again);
            a local file's error stops its writes (a full disk would tear records).
    """

    path: Optional[str]
    directory: Optional[str]
    holds_writes_after_error: bool

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

    def save_what_waits(self, deadline: float) -> None:
        """A signal ends the process: wait until `deadline` for what is not yet durable, then keep
        the rest where it can be found (a store's file keeps it on disk, and a warning says
        where); a local file has nothing to wait for."""


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
