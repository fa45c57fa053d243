"""What every `SummaryWriter` call goes through (`WriterCore`), and the writer's lifecycle.

A call checks its arguments and captures its data on the caller's thread (checks.py), then
queues one item for the writer thread through the worker's verbs (worker.py); building, encoding
and writing happen there. After queueing, a call hears what the writer thread has to report (an
error raised), so that a bad item never costs a later call its data. A call on a closed writer
reopens it, with a new event file (as tensorboardX and torch do); a forked child's first call
opens a worker and files of its own.
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Optional, TypeVar, Union

from . import checks, lifecycle
from .intake import Record
from .mxnet_capture import ScalarSlots
from .scalars import ClosedScalars, Scalars
from .worker import Worker

__all__ = ["CallStamps", "WriterCore"]

W = TypeVar("W", bound="WriterCore")



class CallStamps:
    """The step and walltime a call is stamped with: those it gives, checked; else those of the
    enclosing `use_metadata`; else step 0 and the time of the call."""

    _default_step, _default_wall = 0, None  # use_metadata's, on the instance while it lasts

    def _stamp(self, global_step, walltime):
        """(step, walltime) of a call: those given, checked, else `use_metadata`'s, else 0 and now."""
        return checks.stamp(self._default_step if global_step is None else global_step,
                            self._default_wall if walltime is None else walltime)

    @contextlib.contextmanager
    def use_metadata(self, *, global_step: Optional[int] = None, walltime: Optional[float] = None):
        """The step and walltime of the enclosed calls that give none (tensorboardX's).

        Args:
            global_step: their step.
            walltime: their time, seconds since the epoch (default: each call's own).

        Example:
            >>> with sw.use_metadata(global_step=10):
            ...     sw.add_scalar("loss", 3.0)
        """
        saved = self._default_step, self._default_wall
        step, wall = checks.stamp(saved[0] if global_step is None else global_step, walltime)
        self._default_step, self._default_wall = step, None if walltime is None else wall
        try:
            yield self
        finally:
            self._default_step, self._default_wall = saved


class WriterCore(CallStamps):
    """A writer's worker, files and lifecycle; its calls (writer_*.py) queue through `_log`,
    `_put` and `_queue`. Arguments: those of `SummaryWriter`, checked."""

    def __init__(self, logdir: str, max_queue: int, flush_secs: float, suffix: str, verbose: bool,
                 purge_step: Optional[int], write_to_disk: bool) -> None:
        self._logdir = logdir
        self._write_to_disk = write_to_disk
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._suffix = suffix
        self._verbose = verbose
        self._closed = False
        self._layout_lock = threading.Lock()  # this writer's layout calls, one at a time (writer_dashboards.py)
        self._open(purge_step)

    @property
    def closed(self) -> bool:
        """Whether `close()` was called (and no call or `reopen()` since)."""
        return self._closed

    @property
    def logdir(self) -> str:
        """Where this writer writes (tensorboardX's attribute; torch's is `log_dir`)."""
        return self._logdir

    log_dir = logdir

    def get_logdir(self) -> str:
        """Where this writer writes (torch's method)."""
        return self._logdir

    def _open(self, purge_step=None):
        """Start a worker, whose thread opens the main event file, and the scalars over it (again
        after close, or in a forked child). `purge_step`: the main file begins as a restart at
        that step (the peers' purge_step)."""
        slots = ScalarSlots()  # where NDArray scalars are snapshotted
        self._worker = Worker(self._flush_secs, self._max_queue, slots.read)
        # nothing of the scalars refers back to the writer: once unreferenced, it is freed at once
        self._scalars: Union[Scalars, ClosedScalars] = Scalars(self._worker, slots, self._suffix)
        # collected unclosed: the reaper thread closes the worker (never the collecting thread,
        # which may be a writer thread); at exit, lifecycle.py closes every worker (and tells)
        self._finalizer = weakref.finalize(self, lifecycle.reap, self._worker)
        self._finalizer.atexit = False
        self._worker.start_writing(self._logdir, self._write_to_disk, self._suffix, purge_step, self._verbose)

    def _open_run(self, *names):
        """The id of a new event file, with this writer's filename suffix, in the sub-run
        `logdir/<names...>/` (opened on the writer thread)."""
        return self._worker.open_run(names, self._suffix)

    # -- every call goes through here ---------------------------------------------------------
    def _log(self, build, tag, args, global_step=None, walltime=None, run=None):
        """Queue `build(tag, *args)` (a Summary or an Event; `args` checked already) for the
        writer thread, then raise what it has to report."""
        self._ready()
        tag = checks.tag(tag)
        self._put(build, (tag,) + tuple(args), global_step, walltime, run)

    def _put(self, build, args, global_step=None, walltime=None, run=None):
        """Queue `build(*args)` (a Summary or an Event) for the writer thread."""
        step, wall = self._stamp(global_step, walltime)
        self._queue(Record(run, build, args, step, wall))

    def _queue(self, item):
        self._worker.put(item)
        self._report()

    def _ready(self):
        """Before a call queues its item: a closed writer reopens; a forked child opens a worker
        (and files) of its own."""
        if self._closed or self._worker.forked:
            self._reopen_for_call()

    def _report(self):
        """After a call queued its item: raise what the writer thread has to report."""
        if self._worker.attention:
            self._worker.report()

    def _report_or_reopen(self):
        """The scalar hot path's one check, after queueing: raise what the writer thread has to
        report (a call racing close() was written, or raises); True in a forked child, which now
        has a worker of its own for the call, to be made once more."""
        if self._worker.forked:
            self._reopen_for_call()
            return True
        self._worker.report()
        return False

    def _reopen_for_call(self):
        """A call after close() reopens the writer (a new event file); a forked child logs to
        files of its own, named with its own pid (closed at its exit, multiprocessing's too:
        lifecycle.py)."""
        self._finalizer.detach()
        self._closed = False
        self._open()

    # -- lifecycle --------------------------------------------------------------------------
    def flush(self) -> None:
        """Return when everything logged before the call is in the event files (or the store).

        Raises:
            WriterError: the writer thread failed.
        """
        if self._closed:
            return
        self._ready()
        self._worker.flush()
        self._report()

    def close(self) -> None:
        """Write everything queued and close the files. Safe to call twice. A later call
        reopens the writer, with a new event file (as tensorboardX and torch do).

        Raises:
            OSError, WriterError: a writer-thread error that no earlier call has reported.
        """
        if self._closed:
            return
        self._closed = True
        self._scalars = ClosedScalars()  # a later add_scalar misses the hot path's lookup, and reopens
        self._finalizer.detach()
        fault = self._worker.close()
        if fault is not None:
            raise fault
        self._worker.say_notes()

    def reopen(self) -> None:
        """After `close()`, start logging again, into a new event file (mxboard's reopen; any
        call does it too)."""
        if self._closed:
            self._reopen_for_call()

    def __enter__(self: W) -> W:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
