"""The runs below a logdir: each directory that holds event files (a name with "tfevents", as
upstream finds them), named by its path from the logdir ("." for the logdir itself).

The walk is mxboard's (`_reading.listing.walk`), with TensorBoard's fast loader's rules: links
followed, a link back to a directory the walk is inside (a loop) left out, a dangling link passed
over. What it says (a loop, a directory that cannot be listed) goes to the server's log, once.

`runs()` walks the whole logdir; `listing(directory, path_here)` lists one directory of it, with
the same rules, for a reader that lists a directory only when it changed (logdir.py).
"""
import logging
import os
from typing import Dict, List, NamedTuple, Optional, Set, Tuple

from mxboard._reading.listing import _sorted_out, walk

__all__ = ["Listing", "Walker", "is_event_file"]

logger = logging.getLogger(__name__)


def is_event_file(name: str) -> bool:
    """Whether a regular file's `name` names an event file (as upstream finds them)."""
    return "tfevents" in name


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

    def listing(self, directory: str, path_here: Tuple[str, ...]) -> Optional[Listing]:
        """`directory`'s listing (`path_here`: the directories on its path from the logdir, itself
        included); None where it is gone or cannot be listed (said once)."""
        try:
            with os.scandir(directory) as found:
                entries = sorted(found, key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            self._say("%s: cannot be listed (%s); the runs below it are left out" % (directory, exc.strerror or exc))
            return None
        names, below = _sorted_out(entries, path_here, {}, self._say)
        return Listing([name for name in names if is_event_file(name)], below)

    def say(self, line: str) -> None:
        """Say `line` in the server's log, once."""
        self._say(line)

    def _say(self, line: str) -> None:
        if line not in self._said:
            self._said.add(line)
            logger.warning("%s", line)
