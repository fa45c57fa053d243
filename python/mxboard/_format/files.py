"""Two file operations that the writer, the spool and the bundled server share: replacing a file
whole or not at all (`replace_whole`), and an advisory lock between processes (`lock`, which is
flock on POSIX; `HAVE_LOCKS` is False where the platform has none)."""
import os
from typing import Iterable, Optional, Union

try:
    import fcntl
# Windows has no advisory locks.
except ImportError:
    fcntl = None  # type: ignore[assignment]

__all__ = ["HAVE_LOCKS", "lock", "replace_whole", "unlock"]

HAVE_LOCKS = fcntl is not None
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) \
    | getattr(os, "O_BINARY", 0)


def replace_whole(path: str, data: Union[bytes, Iterable[bytes]], mode: Optional[int] = None) -> None:
    """Write `path` whole or not at all.

    The bytes, or the pieces of an iterable of bytes (each written as it comes, so that a large
    file is never held whole), go to a new file beside it, made with O_EXCL so never through a
    name that someone planted, which is then renamed over `path`. A rename replaces a symlink
    there, never what it points to. On any failure, the iterable's own errors included, the new
    file is removed and the error raised. `mode` sets the file's permissions; by default they are
    0666 less the umask, as for any new file."""
    temporary = os.path.join(os.path.dirname(path) or ".", ".%s.new-%s" % (os.path.basename(path), os.urandom(8).hex()))
    fd = os.open(temporary, _NEW, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                # Exactly this mode, whatever the umask.
                os.fchmod(f.fileno(), mode)
            if isinstance(data, (bytes, bytearray, memoryview)):
                f.write(data)
            else:
                f.writelines(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def lock(fd: int, wait: bool = True) -> bool:
    """Take an exclusive advisory lock on the open file `fd`, released by `unlock` or when every
    descriptor of the file is closed.

    Returns True once the lock is held, or False where another process holds it and `wait` is
    false. Where the platform has no advisory locks, it returns True at once."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def unlock(fd: int) -> None:
    """Release the lock that `lock` took on `fd`."""
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
