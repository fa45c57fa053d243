"""The scalars of one writer, its hot path: a series id for each tag (in the main event file) and
for each named value (in its sub-run's file), the calling thread's columns, and MXNet scalars
captured into slots without waiting for the engine. Everything here runs on the caller's thread,
after the writer checked that it is open."""
from __future__ import annotations

import threading
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from . import checks, convert
from .intake import WAKE_EVERY, PendingScalar, Record, closed_error
from .mxnet_capture import Snapshot
from .summaries.scalar import described_scalar_summary

__all__ = ["DESCRIBED", "ClosedScalars", "Scalars"]

DESCRIBED = "described"  # Scalars.add's form of a scalar with tensorboardX's display name and description


class Scalars:
    """`worker`: the writer thread's verbs (tags' scalars go to its main file); `slots`
    (mxnet_capture.ScalarSlots): where NDArray scalars are copied; `suffix`: the event files'
    (a named value's sub-run has a file of its own)."""

    def __init__(self, worker, slots, suffix):
        self._worker = worker
        self._slots = slots
        self._suffix = suffix
        self._lock = threading.Lock()  # guards new series
        self.ids = {}  # tag -> series id in the main file (the hot path reads it directly)
        self._runs = {}  # (tag, name) -> series id in the sub-run's file
        self._local = threading.local()  # .columns: this thread's ScalarColumns

    def series(self, tag):
        """The series of `tag` in the main file, made on its first use."""
        checks.tag(tag)
        with self._lock:
            if tag not in self.ids:
                self.ids[tag] = self._worker.add_series(None, tag)
            return self.ids[tag]

    def append(self, series, value, step, wall):
        """Queue one checked float. Nothing here can fail, so the columns stay aligned."""
        try:
            columns = self._local.columns
        except AttributeError:
            columns = self._local.columns = self._worker.columns()
        columns.append(series, value, step, wall)
        if len(columns.series) >= WAKE_EVERY:
            self._worker.hand_over(columns)

    def add(self, form, tag, value, step, wall):
        """A value of `form` (convert.scalar_form): GROUP `{name: value}`, each name a line of its
        own in one chart, from the sub-run `logdir/<tag>/<name>/` (every value checked before
        any is queued); DEFERRED, an NDArray read by the writer thread once the engine has
        computed it. DESCRIBED: `(form, value, display_name, description)`, a scalar with
        tensorboardX's metadata, a summary of its own (not a batched row)."""
        checks.tag(tag)
        if form is DESCRIBED:
            kind, value, display_name, description = value
            if kind is convert.DEFERRED:  # read by the writer thread once the engine computed it
                value = self._snapshot(value, alone=True)
            self._worker.put(Record(None, described_scalar_summary, (tag, value, display_name, description),
                                    step, wall))
            return
        if form is convert.DEFERRED:
            series = self.ids.get(tag)  # a lock only the first time
            self._worker.put_scalar(PendingScalar(self.series(tag) if series is None else series,
                                                  self._snapshot(value), step, wall))
            return
        if not value:
            raise ValueError("value: the dict of named scalars for %r is empty" % tag)
        values = []
        for name, v in value.items():
            kind, v = convert.scalar_form(v, "value[%r]" % (name,), named=False)
            values.append((checks.tag(name, "scalar name"), v if kind is convert.NUMBER
                           else self._snapshot(v, "value[%r]" % (name,))))
        for name, v in values:
            series = self._run_series(tag, name)
            if isinstance(v, float):
                self.append(series, v, step, wall)
            else:  # an NDArray snapshot
                self._worker.put_scalar(PendingScalar(series, v, step, wall))

    def add_to_file(self, run, values, step, wall):
        """`{tag: float}` as scalars of the file `run` (Worker.open_run; an hparams run's metrics)."""
        for tag, value in values.items():
            self.append(self._worker.add_series(run, tag), value, step, wall)

    def _run_series(self, tag, name):
        with self._lock:
            if (tag, name) not in self._runs:
                run = self._worker.open_run((tag, name), self._suffix)  # logdir/<tag>/<name>/
                self._runs[(tag, name)] = self._worker.add_series(run, tag)
            return self._runs[(tag, name)]

    def _snapshot(self, value, name="value", alone=False):
        """An NDArray scalar (say `loss.mean()`) as a snapshot the writer thread reads when the
        engine has computed it: the training loop never waits. Every form of scalar call
        captures an NDArray here, its shape checked once. `alone`: a Snapshot of its own (a
        described scalar's Record resolves it), else a slot of the batched rows (ScalarSlots)."""
        shape = value.shape
        if shape != (1,) and int(np.prod(shape)) != 1:
            raise ValueError("%s must be a single number; got an NDArray of shape %s" % (name, shape))
        return Snapshot(value) if alone else self._slots.capture(value, shape)


class ClosedScalars:
    """A closed writer's scalars, with `Scalars`' verbs: no tag is known, so the hot path's lookup
    misses and the call reopens the writer before it logs; every other verb says it is closed
    (a caller reopens first: reaching one is a bug)."""

    ids: Mapping[str, int] = MappingProxyType({})

    def series(self, tag: str) -> int:
        raise closed_error()

    def append(self, series: int, value: float, step: int, wall: float) -> None:
        raise closed_error()

    def add(self, form: str, tag: str, value: Any, step: int, wall: float) -> None:
        raise closed_error()

    def add_to_file(self, run: Any, values: Mapping[str, float], step: int, wall: float) -> None:
        raise closed_error()
