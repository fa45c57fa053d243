"""Accelerate's TensorBoard tracker, writing through mxboard.

    from mxboard.integrations.accelerate import TensorBoardTracker
    accelerator = Accelerator(log_with=[TensorBoardTracker("run1", "logs")])
    accelerator.init_trackers("run1", config={"lr": 0.1})

Accelerate's own `TensorBoardTracker`, subclassed: the same name (`tensorboard`), arguments,
directory (`logging_dir/run_name`), `store_init_configuration` (the hparams in a sub-run of their
own and `hparams.yml`), `log` (numbers as scalars, str as text, dicts as `add_scalars`),
`log_images` and `finish`, on the main process only. Its writer (`tracker.tracker`) is an
`mxboard.SummaryWriter`, and `log` does not wait for the files as Accelerate's does (a running
TensorBoard shows the points within `flush_secs`; `accelerator.end_training()` writes
everything). Importing this module imports accelerate.
"""
from __future__ import annotations

import os
import time
from typing import Any, Dict, Optional

from accelerate.tracking import TensorBoardTracker as _AccelerateTracker
from accelerate.tracking import on_main_process

from .._api.writer import SummaryWriter
from .._format.names import is_url

__all__ = ["TensorBoardTracker"]


class TensorBoardTracker(_AccelerateTracker):  # type: ignore[misc]  # accelerate's types are not checked here
    """Accelerate's `TensorBoardTracker`, whose writer is an `mxboard.SummaryWriter`.

    Args:
        run_name: the run's directory below `logging_dir`.
        logging_dir: where the runs are (a path, or an `s3://`, `gs://` or `az://` URL).
        **kwargs: `mxboard.SummaryWriter`'s arguments (`flush_secs`, `max_queue`,
            `upload_policy`, `system_metrics`...).

    Example:
        >>> accelerator = Accelerator(log_with=[TensorBoardTracker("run1", "logs")])
        >>> accelerator.init_trackers("run1")
        >>> accelerator.log({"loss": loss}, step=step)
    """

    writer: SummaryWriter

    @on_main_process  # type: ignore[untyped-decorator]
    def start(self) -> None:
        """Make the writer, in `logging_dir/run_name` (Accelerate calls it in `init_trackers`)."""
        self.logging_dir = os.path.join(os.fspath(self.logging_dir_param), self.run_name)
        self.writer = SummaryWriter(self.logging_dir, **self.init_kwargs)

    @on_main_process  # type: ignore[untyped-decorator]
    def store_init_configuration(self, values: Dict[str, Any]) -> None:
        """The hyperparameters in a sub-run named by the time, and `<that time>/hparams.yml`, as
        Accelerate's; into an object store too."""
        if not is_url(self.logging_dir):
            super().store_init_configuration(values)
            return
        import fsspec
        import yaml  # Accelerate's dependency

        self.writer.add_hparams(values, metric_dict={})
        self.writer.flush()
        with fsspec.open("%s/%s/hparams.yml" % (self.logging_dir.rstrip("/"), time.time()), "w") as f:
            yaml.dump(values, f)

    @on_main_process  # type: ignore[untyped-decorator]
    def log(self, values: Dict[str, Any], step: Optional[int] = None, **kwargs: Any) -> None:
        """Each number of `values` a scalar, each str a text, each dict one chart of several
        lines (`add_scalars`), at `step`; a tensor is logged as a scalar, read once computed.
        `kwargs` go to those calls (`walltime`)."""
        for tag, value in values.items():
            if isinstance(value, str):
                self.writer.add_text(tag, value, global_step=step, **kwargs)
            elif isinstance(value, dict):
                self.writer.add_scalars(tag, value, global_step=step, **kwargs)
            elif isinstance(value, (int, float)) or getattr(value, "ndim", None) == 0:
                self.writer.add_scalar(tag, value, global_step=step, **kwargs)
