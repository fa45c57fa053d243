"""Histograms, written in the `histo` form (a HistogramProto) that every reader reads: both
TensorBoard loaders (which turn it into the histograms plugin's buckets: lefts `[min] +
limits[:-1]`, rights `limits[:-1] + [max]`), EventAccumulator's `Histograms()`, tbparse,
tensorboardX's and torch's files alike. Buckets are built as (k, 3) [left edge, right edge,
count] arrays, contiguous, so the form holds them exactly."""
import functools
import warnings
from typing import Any, Callable, List, Optional, Tuple

import numpy as np
from numpy.typing import NDArray

from ..proto import HistogramProto, Message
from ._common import summary

__all__ = ["default_bucket_counts", "default_bucket_limits", "default_edges", "default_layout", "histogram_buckets",
           "histogram_summary", "histogram_of", "histogram_raw_summary", "moments", "rounded_up", "trimmed_buckets"]



@functools.lru_cache(maxsize=1)
def default_bucket_limits() -> NDArray[np.float64]:
    """TensorBoard's (and TensorFlow's) default buckets: edges growing by 10% from 1e-12 to
    1e20, mirrored for negatives, with 0 between: fine near zero, coarse far from it."""
    limits: List[float] = []
    edge = 1e-12
    while edge < 1e20:
        limits.append(edge)
        edge *= 1.1
    positive = np.array(limits)
    return np.concatenate([-positive[::-1], [0.0], positive])


@functools.lru_cache(maxsize=4)
def default_edges(dtype: Any = np.float64) -> NDArray[Any]:
    """The default buckets as edges, with catch-all buckets out to the dtype's largest finite
    value on both sides, so that every finite value falls in one. (Made once: read-only.)"""
    largest = np.finfo(dtype).max
    edges = np.concatenate([[-largest], default_bucket_limits(), [largest]]).astype(dtype)
    edges.flags.writeable = False
    return edges


def rounded_up(edges: Any, dtype: Any) -> NDArray[Any]:
    """`edges` (float64) in `dtype`, each rounded up to the next value of that dtype: then
    `v >= edge` is the same test in either precision for a value `v` of that dtype (a nearest
    rounding would put a value equal to a rounded-down edge one bucket over). For counting on a
    device in the values' own precision (mxnet_capture, device_capture)."""
    edges = np.asarray(edges, dtype=np.float64)
    with np.errstate(over="ignore"):
        rounded = edges.astype(dtype)
    below = rounded.astype(np.float64) < edges
    rounded[below] = np.nextafter(rounded[below], np.inf)
    return np.ascontiguousarray(rounded)


def default_layout() -> Tuple[float, float, int, int]:
    """The default edges' layout, for finding a value's bucket on an MXNet device without a
    search (mxnet_capture.MxnetHistogram): (log of the
    smallest positive limit, 1 / log of the growth factor, number of positive limits, index of
    the edge 0.0 in `default_edges()`). A bucket index is then
    `middle + 1 + steps` for v >= 0 and `middle - 2 - steps` for v < 0, with
    `steps = floor((log|v| - log_first) * per_step)` clipped to [-1, positive - 1], exact to one
    bucket; two comparisons with the edges settle it."""
    limits = default_bucket_limits()
    positive = len(limits) // 2
    return float(np.log(limits[positive + 1])), float(1.0 / np.log(1.1)), positive, positive + 1


# A cell: float32 patterns alike in their top 20 bits (sign, exponent, 11 mantissa bits).
_SHIFT = 12
# The cells the table is built from: alike in their top 16 bits.
_COARSE = 16


@functools.lru_cache(maxsize=2)
def _cells(rounded: bool) -> Tuple[NDArray[np.int16], NDArray[np.intp], NDArray[Any], NDArray[Any]]:
    """Tables over the 2**20 cells of float32 patterns (a cell spans 0.05% of its value, so
    about one in 300 holds a bucket edge). `bucket[c]` (int16): the default bucket of every value
    of cell c, or `nb` (one past the last bucket) where the cell holds an edge, NaN or Inf.
    The cells that hold exactly one edge between two finite buckets, sorted, with the bucket below
    that edge and the edge: `(cells, lower, edge)`. With `rounded`, for values rounded to float32
    from a wider type: a cell also counts as holding what the patterns just beyond its ends hold
    (a value rounds into a cell from at most half a step beyond it). Built from 2**16 cells 16
    times as wide, only the few of those that hold an edge (or NaN) split finer."""
    nb = len(default_edges()) - 1
    low, high, finite = _ends(np.arange(1 << (32 - _COARSE), dtype=np.uint32), _COARSE, rounded)
    # Then so are the 16 fine cells inside.
    uniform = finite & (low == high)
    split = 1 << (_COARSE - _SHIFT)
    bucket = np.repeat(np.where(uniform, low, nb).astype(np.int16), split)
    fine = (np.flatnonzero(~uniform)[:, None] * split) + np.arange(split)
    fine_cells: NDArray[np.uint32] = fine.reshape(-1).astype(np.uint32)
    low, high, finite = _ends(fine_cells, _SHIFT, rounded)
    bucket[fine_cells] = np.where(finite & (low == high), low, nb)
    # one edge between them: the bucket above starts at it (for negative cells first > last)
    one = finite & (np.abs(high - low) == 1)
    return (bucket, fine_cells[one].astype(np.intp), np.minimum(low, high)[one],
            default_edges()[np.maximum(low, high)[one]])


def _ends(cells: NDArray[np.uint32], shift: int,
          rounded: bool) -> Tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.bool_]]:
    """The default buckets of the first and last values of `cells` (float32 patterns >> shift),
    and whether both are finite; with `rounded`, of the patterns just beyond both ends."""
    first = cells << shift
    last = first | ((1 << shift) - 1)
    if rounded:
        # NaN beyond both ends of the patterns.
        first, last = first - 1, last + 1
    # Signalling-NaN patterns raise "invalid" as they widen.
    with np.errstate(invalid="ignore"):
        low, high = (end.view(np.float32).astype(np.float64) for end in (first, last))
    return _reference_index(low), _reference_index(high), np.isfinite(low) & np.isfinite(high)


def _reference_index(values: NDArray[Any]) -> NDArray[np.intp]:
    """The default bucket of each float64 value by binary search: edges[i] <= v < edges[i+1]."""
    edges = default_edges()
    # minimum and maximum, not clip: numpy 1.23's clip imports at every call, which a histogram
    # logged at the interpreter's finalization (a `__del__`) cannot.
    found: NDArray[np.intp] = np.minimum(np.maximum(np.searchsorted(edges, values, side="right") - 1, 0),
                                         len(edges) - 2)
    return found


# Values binned a step: every temporary stays in cache and is never page-faulted.
_BLOCK = 1 << 16


def default_bucket_counts(values: Any) -> Tuple[NDArray[np.int64], float, float, int]:
    """Counts of any real `values` over the default buckets (`default_edges()`), exactly as
    `np.searchsorted(default_edges(), v, 'right') - 1` bins each finite value, in a few passes
    over memory: a value's bucket is one lookup by the top 20 bits of its float32 pattern (IEEE
    patterns are monotonic in the value); only values of the cells that hold an edge (about 0.3%
    of them) are compared with it, and those of the few cells that hold more (zero, NaN, Inf,
    the ends of float32's range) searched. Returns (counts, finite min, finite max, number of
    NaN/Inf values, which are not counted)."""
    values = np.asarray(values).reshape(-1)
    nb = len(default_edges()) - 1
    native = values.dtype == np.float32
    # float16 widens exactly.
    bucket, edge_cells, lower, edge = _cells(not (native or values.dtype == np.float16))
    counts = np.zeros(nb + 1, np.int64)
    # An intp index: numpy's gather casts no copy.
    keys = np.empty(min(_BLOCK, len(values)), np.intp)
    straddling: List[Tuple[NDArray[Any], NDArray[np.intp]]] = []
    for start in range(0, len(values), _BLOCK):
        part = values[start:start + _BLOCK]
        if native:
            as32 = part
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                as32 = part.astype(np.float32)
        key = np.right_shift(as32.view(np.uint32), _SHIFT, out=keys[:len(part)], dtype=np.intp)
        index = bucket[key]
        block = np.bincount(index, minlength=nb + 1)
        counts += block
        if block[nb]:
            where = np.flatnonzero(index == nb)
            straddling.append((part[where], key[where]))
    counts = counts[:nb]
    dropped = 0
    if straddling:
        rest = np.concatenate([part for part, _ in straddling])
        cells = np.concatenate([key for _, key in straddling])
        at = np.minimum(np.searchsorted(edge_cells, cells), len(edge_cells) - 1)
        one = edge_cells[at] == cells
        # A signalling NaN among the values widens quietly.
        with np.errstate(invalid="ignore"):
            others = rest[~one].astype(np.float64)
        finite = np.isfinite(others)
        dropped = len(others) - int(np.count_nonzero(finite))
        # Compared in float64.
        settled = lower[at[one]] + (rest[one] >= edge[at[one]])
        counts += np.bincount(np.concatenate([settled, _reference_index(others[finite])]), minlength=nb)
    # Nothing finite (or nothing at all).
    if dropped == values.size:
        return counts, 0.0, 0.0, dropped
    kept = values[np.isfinite(values)] if dropped else values
    return counts, float(kept.min()), float(kept.max()), dropped


def trimmed_buckets(edges: NDArray[Any], counts: NDArray[Any], low: float, high: float) -> NDArray[np.float64]:
    """(k, 3) buckets [left, right, count] from counts over `edges`, empty buckets at both ends
    dropped, the outer edges moved to the data's `low` and `high` (as TensorBoard draws them)."""
    occupied = np.flatnonzero(counts)
    if not len(occupied):
        return np.zeros((0, 3))
    first, last = occupied[0], occupied[-1]
    lefts = np.array(edges[first:last + 1], dtype=np.float64)
    rights = np.array(edges[first + 1:last + 2], dtype=np.float64)
    lefts[0], rights[-1] = low, high
    # One value: a bucket of width 1 around it.
    if high == low:
        lefts[0], rights[-1] = low - 0.5, high + 0.5
    return np.stack([lefts, rights, np.asarray(counts[first:last + 1], np.float64)], axis=1)


def histogram_buckets(values: Any, bins: Any) -> NDArray[np.float64]:
    """(k, 3) buckets of finite `values` by numpy's `bins`: an int (equal-width), a rule name
    ('auto', 'fd'...) or explicit increasing edges. (The default buckets: `default_bucket_counts`.)"""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if not values.size:
        return np.zeros((0, 3))
    counts, edges = np.histogram(values, bins=bins)
    return np.stack([edges[:-1], edges[1:], counts.astype(np.float64)], axis=1)


def histogram_summary(tag: str, buckets: Any, sums: Optional[Tuple[float, float]] = None) -> Message:
    """Summary of a histogram as contiguous (k, 3) buckets [left edge, right edge, count], with
    `sums` `(sum, sum of squares)` of the values (estimated from the buckets' middles where the
    values are not at hand: a device histogram)."""
    buckets = np.asarray(buckets, dtype=np.float64).reshape(-1, 3)
    if not len(buckets):
        return summary(tag, histo=HistogramProto())
    counts = buckets[:, 2]
    if sums is None:
        middles = (buckets[:, 0] + buckets[:, 1]) / 2
        sums = float(np.dot(middles, counts)), float(np.dot(middles * middles, counts))
    return summary(tag, histo=HistogramProto(min=buckets[0, 0], max=buckets[-1, 1], num=float(counts.sum()),
                                             sum=sums[0], sum_squares=sums[1],
                                             bucket_limit=buckets[:, 1].tolist(), bucket=counts.tolist()))


def moments(values: NDArray[Any]) -> Tuple[float, float]:
    """(sum, sum of squares) of finite `values`, accumulated in their float precision (float32's
    pairwise sum and BLAS dot: 0.4 ms per 1M values) or in float64."""
    values = values.reshape(-1)
    if values.dtype != np.float32:
        values = values.astype(np.float64)
    return float(values.sum()), float(np.dot(values, values))


def histogram_of(tag: str, values: Any, bins: Any = "default", max_bins: Optional[int] = None,
                 warn: Optional[Callable[[str], None]] = None) -> Message:
    """Summary of a histogram of `values` (numpy, any shape), or of a device histogram's result
    `(edges, counts, low, high, dropped, (sum, sum of squares) or None)`. NaN and ±Inf cannot be
    binned: they are dropped, and `warn(message)` says so (None: a RuntimeWarning here; the
    writer's shows at the user's call). With `max_bins`, neighbouring buckets are merged into at
    most that many."""
    # An MXNet device histogram's: estimated from its buckets.
    stats = None
    if isinstance(values, tuple):
        edges, counts, low, high, dropped, stats = values
        # Nothing finite.
        if not counts.sum():
            buckets = np.zeros((0, 3))
        elif isinstance(bins, str):
            buckets = trimmed_buckets(edges, counts, low, high)
        # As numpy does it: (v - 0.5, v + 0.5).
        elif isinstance(bins, int) and low == high:
            buckets = histogram_buckets(np.full(int(counts.sum()), low), bins)
        else:
            buckets = np.stack([edges[:-1], edges[1:], counts.astype(np.float64)], axis=1)
    elif isinstance(bins, str) and bins == "default":
        counts, low, high, dropped = default_bucket_counts(values)
        buckets = trimmed_buckets(default_edges(), counts, low, high)
        stats = moments(values[np.isfinite(values)] if dropped else values)
    else:
        finite = np.isfinite(values)
        dropped = values.size - int(np.count_nonzero(finite))
        kept = values[finite] if dropped else values
        buckets = histogram_buckets(kept, bins)
        stats = moments(kept)
    if dropped:
        message = "NaN or infinite values were dropped (they cannot be binned)"
        if warn is None:
            warnings.warn("add_histogram(%r): %s" % (tag, message), RuntimeWarning, stacklevel=2)
        else:
            warn(message)
    if max_bins is not None and len(buckets) > max_bins:
        buckets = merged(buckets, max_bins)
    return histogram_summary(tag, buckets, stats)


def merged(buckets: Any, max_bins: int) -> NDArray[np.float64]:
    """(k, 3) buckets merged in runs of ceil(k / max_bins) neighbours: the first's left edge, the
    last's right edge, the sum of their counts."""
    buckets = np.asarray(buckets, dtype=np.float64)
    size = -(-len(buckets) // max_bins)
    starts = np.arange(0, len(buckets), size)
    ends = np.minimum(starts + size, len(buckets)) - 1
    return np.stack([buckets[starts, 0], buckets[ends, 1], np.add.reduceat(buckets[:, 2], starts)], axis=1)


def histogram_raw_summary(tag: str, histo: Any) -> Message:
    """Summary of a histogram already counted: `histo`, a checked HistogramProto's fields
    (`checks.histogram_raw`), written as given (as tensorboardX and torch.utils.tensorboard do)."""
    return summary(tag, histo=HistogramProto(**histo))
