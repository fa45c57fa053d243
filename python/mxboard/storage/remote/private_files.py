"""Files and directories that only the user can read, made without trusting what is there.

The spool keeps records that the user may not want others to see (images, text), often in a
shared directory such as /tmp. A directory made here is 0700 and checked to be a real directory
of the user's own; a file is made 0600, new (O_EXCL), never through a symlink (O_NOFOLLOW).
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
from typing import IO, Any, List

from ..._format import files

__all__ = ["NEW_FILE", "NO_FOLLOW", "create_locked", "create_private", "private_dir", "uid"]

# Flags to open an existing file with.
NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
# Flags to make a new file with.
NEW_FILE = os.O_CREAT | os.O_EXCL | NO_FOLLOW | getattr(os, "O_BINARY", 0)


def uid() -> int:
    """The user's id (-1 where the platform has none)."""
    return os.getuid() if hasattr(os, "getuid") else -1


def private_dir(directory: str, named: str, fix_mode: bool = True) -> str:
    """`directory`, made (mode 0700) if need be, checked to be a real directory of this user's
    that no one else may write to; one of mxboard's own (`fix_mode`) that is open to others is
    made 0700, any other refused. Errors name the directory as `named` says."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        info = os.lstat(directory)
    except OSError as exc:
        raise type(exc)(exc.errno, "%s cannot be made: %s" % (named, exc.strerror), directory) from None
    if stat.S_ISLNK(info.st_mode):
        raise PermissionError(errno.EPERM, "%s is a symlink: the spool follows none (set MXBOARD_SPOOL_DIR to a "
                              "directory of your own)" % named, directory)
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "%s is not a directory" % named, directory)
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise PermissionError(errno.EPERM, "%s belongs to another user (uid %d): another user could read or "
                              "replace what waits there (set MXBOARD_SPOOL_DIR to a directory of your own)"
                              % (named, info.st_uid), directory)
    if info.st_mode & 0o077:
        if not fix_mode:
            raise PermissionError(errno.EPERM, "%s is open to other users (mode %o): what waits there is yours "
                                  "alone" % (named, stat.S_IMODE(info.st_mode)), directory)
        try:
            # Mxboard's own: what waits there (images, text) is the user's alone.
            os.chmod(directory, 0o700)
        except OSError as exc:
            raise type(exc)(exc.errno, "%s cannot be made private: %s" % (named, exc.strerror), directory) from None
    if not os.access(directory, os.W_OK):
        raise PermissionError(errno.EROFS, "%s is read-only: set MXBOARD_SPOOL_DIR to a writable directory"
                              % named, directory)
    return directory


def create_private(directory: str, parts: List[str], mode: str = "w+b") -> IO[Any]:
    """A new file `directory/<parts...>` (0600), its folders made 0700, never through a symlink
    and never over an existing file (FileExistsError)."""
    folder = os.path.join(directory, *parts[:-1])
    os.makedirs(folder, mode=0o700, exist_ok=True)
    flags = NEW_FILE | (os.O_RDWR if "+" in mode else os.O_WRONLY)
    return os.fdopen(os.open(os.path.join(folder, parts[-1]), flags, 0o600), mode)


def create_locked(directory: str, parts: List[str]) -> IO[Any]:
    """create_private, locked (flock) before it has its name, so that a scan for files left by
    ended processes (spool_leftovers.py) never takes a live writer's file."""
    if not files.HAVE_LOCKS:
        return create_private(directory, parts)
    hidden = parts[:-1] + [".new-%s" % secrets.token_hex(8)]
    file = create_private(directory, hidden)
    try:
        # A file of its own, new: no one else's.
        if not files.lock(file.fileno(), wait=False):
            raise BlockingIOError(errno.EWOULDBLOCK, "locked by another process", hidden[-1])
        folder = os.path.join(directory, *parts[:-1])
        # Never over an existing name.
        os.link(os.path.join(folder, hidden[-1]), os.path.join(folder, parts[-1]))
    except BaseException:
        file.close()
        raise
    finally:
        os.remove(os.path.join(directory, *hidden))
    return file
