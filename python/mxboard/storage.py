"""Where a writer's files go: a local directory (`LocalStorage`), an object store
(`remote.RemoteStorage`, for a logdir URL), or nowhere (`write_to_disk=False`). Each gives the
same verbs to the writer thread (event files) and to the projector (whole files, a listing, a
lock)."""
import contextlib
import os

from .events import EventFile
from .remote import RemoteStorage, is_url

__all__ = ["LocalStorage", "Nowhere", "open_storage"]


class LocalStorage:
    """A directory `root` and what lies below it."""
    remote = False

    def __init__(self, root=None):
        self.root = root

    def join(self, base, *names):
        return os.path.join(base, *names)

    def open_event_file(self, directory, suffix):
        os.makedirs(directory, exist_ok=True)
        return EventFile(directory, suffix)

    def makedirs(self, path):
        os.makedirs(path, exist_ok=True)

    def write_bytes(self, path, data):
        """Write a file whole or not at all: a temporary file beside it, renamed over it.
        Created as any file is (0666 less the umask), so a TensorBoard of another user can
        read it."""
        temporary = os.path.join(os.path.dirname(path), ".tmp-%s" % os.urandom(8).hex())
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def read_text(self, path):
        with open(path, encoding="utf-8") as f:
            return f.read()

    def listdir(self, path):
        return os.listdir(path)

    @contextlib.contextmanager
    def lock(self, path):
        """An exclusive lock between threads and processes (flock on POSIX)."""
        with open(path, "a") as handle:
            try:
                import fcntl
            except ImportError:  # not POSIX: files are still atomic; a racing rebuild may lag one
                yield
                return
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


class _NoFile:
    """An event file of Nowhere: it writes nothing."""
    path = directory = None

    def pieces(self):
        return []

    def write(self, data):
        pass

    def sync(self, force):
        pass

    def close(self, sync=True):
        pass

    def abandon(self):
        pass


class Nowhere(LocalStorage):
    """write_to_disk=False: files that write nothing, a directory that stays empty."""

    def open_event_file(self, directory, suffix):
        return _NoFile()

    def makedirs(self, path):
        pass

    def write_bytes(self, path, data):
        pass

    def read_text(self, path):
        raise FileNotFoundError(path)

    def listdir(self, path):
        return []

    def lock(self, path):
        return contextlib.nullcontext()


def open_storage(logdir, to_disk=True):
    """The storage of `logdir` (checked: a URL's store must answer)."""
    if not to_disk:
        return Nowhere(logdir)
    if is_url(logdir):
        return RemoteStorage(logdir)
    return LocalStorage(logdir)
