"""The runs below a logdir: each directory that holds event files (a name with "tfevents", as
upstream finds them), named by its path from the logdir ("." for the logdir itself).

The walk is mxboard's (`_reading.listing.walk`), with TensorBoard's fast loader's rules: links
followed, a link back to a directory the walk is inside (a loop) left out, a dangling link passed
over. What it says (a loop, a directory that cannot be listed) goes to the server's log, once.

`runs()` walks the whole logdir; `look(directory, path_here)` lists one directory of it, with
the same rules, for a reader that lists a directory only when it changed (logdir.py). Where it is
given something to do with each event file (read it, on a first pass behind a network
filesystem) and the platform allows (not Windows), the directory is opened once: its signature
is the open descriptor's, and each file is opened by its name in it. Each path resolved from the
logdir costs a network filesystem a lookup of each of its parts (its cache of them expires).
"""
import logging
import os
from typing import Callable, Dict, List, NamedTuple, Optional, Set, Tuple, TypeVar

from mxboard._reading.listing import _sorted_out, is_event_file, walk

__all__ = ["Listing", "Walker", "is_event_file"]

logger = logging.getLogger(__name__)

# A directory's signature: (inode, mtime, ctime).
Signature = Tuple[int, int, int]
# What `look` gives of each event file: the caller's.
T = TypeVar("T")
# A directory listed by its descriptor, and a file opened by its name in it (not on Windows).
_BY_DESCRIPTOR = os.scandir in os.supports_fd and os.open in os.supports_dir_fd


class Listing(NamedTuple):
    """One directory's listing: its event files' names (sorted), and its subdirectories (links to
    directories followed, loops left out), each with the directories on its path from the logdir."""

    files: List[str]
    below: List[Tuple[str, Tuple[str, ...]]]


class Walker:
    """Walks one logdir, again and again, saying each line once."""

    def __init__(self, logdir: str) -> None:
        self.logdir = logdir
        self._said: Set[str] = set()

    def runs(self) -> Dict[str, List[str]]:
        """{run name: its event files' paths, in name order}."""
        found: Dict[str, List[str]] = {}
        for directory, names in walk(self.logdir, self._say):
            files = [os.path.join(directory, name) for name in names if is_event_file(name)]
            if files:
                found[os.path.relpath(directory, self.logdir)] = files
        return found

    def look(self, directory: str, path_here: Tuple[str, ...], stated: bool = False,
             each: Optional[Callable[[Optional[int], str], Optional[T]]] = None
             ) -> Tuple[Optional[Signature], Optional[Listing], Dict[str, T]]:
        """(`directory`'s signature where `stated`, None where not asked or gone; its listing, None
        where it is gone or cannot be listed (said once); what `each(descriptor, name)` gave of each
        of its event files, by path, where it gave something). `path_here`: the directories on its
        path from the logdir, itself included. The signature is taken before the listing: a change
        made between the two is seen at the next look. `each` gets the directory's open descriptor
        and a file's name (None and its path where the platform opens no file by a descriptor)."""
        descriptor = None
        try:
            if _BY_DESCRIPTOR and each is not None:
                descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            signature = _signature(os.fstat(descriptor) if descriptor is not None else os.stat(directory)) \
                if stated else None
            with os.scandir(descriptor if descriptor is not None else directory) as found:
                entries = sorted(found, key=lambda entry: entry.name)
            names, below = _sorted_out(directory, entries, path_here, {}, self._say)
            files = [name for name in names if is_event_file(name)]
            given: Dict[str, T] = {}
            if each is not None:
                for name in files:
                    path = os.path.join(directory, name)
                    got = each(descriptor, name if descriptor is not None else path)
                    if got is not None:
                        given[path] = got
            return signature, Listing(files, below), given
        except (FileNotFoundError, NotADirectoryError):
            return None, None, {}
        except OSError as exc:
            self._say("%s: cannot be listed (%s); the runs below it are left out" % (directory, exc.strerror or exc))
            return None, None, {}
        finally:
            if descriptor is not None:
                os.close(descriptor)

    def say(self, line: str) -> None:
        """Say `line` in the server's log, once."""
        self._say(line)

    def _say(self, line: str) -> None:
        if line not in self._said:
            self._said.add(line)
            logger.warning("%s", line)


def _signature(found: os.stat_result) -> Signature:
    return (found.st_ino, found.st_mtime_ns, found.st_ctime_ns)
