"""A logdir as one self-contained HTML file, which any browser opens from disk with no server and
no network.

    python -m mxboard report LOGDIR [-o report.html] [--runs REGEX] [--tags REGEX] [--max-points N]
    mxboard.report.write("runs/demo", "report.html")

The page has the Scalars, Custom Scalars, HParams, Images, Audio, Text, PR Curves, Histograms and
Distributions dashboards. It names the Graph, Projector and Mesh dashboards as left out, with the
command that shows them. collect.py reads the logdir once (local, or s3://, gs:// or az://), and
page.py writes the page, whose charts are drawn by a vendored copy of uPlot."""
import os
from typing import List, Optional

from .._format import files
from ..errors import ReportError
from .collect import collect, compiled
from .page import rendered

__all__ = ["ReportError", "write"]


def write(logdir: str, output: str = "report.html", runs: Optional[str] = None, tags: Optional[str] = None,
          max_points: int = 2000) -> List[str]:
    """Write the report of `logdir` to `output`.

    A file of the logdir that cannot be read leaves out only itself, and a line says so. The output
    is written whole or not at all (`_format.files.replace_whole`): to a new file beside it, which
    is renamed over it, or removed on any failure. The page holds at most `page.PAGE_BYTES`.

    Args:
        logdir: a directory, one event file, or a logdir URL.
        output: the HTML file to write.
        runs, tags: regular expressions (`re.search`) that choose the runs and tags to report.
        max_points: the most points drawn for one scalar series.

    Returns:
        One line each on what was read, what was left out, and what could not be read (these
        lines start with `note:`).

    Raises:
        ValueError: a local logdir that does not exist, a pattern that is not a regular expression,
            `max_points` below 2, or a mistyped logdir URL (storage.checked_logdir).
        ImportError: a store's URL whose client package is not installed.
        ReportError: the logdir holds no event file (of the runs that `runs` finds), it cannot be
            listed, or `output` cannot be written.
    """
    from .. import __version__
    from ..storage import checked_logdir

    logdir = checked_logdir(logdir, must_exist=True)
    if max_points < 2:
        raise ValueError("max_points must be 2 or more; got %r" % (max_points,))
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
    try:
        files.replace_whole(output, (piece.encode("utf-8") for piece in pieces))
    except OSError as exc:
        raise ReportError("cannot write %s: %s" % (output, exc.strerror or exc)) from exc
    return said
