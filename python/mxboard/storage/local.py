"""Local logdirs: a directory (`LocalStorage`) and its event files (`LocalEventFile`), and
`Nowhere` (write_to_disk=False), which writes nothing."""
from __future__ import annotations

import contextlib
import errno
import os
from typing import TYPE_CHECKING, Iterator, List, Optional, Tuple

from .._format import files
from .._format.events import event_file_name
from .._format.names import components, run_of
from ..errors import FileDeletedError

if TYPE_CHECKING:
    from .protocols import EventFile

__all__ = ["FileDeletedError", "LocalEventFile", "LocalStorage", "Nowhere"]


# Names tried for a new event file.
_TRIES = 1000


class LocalEventFile:
    """An event file, created new (never reopened, never overwritten), written whole records at a
    time with `os.write` so that nothing sits in a user-space buffer: a write returns with the
    bytes in the OS, and a forked child that drops this object writes nothing."""

    holds_writes_after_error = False

    def __init__(self, directory: str, suffix: str = "") -> None:
        self.directory: Optional[str] = directory
        self.path: Optional[str] = None
        self._fd: Optional[int] = None
        # A name taken already (a restarted container: same host, pid, second) moves on to the next one.
        for _ in range(_TRIES):
            path = self.path = os.path.join(directory, event_file_name(suffix))
            try:
                self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                                   # The mode is as the umask allows, like any file's.
                                   0o666)
                return
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "no free event file name after %d tries" % _TRIES, self.path)

    def write(self, data: bytes) -> None:
        if self._fd is None:
            raise ValueError("write to a closed event file: %s" % self.path)
        # Deleted (the logdir removed): writes would vanish.
        if os.fstat(self._fd).st_nlink == 0:
            raise FileDeletedError(errno.ENOENT, "the event file was deleted while being written", self.path)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

    def sync(self, force: bool) -> None:
        """Nothing to do: `write` hands the bytes to the OS."""

    def pieces(self) -> List[Tuple[str, int]]:
        return [(self.path, os.path.getsize(self.path))] if self.path else []

    def interrupt(self) -> None:
        """Nothing to do: a write never waits."""

    def close(self, deadline: Optional[float] = None) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def abandon(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def save_what_waits(self, deadline: float) -> None:
        """Nothing to wait for: each write is in the OS when it returns."""


class LocalStorage:
    """A directory `root` and what lies below it (see `Storage` for the verbs)."""

    def __init__(self, root: str) -> None:
        """Makes the directory: a logdir that cannot be one fails here, at the writer's call."""
        self.root = root
        if os.path.exists(root) and not os.path.isdir(root):
            raise NotADirectoryError("logdir %r is a file: a logdir is a directory (name another path)" % root)
        self.makedirs(root)

    def subdir(self, *names: str) -> str:
        path = os.path.join(self.root, *components(*names))
        root = os.path.realpath(self.root)
        # This is a link out of the logdir.
        if os.path.commonpath([root, os.path.realpath(path)]) != root:
            raise ValueError("%r would leave the logdir %r" % ("/".join(names), self.root))
        return path

    def join(self, base: str, *names: str) -> str:
        return os.path.join(base, *names)

    def run(self, directory: str) -> str:
        return run_of(self.root, directory)

    def open_event_file(self, directory: str, suffix: str) -> EventFile:
        os.makedirs(directory, exist_ok=True)
        return LocalEventFile(directory, suffix)

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a file whole or not at all (created as any file is, 0666 less the umask, so a
        TensorBoard of another user can read it)."""
        files.replace_whole(path, data)

    def read_text(self, path: str) -> str:
        with open(path, encoding="utf-8") as f:
            return f.read()

    def listdir(self, path: str) -> List[str]:
        return os.listdir(path)

    @contextlib.contextmanager
    def lock(self, path: str) -> Iterator[None]:
        """An exclusive lock between threads and processes (flock on POSIX; elsewhere none: files
        are still atomic, and a racing rebuild may lag one)."""
        with open(path, "a") as handle:
            files.lock(handle.fileno())
            try:
                yield
            finally:
                files.unlock(handle.fileno())


class _NoFile:
    """An event file of Nowhere: it writes nothing."""
    path: Optional[str] = None
    directory: Optional[str] = None
    holds_writes_after_error = False

    def pieces(self) -> List[Tuple[str, int]]:
        return []

    def write(self, data: bytes) -> None:
        pass

    def sync(self, force: bool) -> None:
        pass

    def interrupt(self) -> None:
        pass

    def close(self, deadline: Optional[float] = None) -> None:
        pass

    def abandon(self) -> None:
        pass

    def save_what_waits(self, deadline: float) -> None:
        pass


class Nowhere(LocalStorage):
    """write_to_disk=False: files that write nothing, a directory that stays empty."""

    def subdir(self, *names: str) -> str:
        return os.path.join(self.root, *components(*names))

    def open_event_file(self, directory: str, suffix: str) -> EventFile:
        return _NoFile()

    def makedirs(self, path: str) -> None:
        pass

    def write_bytes(self, path: str, data: bytes) -> None:
        pass

    def read_text(self, path: str) -> str:
        raise FileNotFoundError(path)

    def listdir(self, path: str) -> List[str]:
        return []

    @contextlib.contextmanager
    def lock(self, path: str) -> Iterator[None]:
        yield
