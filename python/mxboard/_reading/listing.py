"""A local logdir's event files, found as TensorBoard finds them, links and all.

TensorBoard's fast loader (tensorboard/data/server/disk_logdir.rs: walkdir, links followed)
walks a link to a directory as a directory, named by its path below the logdir (`logdir/linked
-> elsewhere/run` is the run `linked`), reads a link to an event file as that file, and passes a
dangling link over without a word. A link to a directory the walk is already inside (a loop: a
link to the logdir or to a parent) is not followed, and one warning says so. The walk here does
the same, saying each loop in one line (an `MXBoardWarning`), so a logdir with loops is listed
in bounded time. TensorBoard's Python loader (`--load_fast=false`) has no check for loops: it
follows one until the kernel refuses the path (40 links deep), listing each run again at each
depth; the bundle serves with the fast loader, whose rule is the one followed here.

The order is mxboard.reader's: a directory's event files in name order, then each of its
subdirectories in name order, depth first; within a run, the order TensorBoard reads.
"""
from __future__ import annotations

import errno
import operator
import os
import stat
import warnings
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from ..errors import MXBoardWarning

__all__ = ["event_files", "is_event_file", "is_regular", "walk"]

# What is done with a line about a loop or an unreadable directory.
Say = Callable[[str], None]


def _warn(line: str) -> None:
    """Say `line` as an MXBoardWarning. The commands print it as one line (mxboard.__main__)."""
    warnings.warn(MXBoardWarning(line), stacklevel=2)


def is_event_file(name: str) -> bool:
    """Whether a regular file's `name` names an event file (as upstream finds them). The server's
    loader (walk.py) and the scans ahead of it (scan_ahead.py) must agree on it."""
    return "tfevents" in name


def is_regular(path: str) -> bool:
    """Whether `path` is a regular file, or a link to one. A FIFO named like an event file would
    block a reader for ever; a dangling link, or a file removed since it was listed, is not one."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def event_files(logdir: str, say: Say = _warn) -> List[str]:
    """Every event file (a regular file whose name holds `tfevents`) below the local `logdir`, or
    `[logdir]` where it is one file.

    Raises:
        ValueError: `logdir` is neither a regular file nor a directory (a FIFO, a socket).
    """
    if os.path.isfile(logdir):
        return [logdir]
    if os.path.exists(logdir) and not os.path.isdir(logdir):
        raise ValueError("%s is neither a regular file nor a directory" % logdir)
    return [os.path.join(directory, name) for directory, names in walk(logdir, say) for name in names
            if is_event_file(name)]


def walk(logdir: str, say: Say = _warn) -> Iterator[Tuple[str, List[str]]]:
    """(directory, the names of its regular files, sorted) for `logdir` and each directory below
    it, links to directories followed as TensorBoard follows them.

    A directory is named by its path through the links (logdir/linked/...), never by where a link
    leads. A link to a directory on the walk's own path from the logdir (a loop), or a chain of
    links that never ends in a file, is not followed, and `say` gets one line about it. A dangling
    link is passed over, as TensorBoard passes it over. A directory that cannot be listed
    (permissions) is left out, and `say` gets one line about it; one removed while the walk runs
    is left out without a word.
    """
    try:
        root = os.stat(logdir)
    except OSError:
        # A logdir that is not there (yet) holds no runs, as for TensorBoard.
        return
    # The identity (device, inode) of each directory on the walk's paths, stated where a link to
    # a directory is met: a loop leads back to one of them.
    identities: Dict[str, Optional[Tuple[int, int]]] = {logdir: (root.st_dev, root.st_ino)}
    # Each directory still to list, with the directories on its path from the logdir, itself
    # included.
    pending: List[Tuple[str, Tuple[str, ...]]] = [(logdir, (logdir,))]
    while pending:
        directory, path_here = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=_name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            say("%s: cannot be listed (%s); the runs below it are left out" % (directory, exc.strerror or exc))
            continue
        files, below = _sorted_out(directory, entries, path_here, identities, say)
        yield directory, files
        # Last pushed is first listed: the subdirectories are walked in name order, each one whole.
        pending.extend(reversed(below))


def _sorted_out(directory: str, entries: List[os.DirEntry[str]], path_here: Tuple[str, ...],
                identities: Dict[str, Optional[Tuple[int, int]]],
                say: Say) -> Tuple[List[str], List[Tuple[str, Tuple[str, ...]]]]:
    """`directory`'s entries as (the names of its regular files, the directories to walk with
    their paths), links followed, loops said and left out. (Its entries may come from a scandir of
    a descriptor, whose paths are their names alone.)"""
    files: List[str] = []
    below: List[Tuple[str, Tuple[str, ...]]] = []
    for entry in entries:
        try:
            # A regular file is told by the listing itself, without a stat (a logdir may hold
            # many files that are not event files).
            if entry.is_file(follow_symlinks=False):
                files.append(entry.name)
                continue
            # So is a directory that is no link. Only a link can lead back to a directory the
            # walk is in, and only links are checked (as walkdir, TensorBoard's walk, does).
            if entry.is_dir(follow_symlinks=False):
                path = os.path.join(directory, entry.name)
                below.append((path, path_here + (path,)))
                continue
            # A link is what it leads to, as for TensorBoard: this stat follows it.
            found = entry.stat()
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                say("%s: a link loop (its links never lead to a file or a directory); not followed, as "
                    "TensorBoard does not follow it" % os.path.join(directory, entry.name))
            # A dangling link, or a file removed since the listing: TensorBoard says nothing.
            continue
        if stat.S_ISREG(found.st_mode):
            files.append(entry.name)
        elif stat.S_ISDIR(found.st_mode):
            path = os.path.join(directory, entry.name)
            identity = identities[path] = (found.st_dev, found.st_ino)
            ancestor = next((name for name in path_here if _identity(name, identities) == identity), None)
            if ancestor is not None:
                say("%s: a link loop (it leads back to %s, which holds it); not followed, as TensorBoard does "
                    "not follow it" % (path, ancestor))
                continue
            below.append((path, path_here + (path,)))
    return files, below


# A directory entry's name, the walk's order.
_name = operator.attrgetter("name")


def _identity(directory: str, identities: Dict[str, Optional[Tuple[int, int]]]) -> Optional[Tuple[int, int]]:
    """The (device, inode) of `directory` (links followed), stated once; None where it is gone."""
    if directory not in identities:
        try:
            found = os.stat(directory)
        except OSError:
            identities[directory] = None
        else:
            identities[directory] = (found.st_dev, found.st_ino)
    return identities[directory]
