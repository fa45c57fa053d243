"""Keeps upstream's "TensorFlow installation not found" line out of the `tensorboard` command's
output. Upstream's command prints that line before it loads any plugin, so the handover
(handover.py) comes too late to stop it. The start-up module (_mxboard_startup, which the wheel's
.pth file runs) therefore calls `hide` when the interpreter starts as the `tensorboard` command.
`hide` holds back the first line written to stderr and drops it if it is upstream's line,
whatever stderr is: a terminal, a file or a pipe. Any other first line is written as it came, and
stderr is given back after that line.

This module imports the standard library and the start-up module only, because it runs at the
interpreter's start."""
import os
import sys
from typing import Any, List, Mapping, Optional, TextIO

from _mxboard_startup import flag

__all__ = ["LINE", "RUNNING", "OPT_OUT", "hands_over", "hide", "was_hidden"]

LINE = "TensorFlow installation not found - running with reduced feature set.\n"
# Set in the bundle's own process, so it never hands over twice.
RUNNING = "MXBOARD_TENSORBOARD_BUNDLE"
# On (1, true, yes or on, read as every switch of mxboard's): the `tensorboard` command stays
# upstream's own.
OPT_OUT = "MXBOARD_NO_HANDOVER"


def hands_over(argv: List[str], environ: Mapping[str, str]) -> bool:
    """Whether this process is upstream's `tensorboard` command, which the bundle replaces."""
    command = os.path.basename(argv[0]) if argv else ""
    if command not in ("tensorboard", "tensorboard.exe") or environ.get(RUNNING):
        return False
    try:
        return not flag(OPT_OUT, False, environ)
    # A value that is no switch word asks for something other than the handover: upstream's own.
    except ValueError:
        return False


class _FirstLineFilter:
    """Stands in for stderr until its first line is complete; then stderr is the stream again."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._held = ""
        self.done = False
        self.dropped = False

    def write(self, text: str) -> int:
        if self.done:
            return self._stream.write(text)
        self._held += text
        if "\n" not in self._held and LINE.startswith(self._held):
            # It may still become upstream's line.
            return len(text)
        held, self._held = self._held, ""
        self.give_back()
        if held.startswith(LINE):
            self.dropped = True
            held = held[len(LINE):]
        if held:
            self._stream.write(held)
        return len(text)

    def give_back(self) -> None:
        """Makes the real stream sys.stderr again, writing what was held back."""
        if not self.done:
            self.done = True
            if sys.stderr is self:
                sys.stderr = self._stream
            if self._held:
                self._stream.write(self._held)
                self._held = ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


_FILTER: Optional[_FirstLineFilter] = None


def hide() -> None:
    """Drops upstream's line if it is the first one this process writes to stderr. Does nothing
    outside the `tensorboard` command, or where the handover is turned off."""
    global _FILTER
    if _FILTER is None and sys.stderr is not None and hands_over(sys.argv, os.environ):
        _FILTER = _FirstLineFilter(sys.stderr)
        # A stand-in: write() of its own, the rest the real stream's.
        sys.stderr = _FILTER


def was_hidden() -> bool:
    """Gives stderr back, and says whether upstream's line was dropped."""
    if _FILTER is None:
        return False
    _FILTER.give_back()
    return _FILTER.dropped
