"""Where an object store's records wait on local disk once memory is full: the loop never blocks
on the store (storage/remote/).

A `Spool` is one event file's: whole records appended in call order to a spool file, read back
in that order when the store returns, and emptied once all of it is uploaded. Appends are
unbuffered (os.pwrite): one that fails (a full disk) keeps nothing half-written in a buffer, and
everything spooled before it stays readable. All spools of a process together hold at most
MXBOARD_SPOOL_MAX_BYTES (default: a quarter of the space free there when the first one starts,
at most 16 GiB; suffixes K, M, G, T).

Where: the directory MXBOARD_SPOOL_DIR names, or by default `mxboard/spool` in the user's cache
directory (platformdirs: `$XDG_CACHE_HOME` or `~/.cache` on Linux, `~/Library/Caches` on macOS). A
writer's `spool=SpoolSettings(...)` says both for it instead of the variables. They are read when
a writer of a store is made (`SpoolSettings.from_environment`) and checked there (`prepare`): a
value that cannot be used is an error there, naming the variable. The default place is made only
when a spool is first needed (a writer whose store takes everything needs none: a read-only home
works); where it cannot be made, a private directory in the temporary directory, else memory only,
said once (`place`).

Nothing in the directory is trusted. A named directory is never chmodded: one of the user's own
that is private already holds the spool; any other (/tmp, /dev/shm, a group's project directory)
gets a private subdirectory `mxboard-spool-<uid>`, made 0700 and checked (not a symlink, the
user's, no one else's bits), and one owned by another user (not root) is refused. mxboard's own
default directory is made 0700. Spool and kept files are made 0600, new (O_EXCL) and never
through a symlink (O_NOFOLLOW). A spool file's name holds `spooling` where the event file's holds
`tfevents`: serving the directory serves kept files only. What the store did not take by the end
(close(), exit, SIGTERM, SIGHUP, Ctrl-C) is left there as `<dir>/<key>`, one file an object it
would have become, each within the usual object size: valid event files, to upload or to serve
(storage/remote/). A live spool file is locked (flock) from before it has its name; one whose
process is gone (killed) is found by the next writer on the same host made with this directory,
kept as `<its name with tfevents>.left` (the records its store did not take: a spool file's header
says up to where the store took them, so a writer killed while draining its spool leaves nothing
there twice) and named once in a warning. Only files named with this
host are looked at: on a directory shared between hosts (a home directory over NFS), another
host's lock may not be seen here.
"""
from __future__ import annotations

import errno
import logging
import os
import secrets
import shutil
import stat
import tempfile
import threading
from dataclasses import dataclass, field, replace
from typing import IO, Any, Dict, List, NamedTuple, Optional

from ..._format import files
from ..._format.sizes import parse_bytes

log = logging.getLogger("mxboard")

__all__ = ["HEADER", "SpoolSettings", "Spool", "Spooled", "create_private", "limit_of", "place", "prepare"]

_DEFAULT_MAX = 16 << 30
_LOCK = threading.Lock()  # guards _USED and _PLACE
_USED = [0]  # bytes spooled by every Spool of this process
_PLACE: Dict[str, Optional[str]] = {}  # the default directory -> where the spool is (None: memory only)
_NOFOLLOW, _CLOEXEC = getattr(os, "O_NOFOLLOW", 0), getattr(os, "O_CLOEXEC", 0)
_NEW = os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | getattr(os, "O_BINARY", 0)
_MAGIC = b"mxbspool"
HEADER = 16  # a spool file's first bytes: _MAGIC, then the offset up to which its records are in the store


class Spooled(NamedTuple):
    """Records in a spool file: `length` bytes from `offset`."""
    spool: Spool
    offset: int
    length: int


@dataclass(frozen=True)
class SpoolSettings:
    """Where what an object store has not taken waits on disk, for one writer
    (`SummaryWriter(..., spool=SpoolSettings(...))`); by default, what MXBOARD_SPOOL_DIR and
    MXBOARD_SPOOL_MAX_BYTES say when the writer is made (`from_environment`).

    Attributes:
        directory: the spool's directory (made if need be; a shared one gets a private
            subdirectory), or None: the default places, tried when a spool is first needed (`place`).
        max_bytes: what all spools of the process hold at most, or None: a quarter of the space
            free where the spool is, at most 16 GiB. 0: no disk spool (what waits stays in memory).
        source: what named these settings, for messages.
    """

    directory: Optional[str] = None
    max_bytes: Optional[int] = None
    source: str = field(default="SpoolSettings", repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.directory is not None and not isinstance(self.directory, str):
            raise TypeError("%s: directory must be a str or None; got %s"
                            % (self.source, type(self.directory).__name__))
        if self.max_bytes is not None and (isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int)
                                           or self.max_bytes < 0):
            raise ValueError("%s: max_bytes must be an int >= 0 or None; got %r" % (self.source, self.max_bytes))

    @classmethod
    def from_environment(cls) -> SpoolSettings:
        """What the variables say now; a limit that is no size raises, naming the variable."""
        configured = os.environ.get("MXBOARD_SPOOL_MAX_BYTES")
        limit = parse_bytes(configured, "MXBOARD_SPOOL_MAX_BYTES") if configured else None
        return cls(os.environ.get("MXBOARD_SPOOL_DIR") or None, limit, source="MXBOARD_SPOOL_DIR")


def prepare(settings: SpoolSettings) -> SpoolSettings:
    """`settings` checked when a writer of a store is made: a named directory where no private
    spool can be made safely raises here, naming where it came from; the result names the
    private directory the spool goes in. Nothing is made for the default place, which a writer
    whose store takes everything never needs (a read-only home works). Spool files that
    processes ended without closing left in the directory, where it exists, are kept as event
    files, said once."""
    if settings.directory is not None:
        directory = _in_named(os.path.abspath(os.path.expanduser(settings.directory)), settings.source)
        _keep_leftovers(directory)
        return replace(settings, directory=directory)
    default = _default_dir()
    try:
        info = os.lstat(default)
    except OSError:
        return settings  # made when first needed
    if stat.S_ISDIR(info.st_mode) and info.st_uid == _uid() and not info.st_mode & 0o077:
        _keep_leftovers(default)
    return settings


def place(settings: SpoolSettings) -> Optional[str]:
    """The spool's directory, made now if need be: the named one, else the first usable of the
    user's cache directory and a private directory in the temporary directory; None where none
    can be made (what waits then stays in memory). A fallback is said once a process."""
    if settings.directory is not None:
        return settings.directory
    default = _default_dir()
    with _LOCK:
        if default in _PLACE:
            return _PLACE[default]
        tried = []
        found: Optional[str] = None
        for candidate in (default, os.path.join(tempfile.gettempdir(), "mxboard-spool-%d" % _uid())):
            try:
                found = _private_dir(candidate, "the spool directory %s" % candidate)
                break
            except OSError as exc:
                tried.append("%s (%s)" % (candidate, exc.strerror or exc))
        _PLACE[default] = found
    if tried:
        log.warning("mxboard: no spool in %s; %s", " nor ".join(tried),
                    "spooling in %s instead" % found if found else
                    "what the store has not taken waits in memory only (set MXBOARD_SPOOL_DIR to a writable directory)")
    return found


def limit_of(settings: SpoolSettings, directory: str) -> int:
    """`max_bytes` (MXBOARD_SPOOL_MAX_BYTES: a number, with K, M, G or T after it if you like),
    else a quarter of the space free in `directory`, at most 16 GiB."""
    if settings.max_bytes is not None:
        return settings.max_bytes
    return min(_DEFAULT_MAX, shutil.disk_usage(directory).free // 4)


def _default_dir() -> str:
    """`mxboard/spool` in the user's cache directory (not yet made)."""
    import platformdirs

    return os.path.join(platformdirs.user_cache_dir("mxboard", appauthor=False), "spool")


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else -1


def _keep_leftovers(directory: str) -> None:
    """Spool files whose process is gone (no lock held on them: a live Spool holds its file's
    from before its name exists) renamed `...tfevents....left`: an event file of the records its
    store never took, to serve or upload. Empty ones are removed. Said once, in a warning."""
    if not files.HAVE_LOCKS:  # a live writer's file cannot be told apart: none is taken
        return
    import socket

    ours = ".%s." % socket.gethostname()  # a file of another host's: its flock may not reach here (NFS)
    kept = []
    for folder, _, names in os.walk(directory):  # symlinks to folders are not followed
        for name in names:
            if "spooling" not in name or ours not in name:
                continue
            path = os.path.join(folder, name)
            try:
                fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
            except OSError:  # gone meanwhile (its writer closed, another scan took it), or a symlink
                continue
            if not files.lock(fd, wait=False):  # a live writer's
                os.close(fd)
                continue
            try:
                start, size = _unstored(fd), os.fstat(fd).st_size
                if size <= start:  # nothing its store did not take
                    os.remove(path)
                    continue
                named = os.path.join(folder, name.replace("spooling", "tfevents", 1))  # the name only, never a folder's
                target = _copy_new(fd, start, size, named)
                if target is None:
                    continue
                os.remove(path)
                kept.append(target)
            except OSError:
                continue
            finally:
                os.close(fd)
    if kept:
        log.warning("mxboard: %d spool file(s) left by processes that ended without closing their writers hold "
                    "records their store never took; they are kept as event files: %s. Serve them (tensorboard "
                    "--logdir %s), or upload each as the next part of its run", len(kept), ", ".join(kept), directory)


def _unstored(fd: int) -> int:
    """Where a spool file's records that its store did not take begin: after its header, past
    what the header says was stored (a writer killed while draining its spool: what it had put is
    in the store already, never kept twice); 0 for a file without a header."""
    header = os.pread(fd, HEADER, 0)
    if len(header) < HEADER or not header.startswith(_MAGIC):
        return 0
    return max(HEADER, int.from_bytes(header[len(_MAGIC):], "little"))


def _copy_new(fd: int, start: int, end: int, named: str) -> Optional[str]:
    """The bytes [start, end) of `fd` in a new private file `<named>.left` (`.left1`... where a
    name is taken: never over an existing one, never through a symlink); its path, or None."""
    for attempt in range(100):
        target = named + (".left%d" % attempt if attempt else ".left")
        try:
            out = os.open(target, _NEW | os.O_WRONLY, 0o600)
        except FileExistsError:
            continue
        try:
            offset = start
            while offset < end:
                chunk = os.pread(fd, min(end - offset, 1 << 20), offset)
                if not chunk:
                    break
                os.write(out, chunk)
                offset += len(chunk)
        except OSError:
            os.close(out)
            os.remove(target)
            raise
        os.close(out)
        return target
    return None


def _in_named(directory: str, source: str) -> str:
    """The spool's directory in the one named (by `source`: MXBOARD_SPOOL_DIR, SpoolSettings): the
    directory itself where it is the user's and private already; else (a shared one: /tmp,
    /dev/shm, a group's project directory) a private subdirectory `mxboard-spool-<uid>` made
    there. The named directory is never chmodded (others write there too). One of another user's
    (not root's, who owns the shared ones) is refused: its owner could replace what waits there."""
    named = "the spool directory %s (%s)" % (directory, source)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        info = os.stat(directory)  # a link the user named is followed: what is made below it is checked
    except OSError as exc:
        raise type(exc)(exc.errno, "%s cannot be made: %s" % (named, exc.strerror), directory) from None
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError("%s is not a directory" % named)
    if info.st_uid not in (_uid(), 0):
        raise PermissionError("%s belongs to another user (uid %d): another user could read or replace what "
                              "waits there (set MXBOARD_SPOOL_DIR to a directory of your own)" % (named, info.st_uid))
    if info.st_uid == _uid() and not info.st_mode & 0o077 and not os.path.islink(directory):
        return _private_dir(directory, named, fix_mode=False)
    return _private_dir(os.path.join(directory, "mxboard-spool-%d" % _uid()), named, fix_mode=False)


def _private_dir(directory: str, named: str, fix_mode: bool = True) -> str:
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
            os.chmod(directory, 0o700)  # mxboard's own: what waits there (images, text) is the user's alone
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
    flags = _NEW | (os.O_RDWR if "+" in mode else os.O_WRONLY)
    return os.fdopen(os.open(os.path.join(folder, parts[-1]), flags, 0o600), mode)


def _create_locked(directory: str, parts: List[str]) -> IO[Any]:
    """create_private, locked (flock) before it has its name: a scan for leftovers
    (`_keep_leftovers`) never takes a live writer's file."""
    if not files.HAVE_LOCKS:
        return create_private(directory, parts)
    hidden = parts[:-1] + [".new-%s" % secrets.token_hex(8)]
    file = create_private(directory, hidden)
    try:
        if not files.lock(file.fileno(), wait=False):  # a file of its own, new: no one else's
            raise BlockingIOError(errno.EWOULDBLOCK, "locked by another process", hidden[-1])
        folder = os.path.join(directory, *parts[:-1])
        os.link(os.path.join(folder, hidden[-1]), os.path.join(folder, parts[-1]))  # never over an existing name
    except BaseException:
        file.close()
        raise
    finally:
        os.remove(os.path.join(directory, *hidden))
    return file


class Spool:
    """The spooled records of the event file `key` (a path in the store, bucket first): appended
    in order, read in order, the file emptied whenever nothing of it waits. One writer thread
    appends; the uploader reads under its file's lock."""

    def __init__(self, key: str, directory: str, limit: int) -> None:
        """`directory` and `limit`: from the writer's SpoolSettings, checked when it was made (`prepare`)."""
        self.directory, self.limit = directory, limit
        parts = key.split("/")
        parts[-1] = parts[-1].replace("tfevents", "spooling")  # never served as an event file
        self.path = os.path.join(directory, *parts)
        self._file = _create_locked(directory, parts)
        self._end = HEADER  # where the next append goes
        self.waiting = 0  # bytes appended and not yet read back
        self.generation = 0  # how often the file started over (marks of an earlier one mean nothing)
        self._mark(HEADER)

    def room_for(self, size: int) -> bool:
        """Whether `size` more bytes fit within the limit (of all the process's spools)."""
        return _USED[0] + size <= self.limit

    def append(self, data: bytes) -> Spooled:
        """`data` written at the end, unbuffered: a write that fails (its disk full) leaves
        nothing half-kept in a buffer, the end where it was, and every piece before it readable.
        Raises the OSError."""
        fd, view, written = self._file.fileno(), memoryview(data), 0
        while written < len(data):
            written += os.pwrite(fd, view[written:], self._end + written)
        piece = Spooled(self, self._end, len(data))
        self._end += len(data)
        self.waiting += len(data)
        with _LOCK:
            _USED[0] += len(data)
        return piece

    def read(self, piece: Spooled) -> bytes:
        """The bytes of `piece`, which then no longer wait here (read each piece once, in order)."""
        data = os.pread(self._file.fileno(), piece.length, piece.offset)
        if len(data) != piece.length:
            raise OSError(errno.EIO, "%s: %d bytes at %d are gone" % (self.path, piece.length, piece.offset))
        self.waiting -= piece.length
        with _LOCK:
            _USED[0] -= piece.length
        if not self.waiting:  # all read back: the file starts over
            os.ftruncate(self._file.fileno(), HEADER)
            self._end = HEADER
            self.generation += 1
            self._mark(HEADER)
        return data

    def stored(self, offset: int, generation: int) -> None:
        """The store holds the records before `offset` (of the file's `generation`): a leftover of
        this file, if the process is killed now, keeps only what follows."""
        if generation == self.generation and not self._file.closed:
            self._mark(offset)

    def _mark(self, offset: int) -> None:
        os.pwrite(self._file.fileno(), _MAGIC + offset.to_bytes(8, "little"), 0)

    def close(self) -> None:
        """Remove the spool file (what waits in it was read back, or written elsewhere): its name
        first, then its lock (closed before, a scan for leftovers could take it for one)."""
        with _LOCK:
            _USED[0] -= self.waiting
        self.waiting = 0
        try:
            os.remove(self.path)
        except OSError:
            pass
        self._file.close()
