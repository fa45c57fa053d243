"""The runs below a logdir: each directory that holds event files (a name with "tfevents", as
upstream finds them), named by its path from the logdir ("." for the logdir itself).

The walk is mxboard's (`_reading.listing.walk`), with TensorBoard's fast loader's rules: links
followed, a link back to a directory the walk is inside (a loop) left out, a dangling link passed
over. What it says (a loop, a directory that cannot be listed) goes to the server's log, once.
"""
import logging
import os
from typing import Dict, List, Set

from mxboard._reading.listing import walk

__all__ = ["Walker"]

logger = logging.getLogger(__name__)


class Walker:
    """Walks one logdir, again and again, saying each line once."""

    def __init__(self, logdir: str) -> None:
        self.logdir = logdir
        self._said: Set[str] = set()

    def runs(self) -> Dict[str, List[str]]:
        """{run name: its event files' paths, in name order}."""
        found: Dict[str, List[str]] = {}
        for directory, names in walk(self.logdir, self._say):
            files = [os.path.join(directory, name) for name in names if "tfevents" in name]
            if files:
                found[os.path.relpath(directory, self.logdir)] = files
        return found

    def _say(self, line: str) -> None:
        if line not in self._said:
            self._said.add(line)
            logger.warning("%s", line)
