"""Training hooks for MXNet: log metrics, the learning rate, and weight and gradient histograms
from `mxnet.gluon.contrib.estimator` (`SummaryHandler`) or from the Module API (`ModuleLogger`).

    est.fit(train, val, epochs=5, event_handlers=[SummaryHandler(sw, histogram_every=100)])
    mod.fit(train, batch_end_callback=logger.batch_end, epoch_end_callback=logger.epoch_end)

Tags are `<metric>/train`, `<metric>/validation`, `learning_rate`, `weights/<parameter>` and
`gradients/<parameter>`. Everything is logged without waiting for MXNet's engine. Importing this
module imports mxnet, which the rest of mxboard never does.
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, Optional, Tuple

from mxnet.gluon.contrib.estimator.event_handler import BatchEnd, EpochEnd, TrainBegin

__all__ = ["ModuleLogger", "SummaryHandler", "log_parameters"]


def log_parameters(writer: Any, params: Any, global_step: int, gradients: bool = True) -> None:
    """Log a histogram of every initialized parameter of a Gluon ParameterDict, on the device it
    lives on, and of its gradient where it has one.

    Args:
        writer: a SummaryWriter.
        params: a Gluon ParameterDict (`net.collect_params()`).
        global_step: the histograms' step.
        gradients: log `gradients/<name>` beside `weights/<name>`.

    Example:
        >>> log_parameters(sw, net.collect_params(), global_step=step)
    """
    for name, param in params.items():
        # Not initialized yet (deferred initialization).
        if param._data is None:
            continue
        writer.add_histogram("weights/" + name, param.data(), global_step)
        if gradients and param.grad_req != "null":
            writer.add_histogram("gradients/" + name, param.grad(), global_step)


def _metric_tags(metric: Any) -> Iterator[Tuple[str, Any]]:
    """The (tag, value) pairs of an EvalMetric. The estimator's 'training accuracy' and
    'validation accuracy' become accuracy/train and accuracy/validation: one chart, two lines."""
    names, values = metric.get()
    if not isinstance(names, list):
        names, values = [names], [values]
    for name, value in zip(names, values):
        for prefix, phase in (("training ", "train"), ("validation ", "validation")):
            if name.startswith(prefix):
                yield "%s/%s" % (name[len(prefix):], phase), value
                break
        else:
            yield name, value


# MXNet ships no types.
class SummaryHandler(TrainBegin, BatchEnd, EpochEnd):  # type: ignore[misc]
    """An event handler for `gluon.contrib.estimator.Estimator`.

    It logs the batch loss and the training metrics every `log_every` batches; the training and
    validation metrics and the learning rate every epoch; and, if `histogram_every` is set, the
    weights and gradients every `histogram_every` batches.

    Args:
        writer: a SummaryWriter.
        log_every: batches between two batch-level points (0 logs none).
        histogram_every: batches between two sets of histograms (None logs none).
        priority: the handler's place in the estimator's order. The default runs it last, after
            the estimator's metric and validation handlers.

    Example:
        >>> est.fit(train, val, epochs=5, event_handlers=[SummaryHandler(sw, histogram_every=100)])
    """

    def __init__(self, writer: Any, log_every: int = 1, histogram_every: Optional[int] = None,
                 priority: float = float("inf")) -> None:
        self.writer = writer
        self.log_every = log_every
        self.histogram_every = histogram_every
        # After the estimator's metric and validation handlers.
        self.priority = priority
        self.batch = self.epoch = 0

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Count batches and epochs from 0."""
        self.batch = self.epoch = 0

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Log this batch's values (see the class). Returns False, so training goes on."""
        self.batch += 1
        if self.log_every and self.batch % self.log_every == 0:
            loss = kwargs.get("loss")
            if loss is not None:
                losses = loss if isinstance(loss, (list, tuple)) else [loss]
                self.writer.add_scalar("loss/batch", sum(x.mean() for x in losses) / len(losses), self.batch)
            for metric in estimator.train_metrics:
                for tag, value in _metric_tags(metric):
                    self.writer.add_scalar(tag + "_batch", value, self.batch)
        if self.histogram_every and self.batch % self.histogram_every == 0:
            log_parameters(self.writer, estimator.net.collect_params(), self.batch)
        return False

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Log the epoch's metrics and learning rate. Returns False, so training goes on."""
        self.epoch += 1
        for metric in list(estimator.train_metrics) + list(estimator.val_metrics):
            for tag, value in _metric_tags(metric):
                self.writer.add_scalar(tag, value, self.epoch)
        self.writer.add_scalar("learning_rate", estimator.trainer.learning_rate, self.epoch)
        return False


class ModuleLogger:
    """Callbacks for MXNet's Module API.

    `batch_end` (a `batch_end_callback`) logs the evaluation metric and the learning rate every
    `log_every` batches, and the weights and gradients every `histogram_every` batches;
    `epoch_end` (an `epoch_end_callback`) logs weight histograms.

    Args:
        writer: a SummaryWriter.
        log_every: batches between two metric points (0 logs none).
        histogram_every: batches between two sets of histograms (None logs none).
        phase: the metric tags' suffix (`<metric>/<phase>`).

    Example:
        >>> logger = ModuleLogger(sw, histogram_every=100)
        >>> mod.fit(train, batch_end_callback=logger.batch_end, epoch_end_callback=logger.epoch_end)
    """

    def __init__(self, writer: Any, log_every: int = 1, histogram_every: Optional[int] = None,
                 phase: str = "train") -> None:
        self.writer = writer
        self.log_every = log_every
        self.histogram_every = histogram_every
        self.phase = phase
        self.batch = 0

    def batch_end(self, param: Any) -> None:
        """The `batch_end_callback`, called with MXNet's BatchEndParam."""
        self.batch += 1
        module = (param.locals or {}).get("self")
        if self.log_every and self.batch % self.log_every == 0:
            if param.eval_metric is not None:
                for name, value in param.eval_metric.get_name_value():
                    self.writer.add_scalar("%s/%s" % (name, self.phase), value, self.batch)
            optimizer = getattr(module, "_optimizer", None)
            if optimizer is not None:
                self.writer.add_scalar("learning_rate", optimizer.learning_rate, self.batch)
        group = getattr(module, "_exec_group", None)
        if self.histogram_every and self.batch % self.histogram_every == 0 and group is not None:
            for name, weights, grads in zip(group.param_names, group.param_arrays, group.grad_arrays):
                self.writer.add_histogram("weights/" + name, weights[0], self.batch)
                if grads and grads[0] is not None:
                    self.writer.add_histogram("gradients/" + name, grads[0], self.batch)

    def epoch_end(self, epoch: int, symbol: Any, arg_params: Dict[str, Any], aux_params: Dict[str, Any]) -> None:
        """The `epoch_end_callback`: log a histogram of every weight at step `epoch + 1`."""
        for name, value in sorted(arg_params.items()):
            self.writer.add_histogram("weights/" + name, value, epoch + 1)
