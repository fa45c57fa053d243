"""Which points of a series a read returns when a plugin's budget is smaller than the series.

`extremes` (scalars): the first and the last point, and each bucket's minimum and maximum, so that
a spike or a NaN is always drawn. `evenly` (tensors, blob sequences): points evenly spaced, the
first and the last among them. Both return every point where the budget allows it, as upstream.
"""
from typing import Any, List, Optional

import numpy as np

__all__ = ["evenly", "extremes"]


def extremes(values: Any, k: int) -> Any:
    """The indices (sorted, int64) of at most `k` of `values` (a float array): all of them if
    there are at most `k`; else the first, the last, and the minimum and the maximum of each of
    (k - 2) // 2 buckets of equal count between them. A NaN in a bucket is taken in place of its
    minimum. k == 1 keeps the last point, k == 0 none (as upstream's downsampling)."""
    n = len(values)
    few = _all_or_none(n, k)
    if few is not None:
        return few
    buckets = (k - 2) // 2
    if buckets == 0:
        return np.array([0, n - 1], np.int64)
    edges = 1 + (np.arange(buckets + 1, dtype=np.int64) * (n - 2)) // buckets
    chosen: List[int] = [0, n - 1]
    for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist()):
        if hi <= lo:
            continue
        part = values[lo:hi]
        nan = np.isnan(part)
        if nan.any():
            chosen.append(lo + int(np.argmax(nan)))
            if not nan.all():
                chosen.append(lo + int(np.nanargmax(part)))
        else:
            chosen += [lo + int(np.argmin(part)), lo + int(np.argmax(part))]
    return np.unique(np.array(chosen, np.int64))


def evenly(n: int, k: int) -> Any:
    """The indices (sorted, int64) of at most `k` of `n` points, evenly spaced, the first and the
    last among them: all of them if there are at most `k`; k == 1 keeps the last, k == 0 none."""
    few = _all_or_none(n, k)
    if few is not None:
        return few
    return np.unique(np.linspace(0, n - 1, k).round().astype(np.int64))


def _all_or_none(n: int, k: int) -> Optional[Any]:
    """The indices kept of `n` points for a budget of `k` where no choice is made: every point
    (k >= n), none (k <= 0), or the last (k == 1), as upstream's downsampling; else None."""
    if k >= n:
        return np.arange(n, dtype=np.int64)
    if k <= 0:
        return np.zeros(0, np.int64)
    if k == 1:
        return np.array([n - 1], np.int64)
    return None
