"""Write what was collected as one self-contained HTML file.

The page holds the data as one JSON block (scalars packed as base64 float arrays, and thinned
where long), the app (app.js, app.css) and uPlot inline. Its Content-Security-Policy lets it fetch
nothing: each script and style is allowed by its hash, and images and audio only from data: URLs.

uPlot (https://github.com/leeoniya/uPlot, MIT; assets/uPlot.LICENSE) is vendored as released and
pinned by version and SHA-256 (`ASSETS`): a changed file is refused, never inlined."""
import base64
import datetime
import hashlib
import html
import json
import os
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from ..errors import ReportError
from .collect import KEEP, LEFT_OUT, Collected, matching, printable

__all__ = ["ASSETS", "UPLOT_VERSION", "asset", "downsampled", "render"]

UPLOT_VERSION = "1.6.32"
ASSETS = {  # file -> SHA-256: what npm's uplot@1.6.32 ships in dist/ (and its LICENSE)
    "uPlot.iife.min.js": "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f",
    "uPlot.min.css": "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04",
}
POINTS = 800_000  # the most scalar points in a report (about 17 MB); each series gets its share
MIN_SHARE = 200  # a series' share is never below this, nor above --max-points
_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets")


def asset(name: str) -> str:
    """A vendored file's text, checked against its pinned hash."""
    with open(os.path.join(_HERE, name), "rb") as f:
        data = f.read()
    if name in ASSETS and hashlib.sha256(data).hexdigest() != ASSETS[name]:
        raise ReportError("mxboard's copy of %s is not uPlot %s's (its SHA-256 differs): reinstall mxboard"
                           % (name, UPLOT_VERSION))
    return data.decode("utf-8")


def downsampled(steps: Any, values: Any, walls: Any, most: int) -> Tuple[Any, Any, Any]:
    """At most about `most` points of a series, for drawing.

    This is min/max decimation: the series is cut into `most / 2` stretches of neighbouring points,
    and each keeps its lowest and highest point, in order. The first and the last point are always
    kept. A spike is therefore never averaged away."""
    n = len(steps)
    if n <= most:
        return steps, values, walls
    buckets = max(most // 2, 1)
    bucket = (np.arange(n) * buckets) // n
    order = np.lexsort((np.nan_to_num(values, nan=np.inf), bucket))  # by bucket, then value (NaN highest)
    starts = np.flatnonzero(np.r_[True, bucket[order][1:] != bucket[order][:-1]])
    ends = np.r_[starts[1:], n] - 1
    keep = np.unique(np.concatenate([order[starts], order[ends], [0, n - 1]]))
    return steps[keep], values[keep], walls[keep]


def _number(value: Any) -> Any:
    """A value for JSON. A non-finite float becomes its name (JSON has no NaN), a list or a dict
    (an hparam's ListValue or Struct) becomes its JSON text, and anything else stays as it is."""
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return value


def _packed(array: Any, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype=dtype).tobytes()).decode("ascii")


def _data(found: Collected, logdir: str, max_points: int, version: str) -> Tuple[Dict[str, Any], List[str]]:
    """The page's data, and the lines on what was left out, which the command prints."""
    left: List[str] = []
    _said_kept(found, "images", found.images, left)
    _said_kept(found, "audio", found.audio, left)
    # Share the page's bytes: images and audio get up to MEDIA_MOST (more where the scalars leave
    # room), and the scalars get the rest, each series its share of the points.
    wanted = min(sum(len(s[0]) for s in found.scalars.values()), POINTS) * POINT_BYTES
    media = _within(dict([(("images",) + key, items) for key, items in found.images.items()]
                         + [(("audio",) + key, items) for key, items in found.audio.items()]),
                    max(MEDIA_MOST, PAGE_BYTES - wanted), left)
    points = min(POINTS, int((PAGE_BYTES - sum(_media_bytes(i) for items in media.values() for i in items))
                             / POINT_BYTES))
    share = max(MIN_SHARE, min(max_points, points // max(len(found.scalars), 1)))
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
    images = _by_tag({key[1:]: items for key, items in media.items() if key[0] == "images"},
                     lambda step, item: {"step": step, "src": _data_url(item[0], item[1])})
    audio = _by_tag({key[1:]: items for key, items in media.items() if key[0] == "audio"},
                    lambda step, item: {"step": step, "src": _data_url(item[0], item[1]), "label": item[2]})
    texts: Dict[str, Dict[str, List[Dict[str, Any]]]] = {}
    if found.texts:
        from tensorboard.plugin_util import markdown_to_safe_html  # TensorBoard's own rendering, sanitized

        _said_kept(found, "text", found.texts, left)
        texts = _by_tag(found.texts, lambda step, text: {"step": step, "html": markdown_to_safe_html(text)})
    _said_kept(found, "histograms", found.histograms, left)
    histograms = _by_tag(found.histograms, lambda step, item: {
        "step": step, "buckets": [[_number(float(x)) for x in row] for row in item[1]]}, OFFSET_VIEW)
    if any(len(items) > OFFSET_VIEW for items in found.histograms.values()):
        left.append("histograms: the offset view draws %d histograms per tag and run (spread over the steps, the last "
                    "always); Distributions draws every kept one" % OFFSET_VIEW)
    bands: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for (run, tag), histogram_bands in sorted(found.bands.items()):
        bands.setdefault(tag, {})[run] = {"step": [h[0] for h in histogram_bands],
                                          "wall": [h[1] for h in histogram_bands],
                                          "bands": [[_number(h[2][i]) for h in histogram_bands] for i in range(9)]}
    _said_kept(found, "pr_curves", found.pr_curves, left)
    pr_curves = _by_tag(found.pr_curves, lambda step, item: dict(step=step, **pr_entry(item[1])))
    meta = {"logdir": printable(logdir), "made": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "version": version, "runs": found.runs, "notes": found.notes + left,
            "left_out": left_out(found), "command": command(logdir)}
    return {"meta": meta, "scalars": scalars, "images": images, "audio": audio, "texts": texts,
            "histograms": histograms, "distributions": bands, "pr_curves": pr_curves,
            "custom_scalars": _custom_scalars(found, sorted(scalars), left), "hparams": _hparams(found)}, left


OFFSET_VIEW = 50  # the most histograms per tag and run drawn in the Histograms dashboard's offset view
PAGE_BYTES = 19_000_000  # the most bytes of scalars and media together (the rest of the page is under 1 MB)
MEDIA_MOST = 6_000_000  # images and audio get at least this much, where there are that many
POINT_BYTES = 22  # the bytes of a scalar point in the page: step f8, value f4 and wall f4, in base64


def _media_bytes(item: Tuple[int, Any]) -> int:
    return (len(item[1][1]) + 2) // 3 * 4 + 40  # the length of its data: URL


def _within(kept: Dict[Any, List[Tuple[int, Any]]], budget: int, left: List[str]) -> Dict[Any, List[Tuple[int, Any]]]:
    """The kept images and clips, thinned until their data: URLs fit in `budget` bytes.

    Items are dropped one at a time from the tag and run that has the most, whose first and last
    items stay longest. Where even the latest item of each would not fit, whole tags and runs are
    left out, the largest first."""
    out = {key: list(items) for key, items in kept.items()}
    total = sum(_media_bytes(item) for items in out.values() for item in items)
    dropped, gone_keys = 0, []
    while total > budget and out:
        key = max(out, key=lambda k: (len(out[k]), sum(_media_bytes(item) for item in out[k])))
        items = out[key]
        if len(items) < 2:  # one item each is left: the largest tag and run goes whole
            key = max(out, key=lambda k: _media_bytes(out[k][-1]))
            total -= _media_bytes(out.pop(key)[-1])
            gone_keys.append(key)
            continue
        total -= _media_bytes(items.pop(len(items) // 2 - 1 if len(items) > 2 else 0))
        dropped += 1
    if dropped or gone_keys:
        left.append("images and audio: %d more left out%s, so that the page stays under about 20 MB (%.1f MB of "
                    "them in the page)" % (dropped + len(gone_keys), "" if not gone_keys else ", and every one of %s"
                                           % ", ".join("%s %s of run %s" % key for key in gone_keys[:10])
                                           + (" and %d more" % (len(gone_keys) - 10) if len(gone_keys) > 10 else ""),
                                           total / 1e6))
    return out


def _said_kept(found: Collected, kind: str, kept: Dict[Any, List[Any]], left: List[str]) -> None:
    dropped = found.seen.get(kind, 0) - sum(len(items) for items in kept.values())
    if dropped > 0:
        left.append("%s: %d left out (at most %d per tag and run, the last always kept, as TensorBoard keeps them)"
                    % (kind.replace("_", " "), dropped, KEEP[kind]))


def _by_tag(kept: Dict[Tuple[str, str], List[Tuple[int, Any]]], entry: Callable[[int, Any], Dict[str, Any]],
            most: Optional[int] = None) -> Dict[str, Dict[str, List[Dict[str, Any]]]]:
    """{tag: {run: [entry(step, item) for each kept item]}}, with at most `most` items spread evenly."""
    out: Dict[str, Dict[str, List[Dict[str, Any]]]] = {}
    for (run, tag), items in sorted(kept.items()):
        if most is not None and len(items) > most:
            chosen = np.unique(np.round(np.linspace(0, len(items) - 1, most)).astype(int))
            items = [items[i] for i in chosen]
        out.setdefault(tag, {})[run] = [entry(step, item) for step, item in items]
    return out


def _data_url(mime: str, data: bytes) -> str:
    return "data:%s;base64,%s" % (mime, base64.b64encode(data).decode("ascii"))


def pr_entry(data: Any) -> Dict[str, Any]:
    """A PR curve's points as TensorBoard's PR curves plugin serves them (its `_make_pr_entry`):
    precision and recall at each threshold, without the thresholds at the tail that have no
    positive prediction (TP + FP = 0)."""
    positives = data[[0, 1], :].astype(int).sum(axis=0)  # TP, FP
    end = len(positives) - 1
    while end > 0 and positives[end] == 0:
        end -= 1
    thresholds = np.linspace(0.0, 1.0, data.shape[1])
    return {"precision": [_number(float(v)) for v in data[4, :end + 1]],
            "recall": [_number(float(v)) for v in data[5, :end + 1]],
            "thresholds": [float(v) for v in thresholds[:end + 1]]}


def left_out(found: Collected) -> List[Dict[str, Any]]:
    """What TensorBoard shows that the report does not: [{name, why, runs}]."""
    out = []
    for key, runs in sorted(found.left_out.items()):
        name, why = LEFT_OUT.get(key, ("the %s plugin" % key, "a dashboard the report does not draw"))
        out.append({"name": name, "why": why, "runs": sorted(runs)})
    return out


def command(logdir: str) -> str:
    """The command that shows the whole logdir: the bundled TensorBoard."""
    import shlex

    return "tensorboard --logdir %s" % shlex.quote(printable(logdir))


def _custom_scalars(found: Collected, tags: List[str], left: List[str]) -> List[Dict[str, Any]]:
    """The Custom Scalars layout with each multiline chart's regular expressions resolved into
    the scalar tags they match (re.match, as TensorBoard's plugin matches them)."""
    categories = []
    for category in found.layout:
        charts: List[Dict[str, Any]] = []
        for chart in category["charts"]:
            if "multiline" in chart:
                charts.append({"title": chart["title"], "tags": matching(chart["multiline"], tags, left.append)})
            else:
                charts.append(chart)
        categories.append({"title": category["title"], "closed": category["closed"], "charts": charts})
    return categories


def _hparams(found: Collected) -> Dict[str, Any]:
    names = sorted({name for values in found.hparams.values() for name in values})
    metrics = ["%s/%s" % (group, tag) if group else tag for group, tag in found.metrics]
    rows: List[List[Any]] = []
    for run, values in sorted(found.hparams.items()):
        final: List[Optional[float]] = []
        for group, tag in found.metrics:
            series = found.scalars.get(("%s/%s" % (run, group) if group else run, tag))
            final.append(float(series[1][-1]) if series is not None and len(series[1]) else None)
        rows.append([run] + [_number(values.get(name)) for name in names] + [_number(v) for v in final])
    return {"columns": ["run"] + names + metrics, "metrics": len(metrics), "rows": rows}


def summary(found: Collected, data: Dict[str, Any]) -> List[str]:
    """The lines the command prints on what it read and what it left out."""
    def tags(kind: str, items: Dict[Tuple[str, str], Any], unit: str) -> str:
        count = len({tag for _, tag in items})
        return "%s %d tag%s (%s %s)" % (kind, count, "" if count == 1 else "s",
                                        format(found.seen.get(unit, 0), ","), unit.replace("_", " "))
    parts = ["scalars %d tag%s (%s points)" % (len(data["scalars"]), "" if len(data["scalars"]) == 1 else "s",
                                                format(sum(len(s[0]) for s in found.scalars.values()), ","))]
    for kind, items, unit in (("histograms", found.histograms, "histograms"), ("images", found.images, "images"),
                              ("audio", found.audio, "audio"), ("text", found.texts, "text"),
                              ("PR curves", found.pr_curves, "pr_curves")):
        if items:
            parts.append(tags(kind, items, unit))
    if found.layout:
        parts.append("custom scalars %d charts" % sum(len(c["charts"]) for c in found.layout))
    if found.hparams:
        parts.append("hparams of %d run%s" % (len(found.hparams), "" if len(found.hparams) == 1 else "s"))
    lines = ["read %d run%s in %.1f s: %s" % (len(found.runs), "" if len(found.runs) == 1 else "s", found.seconds,
                                              ", ".join(parts))]
    for item in data["meta"]["left_out"]:
        lines.append("left out: %s (%s: %s): %s; shown by `%s`" % (
            item["name"], "run" if len(item["runs"]) == 1 else "runs", ", ".join(item["runs"]), item["why"],
            data["meta"]["command"]))
    return lines


def _hash(text: str) -> str:
    return "'sha256-%s'" % base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def render(found: Collected, logdir: str, max_points: int, version: str) -> Tuple[str, List[str]]:
    """The HTML, and the lines the command prints on what it read and what it left out."""
    pieces, said = rendered(found, logdir, max_points, version)
    return "".join(pieces), said


def rendered(found: Collected, logdir: str, max_points: int, version: str) -> Tuple[Iterator[str], List[str]]:
    """The HTML in pieces, and the lines the command prints. The data block is made as it is
    written, so that a report of many images is never held in memory twice."""
    data, left = _data(found, logdir, max_points, version)
    said = summary(found, data) + ["note: %s" % line for line in found.notes + left]
    scripts = [asset("uPlot.iife.min.js"), asset("app.js")]
    style = asset("uPlot.min.css") + "\n" + asset("app.css")
    policy = ("default-src 'none'; script-src %s; style-src %s; img-src data:; media-src data:; base-uri 'none'; "
              "form-action 'none'" % (" ".join(_hash(s) for s in scripts), _hash(style)))
    title = "mxboard report: %s" % printable(logdir)
    head = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"%s\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>%s</title>\n<style>%s</style>\n"
            "<script type=\"application/json\" id=\"data\">" % (html.escape(policy), html.escape(title), style))
    tail = ("</script>\n</head><body>\n<div id=\"app\"></div>\n%s\n</body></html>\n"
            % "\n".join("<script>%s</script>" % s for s in scripts))

    def pieces() -> Iterator[str]:
        yield head
        encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        for chunk in encoder.iterencode(data):
            yield chunk.replace("<", "\\u003c")  # names are the user's: none may close the block with `</script>`
        yield tail
    return pieces(), said
