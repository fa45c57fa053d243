"""Accelerate's TensorBoard tracker, writing through mxboard.

    from mxboard.integrations.accelerate import TensorBoardTracker
    accelerator = Accelerator(log_with=[TensorBoardTracker("run1", "logs")])
    accelerator.init_trackers("run1", config={"lr": 0.1})

This subclasses Accelerate's own `TensorBoardTracker` and keeps its name (`tensorboard`), its
arguments, its directory (`logging_dir/run_name`) and its methods, which run on the main process
only. Only the writer (`tracker.tracker`) differs: it is an `mxboard.SummaryWriter`, and `log`
does not wait for the files as Accelerate's does. A running TensorBoard shows the points within
`flush_secs`, and `accelerator.end_training()` writes everything. Importing this module imports
accelerate.
"""
from __future__ import annotations

import os
import time
from typing import Any, Dict, Optional, Union

from .. import SummaryWriter
from ..storage import is_url
from ._shared import check_writer_arguments, missing_trainer

try:
    from accelerate.tracking import TensorBoardTracker as _AccelerateTracker
    from accelerate.tracking import on_main_process
except ImportError as error:
    raise missing_trainer(__name__, "accelerate", error) from None

__all__ = ["TensorBoardTracker"]


# Accelerate's types are not checked here.
class TensorBoardTracker(_AccelerateTracker):  # type: ignore[misc]
    """Accelerate's `TensorBoardTracker`, whose writer is an `mxboard.SummaryWriter`.

    Args:
        run_name: the run's directory below `logging_dir`.
        logging_dir: where the runs are (a path, or an `s3://`, `gs://` or `az://` URL).
        **kwargs: `mxboard.SummaryWriter`'s arguments (`flush_secs`, `max_queue`,
            `upload_policy`, `system_metrics`...).

    Raises:
        TypeError: a keyword argument that `SummaryWriter` does not take (naming the closest that
            it does).

    Example:
        >>> accelerator = Accelerator(log_with=[TensorBoardTracker("run1", "logs")])
        >>> accelerator.init_trackers("run1")
        >>> accelerator.log({"loss": loss}, step=step)
    """

    writer: SummaryWriter

    def __init__(self, run_name: str, logging_dir: Union[str, "os.PathLike[str]"], **kwargs: Any) -> None:
        # A misspelled argument is refused here, naming this class, rather than when the writer
        # is made (in init_trackers, naming SummaryWriter).
        check_writer_arguments("mxboard.integrations.accelerate.TensorBoardTracker", kwargs,
                               ["run_name", "logging_dir"])
        super().__init__(run_name, logging_dir, **kwargs)

    @on_main_process  # type: ignore[untyped-decorator]
    def start(self) -> None:
        """Make the writer, in `logging_dir/run_name` (Accelerate calls it in `init_trackers`)."""
        self.logging_dir = os.path.join(os.fspath(self.logging_dir_param), self.run_name)
        self.writer = SummaryWriter(self.logging_dir, **self.init_kwargs)

    @on_main_process  # type: ignore[untyped-decorator]
    def store_init_configuration(self, values: Dict[str, Any]) -> None:
        """Log the hyperparameters in a sub-run named by the time, with `<that time>/hparams.yml`
        beside them, as Accelerate's tracker does. This works in an object store too."""
        if not is_url(self.logging_dir):
            super().store_init_configuration(values)
            return
        # PyYAML is a dependency of Accelerate.
        import fsspec
        import yaml

        self.writer.add_hparams(values, metric_dict={})
        self.writer.flush()
        with fsspec.open("%s/%s/hparams.yml" % (self.logging_dir.rstrip("/"), time.time()), "w") as f:
            yaml.dump(values, f)

    @on_main_process  # type: ignore[untyped-decorator]
    def log(self, values: Dict[str, Any], step: Optional[int] = None, **kwargs: Any) -> None:
        """Log each number in `values` as a scalar, each str as text and each dict as one chart of
        several lines (`add_scalars`), at `step`. A tensor is logged as a scalar, read once it is
        computed. `kwargs` (such as `walltime`) are passed on to those calls."""
        for tag, value in values.items():
            if isinstance(value, str):
                self.writer.add_text(tag, value, global_step=step, **kwargs)
            elif isinstance(value, dict):
                self.writer.add_scalars(tag, value, global_step=step, **kwargs)
            elif isinstance(value, (int, float)) or getattr(value, "ndim", None) == 0:
                self.writer.add_scalar(tag, value, global_step=step, **kwargs)
