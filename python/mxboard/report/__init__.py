"""A logdir as one self-contained HTML file: the Scalars (every run overlaid, TensorBoard's
smoothing, log scale, step / relative / wall time), Custom Scalars, HParams, Images, Audio, Text,
PR Curves, Histograms and Distributions dashboards, opened from disk in any browser with no server
and no network; Graph, Projector and Mesh named as left out, with the command that shows them.

    python -m mxboard report LOGDIR [-o report.html] [--runs REGEX] [--tags REGEX] [--max-points N]
    mxboard.report.write("runs/demo", "report.html")

collect.py reads the logdir once (local or s3://, gs://, az://), page.py writes the page (uPlot,
vendored, draws the charts)."""
import os
import secrets
from typing import Iterable, List, Optional

from ..errors import ReportError
from .collect import collect, compiled
from .page import rendered

__all__ = ["ReportError", "write"]


def write(logdir: str, output: str = "report.html", runs: Optional[str] = None, tags: Optional[str] = None,
          max_points: int = 2000) -> List[str]:
    """Write the report of `logdir` (the runs and tags the regular expressions `runs` and `tags`
    find) to `output`; returns what it read, what it left out and what could not be read (`note:`
    lines), one line each. A file
    of the logdir that cannot be read costs only itself (said in a line); the output is written
    whole or not at all (a temporary file beside it, renamed; removed on any failure).

    Raises:
        FileNotFoundError: a local logdir that does not exist.
        ValueError: a pattern that is no regular expression, `max_points` below 2, or a mistyped
            logdir URL (storage.checked_logdir).
        ImportError: a store's URL whose client package is not installed.
        ReportError: the logdir holds no event file (of the runs `runs` finds), cannot be
            listed, or `output` cannot be written.
    """
    from .. import __version__
    from ..storage import checked_logdir

    logdir = checked_logdir(logdir)
    if max_points < 2:
        raise ValueError("max_points must be 2 or more; got %r" % (max_points,))
    if "://" not in logdir and not os.path.exists(logdir):
        raise FileNotFoundError("logdir %s does not exist" % logdir)
    if os.path.isdir(output):
        raise ReportError("cannot write %s: it is a directory (name a file: -o %s)"
                          % (output, os.path.join(output, "report.html")))
    try:
        found = collect(logdir, compiled(runs, "runs"), compiled(tags, "tags"))
    except OSError as exc:
        raise ReportError("cannot read %s: %s" % (logdir, exc.strerror or exc)) from exc
    if not found.runs:
        raise ReportError("no event files in %s%s: nothing written" % (logdir, " of the runs --runs %r finds" % runs
                                                                        if runs is not None else ""))
    pieces, said = rendered(found, logdir, max_points, __version__)
    _write_whole(output, pieces)
    return said


def _write_whole(output: str, pieces: Iterable[str]) -> None:
    """`pieces` as the file `output`, whole or not at all: written to a new file beside it
    (created exclusively, never through a link someone planted), then renamed over it."""
    temporary = os.path.join(os.path.dirname(output), ".%s.%s.part" % (os.path.basename(output), secrets.token_hex(6)))
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except OSError as exc:
        raise ReportError("cannot write %s: %s" % (output, exc.strerror or exc)) from exc
    try:
        with open(fd, "w", encoding="utf-8") as f:
            f.writelines(pieces)
        os.replace(temporary, output)
    except BaseException as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ReportError("cannot write %s: %s" % (output, exc.strerror or exc)) from exc
        raise
