"""Precision-recall curves: the `pr_curves` plugin's (6, num_thresholds) tensor of TP, FP, TN, FN,
precision and recall, computed as TensorBoard's own pr_curve summary does."""
from typing import Any, Optional

import numpy as np

from ..proto import Message, PrCurvePluginData
from ._common import metadata, summary, tensor

__all__ = ["pr_curve_summary", "pr_curve_raw_summary"]

PLUGIN = "pr_curves"
_MINIMUM_COUNT = 1e-7


def pr_curve_summary(tag: str, labels: Any, predictions: Any, num_thresholds: int = 127,
                     weights: Optional[Any] = None) -> Message:
    """A Summary of a PR curve. `labels` are booleans and `predictions` probabilities in [0, 1]
    (clipped). Each threshold is a bucket of width 1 / (num_thresholds - 1)."""
    labels = np.asarray(labels).reshape(-1).astype(np.float64)
    predictions = np.asarray(predictions, dtype=np.float64)
    weights = np.ones_like(labels) if weights is None else \
        np.broadcast_to(np.asarray(weights, np.float64), predictions.shape).reshape(-1)
    predictions = np.clip(predictions.reshape(-1), 0.0, 1.0)
    buckets = np.floor(predictions * (num_thresholds - 1)).astype(np.int64)
    tp_buckets = np.bincount(buckets, weights=labels * weights, minlength=num_thresholds)
    fp_buckets = np.bincount(buckets, weights=(1.0 - labels) * weights, minlength=num_thresholds)
    tp = np.cumsum(tp_buckets[::-1])[::-1]
    fp = np.cumsum(fp_buckets[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(_MINIMUM_COUNT, tp + fp)
    recall = tp / np.maximum(_MINIMUM_COUNT, tp + fn)
    return pr_curve_raw_summary(tag, tp, fp, tn, fn, precision, recall, num_thresholds)


def pr_curve_raw_summary(tag: str, tp: Any, fp: Any, tn: Any, fn: Any, precision: Any, recall: Any,
                         num_thresholds: int) -> Message:
    """A Summary of a PR curve from its counts and rates at each threshold, already computed."""
    data = np.stack([np.asarray(a, dtype=np.float32).reshape(-1) for a in (tp, fp, tn, fn, precision, recall)])
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    return summary(tag, metadata(PLUGIN, content), tensor=tensor(data))
