"""Histograms: the `histograms` plugin's (k, 3) tensor of [left edge, right edge, count]."""
import functools

import numpy as np

from ..proto import HistogramPluginData
from ._common import metadata, summary, tensor

__all__ = ["default_bucket_limits", "default_edges", "histogram_buckets", "histogram_summary",
           "histogram_raw_summary", "trimmed_buckets"]

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


def default_edges(dtype=np.float64):
    """The default buckets as edges, with catch-all buckets out to the dtype's largest finite
    value on both sides, so that every finite value falls in one."""
    largest = np.finfo(dtype).max
    return np.concatenate([[-largest], default_bucket_limits(), [largest]]).astype(dtype)


def trimmed_buckets(edges, counts, low, high):
    """(k, 3) buckets [left, right, count] from counts over `edges`, empty buckets at both ends
    dropped, the outer edges moved to the data's `low` and `high` (as TensorBoard draws them)."""
    occupied = np.flatnonzero(counts)
    if not len(occupied):
        return np.zeros((0, 3))
    first, last = occupied[0], occupied[-1]
    lefts = np.array(edges[first:last + 1], dtype=np.float64)
    rights = np.array(edges[first + 1:last + 2], dtype=np.float64)
    lefts[0], rights[-1] = low, high
    if high == low:  # one value: a bucket of width 1 around it
        lefts[0], rights[-1] = low - 0.5, high + 0.5
    return np.stack([lefts, rights, np.asarray(counts[first:last + 1], np.float64)], axis=1)


def histogram_buckets(values, bins="default"):
    """(k, 3) buckets of finite `values`. `bins`: 'default' (TensorBoard's exponential buckets,
    trimmed to the occupied range), an int (equal-width), a numpy rule name ('auto', 'fd'...),
    or explicit increasing edges."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if not values.size:
        return np.zeros((0, 3))
    if isinstance(bins, str) and bins == "default":
        edges = default_edges()
        # a binary search a value (not numpy.histogram's sort of all values): O(n log buckets)
        index = np.minimum(np.searchsorted(edges, values, side="right") - 1, len(edges) - 2)
        counts = np.bincount(index, minlength=len(edges) - 1)
        return trimmed_buckets(edges, counts, values.min(), values.max())
    counts, edges = np.histogram(values, bins=bins)
    return np.stack([edges[:-1], edges[1:], counts.astype(np.float64)], axis=1)


def histogram_summary(tag, buckets):
    """Summary of a histogram as (k, 3) buckets [left edge, right edge, count]."""
    meta = metadata(PLUGIN, HistogramPluginData(version=0).SerializeToString())
    return summary(tag, meta, tensor=tensor(np.asarray(buckets, dtype=np.float64).reshape(-1, 3)))


def histogram_raw_summary(tag, bucket_limits, bucket_counts, min_value):
    """Summary of a histogram already counted: bucket `i` spans (limits[i-1], limits[i]], the
    first starting at `min_value`."""
    limits = np.asarray(bucket_limits, dtype=np.float64)
    lefts = np.concatenate([[min_value], limits[:-1]])
    return histogram_summary(tag, np.stack([lefts, limits, np.asarray(bucket_counts, np.float64)], axis=1))
