"""The command that serves a logdir, written so that the user can run it from where they are. A
hint then names a command that runs, never one that is not on PATH."""
import os
import shlex
import shutil
import sys

__all__ = ["SERVE_HINT", "python_command", "serve_command"]

# the environment variable that says how the user's tool serves a logdir, with `{}` for the logdir
# (make sets `make tensorboard LOGDIR={}`)
SERVE_HINT = "MXBOARD_SERVE_HINT"


def serve_command(logdir: str) -> str:
    """The command line that serves `logdir` with the bundled TensorBoard.

    That is the form the environment's SERVE_HINT gives, where make sets one. Else it is
    `tensorboard --logdir DIR` where PATH finds this Python's own `tensorboard`; else that script
    by its path (relative to the working directory where it lies below it, such as
    `.venv/bin/tensorboard`); else this Python with `-m tensorboard_bundle`."""
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


def python_command() -> str:
    """How the user runs this Python from where they are: `python` where PATH finds this very
    interpreter (an activated venv), else its path (`.venv/bin/python`, relative to the working
    directory where it lies below it), so that a printed example runs as it is."""
    # A venv's python is a link to the base interpreter: the directories are compared, never the
    # files the links lead to (the base's `python` runs without the venv's packages).
    here = os.path.normcase(os.path.dirname(os.path.abspath(sys.executable)))
    for name in ("python", "python3"):
        found = shutil.which(name)
        if found and os.path.normcase(os.path.dirname(os.path.abspath(found))) == here:
            return name
    return shlex.quote(_shortest(sys.executable))


def _shortest(path: str) -> str:
    """`path` relative to the working directory where it lies below it, else absolute. A bare
    name gets `./` before it, which a shell would otherwise look up on PATH."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    # Another drive (Windows).
    except ValueError:
        return absolute
    if relative.startswith(os.pardir):
        return absolute
    return relative if os.sep in relative else os.path.join(os.curdir, relative)
