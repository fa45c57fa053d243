"""PyTorch Lightning's TensorBoardLogger, writing through mxboard.

    from mxboard.integrations.lightning import TensorBoardLogger
    trainer = Trainer(logger=TensorBoardLogger("tb_logs", name="my_model"))

This subclasses Lightning's own logger and keeps its arguments and defaults, its directories
(`save_dir/name/version_N`, `hparams.yaml`), tags and steps. It logs on rank zero only and is
closed at the end of `fit`, also after an exception or a Ctrl-C. Only its `experiment` differs: it
is an `mxboard.SummaryWriter`, which takes the extra keyword arguments (`flush_secs`,
`upload_policy` and so on). So `save_dir` may be an `s3://`, `gs://` or `az://` URL, and a CUDA
tensor's histogram does not wait for the device. The class subclasses `lightning` where it can be
imported, else `pytorch_lightning`, and importing this module imports that package.
"""
from __future__ import annotations

import inspect
import os
from typing import Any, Dict, Mapping, Optional

from .. import SummaryWriter
from ._shared import check_writer_arguments, missing_trainer

try:
    from lightning.fabric.loggers.logger import rank_zero_experiment
    from lightning.fabric.utilities.cloud_io import _is_dir
    from lightning.fabric.utilities.logger import _add_prefix, _convert_params, _flatten_dict
    from lightning.pytorch.core.saving import save_hparams_to_yaml
    from lightning.pytorch.loggers import TensorBoardLogger as _LightningLogger
    from lightning.pytorch.utilities.rank_zero import rank_zero_only
# The standalone package, pytorch_lightning (it names the same pieces).
except ImportError as error:
    try:
        from lightning_fabric.loggers.logger import rank_zero_experiment
        from lightning_fabric.utilities.cloud_io import _is_dir
        from lightning_fabric.utilities.logger import _add_prefix, _convert_params, _flatten_dict
        from pytorch_lightning.core.saving import save_hparams_to_yaml
        from pytorch_lightning.loggers import TensorBoardLogger as _LightningLogger
        from pytorch_lightning.utilities.rank_zero import rank_zero_only
    except ImportError as fallback:
        # Neither is there. The error names `lightning`, the package of the trainers extra, unless
        # what is missing is torch, which both need.
        cause = fallback if (fallback.name or "").split(".")[0] == "torch" else error
        raise missing_trainer(__name__, "lightning", cause) from None

__all__ = ["TensorBoardLogger"]


# Lightning's types are not checked here.
class TensorBoardLogger(_LightningLogger):  # type: ignore[misc]
    """Lightning's `TensorBoardLogger`, whose `experiment` is an `mxboard.SummaryWriter`.

    Args:
        save_dir: where every experiment is (a path, or an object-store URL).
        name: the experiment's directory (default `lightning_logs`; "" for none).
        version: an int (`version_<N>`), a str (the directory's name), or None for the next free
            `version_<N>`.
        log_graph: log the module's graph (traced with `example_input_array`) at the start of
            `fit`.
        default_hp_metric: log `hp_metric` = -1 when hyperparameters are given without metrics.
        prefix: a prefix for every metric's name (joined with "-").
        sub_dir: a directory below the version's for the event files.
        **kwargs: `mxboard.SummaryWriter`'s arguments (`max_queue`, `flush_secs`,
            `filename_suffix`, `upload_policy`, `spool`, `system_metrics`...).

    Raises:
        TypeError: a keyword argument that neither Lightning's logger nor `SummaryWriter` takes
            (naming the closest that one of them does).

    Example:
        >>> trainer = Trainer(max_epochs=3, logger=TensorBoardLogger("tb_logs"))
    """

    # Lightning's attributes, typed here.
    _experiment: Optional[SummaryWriter]
    hparams: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # A misspelled argument is refused here, naming this class, rather than when the writer
        # is made (at the first log, naming SummaryWriter).
        own = inspect.signature(_LightningLogger.__init__).parameters
        check_writer_arguments("mxboard.integrations.lightning.TensorBoardLogger", kwargs,
                               [name for name, p in own.items() if p.kind is not p.VAR_KEYWORD])
        super().__init__(*args, **kwargs)

    @property
    @rank_zero_experiment  # type: ignore[untyped-decorator]
    def experiment(self) -> SummaryWriter:
        """The run's `mxboard.SummaryWriter`, made on first use. On ranks other than zero it is a
        stand-in that does nothing, as in Lightning."""
        if self._experiment is not None:
            return self._experiment
        assert rank_zero_only.rank == 0, "tried to init log dirs in non global_rank=0"
        if self.root_dir:
            self._fs.makedirs(self.root_dir, exist_ok=True)
        writer = self._experiment = SummaryWriter(logdir=self.log_dir, **self._kwargs)
        return writer

    @rank_zero_only  # type: ignore[untyped-decorator]
    def log_metrics(self, metrics: Mapping[str, Any], step: Optional[int] = None) -> None:
        """Log each metric as a scalar at `step`, and each dict as one chart of several lines
        (`add_scalars`). A tensor is handed to mxboard as it is and read once it is computed
        (Lightning's trainer has already turned its own metrics into Python numbers)."""
        metrics = _add_prefix(metrics, self._prefix, self.LOGGER_JOIN_CHAR)
        for tag, value in metrics.items():
            if isinstance(value, dict):
                self.experiment.add_scalars(tag, value, step)
            else:
                try:
                    self.experiment.add_scalar(tag, value, step)
                except (TypeError, ValueError) as error:
                    raise ValueError("\n you tried to log %r which is currently not supported. Try a dict or a "
                                     "scalar/tensor." % (value,)) from error

    @rank_zero_only  # type: ignore[untyped-decorator]
    def save(self) -> None:
        """Write `hparams.yaml` if it is not there yet, as Lightning's logger does.

        Lightning calls this after every `log_metrics`. Unlike Lightning's logger, it does not wait
        for the event files each time (the writer writes within `flush_secs`, and everything at
        `finalize`), and it does not ask the filesystem again once the file is written."""
        if getattr(self, "_hparams_written", None) == self.log_dir:
            return
        hparams_file = os.path.join(self.log_dir, self.NAME_HPARAMS_FILE)
        if _is_dir(self._fs, self.log_dir):
            if not self._fs.isfile(hparams_file):
                save_hparams_to_yaml(hparams_file, self.hparams)
            self._hparams_written = self.log_dir

    @rank_zero_only  # type: ignore[untyped-decorator]
    def log_hyperparams(self, params: Any, metrics: Optional[Any] = None, step: Optional[int] = None) -> None:
        """Log the hyperparameters for `hparams.yaml` and the HParams dashboard, as Lightning does.

        `metrics` (a dict, or one number named `hp_metric`) are logged as scalars first. Without
        metrics, `hp_metric` = -1 is logged where `default_hp_metric` is set; otherwise only
        `hparams.yaml` is written."""
        params = _convert_params(params)
        try:
            # As Lightning keeps an OmegaConf config.
            from omegaconf import Container, OmegaConf
        except ImportError:
            Container = None  # noqa: N806
        if Container is not None and isinstance(params, Container):
            self.hparams = OmegaConf.merge(self.hparams, params)
        else:
            self.hparams.update(params)
        flat: Dict[str, Any] = self._sanitize_params(_flatten_dict(params))
        # a tensor becomes its first element, as torch's writer does
        flat = {k: v.reshape(-1)[0].item() if hasattr(v, "reshape") else v for k, v in flat.items()}
        if metrics is None:
            metrics = {"hp_metric": -1} if self._default_hp_metric else None
        elif not isinstance(metrics, dict):
            metrics = {"hp_metric": metrics}
        if metrics:
            self.log_metrics(metrics, step)
            # Into the run itself, as Lightning writes them through torch's writer, so that the
            # dashboard's metrics are the run's own curves.
            self.experiment.add_hparams(flat, {tag: None for tag in _add_prefix(
                metrics, self._prefix, self.LOGGER_JOIN_CHAR)}, global_step=step, in_run=True)

