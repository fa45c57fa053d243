"""The Hugging Face Trainer's TensorBoardCallback, writing through mxboard.

    from mxboard.integrations.transformers import TensorBoardCallback
    trainer = Trainer(model, TrainingArguments("out", report_to="none"), callbacks=[TensorBoardCallback()])

This subclasses transformers' own callback and keeps its logdir (`TENSORBOARD_LOGGING_DIR`, else
`<output_dir>/runs/<date>_<host>`, with a trial's name below it in a hyperparameter search) and
its tags (`train/...`, `eval/...`, `test/...`, and the texts `args` and `model_config`) at the
Trainer's `global_step`. It logs on rank zero only and is closed at the end of training. Its
writer is an `mxboard.SummaryWriter`, which does not wait for the files after each log as
transformers' callback does: a running TensorBoard shows the points within `flush_secs`, and the
writer writes everything when training or the process ends. Importing this module imports
transformers.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Optional

from .. import SummaryWriter
from ._shared import check_writer_arguments, missing_trainer

try:
    from transformers.integrations.integration_utils import TensorBoardCallback as _HFCallback
    from transformers.integrations.integration_utils import rewrite_logs
except ImportError as error:
    raise missing_trainer(__name__, "transformers", error) from None

__all__ = ["TensorBoardCallback"]

_log = logging.getLogger(__name__)


# Transformers' types are not checked here.
class TensorBoardCallback(_HFCallback):  # type: ignore[misc]
    """transformers' `TensorBoardCallback`, whose writer is an `mxboard.SummaryWriter`.

    Args:
        tb_writer: a writer to log to (any `SummaryWriter`). By default, an
            `mxboard.SummaryWriter` is made in the logdir above when training starts.
        **writer_args: that writer's arguments (`flush_secs`, `upload_policy`, `spool`,
            `system_metrics`...). `TENSORBOARD_LOGGING_DIR` may be an `s3://`, `gs://` or `az://`
            URL.

    Raises:
        TypeError: a keyword argument that `SummaryWriter` does not take (naming the closest that
            it does).

    Example:
        >>> Trainer(model, TrainingArguments("out", report_to="none"), train_dataset=data,
        ...         callbacks=[TensorBoardCallback()]).train()
    """

    def __init__(self, tb_writer: Optional[Any] = None, **writer_args: Any) -> None:
        # A misspelled argument is refused here, naming this class, rather than when the writer
        # is made (when training starts, naming SummaryWriter).
        check_writer_arguments("mxboard.integrations.transformers.TensorBoardCallback", writer_args, ["tb_writer"])
        super().__init__(tb_writer)
        self._SummaryWriter = SummaryWriter
        self._writer_args = writer_args
        self.logging_dir: Optional[str]
        url = os.getenv("TENSORBOARD_LOGGING_DIR")
        # An object store's URL, not a path for expanduser.
        if url is not None and "://" in url:
            self.logging_dir = url

    def _init_summary_writer(self, args: Any) -> None:
        self.tb_writer = SummaryWriter(logdir=self.logging_dir, **self._writer_args)

    def on_log(self, args: Any, state: Any, control: Any, logs: Optional[Any] = None, **kwargs: Any) -> None:
        """Log each number in `logs` as a scalar and each str as text, at `state.global_step`,
        tagged as transformers' callback tags them (`rewrite_logs`). Other values are dropped with
        a warning."""
        if not state.is_world_process_zero:
            return
        if self.tb_writer is None:
            self._init_summary_writer(args)
        for tag, value in rewrite_logs(logs or {}).items():
            if isinstance(value, (int, float)):
                self.tb_writer.add_scalar(tag, value, state.global_step)
            elif isinstance(value, str):
                self.tb_writer.add_text(tag, value, state.global_step)
            else:
                _log.warning("Trainer is attempting to log a value of %r of type %s for key %r as a scalar: "
                             "dropped (only numbers and strings are logged)", value, type(value), tag)
