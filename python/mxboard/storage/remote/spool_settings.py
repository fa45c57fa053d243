"""`SpoolSettings`, and where the spool's directory is and how much it may hold.

By default the settings come from MXBOARD_SPOOL_DIR and MXBOARD_SPOOL_MAX_BYTES, read once when a
writer of a store is made (`SpoolSettings.from_environment`); a writer's `spool=SpoolSettings(...)`
replaces them. `checked_settings` checks them then, so that a value that cannot be used is an
error at the writer's constructor, naming the variable. The default directory, `mxboard/spool`
in the user's cache directory, is made only when a spool is first needed (`spool_directory`); a
writer whose store takes everything needs none, so a read-only home works.
"""
from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
import threading
from dataclasses import dataclass, field, replace
from typing import Dict, Optional

from ..._format.sizes import parse_bytes
from .private_files import private_dir, uid
from .spool_leftovers import keep_leftovers

__all__ = ["SpoolSettings", "byte_limit", "checked_settings", "spool_directory"]

log = logging.getLogger("mxboard")

_DEFAULT_MAX = 16 << 30
# Guards _PLACE.
_PLACE_LOCK = threading.Lock()
# The default directory -> where the spool is (None: memory only).
_PLACE: Dict[str, Optional[str]] = {}


@dataclass(frozen=True)
class SpoolSettings:
    """Where what an object store has not taken waits on disk, for one writer
    (`SummaryWriter(..., spool=SpoolSettings(...))`); by default, what MXBOARD_SPOOL_DIR and
    MXBOARD_SPOOL_MAX_BYTES say when the writer is made (`from_environment`).

    Attributes:
        directory: the spool's directory (made if need be; a shared one gets a private
            subdirectory), or None: the default places, tried when a spool is first needed (`spool_directory`).
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


def checked_settings(settings: SpoolSettings) -> SpoolSettings:
    """`settings` checked when a writer of a store is made: a named directory where no private
    spool can be made safely raises here, naming where it came from; the result names the
    private directory the spool goes in. Nothing is made for the default place, which a writer
    whose store takes everything never needs (a read-only home works). Spool files that
    processes ended without closing left in the directory, where it exists, are kept as event
    files, and one warning names them."""
    if settings.directory is not None:
        directory = _in_named(os.path.abspath(os.path.expanduser(settings.directory)), settings.source)
        keep_leftovers(directory)
        return replace(settings, directory=directory)
    default = _default_dir()
    try:
        info = os.lstat(default)
    except OSError:
        # Made when first needed.
        return settings
    if stat.S_ISDIR(info.st_mode) and info.st_uid == uid() and not info.st_mode & 0o077:
        keep_leftovers(default)
    return settings


def spool_directory(settings: SpoolSettings) -> Optional[str]:
    """The spool's directory, made now if need be: the named one, else the first usable of the
    user's cache directory and a private directory in the temporary directory; None where none
    can be made (what waits then stays in memory). The first fallback in a process is named in
    one warning."""
    if settings.directory is not None:
        return settings.directory
    default = _default_dir()
    with _PLACE_LOCK:
        if default in _PLACE:
            return _PLACE[default]
        tried = []
        found: Optional[str] = None
        for candidate in (default, os.path.join(tempfile.gettempdir(), "mxboard-spool-%d" % uid())):
            try:
                found = private_dir(candidate, "the spool directory %s" % candidate)
                break
            except OSError as exc:
                tried.append("%s (%s)" % (candidate, exc.strerror or exc))
        _PLACE[default] = found
    if tried:
        log.warning("mxboard: no spool in %s; %s", " nor ".join(tried),
                    "spooling in %s instead" % found if found else
                    "what the store has not taken waits in memory only (set MXBOARD_SPOOL_DIR to a writable directory)")
    return found


def byte_limit(settings: SpoolSettings, directory: str) -> int:
    """`max_bytes` (MXBOARD_SPOOL_MAX_BYTES: a number, with K, M, G or T after it if you like),
    else a quarter of the space free in `directory`, at most 16 GiB."""
    if settings.max_bytes is not None:
        return settings.max_bytes
    return min(_DEFAULT_MAX, shutil.disk_usage(directory).free // 4)


def _default_dir() -> str:
    """`mxboard/spool` in the user's cache directory (not yet made)."""
    import platformdirs

    return os.path.join(platformdirs.user_cache_dir("mxboard", appauthor=False), "spool")


def _in_named(directory: str, source: str) -> str:
    """The spool's directory in the one named (by `source`: MXBOARD_SPOOL_DIR, SpoolSettings): the
    directory itself where it is the user's and private already; else (a shared one: /tmp,
    /dev/shm, a group's project directory) a private subdirectory `mxboard-spool-<uid>` made
    there. The named directory is never chmodded (others write there too). One of another user's
    (not root's, who owns the shared ones) is refused: its owner could replace what waits there."""
    named = "the spool directory %s (%s)" % (directory, source)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        # A link the user named is followed: what is made below it is checked.
        info = os.stat(directory)
    except OSError as exc:
        raise type(exc)(exc.errno, "%s cannot be made: %s" % (named, exc.strerror), directory) from None
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError("%s is not a directory" % named)
    if info.st_uid not in (uid(), 0):
        raise PermissionError("%s belongs to another user (uid %d): another user could read or replace what "
                              "waits there (set MXBOARD_SPOOL_DIR to a directory of your own)" % (named, info.st_uid))
    if info.st_uid == uid() and not info.st_mode & 0o077 and not os.path.islink(directory):
        return private_dir(directory, named, fix_mode=False)
    return private_dir(os.path.join(directory, "mxboard-spool-%d" % uid()), named, fix_mode=False)

