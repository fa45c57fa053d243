"""What was collected as one self-contained HTML file: the data as one JSON block (scalars packed
as base64 float arrays, downsampled where long), the app (app.js, app.css) and uPlot inline,
and a Content-Security-Policy that lets the page fetch nothing: every script and style is
allowed by its hash, images only from data: URLs. Opened from disk in any browser, no server,
no network.

uPlot (https://github.com/leeoniya/uPlot, MIT; assets/uPlot.LICENSE) is vendored as released,
pinned by version and SHA-256 (`ASSETS`): a changed file is refused, never inlined."""
import base64
import datetime
import hashlib
import html
import json
import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .collect import Collected, kept, printable

__all__ = ["ASSETS", "UPLOT_VERSION", "asset", "downsampled", "render"]

UPLOT_VERSION = "1.6.32"
ASSETS = {  # file -> SHA-256: what npm's uplot@1.6.32 ships in dist/ (and its LICENSE)
    "uPlot.iife.min.js": "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f",
    "uPlot.min.css": "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04",
}
POINTS = 800_000  # scalar points in a report, at most (about 17 MB): each series gets its share
MIN_SHARE = 200  # ... but never fewer than this, nor more than --max-points
_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets")


def asset(name: str) -> str:
    """A vendored file's text, checked against its pinned hash."""
    with open(os.path.join(_HERE, name), "rb") as f:
        data = f.read()
    if name in ASSETS and hashlib.sha256(data).hexdigest() != ASSETS[name]:
        raise RuntimeError("mxboard's copy of %s is not uPlot %s's (its SHA-256 differs): reinstall mxboard"
                           % (name, UPLOT_VERSION))
    return data.decode("utf-8")


def downsampled(steps: Any, values: Any, walls: Any, most: int) -> Tuple[Any, Any, Any]:
    """At most about `most` points of a series, for drawing: min/max decimation (in each of
    `most / 2` runs of neighbouring points the lowest and the highest are kept, in order; the
    first and the last point always), so that a spike is never averaged away."""
    n = len(steps)
    if n <= most:
        return steps, values, walls
    buckets = max(most // 2, 1)
    bucket = (np.arange(n) * buckets) // n
    order = np.lexsort((np.nan_to_num(values, nan=np.inf), bucket))  # by bucket, then value (NaN: highest)
    starts = np.flatnonzero(np.r_[True, bucket[order][1:] != bucket[order][:-1]])
    ends = np.r_[starts[1:], n] - 1
    keep = np.unique(np.concatenate([order[starts], order[ends], [0, n - 1]]))
    return steps[keep], values[keep], walls[keep]


def _number(value: Any) -> Any:
    """A value for JSON: a non-finite float as its name (JSON has no NaN), a list or a dict (an
    hparam's ListValue or Struct) as its JSON text, anything else as is."""
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return value


def _packed(array: Any, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype=dtype).tobytes()).decode("ascii")


def _data(found: Collected, logdir: str, max_points: int, version: str) -> Tuple[Dict[str, Any], List[str]]:
    """The page's data, and what was left out (said by the command)."""
    left: List[str] = []
    share = max(MIN_SHARE, min(max_points, POINTS // max(len(found.scalars), 1)))
    scalars: Dict[str, List[Dict[str, Any]]] = {}
    cut = 0
    for (run, tag), (steps, values, walls) in sorted(found.scalars.items(), key=lambda item: (item[0][1], item[0][0])):
        if len(steps) > share:
            cut += 1
        total = len(steps)
        steps, values, walls = downsampled(steps, values, walls, share)
        start = float(walls[0]) if len(walls) else 0.0
        scalars.setdefault(tag, []).append({
            "run": run, "points": total, "start": start, "step": _packed(steps, "<f8"),
            "value": _packed(values, "<f4"), "wall": _packed(walls - start, "<f4")})
    if cut:
        left.append("scalars: %d of %d series had more than %d points: drawn from %d of them (the lowest and the "
                    "highest of each stretch kept: --max-points draws more)" % (cut, len(found.scalars), share, share))
    images: Dict[str, Dict[str, List[Dict[str, Any]]]] = {}
    dropped = 0
    for (run, tag), items in sorted(found.images.items()):
        chosen = kept(items)
        dropped += len(items) - len(chosen)
        images.setdefault(tag, {})[run] = [
            {"step": step, "src": "data:%s;base64,%s" % (mime, base64.b64encode(data).decode("ascii"))}
            for step, (mime, data) in chosen]
    if dropped:
        left.append("images: %d left out (at most 10 a tag and run, the last always, as TensorBoard keeps)" % dropped)
    texts: Dict[str, Dict[str, List[Dict[str, Any]]]] = {}
    if found.texts:
        from tensorboard.plugin_util import markdown_to_safe_html  # TensorBoard's own rendering, sanitized

        dropped = 0
        for (run, tag), written in sorted(found.texts.items()):
            shown = kept(written)
            dropped += len(written) - len(shown)
            texts.setdefault(tag, {})[run] = [{"step": step, "html": markdown_to_safe_html(text)}
                                              for step, text in shown]
        if dropped:
            left.append("text: %d left out (at most 10 a tag and run, the last always)" % dropped)
    bands: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for (run, tag), histograms in sorted(found.bands.items()):
        histograms = sorted(histograms)
        bands.setdefault(tag, {})[run] = {"step": [h[0] for h in histograms], "wall": [h[1] for h in histograms],
                                          "bands": [[_number(h[2][i]) for h in histograms] for i in range(9)]}
    names = sorted({name for values in found.hparams.values() for name in values})
    metrics = ["%s/%s" % (group, tag) if group else tag for group, tag in found.metrics]
    rows: List[List[Any]] = []
    for run, values in sorted(found.hparams.items()):
        final: List[Optional[float]] = []
        for group, tag in found.metrics:
            series = found.scalars.get(("%s/%s" % (run, group) if group else run, tag))
            final.append(float(series[1][-1]) if series is not None and len(series[1]) else None)
        rows.append([run] + [_number(values.get(name)) for name in names] + [_number(v) for v in final])
    meta = {"logdir": printable(logdir), "made": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "version": version, "runs": found.runs, "notes": found.notes + left}
    return {"meta": meta, "scalars": scalars, "images": images, "texts": texts, "distributions": bands,
            "hparams": {"columns": ["run"] + names + metrics, "metrics": len(metrics), "rows": rows}}, left


def _hash(text: str) -> str:
    return "'sha256-%s'" % base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def render(found: Collected, logdir: str, max_points: int, version: str) -> Tuple[str, List[str]]:
    """(the HTML, what was left out)."""
    data, left = _data(found, logdir, max_points, version)
    block = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    scripts = [asset("uPlot.iife.min.js"), asset("app.js")]
    style = asset("uPlot.min.css") + "\n" + asset("app.css")
    policy = ("default-src 'none'; script-src %s; style-src %s; img-src data:; base-uri 'none'; form-action 'none'"
              % (" ".join(_hash(s) for s in scripts), _hash(style)))
    title = "mxboard report: %s" % printable(logdir)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"%s\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>%s</title>\n<style>%s</style>\n"
            "<script type=\"application/json\" id=\"data\">%s</script>\n"
            "</head><body>\n<div id=\"app\"></div>\n%s\n</body></html>\n"
            % (html.escape(policy), html.escape(title), style, block,
               "\n".join("<script>%s</script>" % s for s in scripts))), left

