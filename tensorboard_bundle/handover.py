"""How upstream's `tensorboard` command runs the bundle. The wheel ships no `tensorboard` script
of its own (uninstalling it would delete upstream's); instead it names this module as a
TensorBoard dynamic plugin (entry point group `tensorboard_plugins`). Upstream's command loads
it while it starts, and when the process is that command, it is replaced by
`python -m tensorboard_bundle` with the same arguments. Elsewhere (the bundle itself, a library
asking TensorBoard for its plugins) it is a loader that adds no plugin.

Opt out with `MXBOARD_NO_HANDOVER=1` (or true, yes, on) in the environment; 0, false, no, off or
nothing keep the handover. The `tensorboard` command is then
upstream's own, unpatched (its Rust loader experimental, as upstream ships it)."""
import os
import stat
import sys
from typing import Any

from tensorboard.plugins import base_plugin

from .upstream_line import LINE, RUNNING, hands_over, was_hidden

__all__ = ["Handover"]

# `-c` puts the working directory ('') first on sys.path (unless PYTHONSAFEPATH): it is taken off,
# and nothing else (PYTHONPATH's first entry stays)
_LAUNCH = ("import sys; sys.path[:] = [p for p in sys.path if p]; sys.argv[0] = 'tensorboard'; "
           "from tensorboard_bundle.launcher import main; main()")


# tensorboard ships no types.
class Handover(base_plugin.TBLoader):  # type: ignore[misc]
    """A loader of no plugin: TensorBoard skips what `load` returns as None."""

    def load(self, context: Any) -> None:
        return None


_UPSTREAM_LINE = LINE.encode()


def _erase_upstream_line() -> bool:
    """Take back the line upstream's command printed before it loaded this module, where stderr
    allows: a terminal (cursor up, line cleared), or a regular file (a log, a notebook's output
    file) whose last line it is (cut off, and the offset set back). False elsewhere (a pipe)."""
    if sys.stderr.isatty():
        sys.stderr.write("\033[1A\033[2K")
        return True
    try:
        fd = sys.stderr.fileno()
        size = os.fstat(fd).st_size if stat.S_ISREG(os.fstat(fd).st_mode) else -1
        end = size - len(_UPSTREAM_LINE)
        if end < 0:
            return False
        # stderr itself is open for writing only.
        reader = os.open("/proc/self/fd/%d" % fd, os.O_RDONLY)
        try:
            last = os.pread(reader, len(_UPSTREAM_LINE), end)
        finally:
            os.close(reader)
        if last != _UPSTREAM_LINE:
            return False
        os.ftruncate(fd, end)
        os.lseek(fd, end, os.SEEK_SET)
    # There is no /proc (macOS, Windows), or no descriptor.
    except (OSError, ValueError, AttributeError):
        return False
    return True


if hands_over(sys.argv, os.environ):
    os.environ[RUNNING] = "1"
    # Upstream's command printed "TensorFlow installation not found - running with reduced feature
    # set" before it loaded this module, unless the wheel's .pth file had it dropped
    # (upstream_line.py). Where the .pth file did not run (an install on PYTHONPATH), the line is
    # erased from a terminal or a file; in a pipe it is said for what it is.
    sys.stdout.flush()
    sys.stderr.flush()
    if not was_hidden() and not _erase_upstream_line():
        sys.stderr.write("note: the line above is upstream's; this bundle needs no TensorFlow and serves every "
                         "dashboard without it\n")
    sys.stdout.flush()
    sys.stderr.flush()
    # as `python -m tensorboard_bundle`, but without the current directory on sys.path (a
    # console script never has it): a folder there named like a package must not be imported
    os.execv(sys.executable, [sys.executable, "-c", _LAUNCH] + sys.argv[1:])
