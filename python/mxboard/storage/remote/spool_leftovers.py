"""Spool files that ended processes left behind, kept as event files.

A process that is killed leaves its spool file in the spool's directory. The next writer made
with that directory on the same host finds it and renames what its store never took to an event
file, `<its name with tfevents>.left`, which can be served or uploaded. A live writer's spool file
is locked (flock) from before it has its name, so the scan never takes it. Files named with
another host are left alone: on a directory shared between hosts, that host's lock may not be
seen here.
"""
from __future__ import annotations

import logging
import os
from typing import Optional

from ..._format import files
from .private_files import NEW_FILE, NO_FOLLOW
from .spool import HEADER, MAGIC

__all__ = ["keep_leftovers"]

log = logging.getLogger("mxboard")


def keep_leftovers(directory: str) -> None:
    """Spool files whose process is gone (no lock held on them: a live Spool holds its file's
    from before its name exists) renamed `...tfevents....left`: an event file of the records its
    store never took, to serve or upload. Empty ones are removed. Said once, in a warning."""
    # A live writer's file cannot be told apart: none is taken.
    if not files.HAVE_LOCKS:
        return
    import socket

    # A file of another host's: its flock may not reach here (NFS).
    ours = ".%s." % socket.gethostname()
    kept = []
    # Symlinks to folders are not followed.
    for folder, _, names in os.walk(directory):
        for name in names:
            if "spooling" not in name or ours not in name:
                continue
            path = os.path.join(folder, name)
            try:
                fd = os.open(path, os.O_RDONLY | NO_FOLLOW)
            # Gone meanwhile (its writer closed, another scan took it), or a symlink.
            except OSError:
                continue
            # A live writer's.
            if not files.lock(fd, wait=False):
                os.close(fd)
                continue
            try:
                start, size = _unstored(fd), os.fstat(fd).st_size
                # Nothing its store did not take.
                if size <= start:
                    os.remove(path)
                    continue
                # The name only, never a folder's.
                named = os.path.join(folder, name.replace("spooling", "tfevents", 1))
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
    if len(header) < HEADER or not header.startswith(MAGIC):
        return 0
    return max(HEADER, int.from_bytes(header[len(MAGIC):], "little"))


def _copy_new(fd: int, start: int, end: int, named: str) -> Optional[str]:
    """The bytes [start, end) of `fd` in a new private file `<named>.left` (`.left1`... where a
    name is taken: never over an existing one, never through a symlink); its path, or None."""
    for attempt in range(100):
        target = named + (".left%d" % attempt if attempt else ".left")
        try:
            out = os.open(target, NEW_FILE | os.O_WRONLY, 0o600)
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
