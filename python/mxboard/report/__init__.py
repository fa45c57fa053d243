"""A logdir as one self-contained HTML file: the Scalars (every run overlaid, TensorBoard's
smoothing, log scale, step / relative / wall time), HParams, Images, Text and Distributions
dashboards, opened from disk in any browser with no server and no network.

    python -m mxboard report LOGDIR [-o report.html] [--runs REGEX] [--tags REGEX] [--max-points N]
    mxboard.report.write("runs/demo", "report.html")

collect.py reads the logdir once (local or s3://, gs://, az://), page.py writes the page (uPlot,
vendored, draws the charts)."""
import os
from typing import List, Optional

from .collect import collect, compiled
from .page import render

__all__ = ["write"]


def write(logdir: str, output: str = "report.html", runs: Optional[str] = None, tags: Optional[str] = None,
          max_points: int = 2000) -> List[str]:
    """Write the report of `logdir` (the runs and tags the regular expressions `runs` and `tags`
    find) to `output`; returns what was left out or could not be read, one line each.

    Raises:
        FileNotFoundError: a local logdir that does not exist.
        ValueError: a pattern that is no regular expression, or `max_points` below 2.
    """
    from .. import __version__

    if max_points < 2:
        raise ValueError("max_points must be 2 or more; got %r" % (max_points,))
    if "://" not in logdir and not os.path.exists(logdir):
        raise FileNotFoundError("logdir %s does not exist" % logdir)
    found = collect(logdir, compiled(runs, "runs"), compiled(tags, "tags"))
    text, left = render(found, logdir, max_points, __version__)
    temporary = output + ".part"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, output)
    return found.notes + left
