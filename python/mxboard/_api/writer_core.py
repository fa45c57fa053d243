"""`WriterCore`: what every `SummaryWriter` call goes through, and the writer's lifecycle.

A call checks its arguments and captures its data on the caller's thread (checks.py), then
queues one item for its writer thread (writer_thread.py), where building, encoding and writing
happen. After queueing, the call raises the error the writer thread holds for the caller, if
any, so that a bad item never costs a later call its data. A call on a closed writer reopens it
with a new event file, as tensorboardX and torch do, and a forked child's first call opens a
writer thread and files of its own. A writer that the process's exit closed is closed too, and a
later call (an exit hook's, a `__del__`'s at the interpreter's finalization) reopens it without a
thread, each call then written on the caller's thread before it returns.
"""
from __future__ import annotations

import threading
import weakref
from types import MappingProxyType
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .._writer import lifecycle
from .._writer.callsite import call_site
from .._writer.intake import Record
from .._writer.writer_thread import State, WriterThread
from ..frameworks.scalar_slots import DeviceScalarSlots
from ..storage import Destination
from . import checks
from .scalars import ClosedScalars, Scalars

__all__ = ["WriterCore"]


class WriterCore:
    """What a `SummaryWriter` has: its writer thread, its scalars, its files and their
    lifecycle, and the step and walltime its calls are stamped with. Every call other than a
    plain scalar queues through `queue_summary` or `queue_record`. Arguments: those of
    `SummaryWriter`, checked."""

    def __init__(self, destination: Destination, max_queue: int, flush_secs: float, suffix: str, verbose: bool,
                 purge_step: Optional[int], hooks: bool = True) -> None:
        self.logdir = destination.logdir
        self._destination = destination
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._suffix = suffix
        self._verbose = verbose
        # Whether the process's ends act on it: closed at exit, flushed at SIGTERM and SIGHUP.
        self._hooks = hooks
        # Whether close() was called, and no call or reopen() since (`closed` also says whether
        # the process's exit closed the writer thread).
        self._closed = False
        # the step and walltime of calls that give none: use_metadata's, while it lasts
        self.default_step: int = 0
        self.default_wall: Optional[float] = None
        # The Custom Scalars charts logged so far, replaced whole by each call (never changed in
        # place). `_layout_lock` (one for each writer) makes a call's merge and its queueing one
        # step (add_layout), so that the last layout queued holds every call's charts.
        self.layout: Mapping[str, Mapping[str, Any]] = MappingProxyType({})
        self._layout_lock = threading.Lock()
        # Event file piece -> where export_scalars starts.
        self.cleared: Mapping[str, int] = MappingProxyType({})
        # A said_once head -> the user's line of its first call.
        self._sites: Dict[str, Any] = {}
        self._open(purge_step)

    def stamp(self, global_step: Any, walltime: Any) -> Tuple[int, float]:
        """(step, walltime) of a call: those given, checked, else `use_metadata`'s, else 0 and now."""
        return checks.stamp(self.default_step if global_step is None else global_step,
                            self.default_wall if walltime is None else walltime)

    @property
    def closed(self) -> bool:
        """Whether the writer is closed: by `close()`, or by the process's exit, whose hook closes
        every writer still open (and no call or `reopen()` since)."""
        return self._closed or self.thread.state is State.CLOSED

    def _open(self, purge_step: Optional[int] = None) -> None:
        """Start a writer thread, which opens the main event file, and the scalars over it (again
        after close, or in a forked child). `purge_step`: the main file begins as a restart at
        that step (tensorboardX's and torch's purge_step)."""
        # The slots that device scalars are copied into.
        slots = DeviceScalarSlots()
        self.thread = WriterThread(self._flush_secs, self._max_queue, slots.read)
        # collected unclosed: the reaper thread closes the writer thread (never the collecting
        # thread, which may be another writer's); at exit, process_exit.py closes every writer
        # thread and says on stderr what failed
        self._finalizer = weakref.finalize(self, lifecycle.reap, self.thread)
        self._finalizer.atexit = False
        self.thread.start_writing(self._destination, self._suffix, purge_step, self._verbose, self._hooks)
        # Opened once the process's exit began (an exit hook or a `__del__` logs after mxboard's
        # closed the writers): no thread was started, and no exit hook of mxboard's will close
        # it, so each call is written on the caller's thread before it returns.
        self._written_through = self.thread.writes_here
        # nothing of the scalars refers back to the writer: once unreferenced, it is freed at once
        self.scalars: Union[Scalars, ClosedScalars] = (
            _WrittenThrough if self._written_through else Scalars)(self.thread, slots, self._suffix)

    def open_sub_run_file(self, *names: str) -> int:
        """The id of a new event file, with this writer's filename suffix, in the sub-run
        `logdir/<names...>/` (opened on the writer thread)."""
        return self.thread.open_sub_run_file(names, self._suffix)

    def queue_scalar(self, tag: str, value: Any, global_step: Any, walltime: Any) -> None:
        """Named values, an NDArray read later, or a described scalar (scalars.Scalars.add); the
        hot path's plain floats go through `scalars` directly."""
        self.reopen_if_needed()
        self.scalars.add(tag, value, *self.stamp(global_step, walltime))
        self.deliver_to_caller()

    def queue_scalars_to_file(self, file: Optional[int], values: Mapping[str, float], step: int, wall: float) -> None:
        """`{tag: float}` as scalars of the sub-run file `file` (None: the main one; an hparams
        run's metrics)."""
        self.scalars.add_to_file(file, values, step, wall)

    def scalar_tags(self) -> Mapping[str, int]:
        """The tags this writer has logged plain scalars of (in its main file)."""
        return self.scalars.ids

    def warner(self, site: Any, once: Any = None) -> Callable[[str], None]:
        """A warning a builder on the writer thread may give, shown at `site`, the user's line
        (writer_thread.WriterThread.warner)."""
        return self.thread.warner(site, once)

    def said_once(self, head: str, step: Optional[int], site: Any = None) -> Callable[[str], None]:
        """The NaN and Inf policy's warning for an array kind (docs/guarantees.md): `say(what)`
        keeps one RuntimeWarning "<head>: <what> at step <step>; said once for this tag" the first time
        this writer meets `head` (a call and its tag, "add_image('x')"), shown at `site` (None:
        the line of this writer's first call of `head`, found once: a later call walks no
        frames). A check may call it on the caller's thread (numpy: shown as the call returns)
        or on the writer thread (a device array's values: shown by the next call). The warner
        is made only when something is said."""
        if site is None:
            site = self._sites.get(head)
            if site is None:
                site = self._sites[head] = call_site()
        thread = self.thread
        where = "" if step is None else " at step %d" % step
        return lambda what: thread.warner(site, head)("%s: %s%s; said once for this tag" % (head, what, where))

    def call_in_order(self, fn: Callable[..., Any], *args: Any) -> None:
        """`fn(storage, *args)` on the writer thread after everything queued; returns once it ran
        (files in place), raising what it raised."""
        self.thread.call(fn, *args)

    def add_layout(self, layout: Mapping[str, Mapping[str, Any]], build: Callable[[Any], Any],
                   convert: Callable[[Mapping[str, Any]], Any]) -> None:
        """Queue `build(convert(merged))`: this writer's Custom Scalars charts with `layout`'s
        merged in (a chart of the same category and title replaced). Merging and queueing are one
        step under `_layout_lock`, so the last layout queued holds every call's charts
        (TensorBoard shows a run's last)."""
        self.reopen_if_needed()
        with self._layout_lock:
            merged: Dict[str, Dict[str, Any]] = {category: dict(charts) for category, charts in self.layout.items()}
            for category, charts in layout.items():
                merged.setdefault(category, {}).update(charts)
            self.layout = merged
            self.queue_record(build, (convert(merged),))

    # -- every call goes through here ---------------------------------------------------------
    def queue_summary(self, build: Callable[..., Any], tag: Any, args: Sequence[Any], global_step: Any = None,
                      walltime: Any = None, file: Optional[int] = None) -> None:
        """Queue `build(tag, *args)` (a Summary or an Event; `args` checked already) for the
        writer thread, then deliver what the thread holds for the caller."""
        self.reopen_if_needed()
        tag = checks.tag(tag)
        self.queue_record(build, (tag,) + tuple(args), global_step, walltime, file)

    def queue_record(self, build: Callable[..., Any], args: Sequence[Any], global_step: Any = None,
                     walltime: Any = None, file: Optional[int] = None) -> None:
        """Queue `build(*args)` (a Summary or an Event) for the writer thread, then deliver what
        the thread holds for the caller."""
        step, wall = self.stamp(global_step, walltime)
        self.thread.put(Record(file, build, tuple(args), step, wall))
        if self._written_through:
            self.thread.flush()
        self.deliver_to_caller()

    def reopen_if_needed(self) -> None:
        """Before a call queues its item: a closed writer reopens; a forked child opens a writer
        thread (and files) of its own."""
        if self.closed or self.thread.forked:
            self._reopen_for_call()

    def deliver_to_caller(self) -> None:
        """After a call queued its item: raise what the writer thread has to report."""
        if self.thread.holds_for_caller:
            self.thread.deliver_to_caller()

    def deliver_or_reopen(self) -> bool:
        """The scalar hot path's one check, after queueing: raise what the writer thread has to
        report (a call racing close() was written, or raises). True where the call went to a
        writer thread that cannot write it, and the writer now has one that can, for the call to
        be made once more: in a forked child, and after the process's exit closed the writer."""
        # A writer thread closed though close() was not called: the process's exit closed it.
        if self.thread.forked or (not self._closed and self.thread.state is State.CLOSED):
            self._reopen_for_call()
            return True
        self.thread.deliver_to_caller()
        return False

    def _reopen_for_call(self) -> None:
        """A call after close() reopens the writer (a new event file); a forked child logs to
        files of its own, named with its own pid (closed at its exit, multiprocessing's too:
        process_exit.py)."""
        self._finalizer.detach()
        self._closed = False
        self._open()

    def export_scalars(self, path: str) -> None:
        """SummaryWriter.export_scalars: the scalars written since `cleared`, read back from the
        event files, as mxboard wrote them: `{"<logdir>/<tag>[/<name>]": [[wall_time, step,
        value], ...]}`."""
        import json

        from ..proto import Event
        from ..reader import read_records

        self.flush()
        exported: Dict[str, List[List[float]]] = {}
        for names, run, pieces in self.thread.written():
            # mxboard's keys are <logdir>/<tag>, and <logdir>/<tag>/<name> for named values.
            prefix = [self.logdir] + ([run] if run != "." else [])
            named = names is not None and len(names) == 2
            for piece, _ in pieces:
                for payload in read_records(piece, self.cleared.get(piece, 0)):
                    event = Event.FromString(payload)
                    for value in event.summary.value:
                        if value.WhichOneof("value") == "simple_value":
                            key = prefix if named else prefix + [value.tag]
                            exported.setdefault("/".join(key), []).append(
                                [event.wall_time, event.step, value.simple_value])
        with open(path, "w") as f:
            json.dump(exported, f)

    def clear_scalars(self) -> None:
        """export_scalars starts afresh from here."""
        self.flush()
        self.cleared = {piece: size for _, _, pieces in self.thread.written() for piece, size in pieces}

    # -- lifecycle --------------------------------------------------------------------------
    def flush(self) -> None:
        """Return when everything logged before the call is in the event files (or the store).

        Raises:
            WriterError: the writer thread failed.
        """
        if self.closed:
            return
        self.reopen_if_needed()
        self.thread.flush()
        self.deliver_to_caller()

    def close(self) -> None:
        """Write everything queued and close the files. Safe to call twice. A later call
        reopens the writer, with a new event file (as tensorboardX and torch do).

        Raises:
            WriterIOError: a writer-thread error that no earlier call has reported (an OSError and a
                WriterError, its cause chained).
        """
        if self._closed:
            return
        self._closed = True
        # A later add_scalar misses the hot path's lookup, and reopens.
        self.scalars = ClosedScalars()
        self._finalizer.detach()
        fault = self.thread.close()
        if fault is not None:
            raise fault
        self.thread.show_warnings()

    def reopen(self) -> None:
        """After `close()`, start logging again, into a new event file (mxboard's reopen; any
        call does it too)."""
        if self.closed:
            self._reopen_for_call()


class _WrittenThrough(Scalars):
    """The scalars of a writer opened once the process's exit began: each call's rows are
    written before the call returns (no exit hook of mxboard's will close this writer)."""

    def __init__(self, thread: WriterThread, slots: DeviceScalarSlots, suffix: str) -> None:
        super().__init__(thread, slots, suffix)
        self._writer_thread = thread

    def append(self, series: int, value: float, step: int, wall: float) -> bool:
        super().append(series, value, step, wall)
        self._writer_thread.flush()
        return self._writer_thread.holds_for_caller

    def append_device(self, series: int, tag: str, value: Any, step: int, wall: float) -> bool:
        super().append_device(series, tag, value, step, wall)
        self._writer_thread.flush()
        return self._writer_thread.holds_for_caller

    def add(self, tag: str, value: Any, step: int, wall: float) -> None:
        super().add(tag, value, step, wall)
        self._writer_thread.flush()
