"""The command that serves a logdir, as the user can run it from where they are: a hint names
a command that runs, not one that is not on PATH."""
import os
import shlex
import shutil
import sys

__all__ = ["SERVE_HINT", "serve_command"]

# how the user's tool serves a logdir, `{}` standing for it (make's: `make tensorboard LOGDIR={}`)
SERVE_HINT = "MXBOARD_SERVE_HINT"


def serve_command(logdir: str) -> str:
    """The command line that serves `logdir` with the bundled TensorBoard: as the environment's
    SERVE_HINT says (make sets one); else `tensorboard --logdir DIR` where PATH finds this
    Python's own `tensorboard`; else that script by its path (relative to the working directory
    where it lies below it: `.venv/bin/tensorboard`); else this Python's `-m tensorboard_bundle`."""
    quoted = shlex.quote(logdir)
    template = os.environ.get(SERVE_HINT, "")
    if "{}" in template:
        return template.replace("{}", quoted)
    bin_dir = os.path.dirname(sys.executable)
    script = os.path.join(bin_dir, "tensorboard.exe" if os.name == "nt" else "tensorboard")
    if not os.path.isfile(script):
        return "%s -m tensorboard_bundle --logdir %s" % (shlex.quote(_shortest(sys.executable)), quoted)
    found = shutil.which("tensorboard")
    if found and os.path.realpath(found) == os.path.realpath(script):
        return "tensorboard --logdir %s" % quoted
    return "%s --logdir %s" % (shlex.quote(_shortest(script)), quoted)


def _shortest(path: str) -> str:
    """`path` relative to the working directory where it lies below it (`./` where a shell would
    otherwise look it up on PATH), else absolute."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    except ValueError:  # another drive (Windows)
        return absolute
    if relative.startswith(os.pardir):
        return absolute
    return relative if os.sep in relative else os.path.join(os.curdir, relative)
