"""The scalars of one writer, its hot path: a series id for each tag (in the main event file) and
for each named value (in its sub-run's file), the calling thread's columns, and device scalars
(an MXNet NDArray, a torch CUDA tensor) copied into a free slot of their kind's slots without
waiting for the device. Everything here runs on the caller's thread, after the writer checked that it
is open."""
from __future__ import annotations

import threading
from types import MappingProxyType
from typing import Any, Callable, List, Mapping, NamedTuple, Tuple, Union

from .._writer.callsite import call_site
from .._writer.intake import WAKE_EVERY, PendingScalar, Record, closed_error
from .._writer.writer_thread import WriterThread
from ..frameworks.pending import Pending
from ..frameworks.scalar_slots import DeviceScalarSlots
from ..summaries.scalar import described_scalar_summary
from . import checks, convert

__all__ = ["Described", "ClosedScalars", "Scalars", "non_finite_message"]


def non_finite_message(tag: str, value: float, step: int) -> str:
    return ("add_scalar(%r): %s at step %d, logged as given (TensorBoard marks it on the curve); "
            "said once for this tag" % (tag, value, step))


class Described(NamedTuple):
    """A scalar with tensorboardX's display name and description: a summary of its own."""

    value: Union[float, Pending]
    display_name: str
    description: str


class Scalars:
    """`thread`: the writer thread's verbs (tags' scalars go to its main file); `slots`
    (scalar_slots.DeviceScalarSlots): where device scalars are copied; `suffix`: the event files'
    (a named value's sub-run has a file of its own)."""

    def __init__(self, thread: WriterThread, slots: DeviceScalarSlots, suffix: str) -> None:
        self._thread = thread
        self._slots = slots
        self._suffix = suffix
        # The lock guards new series.
        self._lock = threading.Lock()
        # It maps tag -> series id in the main file (the hot path reads it directly).
        self.ids: dict[str, int] = {}
        # It maps (how runs are named, tag, name) of a named value -> (series id in its sub-run's
        # file, its label in warnings).
        self._named: dict[Tuple[str, str, Any], Tuple[int, str]] = {}
        # Its .columns is this thread's ScalarColumns.
        self._local = threading.local()
        # It maps tag -> its device scalars' NaN warning.
        self._warners: dict[str, Callable[[float, int], None]] = {}

    def series(self, tag: str) -> int:
        """The series of `tag` in the main file, made on its first use."""
        checks.tag(tag)
        with self._lock:
            if tag not in self.ids:
                self.ids[tag] = self._thread.add_series(None, tag)
            return self.ids[tag]

    def append(self, series: int, value: float, step: int, wall: float) -> bool:
        """Queue one checked float. Nothing here can fail, so the columns stay aligned. Returns
        whether the writer thread holds something for the caller (an error, a warning, a fork:
        WriterCore.deliver_or_reopen says it)."""
        try:
            columns = self._local.columns
        except AttributeError:
            columns = self._local.columns = self._thread.columns()
        columns.append(series, value, step, wall)
        if len(columns.series) >= WAKE_EVERY:
            self._thread.hand_over(columns)
        return self._thread.holds_for_caller

    def append_device(self, series: int, tag: str, value: convert.Deferred, step: int, wall: float) -> bool:
        """Queue one checked device scalar (`convert.Deferred`): copied now into a free slot of
        the slots its kind names, read by the writer thread once its device computed it, in call
        order with the rows. Returns what `append` returns."""
        slots = self._slots.by_kind[value.kind]
        self._thread.put_scalar(PendingScalar(series, (slots, slots.hold(value.array)), step, wall,
                                              self._warner(tag)))
        return self._thread.holds_for_caller

    def add(self, tag: str, value: Union[convert.Named, Described], step: int, wall: float) -> None:
        """`Named` values, each name a line of its own in one chart, from its sub-run (`logdir/<tag>/<name>/`,
        or torch's `logdir/<tag with / as _>_<name>/`: `Named.runs`), every name checked before any value
        is queued; a `Described` scalar, a summary of its own (not a batched row)."""
        checks.tag(tag)
        if isinstance(value, convert.Named):
            if not value.values and value.runs != "torch":
                raise ValueError("value: the dict of named scalars for %r is empty" % tag)
            keys = [(value.runs, tag, name) for name in value.values]
            try:
                found = [self._named[key] for key in keys]
            # A name seen for the first time.
            except KeyError:
                found = self._sub_run_series(keys)
            for (series, label), v in zip(found, value.values.values()):
                if isinstance(v, float):
                    if v - v:
                        self.non_finite(label, v, step)
                    self.append(series, v, step, wall)
                # Read by the writer thread once its device computed it.
                else:
                    self.append_device(series, label, v, step, wall)
        # Described: its value a float or a Pending, which the Record resolves.
        else:
            self._thread.put(Record(None, described_scalar_summary, (tag, value.value, value.display_name,
                                                                     value.description), step, wall))

    def non_finite(self, tag: str, value: float, step: int) -> None:
        """On the caller's thread: a NaN or infinite scalar of `tag` is logged as given (TensorBoard
        draws it: a NaN loss is what a curve most needs to show), and said once a tag."""
        self._thread.warn_once(("scalar", tag), non_finite_message(tag, value, step))

    def _warner(self, tag: str) -> Callable[[float, int], None]:
        """What the writer thread calls for a device scalar of `tag` found NaN or infinite (made
        once a tag, at its first call's line: a call costs no frame walk)."""
        warner = self._warners.get(tag)
        if warner is None:
            warn = self._thread.warner(call_site(), ("scalar", tag))

            def warner(value: float, step: int) -> None:
                warn(non_finite_message(tag, value, step))

            self._warners[tag] = warner
        return warner

    def add_to_file(self, file: Any, values: Mapping[str, float], step: int, wall: float) -> None:
        """`{tag: float}` as scalars of the file `file` (WriterThread.open_sub_run_file; an hparams run's metrics)."""
        for tag, value in values.items():
            self.append(self._thread.add_series(file, tag), value, step, wall)

    def _sub_run_series(self, keys: List[Tuple[str, str, Any]]) -> List[Tuple[int, str]]:
        """The series of named values (each key: how runs are named, the tag, the name) in their
        sub-runs, and their labels in warnings. A new name is checked, every name before any file
        is opened; a new sub-run's file is opened here (`logdir/<run...>/`)."""
        new = {key: _sub_run(*key) for key in keys if key not in self._named}
        with self._lock:
            for key, (run, label) in new.items():
                if key not in self._named:
                    file = self._thread.open_sub_run_file(run, self._suffix)
                    self._named[key] = (self._thread.add_series(file, key[1]), label)
        return [self._named[key] for key in keys]


def _sub_run(runs: str, tag: str, name: Any) -> Tuple[Tuple[str, ...], str]:
    """The sub-run of a named value of `tag`, and its label in warnings, its name checked: torch's
    `<tag with / as _>_<name>` (the name a str: `convert.named`), else `<tag>/<name>`."""
    if runs == "torch":
        run = checks.tag("%s_%s" % (tag.replace("/", "_"), name), "run")
        return (run,), "%s (%s)" % (tag, run)
    return (tag, checks.tag(name, "scalar name")), "%s/%s" % (tag, name)


class ClosedScalars:
    """A closed writer's scalars, with `Scalars`' verbs: no tag is known, so the hot path's lookup
    misses and the call reopens the writer before it logs; every other verb says it is closed
    (a caller reopens first: reaching one is a bug)."""

    ids: Mapping[str, int] = MappingProxyType({})

    def series(self, tag: str) -> int:
        raise closed_error()

    def append(self, series: int, value: float, step: int, wall: float) -> bool:
        raise closed_error()

    def append_device(self, series: int, tag: str, value: Any, step: int, wall: float) -> bool:
        raise closed_error()

    def add(self, tag: str, value: Any, step: int, wall: float) -> None:
        raise closed_error()

    def non_finite(self, tag: str, value: float, step: int) -> None:
        raise closed_error()

    def add_to_file(self, file: Any, values: Mapping[str, float], step: int, wall: float) -> None:
        raise closed_error()
