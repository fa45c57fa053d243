"""`SummaryWriter`: the public face. Checks arguments and captures data on the caller's thread;
everything costly happens on the writer thread (worker.py)."""
import logging
import os
import threading
import weakref
from time import time as _now

from . import convert
from ._paths import subdir
from .encoding import ScalarSeries, encode_event
from .events import FILE_VERSION, EventFile
from .proto import Event
from .worker import WAKE_EVERY, Worker, WriterError, _Forked

__all__ = ["SummaryWriter"]

log = logging.getLogger("mxboard")
_CLOSED = object()


class SummaryWriter:
    """Writes TensorBoard event files into `logdir`, on a background thread.

    Arguments are mxboard 0.1.0's: `max_queue` is how many array summaries (histograms,
    images...) may wait for the writer thread before `add_*` blocks (scalars are batched,
    1024 to such a slot); `flush_secs` is the longest time anything waits before it reaches the
    file, 2 s by default so a running TensorBoard shows new points within seconds;
    `filename_suffix` ends the event file's name; `verbose` logs where the file is (at INFO on
    the `mxboard` logger).
    """

    def __init__(self, logdir, max_queue=10, flush_secs=2, filename_suffix=None, verbose=True):
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
        self._logdir = os.fspath(logdir)
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._suffix = filename_suffix or ""
        self._verbose = verbose
        self._closed = False
        self._lock = threading.RLock()  # guards new series and sub-run files
        self._open()

    def _open(self):
        """Start a worker and the main event file (again in a forked child)."""
        self._worker = Worker(self._flush_secs, self._max_queue)
        self._finalizer = weakref.finalize(self, self._worker.close)
        self._local = threading.local()  # .columns: this thread's ScalarColumns
        self._file = self._new_file(self._logdir)
        self._series = {}  # tag -> series id of the tag's scalars in the main file
        self._runs = {}  # (tag, name) -> series id of the sub-run logdir/<tag>/<name>/

    def _new_file(self, directory):
        os.makedirs(directory, exist_ok=True)
        event_file = EventFile(directory, self._suffix)
        event_file.write(encode_event(Event(wall_time=_now(), file_version=FILE_VERSION)))
        self._worker.files.append(event_file)
        if self._verbose:
            log.info("mxboard: writing events to %s", event_file.path)
        return event_file

    def _new_series(self, event_file, tag):
        with self._lock:
            self._worker.series.append(ScalarSeries(event_file, tag))
            return len(self._worker.series) - 1  # appended before any scalar names it

    # -- scalars: the hot path --------------------------------------------------------------
    def add_scalar(self, tag, value, global_step=None, walltime=None):
        """Log a number under `tag`. `value` is a number, numpy scalar, one-element array or
        NDArray; or a `(name, value)` pair, a `[name, value]` list, or a dict of them: each name
        one line in the same chart, written to the sub-run `logdir/<tag>/<name>/`."""
        if self._worker.fault is not None:
            self._recover()
        kind = type(value)
        if kind is not float:
            if kind is dict or kind is tuple or kind is list:
                return self._add_scalar_group(tag, value, global_step, walltime)
            value = convert.to_float(value)
        try:
            series = self._series[tag]
        except (KeyError, TypeError):
            series = self._series[tag] = self._new_series(self._file, convert.check_tag(tag))
        if global_step is None:
            global_step = 0
        elif type(global_step) is not int or not 0 <= global_step < 0x7FFFFFFFFFFFFFFF:
            global_step = convert.to_int(global_step)
        wall = _now() if walltime is None else _walltime(walltime)
        self._append(series, value, global_step, wall)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """tensorboardX's name for a dict of lines in one chart: `add_scalar(main_tag, dict)`."""
        if not isinstance(tag_scalar_dict, dict):
            raise TypeError("tag_scalar_dict must be a dict of name -> value; got %s"
                            % type(tag_scalar_dict).__name__)
        self._add_scalar_group(main_tag, tag_scalar_dict, global_step, walltime)

    def _add_scalar_group(self, tag, group, global_step, walltime):
        self._check()
        convert.check_tag(tag)
        if isinstance(group, (tuple, list)):
            if len(group) != 2:
                raise ValueError("a %s value must be a (name, value) pair; got %d elements"
                                 % (type(group).__name__, len(group)))
            group = {group[0]: group[1]}
        if not group:
            raise ValueError("value: the dict of named scalars for %r is empty" % tag)
        step = 0 if global_step is None else convert.to_int(global_step)
        wall = _now() if walltime is None else _walltime(walltime)
        values = [(convert.check_tag(name, "scalar name"), convert.to_float(v, "value[%r]" % (name,)))
                  for name, v in group.items()]
        for name, value in values:
            self._add_to_run(tag, name, value, step, wall)

    def _add_to_run(self, tag, name, value, step, wall):
        series = self._runs.get((tag, name))
        if series is None:
            with self._lock:
                if (tag, name) not in self._runs:
                    run_file = self._new_file(subdir(self._logdir, tag, name))
                    self._runs[(tag, name)] = self._new_series(run_file, tag)
            series = self._runs[(tag, name)]
        self._append(series, value, step, wall)

    def _append(self, series, value, step, wall):
        """Queue one checked scalar. Nothing here can fail, so the four columns stay aligned."""
        try:
            columns = self._local.columns
        except AttributeError:
            columns = self._local.columns = self._worker.new_columns()
        add_value, add_step, add_wall, add_series = columns.append
        add_value(value)
        add_step(step)
        add_wall(wall)
        add_series(series)
        if len(columns.series) >= WAKE_EVERY:
            self._worker.nudge(columns)

    # -- every other kind goes through here -------------------------------------------------
    def _put(self, build, args, global_step, walltime, event_file=None):
        """Queue `build(*args)` (a Summary or an Event) for the writer thread."""
        self._check()
        step = 0 if global_step is None else convert.to_int(global_step)
        wall = _now() if walltime is None else _walltime(walltime)
        self._worker.put_event((event_file or self._file, (build, args), step, wall))

    # -- lifecycle --------------------------------------------------------------------------
    def flush(self):
        """Return when everything logged before the call is in the event files."""
        self._check()
        self._worker.flush()
        self._check()

    def close(self):
        """Write everything queued and close the files. Safe to call twice; logging afterwards
        raises. Raises a writer-thread error that no earlier call has reported."""
        if self._closed:
            return
        self._closed = True
        worker = self._worker
        self._finalizer()
        fault = worker.take_fault()
        worker.fault = _CLOSED
        if fault is not None and not isinstance(fault, (_Forked, WriterError)):  # not a repeat
            raise fault

    def get_logdir(self):
        return self._logdir

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _check(self):
        if self._worker.fault is not None:
            self._recover()

    def _recover(self):
        """Called when the worker has something to say: raise it, or reopen after a fork."""
        if self._closed:
            raise RuntimeError("this SummaryWriter (logdir %r) is closed" % self._logdir)
        fault = self._worker.take_fault()
        if isinstance(fault, _Forked):
            # A forked child logs to files of its own, named with its own pid.
            self._finalizer.detach()
            self._open()
        elif fault is not None:
            raise fault
        return self._worker


def _walltime(walltime):
    wall = convert.to_float(walltime, "walltime")
    if not wall > 0:
        raise ValueError("walltime must be seconds since the epoch (> 0); got %r" % (walltime,))
    return wall
