"""Write what was collected as one self-contained HTML file of at most PAGE_BYTES.

The page holds the data as one JSON block (the scalar series as columns for all of them at once,
packed as base64 arrays, and thinned where long), the app (app.js, app.css) and uPlot inline. Its
Content-Security-Policy lets it fetch nothing: each script and style is allowed by its hash, and
images and audio only from data: URLs.
Every run's tag of every kind (a "unit") gets an equal share of the page, thinned to fit it
(`_allotted`); docs/report.md states the rule.

uPlot (https://github.com/leeoniya/uPlot, MIT; assets/uPlot.LICENSE) is vendored as released and
pinned by version and SHA-256 (`ASSETS`): a changed file is refused, never inlined."""
import base64
import binascii
import datetime
import functools
import hashlib
import html
import json
import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..errors import ReportError
from .collect import KEEP, LEFT_OUT, Collected, ScalarColumns, matching, printable

__all__ = ["ASSETS", "PAGE_BYTES", "UPLOT_VERSION", "asset", "downsampled", "render"]

UPLOT_VERSION = "1.6.32"
# File -> SHA-256: what npm's uplot@1.6.32 ships in dist/ (and its LICENSE).
ASSETS = {
    "uPlot.iife.min.js": "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f",
    "uPlot.min.css": "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04",
}
# The most bytes a page holds, whatever the logdir. A mail attachment is sent in base64, 4/3 of its
# size: 18 MB become 24 MB, within the common limit of 25 MB.
PAGE_BYTES = 18_000_000
# The histograms drawn per tag and run in the Histograms dashboard's offset view, and the bins each
# is drawn in (app.js draws what it is given).
OFFSET_VIEW = 50
HISTOGRAM_BINS = 30
# The bytes kept for the lines on what was thinned, which are made after the page's share-out.
_NOTES_RESERVE = 64_000
# The most bytes of each part of the page that is not a unit, and the most notes it shows (the
# command prints every one).
_PART_BYTES = {"runs": 1_000_000, "notes": 250_000, "left_out": 250_000, "hparams": 2_000_000,
               "custom_scalars": 1_000_000}
_NOTES = 100
_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets")
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def asset(name: str) -> str:
    """A vendored file's text, checked against its pinned hash."""
    with open(os.path.join(_HERE, name), "rb") as f:
        data = f.read()
    if name in ASSETS and hashlib.sha256(data).hexdigest() != ASSETS[name]:
        raise ReportError("mxboard's copy of %s is not uPlot %s's (its SHA-256 differs): reinstall mxboard"
                           % (name, UPLOT_VERSION))
    return data.decode("utf-8")


def downsampled(steps: Any, values: Any, walls: Any, most: int) -> Tuple[Any, Any, Any]:
    """At most `most` points of a series, for drawing.

    This is min/max decimation. The first and the last point are always kept; the points between
    them are cut into `(most - 2) / 2` stretches of neighbours, and each keeps its lowest and its
    highest point, in order. A spike is therefore never averaged away. With `most` 2 or 3, the
    first and the last point are kept; with `most` 1, the last."""
    n = len(steps)
    if n <= most:
        return steps, values, walls
    if most < 2:
        return steps[-1:], values[-1:], walls[-1:]
    kept, _ = _decimated(np.array([n]), np.array([most]), values)
    return steps[kept], values[kept], walls[kept]


def _first_per_stretch(found: Any, stretch: Any) -> Any:
    """The index of the first True of `found` in each run of equal `stretch` values."""
    at = np.flatnonzero(found)
    of = stretch[at]
    return at[np.concatenate(([True], of[1:] != of[:-1]))]


def _number(value: Any) -> Any:
    """A value for JSON. A non-finite float becomes its name (JSON has no NaN), a list or a dict
    (an hparam's ListValue or Struct) becomes its JSON text, and anything else stays as it is."""
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return value


def _json(value: Any) -> str:
    """`value` as the page's JSON: compact, and with no `<` (names are the user's: none may close
    the data block with `</script>`)."""
    return _ENCODER.encode(value).replace("<", "\\u003c")


@functools.lru_cache(maxsize=1 << 16)
def _name(name: str) -> str:
    """A run's or a tag's name as the page's JSON, made once for all the units that name it."""
    return _json(name)


@functools.lru_cache(maxsize=1 << 16)
def _name_size(name: str) -> int:
    """The bytes of `_name(name)`."""
    return _size(_name(name))


def _size(text: str) -> int:
    """The bytes of `text` in UTF-8."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _packed(array: Any, dtype: str) -> str:
    return binascii.b2a_base64(np.ascontiguousarray(array, dtype=dtype).tobytes(), newline=False).decode("ascii")


def _base64_size(count: int) -> int:
    return (count + 2) // 3 * 4


def _spread(total: int, count: int) -> Any:
    """The indices of `count` of `total` items in step order, spread evenly: the first and the
    last are kept, and one item is the last."""
    if count >= total:
        return np.arange(total)
    if count <= 1:
        return np.array([total - 1])
    return np.round(np.linspace(0, total - 1, count)).astype(np.int64)


class _Unit:
    """One run's tag of one kind, as the page holds it: `count` of its `most` items (the points of
    a scalar series; the images, clips, texts, histograms, steps of a distribution or PR curves
    of the others), at least `least`. `size(count)` bounds its bytes in the page, its keys
    included, from above."""

    kind = ""
    most = 0
    least = 0

    def __init__(self, run: str, tag: str) -> None:
        self.run, self.tag = run, tag
        # Its keys in the page: the tag's and the run's, with their colons, braces and commas.
        self.keys = _name_size(tag) + _name_size(run) + 6

    def size(self, count: int) -> int:
        raise NotImplementedError

    def json(self, count: int) -> str:
        raise NotImplementedError

    def fit(self, allotted: int) -> int:
        """The most items whose page fits in `allotted` bytes (at least `least`)."""
        if self.most <= self.least or self.size(self.most) <= allotted:
            return self.most
        low, high = self.least, self.most - 1
        # A guess from the unit's mean item, checked; a binary search where it is wrong.
        per_item = max((self.size(self.most) - self.size(self.least)) / max(self.most - self.least, 1), 1.0)
        guess = min(max(self.least + int((allotted - self.size(self.least)) / per_item), low), high)
        if self.size(guess) <= allotted and (guess == high or self.size(guess + 1) > allotted):
            return guess
        while low < high:
            middle = (low + high + 1) // 2
            if self.size(middle) <= allotted:
                low = middle
            else:
                high = middle - 1
        # The sizes of spread choices need not grow with their count: step down to one that fits.
        while low > self.least and self.size(low) > allotted:
            low -= 1
        return low


class _Scalars:
    """Every scalar series of the page, as one block of columns: each series a unit, in the
    page's order (tag, then run), all handled at once, so that the page's work grows with the
    points it holds and not with the number of series.

    In the page, a column holds one value a series (its run's and tag's numbers in `runs` and
    `tags`, its points, its wall times' start, the points drawn) or one a drawn point (step f8,
    value f4, wall time f4 from its series' start), each packed as base64. `sizes(at, counts)`
    bounds the bytes of the series at `at`, each drawn from `counts` points, from above; the
    block's own keys and the base64 padding are `fixed`."""

    # A series' bytes in the page: its five numbers (u4, u4, u4, f8, u4) are 24 bytes, 32 in base64.
    SERIES_BYTES = 32
    # A drawn point's: 16 bytes (f8, f4, f4), 64/3 in base64.
    POINT_BYTES = 16
    COLUMNS = ("run", "tag", "points", "start", "count", "step", "value", "wall")
    # The series are drawn in slices of about this many points, each slice at once.
    BATCH = 1 << 18

    def __init__(self, scalars: Mapping[Tuple[str, str], Tuple[Any, Any, Any]], max_points: int) -> None:
        # collect() gives columns; a mapping of series (a test's) is read series by series.
        self.columns = scalars if isinstance(scalars, ScalarColumns) else None
        self.names = list(scalars) if self.columns is None else self.columns.names
        self.listed = [scalars[name] for name in self.names] if self.columns is None else []
        self.runs: Dict[str, int] = {}
        self.tags: Dict[str, int] = {}
        runs, tags = [], []
        for run, tag in self.names:
            runs.append(self.runs.setdefault(run, len(self.runs)))
            tags.append(self.tags.setdefault(tag, len(self.tags)))
        # The page's order: by tag, then by run (each name's rank among its kind's sorted names).
        run_rank, tag_rank = _ranks(self.runs), _ranks(self.tags)
        self.order = np.lexsort((run_rank[runs], tag_rank[tags])) if runs else np.zeros(0, np.int64)
        self.run_of = np.array(runs, np.int64)[self.order]
        self.tag_of = np.array(tags, np.int64)[self.order]
        bounds = (self.columns.bounds if self.columns is not None else
                  np.concatenate(([0], np.cumsum([len(steps) for steps, _, _ in self.listed], dtype=np.int64))))
        self.begin = bounds[:-1][self.order]
        self.total = (bounds[1:] - bounds[:-1])[self.order]
        self.most = np.minimum(self.total, max_points)
        self.least = np.minimum(self.total, 2)
        # Wall times are packed from the first (a first that is not finite packs them as they are).
        firsts = np.zeros(len(self.total))
        some = self.total > 0
        if self.columns is not None:
            firsts[some] = self.columns.wall[self.begin[some]]
        else:
            firsts[some] = [self.listed[i][2][0] for i in self.order[some].tolist()]
        self.start = np.where(np.isfinite(firsts), firsts, 0.0)
        # Each name's bytes in its list, with its comma.
        run_bytes = np.array([_name_size(run) + 1 for run in self.runs], np.int64)
        tag_bytes = np.array([_name_size(tag) + 1 for tag in self.tags], np.int64)
        # A name is written once, for all its series. While every series is in the page, each
        # pays its share of its names; where some are left out, each pays its names whole (a bound
        # from above whichever series stay).
        self.named_whole = run_bytes[self.run_of] + tag_bytes[self.tag_of]
        self.named_shared = self.named_whole.copy()
        if len(self.order):
            self.named_shared = (_shares(run_bytes, np.bincount(self.run_of))[self.run_of]
                                 + _shares(tag_bytes, np.bincount(self.tag_of))[self.tag_of])
        self.named = self.named_shared
        self.fixed = len('{"runs":[],"tags":[],' + ",".join('"%s":""' % c for c in self.COLUMNS) + "}") + 4 * 8

    def __len__(self) -> int:
        return len(self.order)

    def named_at(self, at: Any) -> List[Tuple[str, str]]:
        """The (run, tag) of the series at `at`."""
        return [self.names[i] for i in self.order[at].tolist()]

    def shared_names(self, shared: bool) -> None:
        """Bound the names' bytes by shares (every series in the page) or whole (some left out)."""
        self.named = self.named_shared if shared else self.named_whole

    def drawn(self, at: Any, counts: Any) -> Any:
        """The points `downsampled` keeps of the series at `at` at `counts`: the first, the last,
        and two of each stretch between them (every stretch has two points or more)."""
        counts = np.asarray(counts, np.int64)
        return np.where(counts >= self.total[at], self.total[at],
                        np.where(counts < 2, np.minimum(counts, 1), 2 + 2 * ((counts - 2) // 2)))

    def sizes(self, at: Any, counts: Any) -> Any:
        return (self.SERIES_BYTES + self.named[at]
                + -(-self.drawn(at, counts) * self.POINT_BYTES * 4 // 3))

    def fit(self, at: Any, allotted: Any) -> Any:
        """The most points of each series at `at` whose bytes fit in its `allotted` (at least its
        least): as many as the room left by its own bytes holds at 64/3 bytes a point, which fit
        (a series draws no more points than its count), and one more where that draws no more."""
        room = np.asarray(allotted, np.int64) - self.SERIES_BYTES - self.named[at]
        counts = np.clip(room * 3 // (self.POINT_BYTES * 4), self.least[at], self.most[at])
        more = (counts < self.most[at]) & (self.sizes(at, counts + 1) <= allotted)
        return np.where(more, counts + 1, counts)

    def json(self, counts: Any) -> str:
        """The page's JSON of the series, each drawn from `counts` points (0: left out)."""
        counts = np.asarray(counts, np.int64)
        chosen = np.flatnonzero(counts > 0)
        columns: Dict[str, List[Any]] = {"step": [], "value": [], "wall": []}
        drawn = np.zeros(len(chosen), np.int64)
        for batch in _batches(self.total[chosen], self.BATCH):
            at = chosen[batch]
            steps, values, walls = self._gathered(at)
            kept, of = _decimated(self.total[at], counts[at], values)
            columns["step"].append(steps[kept])
            columns["value"].append(values[kept].astype(np.float32))
            columns["wall"].append((walls[kept] - self.start[at][of]).astype(np.float32))
            drawn[batch] = np.bincount(of, minlength=len(at))
        runs = {number: run for run, number in self.runs.items()}
        tags = {number: tag for tag, number in self.tags.items()}
        # The names of the series in the page only, renumbered in their order.
        run_names, run_of = np.unique(self.run_of[chosen], return_inverse=True)
        tag_names, tag_of = np.unique(self.tag_of[chosen], return_inverse=True)
        packed = {"run": _packed(run_of, "<u4"), "tag": _packed(tag_of, "<u4"),
                  "points": _packed(self.total[chosen], "<u4"), "start": _packed(self.start[chosen], "<f8"),
                  "count": _packed(drawn, "<u4"),
                  "step": _packed(_joined(columns["step"], np.float64), "<f8"),
                  "value": _packed(_joined(columns["value"], np.float32), "<f4"),
                  "wall": _packed(_joined(columns["wall"], np.float32), "<f4")}
        return '{"runs":[%s],"tags":[%s],%s}' % (
            ",".join(_name(runs[n]) for n in run_names.tolist()), ",".join(_name(tags[n]) for n in tag_names.tolist()),
            ",".join('"%s":"%s"' % (column, packed[column]) for column in self.COLUMNS))

    def _gathered(self, at: Any) -> Tuple[Any, Any, Any]:
        """The steps, values and walls of the series at `at`, joined in their order."""
        if self.columns is None:
            chosen = [self.listed[i] for i in self.order[at].tolist()]
            steps, values, walls = (np.concatenate([np.asarray(series[k]) for series in chosen]) for k in range(3))
            return steps, values, walls
        lengths = self.total[at]
        # Each point's index in the columns: its series' first, plus its place in the series.
        ends = np.cumsum(lengths)
        points = np.arange(int(ends[-1]) if len(ends) else 0) + np.repeat(self.begin[at] - (ends - lengths), lengths)
        return self.columns.step[points], self.columns.value[points], self.columns.wall[points]


def _ranks(names: Dict[str, int]) -> Any:
    """Each name's rank among the sorted names, by its number."""
    ranks = np.zeros(len(names), np.int64)
    ranks[[names[name] for name in sorted(names)]] = np.arange(len(names))
    return ranks


def _shares(size: Any, among: Any) -> Any:
    """`size` shared `among` so many, each share rounded up."""
    return -(-size // among)


def _batches(lengths: Any, most: int) -> List[Any]:
    """Consecutive slices of the series, each of those that start within one stretch of `most`
    points: about `most` points a slice, more where a series is longer."""
    if not len(lengths):
        return []
    begins = (np.cumsum(lengths) - lengths) // most
    cuts = np.flatnonzero(begins[1:] != begins[:-1]) + 1
    edges = [0] + cuts.tolist() + [len(lengths)]
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]


def _joined(chunks: List[Any], dtype: Any) -> Any:
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype)


def _decimated(lengths: Any, counts: Any, values: Any) -> Tuple[Any, Any]:
    """`downsampled` of many series at once, whose values are joined in `values`: (the indices
    kept, in order, and the number of the series of each, from 0).

    A series drawn whole keeps every point. Any other keeps its first and its last, and its
    points between are cut into (count - 2) / 2 stretches of neighbours, numbered across the
    series so that one minimum and one maximum a stretch (numpy's reduceat) serve them all."""
    m = len(lengths)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    of_point = np.repeat(np.arange(m), lengths)
    first = np.zeros(len(values), bool)
    first[offsets[:-1][lengths > 0]] = True
    last = np.zeros(len(values), bool)
    last[offsets[1:][lengths > 0] - 1] = True
    whole = counts >= lengths
    keep = whole[of_point] | last
    # A series drawn from one point keeps its last; from two or more, its first too.
    keep |= first & (counts >= 2)[of_point]
    stretches = np.where(whole, 0, np.maximum(counts - 2, 0) // 2)
    inner = ~first & ~last & (stretches > 0)[of_point]
    if inner.any():
        at = np.flatnonzero(inner)
        series = of_point[at]
        # A point's stretch: floor(its place among the series' inner points x stretches / inner points).
        place = at - offsets[series] - 1
        first_stretch = np.concatenate(([0], np.cumsum(stretches)))[series]
        stretch = first_stretch + place * stretches[series] // (lengths[series] - 2)
        between = values[at]
        if np.isnan(between).any():
            between = np.where(np.isnan(between), np.inf, between)
        # Every stretch holds a point or more, so the stretches' numbers index their minima.
        starts = np.flatnonzero(np.concatenate(([True], stretch[1:] != stretch[:-1])))
        lowest = _first_per_stretch(between == np.minimum.reduceat(between, starts)[stretch], stretch)
        highest = len(at) - 1 - _first_per_stretch((between == np.maximum.reduceat(between, starts)[stretch])[::-1],
                                                   stretch[::-1])
        keep[at[lowest]] = True
        keep[at[highest]] = True
    kept = np.flatnonzero(keep)
    return kept, of_point[kept]


class _Items(_Unit):
    """The kept items of one run's tag (images, clips, texts, histograms, distribution steps, PR
    curves): `sizes` bounds each item's bytes with its separator, `fixed` the rest, and `made`
    makes the page's JSON of the chosen items."""

    def __init__(self, kind: str, run: str, tag: str, items: Sequence[Any], sizes: Sequence[int], fixed: int,
                 made: Callable[[List[Any]], str]) -> None:
        super().__init__(run, tag)
        self.kind, self.items, self.made = kind, items, made
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.fixed = self.keys + fixed
        self.most = len(items)
        self.least = min(len(items), 1)

    def size(self, count: int) -> int:
        return self.fixed + int(self.sizes[_spread(self.most, count)].sum())

    def json(self, count: int) -> str:
        return self.made([self.items[i] for i in _spread(self.most, count).tolist()])


def _listed(kind: str, run: str, tag: str, entries: List[str]) -> _Items:
    """A unit whose page is a list of JSON entries, made already."""
    return _Items(kind, run, tag, entries, [_size(e) + 1 for e in entries], 2, lambda chosen: "[%s]" % ",".join(chosen))


def _media(kind: str, run: str, tag: str, items: List[Tuple[int, Any]]) -> _Items:
    """An image's or a clip's unit. Its data: URLs are made as the page is written, so that the
    logdir's media are never held twice."""
    def entry(step: int, item: Any) -> Dict[str, Any]:
        out = {"step": step, "src": _data_url(item[0], item[1])}
        if kind == "audio":
            out["label"] = item[2]
        return out

    def size(step: int, item: Any) -> int:
        label = ',"label":' + _json(item[2]) if kind == "audio" else ""
        return (len('{"step":,"src":""},') + len(str(step)) + _size(_json("data:%s;base64," % item[0])) - 2
                + _base64_size(len(item[1])) + _size(label))

    return _Items(kind, run, tag, items, [size(step, item) for step, item in items], 2,
                  lambda chosen: "[%s]" % ",".join(_json(entry(step, item)) for step, item in chosen))


def _histograms(run: str, tag: str, kept: List[Tuple[int, Any]]) -> _Items:
    """The offset view's unit: at most OFFSET_VIEW of the kept histograms (spread over the steps,
    the last always), each rebinned into the HISTOGRAM_BINS equal bins over their common range that
    the page draws, counts preserved."""
    chosen = [kept[i] for i in _spread(len(kept), OFFSET_VIEW).tolist()]
    lo, hi = _common_range([buckets for _, (_, buckets) in chosen])
    entries = [_json({"step": step, "counts": _numbers(_rebinned(buckets, lo, hi, HISTOGRAM_BINS))})
               for step, (_, buckets) in chosen]
    head = '{"lo":%s,"hi":%s,"items":[' % (_json(lo), _json(hi))
    return _Items("histograms", run, tag, entries, [_size(e) + 1 for e in entries], len(head) + 2,
                  lambda picked: head + ",".join(picked) + "]}")


def _common_range(histograms: List[Any]) -> Tuple[float, float]:
    """The range the offset view draws histograms over: from the least finite left edge to the
    greatest finite right edge (a range of no width is widened to 1)."""
    lefts = np.concatenate([h[:, 0] for h in histograms])
    rights = np.concatenate([h[:, 1] for h in histograms])
    lefts, rights = lefts[np.isfinite(lefts)], rights[np.isfinite(rights)]
    lo = float(lefts.min()) if len(lefts) else 0.0
    hi = float(rights.max()) if len(rights) else lo + 1.0
    if not hi > lo:
        hi = lo + 1.0
    return lo, hi


def _rebinned(buckets: Any, lo: float, hi: float, bins: int) -> Any:
    """A histogram's (k, 3) buckets as the counts of `bins` equal bins over [lo, hi], as
    TensorBoard's histogram view rebins: each bucket is cut to the range, and its count shared by
    the bins it overlaps in proportion to the overlap. A bucket of no width gives its count to the
    bin that holds it, and a count that is zero or not finite is skipped."""
    left, right, counts = np.maximum(buckets[:, 0], lo), np.minimum(buckets[:, 1], hi), buckets[:, 2]
    width = (hi - lo) / bins
    used = np.isfinite(counts) & (counts != 0) & np.isfinite(left) & np.isfinite(right)
    out = np.zeros(bins)
    point = used & ~(right > left)
    if point.any():
        where = np.clip(np.floor((left[point] - lo) / width), 0, bins - 1).astype(np.int64)
        np.add.at(out, where, counts[point])
    wide = used & (right > left)
    if wide.any():
        lefts, rights = left[wide], right[wide]
        edges = lo + np.arange(bins + 1) * width
        # Each bucket's share below each edge: the count up to an edge, whose differences are the bins'.
        below = np.clip((edges[None, :] - lefts[:, None]) / (rights - lefts)[:, None], 0.0, 1.0)
        out += np.diff(counts[wide] @ below)
    return out


def _distribution(run: str, tag: str, rows: List[Tuple[int, float, List[float]]]) -> _Items:
    """The Distributions unit: a step's row is its step, its wall time and its nine percentiles,
    written as columns (step, wall, bands)."""
    cells = [[step, _number(wall)] + [_number(v) for v in values] for step, wall, values in rows]
    # Each of a row's 11 values, and its comma.
    sizes = [sum(_size(_json(v)) for v in cell) + len(cell) for cell in cells]

    def made(chosen: List[List[Any]]) -> str:
        return _json({"step": [c[0] for c in chosen], "wall": [c[1] for c in chosen],
                      "bands": [[c[2 + i] for c in chosen] for i in range(9)]})

    return _Items("distributions", run, tag, cells, sizes, len(made([])), made)


def _units(found: Collected) -> List[_Unit]:
    """Every unit of the page but the scalar series (`_Scalars`), in the page's order: kind, then
    tag, then run."""
    units: List[_Unit] = []
    units.extend(_media("images", run, tag, items) for (run, tag), items in _by_tag(found.images))
    units.extend(_media("audio", run, tag, items) for (run, tag), items in _by_tag(found.audio))
    if found.texts:
        # Text as TensorBoard's text plugin serves it (markdown on, as its dashboard asks by default).
        from tensorboard.plugins.text.text_plugin import text_array_to_html

        for (run, tag), items in _by_tag(found.texts):
            units.append(_listed("texts", run, tag, [_json({"step": step, "html": text_array_to_html(text, True)})
                                                     for step, text in items]))
    units.extend(_histograms(run, tag, items) for (run, tag), items in _by_tag(found.histograms))
    units.extend(_distribution(run, tag, rows) for (run, tag), rows in _by_tag(found.bands) if rows)
    units.extend(_listed("pr_curves", run, tag, [_json(dict(step=step, **pr_entry(item[1]))) for step, item in items])
                 for (run, tag), items in _by_tag(found.pr_curves))
    return units


def _by_tag(kept: Dict[Tuple[str, str], Any]) -> List[Tuple[Tuple[str, str], Any]]:
    return sorted(kept.items(), key=lambda item: (item[0][1], item[0][0]))


class _Listed:
    """The units of the page's other kinds, as a block like `_Scalars`: each asked in turn."""

    def __init__(self, units: List[_Unit]) -> None:
        self.units = units
        self.most = np.array([u.most for u in units], np.int64)
        self.least = np.array([u.least for u in units], np.int64)

    def __len__(self) -> int:
        return len(self.units)

    def sizes(self, at: Any, counts: Any) -> Any:
        return np.array([self.units[i].size(c) for i, c in zip(np.asarray(at).tolist(), np.asarray(counts).tolist())],
                        np.int64)

    def fit(self, at: Any, allotted: Any) -> Any:
        return np.array([self.units[i].fit(a) for i, a in zip(np.asarray(at).tolist(), np.asarray(allotted).tolist())],
                        np.int64)


_Block = Any


def _allotted(blocks: List[_Block], budget: int) -> List[Any]:
    """How many items each unit of each block keeps (0: left out), so that together they fit in
    `budget` bytes: an array a block.

    Each unit gets an equal share: the most the units can all have, where a unit that needs less
    leaves the rest to the others, and none gets less than its least (its first and last point,
    or its latest item). Where even the least of every unit would not fit, units are left out
    whole, the largest first (of equal ones, the last in the page's order). It takes time linear
    in the units, apart from one sort where some are left out, and each block is asked for the
    sizes and fits of all its units at once."""
    bounds = np.cumsum([0] + [len(b) for b in blocks])
    n = int(bounds[-1])

    def asked(ask: Callable[[_Block, Any, Any], Any], at: Any, values: Any) -> Any:
        return _asked(blocks, bounds, ask, at, values)

    everyone = np.arange(n)
    counts = np.concatenate([b.most for b in blocks]) if n else np.zeros(0, np.int64)
    most = asked(lambda b, at, c: b.sizes(at, c), everyone, counts)
    if n == 0 or most.sum() <= budget:
        return [counts[bounds[b]:bounds[b + 1]] for b in range(len(blocks))]
    least_counts = np.concatenate([b.least for b in blocks])
    least = asked(lambda b, at, c: b.sizes(at, c), everyone, least_counts)
    kept = np.ones(n, bool)
    if least.sum() > budget:
        order = np.lexsort((-np.arange(n), -least))
        gone = order[:int(np.searchsorted(np.cumsum(least[order]), least.sum() - budget)) + 1]
        kept[gone] = False
        counts[gone] = 0
    # Two rounds: the second shares what the first left (each unit rounds its share down to a
    # whole item) among the units still thinned.
    floor = least.copy()
    for _ in range(2):
        level = _level(floor[kept], most[kept], budget)
        thinned = np.flatnonzero(kept & (floor < most))
        share = np.minimum(most[thinned], np.maximum(floor[thinned], level))
        counts[thinned] = asked(lambda b, at, a: b.fit(at, a), thinned, share)
        used = floor.copy()
        used[thinned] = asked(lambda b, at, c: b.sizes(at, c), thinned, counts[thinned])
        floor = used
    # What is left still (each share rounded down to whole items) gives one more item to each
    # thinned unit in the page's order, while it lasts.
    thinned = np.flatnonzero(kept & (floor < most))
    grown = asked(lambda b, at, c: b.sizes(at, c), thinned, counts[thinned] + 1) - floor[thinned]
    _one_more(counts, thinned, grown, budget - int(floor[kept].sum()))
    return [counts[bounds[b]:bounds[b + 1]] for b in range(len(blocks))]


def _asked(blocks: List[_Block], bounds: Any, ask: Callable[[_Block, Any, Any], Any], at: Any, values: Any) -> Any:
    """`ask(block, its units among at, their values)` of each block at once, for the units `at`
    (indices into all units, `bounds` each block's first)."""
    out = np.zeros(len(at), np.int64)
    for b, block in enumerate(blocks):
        mine = (at >= bounds[b]) & (at < bounds[b + 1])
        if mine.any():
            out[mine] = ask(block, at[mine] - bounds[b], values[mine])
    return out


def _one_more(counts: Any, thinned: Any, grown: Any, spare: int) -> None:
    """One more item in `counts` for each of the `thinned` units in order, each costing its
    `grown` bytes, while `spare` lasts: the units whose item fits in what is left, taken by runs
    (a run's sum fits, its next does not and is passed over)."""
    while spare > 0 and len(thinned):
        total = np.cumsum(grown)
        taken = int(np.searchsorted(total, spare, side="right"))
        counts[thinned[:taken]] += 1
        spare -= int(total[taken - 1]) if taken else 0
        thinned, grown = thinned[taken + 1:], grown[taken + 1:]
        fits = grown <= spare
        thinned, grown = thinned[fits], grown[fits]


def _level(least: Any, most: Any, budget: int) -> int:
    """The greatest share such that the units' sizes (each its share, within its least and its
    most) fit in `budget`, found by halving (each step linear in the units)."""
    low, high = 0, int(most.max()) if len(most) else 0
    while low < high:
        middle = (low + high + 1) // 2
        if int(np.clip(middle, least, most).sum()) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


NOUNS = {"scalars": "points", "images": "images", "audio": "clips", "texts": "texts",
         "histograms": "histograms (offset view)", "distributions": "steps of distributions",
         "pr_curves": "PR curves"}


def _said_thinned(scalars: _Scalars, series_counts: Any, units: List[_Unit], counts: Any, max_points: int
                  ) -> List[str]:
    """The lines on what the page's bound thinned or left out, a few for each kind."""
    bound = "so that the page stays within its bound of %d MB" % (PAGE_BYTES // 1_000_000)
    lines = []
    every = np.arange(len(scalars))
    capped = int(((series_counts == scalars.most) & (scalars.total > scalars.most)).sum())
    if capped:
        lines.append("scalars: %d of %d series had more than %d points: drawn from %d of them (the lowest and the "
                     "highest of each stretch kept: --max-points draws more)" % (capped, len(scalars), max_points,
                                                                                 max_points))
    thinned = every[(series_counts > 0) & (series_counts < scalars.most)]
    if len(thinned):
        drawn = scalars.drawn(thinned, series_counts[thinned])
        lines.append("scalars: %d of %d series drawn from fewer points, %d to %d each (the first and the last, and the "
                     "lowest and the highest of each stretch, kept), %s: each series has an equal share of it"
                     % (len(thinned), len(scalars), drawn.min(), drawn.max(), bound))
    gone = scalars.named_at(np.flatnonzero(series_counts == 0))
    lines.extend(_said_gone("scalars", gone, len(scalars), bound))
    by_kind: Dict[str, List[Tuple[_Unit, int]]] = {kind: [] for kind in NOUNS}
    for unit, count in zip(units, np.asarray(counts).tolist()):
        by_kind[unit.kind].append((unit, count))
    for kind in NOUNS:
        mine = by_kind[kind]
        shorter = [(u, c) for u, c in mine if 0 < c < u.most]
        if shorter:
            lines.append("%s: %d of %d %s left out in %d of %d tags and runs, %s (each tag and run keeps its latest)"
                         % (kind.replace("_", " "), sum(u.most - c for u, c in shorter), sum(u.most for u, _ in mine),
                            NOUNS[kind], len(shorter), len(mine), bound))
        lines.extend(_said_gone(kind, [(u.run, u.tag) for u, c in mine if c == 0], len(mine), bound))
    return lines


def _said_gone(kind: str, gone: List[Tuple[str, str]], count: int, bound: str) -> List[str]:
    """The line on the units of a kind left out whole (of `count`), the first ten named."""
    if not gone:
        return []
    names = ", ".join("tag %s of run %s" % (_short(tag), _short(run)) for run, tag in gone[:10])
    return ["%s: %d of %d %s left out whole, %s (even the least of each would pass it): %s%s"
            % (kind.replace("_", " "), len(gone), count, "series" if kind == "scalars" else "tags and runs", bound,
               names, " and %d more" % (len(gone) - 10) if len(gone) > 10 else "")]


def _short(name: str) -> str:
    return name if len(name) <= 60 else name[:57] + "..."


def _data(found: Collected, logdir: str, max_points: int, version: str, skeleton: int
          ) -> Tuple[Dict[str, Any], List[str]]:
    """The page's data, and the lines on what was left out, which the command prints. `skeleton`
    is the bytes of the page that are not its data block."""
    left: List[str] = []
    for kind, kept in (("images", found.images), ("audio", found.audio), ("text", found.texts),
                       ("histograms", found.histograms), ("pr_curves", found.pr_curves)):
        _said_kept(found, kind, kept, left)
    if any(len(items) > OFFSET_VIEW for items in found.histograms.values()):
        left.append("histograms: the offset view draws %d histograms per tag and run (spread over the steps, the last "
                    "always); Distributions draws every kept one" % OFFSET_VIEW)
    scalars, units = _Scalars(found.scalars, max_points), _units(found)
    custom = _custom_scalars(found, sorted(scalars.tags), left)
    parts, trimmed = _parts(found, logdir, version, custom, left)
    # The units share what the rest of the page leaves.
    rest = skeleton + _size(_json(parts)) + _NOTES_RESERVE + 200 + scalars.fixed
    blocks = [scalars, _Listed(units)]
    series_counts, counts = _allotted(blocks, PAGE_BYTES - rest)
    if (series_counts == 0).any():
        # Some series are left out: their names' bytes are bounded whole, and the share-out made again.
        scalars.shared_names(False)
        series_counts, counts = _allotted(blocks, PAGE_BYTES - rest)
    thinned = _said_thinned(scalars, series_counts, units, counts, max_points)
    left.extend(thinned + trimmed)
    parts["meta"]["notes"] = parts["meta"]["notes"] + [_short_note(line) for line in thinned + trimmed]
    data: Dict[str, Any] = {"meta": parts["meta"], "scalars": {}, "images": {}, "audio": {}, "texts": {},
                            "histograms": {}, "distributions": {}, "pr_curves": {},
                            "custom_scalars": parts["custom_scalars"], "hparams": parts["hparams"]}
    if (series_counts > 0).any():
        data["scalars"] = _Placed(functools.partial(scalars.json, series_counts))
    for unit, count in zip(units, counts.tolist()):
        if count > 0:
            data[unit.kind].setdefault(unit.tag, {})[unit.run] = _Placed(functools.partial(unit.json, count))
    return data, left


def _short_note(line: str) -> str:
    return line if len(line) <= 1000 else line[:997] + "..."


def _parts(found: Collected, logdir: str, version: str, custom: List[Dict[str, Any]], left: List[str]
           ) -> Tuple[Dict[str, Any], List[str]]:
    """The page's parts that are not units (the header's facts and notes, what was left out, the
    hparams table, the Custom Scalars layout), each within its share (`_PART_BYTES`): a part
    over it keeps what fits, and a line says what it left out."""
    said: List[str] = []
    notes = [_short_note(line) for line in found.notes + left]
    shown_notes = notes[:_first_fitting(notes[:_NOTES], _PART_BYTES["notes"])]
    if len(shown_notes) < len(notes):
        shown_notes.append("and %d more notes: the command printed every one" % (len(notes) - len(shown_notes)))
    runs = found.runs[:_first_fitting(found.runs, _PART_BYTES["runs"])]
    if len(runs) < len(found.runs):
        said.append("runs: the header names %d of the %d runs" % (len(runs), len(found.runs)))
    items = left_out(found)
    for item in items:
        if len(item["runs"]) > 20:
            item["runs"] = item["runs"][:20] + ["and %d more" % (len(item["runs"]) - 20)]
    items = items[:_first_fitting(items, _PART_BYTES["left_out"])]
    hparams = _hparams(found)
    rows = _first_fitting(hparams["rows"], _PART_BYTES["hparams"] - _size(_json(hparams["columns"])))
    if rows < len(hparams["rows"]):
        said.append("hparams: the table shows %d of the %d runs" % (rows, len(hparams["rows"])))
        hparams = dict(hparams, rows=hparams["rows"][:rows]) if rows else {"columns": [], "metrics": 0, "rows": []}
    charts = _first_fitting(custom, _PART_BYTES["custom_scalars"])
    if charts < len(custom):
        said.append("custom scalars: %d of the %d categories are shown" % (charts, len(custom)))
    meta = {"logdir": printable(logdir), "made": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "version": version, "runs": runs, "notes": shown_notes, "left_out": items, "command": command(logdir)}
    return {"meta": meta, "hparams": hparams, "custom_scalars": custom[:charts]}, said


def _first_fitting(items: List[Any], most: int) -> int:
    """How many of `items`, from the first, fit in `most` bytes of JSON."""
    total = 0
    for i, item in enumerate(items):
        total += _size(_json(item)) + 1
        if total > most:
            return i
    return len(items)


class _Placed:
    """A part of the page's data (a unit, or the block of scalar series), made into JSON only as
    the page is written."""

    __slots__ = ("made",)

    def __init__(self, made: Callable[[], str]) -> None:
        self.made = made


def _emitted(value: Any) -> Iterator[str]:
    """The page's JSON of `value`, in pieces: each unit's as it is made."""
    if isinstance(value, _Placed):
        yield value.made()
    elif isinstance(value, dict):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield ("," if i else "") + _name(key) + ":"
            yield from _emitted(item)
        yield "}"
    else:
        yield _json(value)


def _said_kept(found: Collected, kind: str, kept: Dict[Any, List[Any]], left: List[str]) -> None:
    dropped = found.seen.get(kind, 0) - sum(len(items) for items in kept.values())
    if dropped > 0:
        left.append("%s: %d left out (at most %d per tag and run, the last always kept, as TensorBoard keeps them)"
                    % (kind.replace("_", " "), dropped, KEEP[kind]))


def _data_url(mime: str, data: bytes) -> str:
    return "data:%s;base64,%s" % (mime, base64.b64encode(data).decode("ascii"))


def pr_entry(data: Any) -> Dict[str, Any]:
    """A PR curve's points as TensorBoard's PR curves plugin serves them (its `_make_pr_entry`):
    precision and recall at each threshold, without the thresholds at the tail that have no
    positive prediction (TP + FP = 0)."""
    # TP and FP.
    positives = data[[0, 1], :].astype(int).sum(axis=0)
    end = len(positives) - 1
    while end > 0 and positives[end] == 0:
        end -= 1
    thresholds = np.linspace(0.0, 1.0, data.shape[1])
    return {"precision": _numbers(data[4, :end + 1]), "recall": _numbers(data[5, :end + 1]),
            "thresholds": thresholds[:end + 1].tolist()}


def _numbers(values: Any) -> List[Any]:
    """A numeric array as a list for JSON: floats, with the name of any that is not finite."""
    values = np.asarray(values, dtype=np.float64)
    if np.isfinite(values).all():
        return [float(v) for v in values.tolist()]
    return [_number(v) for v in values.tolist()]


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
    scalar_tags = len({tag for _, tag in found.scalars})
    points = found.scalars.points if isinstance(found.scalars, ScalarColumns) else sum(
        len(s[0]) for s in found.scalars.values())
    parts = ["scalars %d tag%s (%s points)" % (scalar_tags, "" if scalar_tags == 1 else "s", format(points, ","))]
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
    for item in left_out(found):
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
    """The HTML in pieces, at most PAGE_BYTES in all, and the lines the command prints. The data
    block is made as it is written, so that a report of many images is never held in memory twice."""
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
    data, left = _data(found, logdir, max_points, version, _size(head) + _size(tail))
    said = summary(found, data) + ["note: %s" % line for line in found.notes + left]

    def pieces() -> Iterator[str]:
        yield head
        yield from _emitted(data)
        yield tail
    return pieces(), said
