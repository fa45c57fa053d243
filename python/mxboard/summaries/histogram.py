"""Histograms: the `histograms` plugin's (k, 3) tensor of [left edge, right edge, count]."""
import functools

import numpy as np

from ..proto import HistogramPluginData
from ._common import metadata, summary, tensor

__all__ = ["default_bucket_limits", "histogram_summary", "histogram_raw_summary"]

PLUGIN = "histograms"


@functools.lru_cache(maxsize=1)
def default_bucket_limits():
    """TensorBoard's (and TensorFlow's) default buckets: edges growing by 10% from 1e-12 to
    1e20, mirrored for negatives, with 0 between: fine near zero, coarse far from it."""
    positive = []
    edge = 1e-12
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1
    positive = np.array(positive)
    return np.concatenate([-positive[::-1], [0.0], positive])


def histogram_counts(values, bins="default"):
    """(edges, counts) of finite `values`. `bins`: 'default' (TensorBoard's exponential buckets,
    trimmed to the occupied range), an int (equal-width), a numpy rule name ('auto', 'fd'...), or
    explicit increasing edges."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if isinstance(bins, str) and bins == "default":
        limits = default_bucket_limits()
        low, high = values.min(), values.max()
        # the buckets that hold [min, max]: one edge below min to one edge above max
        first = max(int(np.searchsorted(limits, low, side="right")) - 1, 0)
        last = min(int(np.searchsorted(limits, high, side="left")), len(limits) - 1)
        edges = limits[first:last + 1]
        if len(edges) < 2:
            edges = np.array([low, high]) if high > low else np.array([low - 0.5, high + 0.5])
        counts, edges = np.histogram(values, bins=edges)
        counts = counts.astype(np.float64)
        # values on the outer edges' far side (possible at float rounding) go to the end buckets
        counts[0] += np.count_nonzero(values < edges[0])
        counts[-1] += np.count_nonzero(values > edges[-1])
        edges = edges.copy()
        if high > low:  # the outer buckets start at min and end at max, as TensorBoard draws them
            edges[0], edges[-1] = low, high
    else:
        counts, edges = np.histogram(values, bins=bins)
        counts = counts.astype(np.float64)
    return edges, counts


def histogram_summary(tag, values, bins="default"):
    """Summary of a histogram of `values` (any shape; NaN and ±Inf must be removed first)."""
    values = np.asarray(values)
    if values.size == 0:
        buckets = np.zeros((0, 3))
    else:
        edges, counts = histogram_counts(values, bins)
        buckets = np.stack([edges[:-1], edges[1:], counts], axis=1)
    return _summary(tag, buckets)


def histogram_raw_summary(tag, bucket_limits, bucket_counts, min_value):
    """Summary of a histogram already counted: bucket `i` spans (limits[i-1], limits[i]], the
    first starting at `min_value`."""
    limits = np.asarray(bucket_limits, dtype=np.float64)
    lefts = np.concatenate([[min_value], limits[:-1]])
    return _summary(tag, np.stack([lefts, limits, np.asarray(bucket_counts, np.float64)], axis=1))


def _summary(tag, buckets):
    meta = metadata(PLUGIN, HistogramPluginData(version=0).SerializeToString())
    return summary(tag, meta, tensor=tensor(buckets.astype(np.float64)))
