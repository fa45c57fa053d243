"""`SummaryWriter`: the public face, with its lifecycle and scalars here and its other calls in
writer_media.py and writer_dashboards.py. Each call checks its arguments and captures its data
on the caller's thread (checks.py), then queues one item for the writer thread through the
worker's verbs (worker.py); building, encoding and writing happen there. After queueing, a call hears
what the writer thread has to report (an error raised, or a closed writer), so that a bad item
never costs a later call its data.
"""
from __future__ import annotations

import logging
import os
import socket
import sys
import weakref
from collections.abc import Mapping
from datetime import datetime
from time import time as _now
from typing import Any, Optional, Union

from . import checks, convert
from .compat import peer_names
from .mxnet_capture import ScalarSlots
from .scalars import Scalars
from .storage import open_storage
from .summaries.scalar import described_scalar_summary
from .worker import Record, Worker, WriterError, closed_error
from .writer_dashboards import DashboardCalls
from .writer_media import MediaCalls

__all__ = ["SummaryWriter"]

log = logging.getLogger("mxboard")

# tensorboardX's and torch's positional order for the constructor, taken when the second
# positional argument is a str (their `comment`; mxboard's `max_queue` cannot be one)
PEER_ORDER = ("logdir", "comment", "purge_step", "max_queue", "flush_secs", "filename_suffix", "write_to_disk")


class SummaryWriter(MediaCalls, DashboardCalls):
    """Writes TensorBoard event files into `logdir`, on a background thread.

    Every `add_*` checks its arguments and captures its data on the calling thread, then queues
    it: building, encoding and writing happen on the writer thread, so the training loop never
    waits for them. An error of the writer thread is raised by the next call. Scalars are here;
    images, video, figures, audio and text in `MediaCalls` (writer_media.py); histograms, PR
    curves, meshes, embeddings, hparams, graphs and custom scalars in `DashboardCalls`
    (writer_dashboards.py).

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
    def __init__(self, logdir: Optional[Union[str, os.PathLike]] = None, max_queue: int = 10, flush_secs: float = 2,
                 filename_suffix: Optional[str] = None, verbose: bool = True, *, comment: str = "",
                 purge_step: Optional[int] = None, write_to_disk: bool = True,
                 comet_config: Optional[dict] = None) -> None:
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
        self._logdir = os.fspath(logdir)
        self._storage = open_storage(self._logdir, write_to_disk)
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._suffix = filename_suffix or ""
        self._verbose = verbose
        self._closed = False
        self._open(purge_step)

    @property
    def closed(self) -> bool:
        """Whether `close()` was called (and `reopen()` not since)."""
        return self._closed

    @property
    def logdir(self) -> str:
        """Where this writer writes (tensorboardX's attribute; torch's is `log_dir`)."""
        return self._logdir

    log_dir = logdir

    def _open(self, purge_step=None):
        """Start a worker and the main event file (again after reopen, or in a forked child).
        `purge_step`: the main file begins as a restart at that step (the peers' purge_step)."""
        slots = ScalarSlots()  # where NDArray scalars are snapshotted
        self._worker = Worker(self._storage, self._flush_secs, self._max_queue, slots.read)
        self._finalizer = weakref.finalize(self, _close_unattended, self._worker)
        self._finalizer.atexit = False  # at exit, lifecycle.py closes every worker (and tells)
        self._files = []  # every event file opened, for export_scalars
        self._group_files = set()  # the sub-run files of named scalars
        self._file = self._new_file(self._storage.root, purge_step)
        self._scalars = Scalars(self._worker, self._file, slots, self._open_run)
        self._cleared = {}  # event file path -> offset export_scalars starts from

    def _new_file(self, directory, purge_step=None):
        event_file = self._worker.open_file(directory, self._suffix, purge_step)
        if event_file.path is not None:  # None: write_to_disk=False
            self._files.append(event_file)
        if self._verbose:
            log.info("mxboard: writing events to %s", event_file.path or "nowhere (write_to_disk=False)")
        return event_file

    # -- scalars: the hot path (scalars.py) --------------------------------------------------
    def add_scalar(self, tag: str, value: Any = None, global_step: Optional[int] = None,
                   walltime: Optional[float] = None, **peer: Any) -> None:
        """Log a number under `tag` (the training loop's hot path: a few microseconds).

        Args:
            tag: the chart's name.
            value: a number, numpy scalar, one-element array, torch tensor or MXNet NDArray (read
                once the engine has computed it: the loop never waits); or a `(name, value)`
                pair, a `[name, value]` list or a mapping of them: each name one line in the same
                chart, from the sub-run `logdir/<tag>/<name>/`.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.
            **peer: the peers' `scalar_value=` (for `value`); tensorboardX's `display_name` and
                `summary_description` (shown by TensorBoard; such a call is a summary of its
                own, not a batched row); torch's `new_style` and `double_precision` are
                accepted (values are float32 either way).

        Raises:
            TypeError, ValueError: a value that is no single real number, a bad tag or step.
            WriterError: the writer thread failed earlier (its cause is attached).

        Example:
            >>> sw.add_scalar("loss", loss.mean(), global_step=step)  # an NDArray: no wait
            >>> sw.add_scalar("accuracy", {"train": 0.91, "val": 0.87}, global_step=epoch)
        """
        kind = type(value)
        if kind is not float or peer:
            if peer:
                return self._add_scalar_peer(tag, value, global_step, walltime, **peer)
            if kind is dict or kind is tuple or kind is list or isinstance(value, Mapping):
                return self._add_scalar_group(tag, value, global_step, walltime)
            if convert.is_ndarray(value):
                self._ready()
                self._scalars.add_ndarray(tag, value, *checks.stamp(global_step, walltime))
                return self._report()
            value = convert.to_float(value)
        scalars = self._scalars
        try:
            series = scalars.ids[tag]
        except (KeyError, TypeError):
            self._ready()
            scalars = self._scalars  # a forked child's own
            series = scalars.series(tag)
        if global_step is None:
            global_step = 0
        elif type(global_step) is not int or not 0 <= global_step < 0x7FFFFFFFFFFFFFFF:
            global_step = checks.step(global_step)
        scalars.append(series, value, global_step, _now() if walltime is None else checks.walltime(walltime))
        if self._worker.attention and self._report_or_reopen():  # a forked child: once more
            self.add_scalar(tag, value, global_step, walltime)

    def _add_scalar_peer(self, tag, value, global_step, walltime, scalar_value=None, new_style=False,
                         double_precision=False, display_name="", summary_description=""):
        if scalar_value is not None:
            if value is not None:
                raise TypeError("add_scalar() got both 'value' and 'scalar_value' (tensorboardX's name for it)")
            value = scalar_value
        if display_name or summary_description:  # a summary of its own, with its metadata
            value = convert.capture(value, "value") if convert.is_ndarray(value) else convert.to_float(value)
            return self._log(described_scalar_summary, tag, (value, display_name, summary_description),
                             global_step, walltime)
        return self.add_scalar(tag, value, global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: Mapping, global_step: Optional[int] = None,
                    walltime: Optional[float] = None) -> None:
        """Lines in one chart (tensorboardX's call), as `add_scalar(main_tag, dict)`.

        Args:
            main_tag: the chart's name.
            tag_scalar_dict: `{name: value}`; each name's values go to the sub-run
                `logdir/<main_tag>/<name>/` (tensorboardX's layout; torch's is `<main_tag>_<name>`).
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: not a mapping, or a value that is no single number.

        Example:
            >>> sw.add_scalars("loss", {"train": 0.3, "val": 0.4}, global_step=10)
        """
        if not isinstance(tag_scalar_dict, Mapping):
            raise TypeError("tag_scalar_dict must be a dict of name -> value; got %s"
                            % type(tag_scalar_dict).__name__)
        self._add_scalar_group(main_tag, tag_scalar_dict, global_step, walltime)

    def _add_scalar_group(self, tag, group, global_step, walltime):
        self._ready()
        self._scalars.add_group(tag, group, *checks.stamp(global_step, walltime))
        self._report()

    def _open_run(self, tag, name):
        """The event file of the sub-run `logdir/<tag>/<name>/` of a named scalar."""
        run_file = self._new_file(self._storage.subdir(tag, name))
        self._group_files.add(run_file)
        return run_file

    # -- every other kind goes through here -------------------------------------------------
    def _log(self, build, tag, args, global_step=None, walltime=None, event_file=None):
        """Queue `build(tag, *args)` (a Summary or an Event; `args` checked already) for the
        writer thread, then raise what it has to report."""
        self._ready()
        tag = checks.tag(tag)
        self._put(build, (tag,) + tuple(args), global_step, walltime, event_file)

    def _put(self, build, args, global_step=None, walltime=None, event_file=None):
        """Queue `build(*args)` (a Summary or an Event) for the writer thread."""
        step, wall = checks.stamp(global_step, walltime)
        self._queue(Record(event_file or self._file, build, args, step, wall))

    def _queue(self, item):
        self._worker.put(item)
        self._report()

    def _ready(self):
        """Before a call queues its item: a closed writer raises; a forked child opens a worker
        (and files) of its own."""
        if self._closed:
            raise closed_error("this SummaryWriter (logdir %r)" % self._logdir)
        if self._worker.forked:
            self._reopen_in_child()

    def _report(self):
        """After a call queued its item: raise what the writer thread has to report."""
        if self._worker.attention:
            self._worker.report()

    def _report_or_reopen(self):
        """The scalar hot path's one check, after queueing: raise what the writer thread has to
        report; True in a forked child, which now has a worker of its own for the call."""
        if self._worker.forked:
            self._reopen_in_child()
            return True
        self._worker.report()
        return False

    def _reopen_in_child(self):
        """A forked child logs to files of its own, named with its own pid (closed at its exit,
        multiprocessing's too: lifecycle.py)."""
        self._finalizer.detach()
        self._open()

    # -- lifecycle --------------------------------------------------------------------------
    def flush(self) -> None:
        """Return when everything logged before the call is in the event files.

        Raises:
            RuntimeError: the writer is closed.
            WriterError: the writer thread failed.
        """
        self._ready()
        self._worker.flush()
        self._report()

    def close(self) -> None:
        """Write everything queued and close the files. Safe to call twice; logging afterwards
        raises.

        Raises:
            OSError, WriterError: a writer-thread error that no earlier call has reported.
        """
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        fault = self._worker.close()
        if fault is not None:
            raise fault

    def reopen(self) -> None:
        """After `close()`, start logging again, into a new event file (mxboard's reopen)."""
        if self._closed:
            self._closed = False
            self._open()

    def export_scalars(self, path: str) -> None:
        """Write the scalars this writer has written (since `clear_scalar_dict()`) to a JSON file.

        As mxboard did: `{"<logdir>/<tag>[/<name>]": [[wall_time, step, value], ...]}`, read back
        from the event files (no scalar is kept in memory).

        Args:
            path: the JSON file to write.
        """
        import json

        from .proto import Event
        from .reader import read_records

        self.flush()
        exported = {}
        for event_file in self._files:
            run = self._storage.run(event_file.directory)
            prefix = [self._logdir] + ([run] if run != "." else [])  # mxboard's keys: <logdir>/<tag>, and
            for piece, _ in event_file.pieces():  # <logdir>/<tag>/<name> for named values
                for payload in read_records(piece, self._cleared.get(piece, 0)):
                    event = Event.FromString(payload)
                    for value in event.summary.value:
                        if value.WhichOneof("value") == "simple_value":
                            key = prefix if event_file in self._group_files else prefix + [value.tag]
                            exported.setdefault("/".join(key), []).append(
                                [event.wall_time, event.step, value.simple_value])
        with open(path, "w") as f:
            json.dump(exported, f)

    def export_scalars_to_json(self, path: str) -> None:
        """tensorboardX's name for `export_scalars`."""
        self.export_scalars(path)

    def clear_scalar_dict(self) -> None:
        """Start `export_scalars` afresh from here."""
        self.flush()
        self._cleared = {piece: size for f in self._files for piece, size in f.pieces()}

    def get_logdir(self) -> str:
        """Where this writer writes (torch's method)."""
        return self._logdir

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def _close_unattended(worker):
    """A writer collected without close(): close its worker; an error has nobody to raise to,
    so it is told on stderr."""
    fault = worker.close()
    if fault is not None and not isinstance(fault, WriterError):
        sys.stderr.write("mxboard: a SummaryWriter collected unclosed could not write everything: %r\n" % (fault,))
