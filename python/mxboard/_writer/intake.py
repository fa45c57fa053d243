"""What callers queue for the writer thread, in call order, and the bounds a caller waits on.

Scalars cross as rows of per-thread columns (`ScalarColumns`: no Python object per scalar, no
lock), MXNet scalars as `PendingScalar`s batched the same way, everything else as a named item
(`Record`, `Task`) in one deque. Every row and item takes a number from one counter when it is
queued, so a batch (`Intake.take`) is everything queued before a moment, in call order. A caller
waits here only while the documented bounds are full (`max_queue` slots, 64 MiB of array data,
`max_queue` * 8192 scalars), and a wait is signal-safe (`Pulse`).
"""
from __future__ import annotations

import bisect
import collections
import itertools
import queue
import threading
import time
import weakref
from array import array
from typing import Any, Callable, Deque, List, NamedTuple, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

from ..errors import WriterClosedError, WriterError

__all__ = ["Batch", "Intake", "Outcome", "PendingScalar", "Pulse", "Record", "ScalarColumns", "Task", "WriterError",
           "WAKE_EVERY", "closed_error"]

# Scalars a thread queues before it wakes the writer thread.
WAKE_EVERY = 8192
# Threads' scalar columns registered before the writer thread reclaims ended ones.
RECLAIM_EVERY = 256
# Array data waiting for the writer thread, at most (one larger item alone).
MAX_QUEUE_BYTES = 64 << 20
# A `max_queue` slot: one item of 1 MiB or more, or smaller.
SLOT_BYTES, SLOT_SHARES = 1 << 20, 64
# ones sharing it by size, each taking at least 1/64 (16 KiB): a step's few dozen small histograms
# fit in a slot or two instead of blocking the training loop at the tenth


class Record(NamedTuple):
    """An event to build on the writer thread: `build(*args)` returns a Summary or an Event (MXNet
    snapshots among `args` are resolved first); written to `file` (a sub-run's id, from
    `WriterThread.open_sub_run_file`; None: the main file) at `step` and `wall` time."""
    file: Optional[int]
    build: Callable[..., Any]
    args: Tuple[Any, ...]
    step: int
    wall: float


class PendingScalar(NamedTuple):
    """A scalar whose value is a device's (an MXNet or GPU array's): resolved on the writer
    thread, it joins the scalar rows of `series` in call order. `warn(value, step)`: called for a
    value that is NaN or infinite (logged as given)."""
    series: int
    value: Any
    step: int
    wall: float
    warn: Optional[Callable[[float, int], None]] = None


class Task(NamedTuple):
    """File work that is no event (an embedding's assets, a sub-run's file): `fn(storage, *args)`
    on the writer thread, its caller waiting for `outcome` (`WriterThread.call`); with no outcome, no
    one waits, and an error is the caller's next call's."""
    fn: Callable[..., Any]
    args: Tuple[Any, ...]
    outcome: Optional[Outcome]


# What `Intake.put` queues.
Item = Union[Record, Task]
# Scalar rows: series, values, steps, walls, seqs.
Columns = List[npt.NDArray[Any]]


class Pulse:
    """A wake-up that a signal cannot break: `set()` from any thread, `wait(timeout)` until the
    next one. A `threading.Event` is a Condition written in Python: a KeyboardInterrupt (or a
    signal handler's `sys.exit`) raised just after its lock was taken leaves that lock held for
    ever, and the next `set()`, from any thread, blocks for ever. A SimpleQueue's put and get are
    single C calls, which an exception cannot split."""

    __slots__ = ("_queue",)

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[None] = queue.SimpleQueue()

    def set(self) -> None:
        self._queue.put(None)

    def wait(self, timeout: Optional[float]) -> bool:
        """True if set since the last wait (set any number of times), False after `timeout` s."""
        try:
            self._queue.get(timeout=timeout)
        except queue.Empty:
            return False
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            return True


class Outcome:
    """How a Task ended: `done` is set once it ran (or was skipped), `error` what it raised."""

    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = Pulse()
        self.error: Optional[BaseException] = None

    def end(self, error: Optional[BaseException] = None) -> None:
        self.error = error
        self.done.set()


class _Barrier(NamedTuple):
    done: Pulse
    # Whether the files are to wait for their store (a flush), or only be written (close).
    sync: bool


class Batch(NamedTuple):
    """What the writer thread takes at once (`Intake.take`): `items` ((seq, Record or Task,
    bytes), in call order), `pending` ((seq, PendingScalar)), `chunks` (scalar rows as numpy
    columns: series, values, steps, walls, seqs), and `barriers`: the flushes that wait for it."""
    items: List[Tuple[int, Item, int]]
    pending: List[Tuple[int, PendingScalar]]
    chunks: List[Columns]
    barriers: List[_Barrier]


def closed_error(what: str = "this writer") -> WriterClosedError:
    """The error of a call made on a closed writer."""
    return WriterClosedError("%s is closed: nothing more is written" % what)


class ScalarColumns:
    """The scalars one thread queued, as parallel columns. Only that thread appends, and
    `append` grows `series` last: the writer thread takes as many rows as `series` has, and
    every other column has at least as many. Slicing and deleting a prefix are single C calls,
    atomic under the GIL, and an append that comes between them lands after the prefix: no lock
    is needed."""

    __slots__ = ("values", "steps", "walls", "seqs", "series", "append", "_owner")

    def __init__(self, next_seq: Callable[[], int]) -> None:
        self.values, self.steps, self.walls = array("d"), array("q"), array("d")
        self.seqs, self.series = array("q"), array("q")
        values, steps, walls, seqs, series = (self.values.append, self.steps.append, self.walls.append,
                                              self.seqs.append, self.series.append)

        def append(row_series: int, value: float, step: int, wall: float) -> None:
            """Queue one row (the caller's hot path: bound appends, no attribute lookups)."""
            values(value)
            steps(step)
            walls(wall)
            seqs(next_seq())
            # The series go last: see the class.
            series(row_series)

        self.append = append
        self._owner = weakref.ref(threading.current_thread())

    def take(self, limit: float) -> Optional[Columns]:
        """Remove and return the complete rows numbered below `limit` as numpy columns (series,
        values, steps, walls, seqs), or None."""
        count = len(self.series)
        # Rows queued after the batch began wait for the next one.
        if count and self.seqs[count - 1] >= limit:
            count = bisect.bisect_left(self.seqs, limit, 0, count)
        if not count:
            return None
        taken: Columns = []
        for column, dtype in ((self.series, np.int64), (self.values, np.float64), (self.steps, np.int64),
                              (self.walls, np.float64), (self.seqs, np.int64)):
            taken.append(np.frombuffer(column[:count], dtype=dtype))
            del column[:count]
        return taken

    def abandoned(self) -> bool:
        """Whether the thread that appends here has ended (and left no row behind). The main
        thread never has: once the interpreter begins to exit, it is no longer alive, yet it runs
        the exit hooks, which may log."""
        owner = self._owner()
        if owner is threading.main_thread():
            return False
        return (owner is None or not owner.is_alive()) and not len(self.series)


class Intake:
    """The queues between callers and one writer thread. Callers `put`, `put_scalar` and append
    to their `columns()`; the thread `take`s a batch and `release`s it once written, which makes
    room. `wake` is the callers' pulse to the thread, `progress` the thread's to waiting callers;
    `thread` is the writer thread (a caller waiting for a dead one gets a WriterError) and
    `stopping` says that close() began. `held()`: whether something waits for the caller (an
    error), so that a caller blocked for room goes on to hear it."""

    def __init__(self, max_queue: int, max_bytes: int = MAX_QUEUE_BYTES,
                 held: Callable[[], bool] = lambda: False) -> None:
        self._held = held
        self.max_scalars = max(max_queue, 1) * WAKE_EVERY
        self._max_shares, self._max_bytes = max(max_queue, 1) * SLOT_SHARES, max_bytes
        # The call order, shared by rows and items.
        self._next_seq = itertools.count().__next__
        # Each item is (seq, item, bytes).
        self._items: Deque[Tuple[int, Union[Item, _Barrier], int]] = collections.deque()
        self._scalars: Deque[Tuple[int, PendingScalar]] = collections.deque()
        # There is one per producing thread.
        self._columns: List[ScalarColumns] = []
        # The lock guards registering columns, and `_queued`. It is a C lock: `with` takes it in one C call,
        # which a signal cannot split from its release.
        self._lock = threading.Lock()
        # Slot shares, bytes put and not yet written.
        self._queued = [0, 0]
        self.wake = Pulse()
        self.progress = Pulse()
        self.thread: Optional[threading.Thread] = None
        self.stopping = False
        # What close() raised: for callers it found waiting for room.
        self.close_outcome = Outcome()

    def columns(self) -> ScalarColumns:
        """New scalar columns for the calling thread (keep them per thread: only their thread
        may append). Reclaimed once the thread has ended and its rows are written: with many
        short threads, the writer thread is woken to reclaim them every RECLAIM_EVERY."""
        columns = ScalarColumns(self._next_seq)
        with self._lock:
            self._columns.append(columns)
            crowded = len(self._columns) % RECLAIM_EVERY == 0
        if crowded:
            self.wake.set()
        return columns

    def put_scalar(self, item: PendingScalar) -> None:
        """Queue a PendingScalar: batched like scalar rows (no lock, no wake until a batch
        waits), bounded by `max_scalars`."""
        self._scalars.append((self._next_seq(), item))
        if len(self._scalars) >= WAKE_EVERY:
            self.wake.set()
            self.wait_for_writer(lambda: len(self._scalars) >= self.max_scalars and not self._held())

    def put(self, item: Item) -> None:
        """Queue a Record or Task. Blocks while `max_queue` slots (SLOT_BYTES) or `max_bytes` of
        array data wait (a larger item waits for an empty queue)."""
        size = _footprint(item)
        shares = _shares(size)
        queued = self._queued
        if self.wait_for_writer(lambda: queued[0] > 0 and (queued[0] + shares > self._max_shares
                                                           or queued[1] + size > self._max_bytes)) and self.stopping:
            # It waited for room, and close() came: it raises what close() raises.
            self.raise_close_outcome()
        # queued, then counted: a signal between the two can only undercount (never block a
        # later call for room that is free); concurrent callers may pass the bound by one item each
        self._items.append((self._next_seq(), item, size))
        with self._lock:
            queued[0] += shares
            queued[1] += size
        self.wake.set()

    def hand_over(self, columns: ScalarColumns) -> None:
        """Called once a batch of scalars waits in `columns`: wake the thread; if too many wait,
        block until it took them (so memory stays bounded)."""
        self.wake.set()
        if len(columns.series) >= self.max_scalars:
            self.wait_for_writer(lambda: len(columns.series) >= self.max_scalars and not self._held())

    def flush(self, timeout: Optional[float] = None, sync: bool = True, stop: bool = False) -> bool:
        """Return when everything queued before the call is written (a barrier queued behind it
        is released; with `sync`, a store's files have waited for their uploads); False if
        `timeout` seconds passed first. `stop` (close): `stopping` is set once the barrier is
        queued, so that the thread, which ends when stopping finds nothing queued, takes it first."""
        done = Pulse()
        self._items.append((self._next_seq(), _Barrier(done, sync), 0))
        if stop:
            self.stopping = True
        self.wake.set()
        return self.wait_done(done, None if timeout is None else time.monotonic() + timeout)

    def wait_done(self, done: Pulse, deadline: Optional[float] = None) -> bool:
        """Wait until the writer thread sets `done` (True), or until `deadline`, a time.monotonic()
        (False). A writer thread that ended without setting it is a WriterError. Each look after
        a wait ran out (a thread found ended, the deadline passed) looks at `done` once more: on a
        busy machine the thread may set it, and end, between the two."""
        while not done.wait(0.5):
            if not self.writer_alive():
                # Set, and the thread ended, after the wait ran out.
                if done.wait(0):
                    return True
                raise _ended()
            if deadline is not None and time.monotonic() > deadline:
                return done.wait(0)
        return True

    def wait_for_writer(self, blocked: Callable[[], bool]) -> bool:
        """Wake the writer thread until `blocked()` is false, or close() began (then the caller
        says whether its data made it). Whether it waited. A writer thread that died is an
        error. Signal-safe (Pulse)."""
        waited = False
        while blocked():
            waited = True
            self.wake.set()
            # One waiter takes a pulse: others look again soon.
            if not self.progress.wait(0.05):
                if self.stopping:
                    return True
                if not self.writer_alive():
                    # close() began, or room was made, and the thread ended, after the wait ran out.
                    if self.stopping or not blocked():
                                return True
                    raise _ended()
        return waited

    def raise_close_outcome(self) -> None:
        """Raise what close() raises (a closed-writer error if nothing), once it has returned."""
        # close() is bounded.
        while not self.close_outcome.done.wait(1):
            pass
        # For the next caller waiting for it.
        self.close_outcome.done.set()
        raise self.close_outcome.error or closed_error()

    def writer_alive(self) -> bool:
        """Whether the writer thread runs. Ended, it can still have done what a caller waited for
        just before: a caller looks at that once more before it calls the thread dead."""
        return self.thread is not None and self.thread.is_alive()

    def take(self) -> Batch:
        """The Batch queued before now."""
        limit = self._next_seq()
        items: List[Tuple[int, Any, int]] = []
        while self._items and self._items[0][0] < limit:
            items.append(self._items.popleft())
        pending: List[Tuple[int, PendingScalar]] = []
        while self._scalars and self._scalars[0][0] < limit:
            pending.append(self._scalars.popleft())
        with self._lock:
            chunks = [c for c in (columns.take(limit) for columns in self._columns) if c is not None]
            self._columns = [c for c in self._columns if not c.abandoned()]
        barriers = [item for _, item, _ in items if type(item) is _Barrier]
        if barriers:
            items = [entry for entry in items if type(entry[1]) is not _Barrier]
        return Batch(items, pending, chunks, barriers)

    def release(self, batch: Batch) -> None:
        """A taken batch is done with: its room is free, its flush barriers set."""
        items = batch.items
        shares = sum(_shares(size) for _, _, size in items)
        with self._lock:
            self._queued[0] -= shares
            self._queued[1] -= sum(size for _, _, size in items)
        for barrier in batch.barriers:
            barrier.done.set()

    def waiting(self, rows: bool = True) -> bool:
        """Whether anything is queued (scalar rows of the threads' columns too, if `rows`)."""
        return bool(self._items or self._scalars or rows and any(len(c.series) for c in self._columns))

    def clear(self) -> None:
        """Drop everything queued (a closed writer's late calls, a forked child's copies)."""
        self._items.clear()
        self._scalars.clear()
        for columns in self._columns:
            columns.take(float("inf"))


def _ended() -> WriterError:
    return WriterError("the mxboard writer thread is not running")


def _shares(size: int) -> int:
    """The shares of a `max_queue` slot (SLOT_SHARES to a slot) an item of `size` bytes takes."""
    return min(SLOT_SHARES, max(1, size * SLOT_SHARES // SLOT_BYTES))


def _footprint(item: Item) -> int:
    """Bytes of array data an item holds (numpy arrays, MXNet snapshots, text)."""
    total = 0
    for arg in item.args:
        if isinstance(arg, (str, bytes)):
            total += len(arg)
        elif isinstance(arg, np.ndarray) and arg.dtype == object:
            total += sum(len(s) for s in arg.flat if isinstance(s, (str, bytes)))
        elif hasattr(arg, "nbytes"):
            total += int(arg.nbytes)
    return total
