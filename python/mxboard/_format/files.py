"""Two file operations the writer, the spool and the bundled server share: a file replaced whole
or not at all (`replace_whole`), and an advisory lock between processes (`lock`, flock on POSIX;
`HAVE_LOCKS` is False where the platform has none)."""
import os
from typing import Optional

try:
    import fcntl
except ImportError:  # Windows: no advisory locks
    fcntl = None  # type: ignore[assignment]

__all__ = ["HAVE_LOCKS", "lock", "replace_whole", "unlock"]

HAVE_LOCKS = fcntl is not None
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) \
    | getattr(os, "O_BINARY", 0)


def replace_whole(path: str, data: bytes, mode: Optional[int] = None) -> None:
    """Write `path` whole or not at all: a new file beside it (O_EXCL, so never through a name
    someone planted), its bytes, then renamed over `path` (a rename replaces a symlink there
    itself, never what it points to). `mode`: the file's permissions (default: 0666 less the
    umask, as any new file)."""
    temporary = os.path.join(os.path.dirname(path) or ".", ".%s.new-%s" % (os.path.basename(path), os.urandom(8).hex()))
    fd = os.open(temporary, _NEW, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)  # exactly, whatever the umask
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def lock(fd: int, wait: bool = True) -> bool:
    """An exclusive advisory lock on the open file `fd` (released with `unlock`, or when every
    descriptor of it is closed): True once held; False where another process holds it and not
    `wait`. Where the platform has no advisory locks, True at once."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def unlock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
