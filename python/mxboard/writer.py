"""`SummaryWriter`: the public face. Its constructor checks the arguments; its calls come from
one class a dashboard (writer_scalars.py, writer_media.py, writer_dashboards.py), each a part of
`WriterCore` (writer_core.py), through which every call queues its item for the writer thread.
"""
from __future__ import annotations

import os
import socket
from datetime import datetime
from typing import Any, Dict, Optional, Union

from . import checks
from ._format.names import is_url
from .compat import peer_names
from .system_metrics import SystemMetrics, psutil_module
from .system_metrics import interval_of as system_metrics_interval
from .writer_dashboards import HistogramCalls, LayoutCalls, ModelCalls
from .writer_media import AudioTextCalls, ImageCalls
from .writer_scalars import ScalarCalls

__all__ = ["SummaryWriter"]

# tensorboardX's and torch's positional order for the constructor, taken when the second
# positional argument is a str (their `comment`; mxboard's `max_queue` cannot be one)
PEER_ORDER = ("logdir", "comment", "purge_step", "max_queue", "flush_secs", "filename_suffix", "write_to_disk")


class SummaryWriter(ScalarCalls, ImageCalls, AudioTextCalls, HistogramCalls, ModelCalls, LayoutCalls):
    """Writes TensorBoard event files into `logdir`, on a background thread.

    Every `add_*` checks its arguments and captures its data on the calling thread, then queues
    it: building, encoding and writing happen on the writer thread, so the training loop never
    waits for them. An error of the writer thread is raised by the next call. After `close()`,
    the next call reopens the writer with a new event file, as tensorboardX and torch do.

    Args:
        logdir: the run's directory, or an object-store URL (`s3://bucket/prefix/run`, any
            fsspec URL). Default: `runs/<date>_<host><comment>`, as tensorboardX and torch.
        max_queue: array summaries of 1 MiB or more that may wait for the writer thread before
            `add_*` blocks (smaller ones share a slot by size, up to 64 to a slot; scalars are
            batched, 8192 to a slot; array data is bounded to 64 MiB as well).
        flush_secs: the longest time anything logged waits before it reaches the file (a running
            TensorBoard shows it within seconds).
        filename_suffix: ends the event file's name.
        verbose: log where the file is (INFO on the `mxboard` logger).
        comment: appended to the default logdir's name (ignored when `logdir` is given).
        purge_step: resume a run at this step: TensorBoard hides the steps >= it logged before.
        write_to_disk: False writes nothing (the calls are still checked).
        comet_config: tensorboardX's; only `{'disabled': True}` (its default) is taken.
        system_metrics: True (every 10 s) or a number of seconds: CPU, memory, disk and network
            I/O (and NVIDIA GPUs) as scalars under `system/` (system_metrics.py; needs psutil:
            `pip install 'mxboard[system]'`).

    Raises:
        TypeError, ValueError: an argument of the wrong type or value (named in the message).
        ImportError, PermissionError, ConnectionError: a logdir URL whose package is missing,
            whose store refuses the credentials, or cannot be reached.

    Example:
        >>> with SummaryWriter("runs/exp1") as sw:
        ...     for step in range(100):
        ...         sw.add_scalar("loss", 1.0 / (step + 1), global_step=step)
    """

    @peer_names({"log_dir": "logdir"}, peer_order=PEER_ORDER,
                is_peer_order=lambda args: len(args) > 1 and isinstance(args[1], str))
    def __init__(self, logdir: Optional[Union[str, os.PathLike[str]]] = None, max_queue: int = 10,
                 flush_secs: float = 2, filename_suffix: Optional[str] = None, verbose: bool = True, *,
                 comment: str = "", purge_step: Optional[int] = None, write_to_disk: bool = True,
                 comet_config: Optional[Dict[str, Any]] = None, system_metrics: Union[bool, float] = False) -> None:
        if comet_config is not None and not (isinstance(comet_config, dict) and comet_config.get("disabled")):
            raise ValueError("comet_config=%r: mxboard logs to TensorBoard only, not to Comet (tensorboardX's "
                             "comet_config={'disabled': True}, its default, is taken)" % (comet_config,))
        if logdir is None:  # the peers' default: runs/<date>_<host><comment>
            if not isinstance(comment, str):
                raise TypeError("comment must be a str; got %s" % type(comment).__name__)
            logdir = os.path.join("runs", "%s_%s%s" % (datetime.now().strftime("%b%d_%H-%M-%S"),
                                                       socket.gethostname(), comment))
        if isinstance(logdir, bytes) or not isinstance(logdir, (str, os.PathLike)):
            raise TypeError("logdir must be a str or os.PathLike; got %s" % type(logdir).__name__)
        if isinstance(max_queue, bool) or not isinstance(max_queue, int) or max_queue < 1:
            raise ValueError("max_queue must be an int >= 1; got %r" % (max_queue,))
        if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)) or not flush_secs > 0:
            raise ValueError("flush_secs must be a number > 0; got %r" % (flush_secs,))
        if filename_suffix is not None and not isinstance(filename_suffix, str):
            raise TypeError("filename_suffix must be a str or None; got %s" % type(filename_suffix).__name__)
        if filename_suffix and ("/" in filename_suffix or "\\" in filename_suffix or "\0" in filename_suffix):
            raise ValueError("filename_suffix must not contain path separators or NUL: %r" % filename_suffix)
        purge_step = None if purge_step is None else checks.step(purge_step, "purge_step")
        if purge_step is not None and purge_step < 0:
            raise ValueError("purge_step must be >= 0; got %d" % purge_step)
        interval = system_metrics_interval(system_metrics)
        if interval is not None:
            psutil_module()  # missing: an ImportError naming the extra, before any file is made
        logdir = os.fspath(logdir)
        super().__init__(logdir if is_url(logdir) else os.path.expanduser(logdir), max_queue, flush_secs,
                         filename_suffix or "", verbose, purge_step, write_to_disk)
        self._system = None
        if interval is not None:
            self._system = SystemMetrics(self, interval)

    def close(self) -> None:
        """Write everything queued and close the files (system metrics stop). Safe to call twice.
        A later call reopens the writer, with a new event file (as tensorboardX and torch do).

        Raises:
            OSError, WriterError: a writer-thread error that no earlier call has reported.
        """
        system, self._system = getattr(self, "_system", None), None
        if system is not None:
            system.stop()
        super().close()


def _named_as_public(cls: type) -> None:
    """The public methods, wherever their mixin defines them, named `SummaryWriter.<name>`: Python's
    own errors (an unexpected keyword) then name the method the user called."""
    for name in dir(cls):
        function = getattr(cls, name, None)
        while not name.startswith("_") and callable(function) and hasattr(function, "__qualname__"):
            function.__qualname__ = "%s.%s" % (cls.__name__, name)
            function = getattr(function, "__wrapped__", None)


_named_as_public(SummaryWriter)
