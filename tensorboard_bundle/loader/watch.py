"""Changes to a local logdir as the kernel tells them (Linux's inotify), and whether a directory is
on a filesystem where it can.

inotify sees the writes made through this machine's kernel only. On a network filesystem (NFS,
SMB/CIFS, Lustre, GPFS, CephFS, 9p, virtiofs, AFS, GFS2, OCFS2, and any FUSE one: sshfs, s3fs...)
the writer is often another machine, whose writes it never sees: `is_local` says False there (by
statfs's f_type), and such a directory is polled (schedule.py). Elsewhere than Linux (macOS,
Windows) there is no inotify: `Watcher.open()` gives None, and the whole logdir is polled.

A `Watcher` watches directories (each added one, none below it by itself) and reads what changed,
as (directory, name, kind): "written" (a file of it), "entries" (an entry was made, moved or
removed: a file, a directory, a link), "gone" (the watched directory itself), "overflow" (the
kernel's queue overflowed: events were lost, and the caller looks at everything again). It binds
libc's inotify_init1, inotify_add_watch and inotify_rm_watch with ctypes; no dependency.
"""
import ctypes
import ctypes.util
import errno
import os
import struct
import sys
from typing import Dict, List, NamedTuple, Optional, Set

__all__ = ["Change", "Watcher", "WatchLimitError", "is_local"]

# statfs's f_type of the filesystems where another machine may write (linux/magic.h and the
# filesystems' own sources): inotify does not see those writes.
_NETWORK_TYPES = {
    0x6969: "nfs",
    0x517B: "smb",
    0xFF534D42: "cifs",
    0xFE534D42: "smb2",
    0x0BD00BD0: "lustre",
    0x47504653: "gpfs",
    0x00C36400: "ceph",
    0x01021997: "9p",
    0x6A656A63: "virtiofs",
    0x5346414F: "afs",
    0x6B414653: "kafs",
    0x01161970: "gfs2",
    0x7461636F: "ocfs2",
    0x65735546: "fuse",
    0x564C: "ncp",
    0x73757245: "coda",
    0x19830326: "beegfs",
}

# inotify's constants (linux/inotify.h).
IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x1000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = 0o2000000
_MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
         | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
# struct inotify_event's head: wd, mask, cookie, len (the name's, padded with NULs).
_EVENT = struct.Struct("iIII")


class Change(NamedTuple):
    """One change: in `directory`, to `name` ("" for the directory itself), of `kind`."""

    directory: str
    name: str
    kind: str


class WatchLimitError(OSError):
    """The user's inotify watches are all used (fs.inotify.max_user_watches)."""


def _libc() -> Optional[ctypes.CDLL]:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


_LIBC = _libc()


def is_local(path: str) -> bool:
    """Whether `path` is on a filesystem where inotify sees every write (not a network one), as
    its statfs f_type says; False elsewhere than Linux, and where it cannot be told."""
    if _LIBC is None:
        return False
    # struct statfs: f_type is its first field, a word; the buffer is larger than the struct.
    buffer = ctypes.create_string_buffer(512)
    if _LIBC.statfs(os.fsencode(path), buffer) != 0:
        return False
    kind = ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF
    return kind not in _NETWORK_TYPES


class Watcher:
    """inotify watches over directories, and the changes they saw."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        # {watch descriptor: the directories it watches (one inode may be reached by two paths)}
        self._paths: Dict[int, Set[str]] = {}
        self._watches: Dict[str, int] = {}

    @classmethod
    def open(cls) -> Optional["Watcher"]:
        """A new Watcher; None where inotify is missing (not Linux) or refused."""
        if _LIBC is None:
            return None
        fd = _LIBC.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return None
        return cls(fd)

    def fileno(self) -> int:
        return self._fd

    def __contains__(self, directory: object) -> bool:
        return directory in self._watches

    def add(self, directory: str) -> bool:
        """Watch `directory`; False where it is gone or is no directory.

        Raises:
            WatchLimitError: the user's watches are all used.
        """
        wd = _LIBC.inotify_add_watch(self._fd, os.fsencode(directory), _MASK) if _LIBC else -1
        if wd < 0:
            code = ctypes.get_errno()
            if code == errno.ENOSPC:
                raise WatchLimitError(code, "the inotify watches are all used (fs.inotify.max_user_watches)")
            return False
        self._paths.setdefault(wd, set()).add(directory)
        self._watches[directory] = wd
        return True

    def remove(self, directory: str) -> None:
        """Watch `directory` no more (its watch ends with the last path that reaches it)."""
        wd = self._watches.pop(directory, None)
        if wd is None:
            return
        paths = self._paths.get(wd, set())
        paths.discard(directory)
        if not paths and _LIBC is not None:
            self._paths.pop(wd, None)
            _LIBC.inotify_rm_watch(self._fd, wd)

    def read(self) -> List[Change]:
        """What changed since the last read ([] where nothing did: it never blocks)."""
        try:
            data = os.read(self._fd, 1 << 16)
        except BlockingIOError:
            return []
        changes: List[Change] = []
        at = 0
        while at + _EVENT.size <= len(data):
            wd, mask, _, length = _EVENT.unpack_from(data, at)
            name = os.fsdecode(data[at + _EVENT.size:at + _EVENT.size + length].rstrip(b"\0"))
            at += _EVENT.size + length
            if mask & IN_Q_OVERFLOW:
                changes.append(Change("", "", "overflow"))
                continue
            paths = self._paths.get(wd, set())
            if mask & IN_IGNORED:
                # The kernel ended the watch (its directory is gone).
                for path in self._paths.pop(wd, set()):
                    self._watches.pop(path, None)
                    changes.append(Change(path, "", "gone"))
                continue
            kind = ("gone" if mask & (IN_DELETE_SELF | IN_MOVE_SELF)
                    else "entries" if mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) else "written")
            changes.extend(Change(path, "" if kind == "gone" else name, kind) for path in paths)
        return changes

    def close(self) -> None:
        """Stop watching (safe twice)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._paths.clear()
        self._watches.clear()
