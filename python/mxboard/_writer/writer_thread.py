"""The writer thread (`WriterThread`): the seam between a `SummaryWriter` on the caller's side and
the work that runs in the background.

The caller's side queues items through its methods (`put`, `put_scalar`, `columns().append`,
`call`) and names event files by id: no Storage or EventFile leaves this module, and every file
is opened on the writer thread, in call order. The thread wakes when a batch waits, on `flush()`
and at least every `flush_secs`, and hands each batch to its event files (event_files.py). An
error on the thread is kept (faults.py: what the next call and close() raise) and raised by the
caller's next call, after that call's data is queued. docs/architecture.md describes the methods
and the states (NEW, OPEN, CLOSED, FORKED).

Once the process's exit began (mxboard's exit hook ran, or the interpreter finalizes: a `__del__`
at the modules' teardown), no thread is started: a writer opened then writes each call on the
caller's thread before the call returns (`writes_here`), and a writer whose thread no longer runs
is closed there too (process.threads_start, process.threads_run).
"""
from __future__ import annotations

import collections
import enum
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Deque, List, Optional, Set, Tuple

from ..errors import WriterClosedError
from ..signal_mask import keep_signals_off_this_thread
from ..storage import is_url
from . import lifecycle, process
from .callsite import CallSite, warn_at, warn_at_call
from .event_files import EventFiles
from .faults import Faults
from .intake import (
    MAX_QUEUE_BYTES,
    Intake,
    Item,
    Outcome,
    PendingScalar,
    ScalarColumns,
    Task,
    closed_error,
)

if TYPE_CHECKING:
    from ..storage import Destination

__all__ = ["State", "WriterThread"]


class State(enum.Enum):
    # Not started: nothing to write, nothing to close.
    NEW = "new"
    OPEN = "open"
    # close() ran: a call's data can no longer be written.
    CLOSED = "closed"
    # A forked child's copy of its parent's writer thread: it writes nothing.
    FORKED = "forked"


class WriterThread:
    """One writer thread, its intake and its event files. It knows files, series and items, but not
    the writer that feeds it, so that the exit hook, which holds it, never keeps a SummaryWriter
    alive."""

    def __init__(self, flush_secs: float, max_queue: int,
                 read_scalars: Optional[Callable[[List[Any]], List[float]]] = None,
                 max_bytes: int = MAX_QUEUE_BYTES) -> None:
        """`read_scalars(values)`: the floats of PendingScalars' captured values, in order.
        `max_bytes`: array data that may wait. Nothing runs until `start_writing`."""
        self.state = State.NEW
        # Whether a call must call `deliver_to_caller()` once its data is queued: the thread holds
        # an error (in `_faults`) or a warning for the caller, or the writer is not OPEN. The hot
        # path reads this one flag.
        self.holds_for_caller = False
        # The writer thread's errors: what the next call raises, and what close() raises.
        self._faults = Faults(self._raise_flag)
        self._flush_secs = flush_secs
        self._read_scalars = read_scalars
        # The process that started it.
        self._pid: Optional[int] = None
        self._closing = threading.Lock()
        # Warnings for the caller.
        self._notes: Deque[Tuple[Optional[CallSite], str]] = collections.deque()
        # The keys of the warnings given once (warner, warn_once).
        self._warned: Set[Any] = set()
        self._intake = Intake(max_queue, max_bytes, held=lambda: self.holds_for_caller)
        self._thread: Optional[threading.Thread] = None
        # Whether it has no thread: each call is written on the caller's thread (opened once the
        # process's exit began), one caller at a time (an RLock: a collection during a write may
        # run a `__del__` that logs).
        self.writes_here = False
        self._here = threading.RLock()

    def start_writing(self, destination: Destination, suffix: str = "", restart_at: Optional[int] = None,
                      verbose: bool = False, hooks: bool = True) -> None:
        """Open the output at `destination` (storage.Destination: a directory, an object-store
        URL or nowhere; checked here), and start the thread, which opens the main event
        file first (`suffix`, `restart_at`: see `open_file`); return once it has (the file is
        there when a writer's constructor returns; an error opening it is the next call's).
        `verbose`: log each file opened. `hooks`: closed at exit and flushed at SIGTERM and
        SIGHUP (process.py; SummaryWriter's process_hooks). Once the process's exit began, no
        thread starts: the file is opened here, and each call is written on the caller's thread
        (`writes_here`; no hook acts on it, since none of mxboard's runs after this)."""
        if not process.threads_start():
            self._start_here(destination)
        self._files = EventFiles(destination, self._read_scalars, self._faults, (suffix, restart_at), verbose)
        self._pid = os.getpid()
        self.state = State.OPEN
        if self.writes_here:
            self._files.open_main()
            return
        opened = threading.Event()
        thread = self._intake.thread = threading.Thread(target=self._loop, args=(opened,), name="mxboard-writer",
                                                        daemon=True)
        try:
            thread.start()
        except RuntimeError:
            # Python 3.12 and 3.13 start no thread in an exit hook, also before mxboard's ran
            # (a first writer made there): the calls are written here.
            self._intake.thread = None
            self._start_here(destination)
            self._files.open_main()
            return
        self._thread = thread
        process.watch(self, hooks)
        opened.wait()

    def _start_here(self, destination: Destination) -> None:
        """No thread can be started: this writer writes each call on the caller's thread. An
        object store's files need threads (their uploads), so a store's writer is refused."""
        if destination.to_disk and is_url(destination.logdir):
            self.state = State.CLOSED
            raise WriterClosedError("this writer for %s was closed at the process's exit, and a store's writer "
                                    "cannot open again then (its uploads need a thread): log before the exit, or "
                                    "in an exit hook registered after the writer was made" % destination.logdir)
        self.writes_here = True
        process.ready_for_finalization()

    # -- the caller's side ------------------------------------------------------------------
    @property
    def forked(self) -> bool:
        """Whether this is a forked child's copy of the parent's writer thread (it writes nothing)."""
        return self.state is State.FORKED

    def written(self) -> List[Tuple[Optional[Tuple[str, ...]], str, List[Tuple[str, int]]]]:
        """(names, run, pieces) of every event file that holds records: the names its sub-run was
        opened with (None: the main file, first), its run, and its pieces (event_files.py)."""
        return self._files.written()

    def open_sub_run_file(self, names: Tuple[str, ...], suffix: str = "") -> int:
        """The id of a new event file in the sub-run `logdir/<names...>/`, opened on the writer
        thread in call order (before any record or row of it). Returns once it is: the file is
        there when the call returns, as with TensorBoard's and tensorboardX's writers, so a
        tear-down that deletes the logdir right after never races the thread. An error opening
        it is raised here. Only a name's first use pays this wait."""
        self._check_open()
        file = self._files.new_file_id()
        self.call(self._files.open_sub_run_file, file, names, suffix)
        return file

    def add_series(self, file: Optional[int], tag: str) -> int:
        """An id for the scalar rows of `tag` in the file `file` (None: the main file)."""
        return self._files.add_series(file, tag)

    def columns(self) -> ScalarColumns:
        """New scalar columns for the calling thread (intake.py)."""
        return self._intake.columns()

    def put_scalar(self, item: PendingScalar) -> None:
        """Queue a PendingScalar, in call order (intake.py)."""
        self._check_open()
        self._intake.put_scalar(item)
        if self.writes_here:
            self._write_here()

    def put(self, item: Item) -> None:
        """Queue a Record or Task, in call order; blocks while the queue's bounds are full."""
        self._check_open()
        self._intake.put(item)
        if self.writes_here:
            self._write_here()

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """`fn(storage, *args)` on the writer thread (file work that is no event: an embedding's
        assets), after everything queued before; return once it ran, raising what it raised (its
        files are in place when the call returns, as with TensorBoard's and tensorboardX's writers)."""
        outcome = Outcome()
        self.put(Task(fn, args, outcome))
        self._intake.wait_done(outcome.done)
        if outcome.error is not None:
            raise outcome.error

    def hand_over(self, columns: ScalarColumns) -> None:
        """Called once a batch of scalars waits in `columns` (intake.py)."""
        if self.writes_here:
            self._write_here()
        else:
            self._intake.hand_over(columns)

    def warner(self, site: Optional[CallSite], once: Any = None) -> Callable[[str], None]:
        """A callable for a builder on the writer thread: `warn(message)` keeps a RuntimeWarning
        that the caller's next call (or close) shows at `site`, the user's line; with `once` (a
        key, say a tag's), only the first of this writer's warnings of that key is kept."""
        def warn(message: str) -> None:
            if once is not None:
                if once in self._warned:
                    return
                self._warned.add(once)
            self._notes.append((site, message))
            self.holds_for_caller = True
        return warn

    def warn_once(self, once: Any, message: str) -> None:
        """On the caller's thread: `message` as a RuntimeWarning at the user's line, the first time
        this writer meets the key `once` (a tag's)."""
        if once not in self._warned:
            self._warned.add(once)
            warn_at_call(message, RuntimeWarning)

    def show_warnings(self) -> None:
        """Show the warnings the writer thread kept, each at its user's line (here, on the
        caller's thread: an "error" filter raises at the caller)."""
        while self._notes:
            site, message = self._notes.popleft()
            warn_at(site, message, RuntimeWarning)

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Return when everything queued before the call is written to the OS (False if
        `timeout` seconds passed first)."""
        self._check_open()
        if self.writes_here or not process.threads_run():
            # No thread writes them: the caller's thread does, now.
            self._write_here()
            return True
        return self._intake.flush(timeout)

    def close(self, deadline: Optional[float] = None) -> Optional[BaseException]:
        """Write what is queued, stop the thread, close the files (a store's wait for their
        uploads until `deadline`, time.monotonic(); by default the upload policy's flush_secs from now). Returns the
        writer thread's error that no call has reported yet (or None). Safe to call twice."""
        # The reaper, the exit hook and a caller may close at once.
        with self._closing:
            return self._close(deadline)

    def _close(self, deadline: Optional[float]) -> Optional[BaseException]:
        # Not started, closed already, or a forked child's copy: nothing to close.
        if self.state is not State.OPEN or self._pid != os.getpid():
            return None
        if deadline is None:
            deadline = time.monotonic() + self._files.close_secs
        # Once the interpreter finalizes, the thread runs no more (3.13 keeps it alive, waiting
        # for ever): what it left is drained below, on the caller's thread.
        if self._thread is not None and self._thread.is_alive() and process.threads_run():
            # From now on a write never waits for room: the thread drains the rest.
            self._files.interrupt()
            # What is queued is written, and the thread told to end once it took this barrier.
            # The store's wait is the files' close, below.
            self._intake.flush(sync=False, stop=True)
            self._thread.join()
        self._faults.begin_close()
        self.state, self.holds_for_caller = State.CLOSED, True
        fault: Optional[BaseException] = None
        news = False
        # The finally also runs after a Ctrl-C in the store's wait: callers waiting for room are
        # released, and the registry forgets this thread only after the files' close, so that a
        # SIGTERM meanwhile keeps what they hold.
        try:
            # Calls that raced close() queued this before `state` said it was closed.
            self._write_here()
            # A store's files wait for their uploads until the deadline, then keep the rest on disk.
            closed_clean = self._files.close(deadline)
            fault, news = self._faults.end_close(closed_clean)
        finally:
            process.forget(self)
            self._intake.close_outcome.end(fault)
        return _for_caller(fault) if news and fault is not None else None

    def write_out(self, timeout: float) -> bool:
        """A signal ends the process: everything queued written to the files (a store's: to
        memory or its spool, no wait on the store). False if `timeout` seconds passed first; a
        closed writer has nothing queued."""
        if self.state is not State.OPEN or self._pid != os.getpid():
            return True
        return self._intake.flush(timeout, sync=False)

    def save_what_waits(self, deadline: float) -> None:
        """A signal ends the process: a store's files wait for their uploads until `deadline`,
        then keep the rest on disk (also while close() waits for them)."""
        if self._pid == os.getpid():
            self._files.save_what_waits(deadline)

    def deliver_to_caller(self) -> None:
        """Raise what the writer thread has to say (once; after an I/O error, a WriterIOError on
        every call: faults.py). Closed: raise if the call's data came too late to be written. (A
        forked copy, see `forked`, has nothing to say.)"""
        if self.state is State.FORKED:
            return
        self.show_warnings()
        if self.state is State.CLOSED:
            if self._intake.waiting():
                self._intake.clear()
                raise closed_error()
            return
        # Cleared first: an error or a warning that the thread holds from now on sets it again.
        self.holds_for_caller = False
        error, more = self._faults.take()
        if more or self._notes:
            self.holds_for_caller = True
        if error is not None:
            error = _for_caller(error)
            if error is not None:
                raise error

    def abandon(self) -> None:
        """In a forked child: drop the parent's queues and file descriptors, write nothing."""
        self._intake.clear()
        self._pid = None
        self._files.abandon()
        self.state, self.holds_for_caller = State.FORKED, True

    def _check_open(self) -> None:
        if self.state is State.CLOSED:
            raise closed_error()

    def _write_here(self) -> None:
        """Write everything queued on the caller's thread, now (no writer thread runs)."""
        with self._here:
            self._drain()

    # -- the thread's side ------------------------------------------------------------------
    def _loop(self, opened: threading.Event) -> None:
        try:
            keep_signals_off_this_thread()
            self._files.open_main()
            # Before the writer's constructor returns (once a process): a `__del__` at the
            # interpreter's finalization may close it at once.
            process.ready_for_finalization()
        finally:
            opened.set()
        intake = self._intake
        while True:
            intake.wake.wait(self._flush_secs)
            self._drain()
            intake.progress.set()
            # Rows may come for ever.
            if intake.stopping and not intake.waiting(rows=False):
                return

    def _drain(self) -> None:
        """Write everything queued before now (event_files.py); then release its room and its flush
        barriers."""
        batch = self._intake.take()
        try:
            self._files.write_batch(batch)
        # Never let the thread die: the caller hears of the error instead.
        except Exception as exc:  # noqa: BLE001
            self._faults.hold(exc)
        finally:
            self._intake.release(batch)

    def _raise_flag(self) -> None:
        """Faults holds an error for the caller's next call."""
        self.holds_for_caller = True


def _for_caller(error: BaseException) -> Optional[BaseException]:
    """The error a call raises, or None where the interpreter finalizes: then the only code
    running is a `__del__` or a weakref callback, whose error Python would print with a
    traceback and ignore, so it is said on stderr in one line instead, and the call returns. An
    import that failed there (a builder that imports at its first use; numpy 1.23's `clip`
    imports at every call) is said plainly."""
    if process.threads_run():
        return error
    if isinstance(error, ImportError):
        lifecycle.tell("mxboard: a call at the interpreter's finalization was not written: building its record "
                       "imports, and Python imports nothing then (%s); log it before the exit, or in an exit hook"
                       % error)
    else:
        lifecycle.tell("mxboard: a call at the interpreter's finalization was not written: %s" % error)
    return None
