"""The writer thread: the seam between the caller's side (`SummaryWriter`) and everything that
runs in the background. Its public face is a handful of verbs:

    worker = Worker(flush_secs, max_queue)
    event_file = worker.open_file(directory, suffix)   # a new event file, written by this worker
    series = worker.add_series(event_file, tag)        # a scalar tag in a file, as a row id
    worker.columns().append(series, value, step, wall) # this thread's scalar rows (the hot path)
    worker.put_scalar(PendingScalar(series, snapshot, step, wall))   # an MXNet scalar
    worker.put(Record(event_file, build, args, step, wall))   # every other item, see below
    worker.flush(); worker.close()
    if worker.attention: worker.report()               # after each call: what the thread has to say

Scalars cross as rows of per-thread columns (`ScalarColumns`: no Python object per scalar, no
lock), MXNet scalars as `PendingScalar`s batched the same way, everything else as a named item
(`Record`, `Task`) in one deque. Every row and item takes a number from one counter when it is
queued, and each batch is written in that order per tag, so TensorBoard (which treats a step
going backwards as a restart) shows every point, whatever thread logged it and whatever its type.
The thread wakes when a batch of scalars or an item waits, on flush, and at least every
`flush_secs`; it builds and encodes the batch (encoding.py, summaries/) and writes it with one
`write` per file. What it raises is kept and handed to the caller's next call, after that call's
data is queued (a bad item never costs another call its data); it never leaves producers
blocked. A worker is OPEN, CLOSED, or FORKED (a forked child's copy of its parent's, which writes
nothing).
"""
import bisect
import collections
import enum
import itertools
import logging
import os
import queue
import threading
import time
import weakref
from array import array
from typing import Any, Callable, NamedTuple

import numpy as np

from . import lifecycle
from .encoding import ScalarSeries, encode_event, encode_scalar_rows
from .events import FILE_VERSION
from .mxnet_capture import resolve
from .proto import Event, SessionLog
from .storage import EventFile, Storage

__all__ = ["PendingScalar", "Record", "ScalarColumns", "State", "Task", "Worker", "WriterError", "WAKE_EVERY",
           "closed_error"]

log = logging.getLogger("mxboard")

WAKE_EVERY = 8192  # scalars a thread queues before it wakes the writer thread
RECLAIM_EVERY = 256  # threads' scalar columns registered before the writer thread reclaims ended ones
MAX_QUEUE_BYTES = 64 << 20  # array data waiting for the writer thread, at most (one larger item alone)
SLOT_BYTES, SLOT_SHARES = 1 << 20, 64  # a `max_queue` slot: one item of 1 MiB or more, or smaller
# ones sharing it by size, each taking at least 1/64 (16 KiB): a step's few dozen small histograms
# fit in a slot or two instead of blocking the training loop at the tenth


class WriterError(RuntimeError):
    """The writer thread could not write; raised on the caller's next call, `__cause__` says why."""


class Record(NamedTuple):
    """An event to build on the writer thread: `build(*args)` returns a Summary or an Event (MXNet
    snapshots among `args` are resolved first); written to `file` at `step` and `wall` time."""
    file: EventFile
    build: Callable
    args: tuple
    step: int
    wall: float


class PendingScalar(NamedTuple):
    """A scalar whose value is an MXNet snapshot: resolved on the writer thread, it joins the
    scalar rows of `series` in call order."""
    series: int
    value: Any
    step: int
    wall: float


class Task(NamedTuple):
    """File work that is no event (an embedding's assets): `fn(*args)` on the writer thread."""
    fn: Callable
    args: tuple


class Pulse:
    """A wake-up that a signal cannot break: `set()` from any thread, `wait(timeout)` until the
    next one. A `threading.Event` is a Condition written in Python: a KeyboardInterrupt (or a
    signal handler's `sys.exit`) raised just after its lock was taken leaves that lock held for
    ever, and the next `set()`, from any thread, blocks for ever. A SimpleQueue's put and get are
    single C calls, which an exception cannot split."""

    __slots__ = ("_queue",)

    def __init__(self):
        self._queue = queue.SimpleQueue()

    def set(self):
        self._queue.put(None)

    def wait(self, timeout):
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


class _Barrier(NamedTuple):
    done: Pulse


class State(enum.Enum):
    OPEN = "open"
    CLOSED = "closed"  # close() ran: a call's data can no longer be written
    FORKED = "forked"  # a forked child's copy of its parent's worker: it writes nothing


def closed_error(what="this writer"):
    """The error of a call made on a closed writer."""
    return RuntimeError("%s is closed: nothing more is written" % what)


class ScalarColumns:
    """The scalars one thread queued, as parallel columns. Only that thread appends, and
    `append` grows `series` last: the writer thread takes as many rows as `series` has, and
    every other column has at least as many. Slicing and deleting a prefix are single C calls,
    atomic under the GIL, and an append that comes between them lands after the prefix: no lock
    is needed."""

    __slots__ = ("values", "steps", "walls", "seqs", "series", "append", "_owner")

    def __init__(self, next_seq):
        self.values, self.steps, self.walls = array("d"), array("q"), array("d")
        self.seqs, self.series = array("q"), array("q")
        values, steps, walls, seqs, series = (self.values.append, self.steps.append, self.walls.append,
                                              self.seqs.append, self.series.append)

        def append(row_series, value, step, wall):
            """Queue one row (the caller's hot path: bound appends, no attribute lookups)."""
            values(value)
            steps(step)
            walls(wall)
            seqs(next_seq())
            series(row_series)  # last: see the class

        self.append = append
        self._owner = weakref.ref(threading.current_thread())

    def take(self, limit):
        """Remove and return the complete rows numbered below `limit` as numpy columns (series,
        values, steps, walls, seqs), or None."""
        count = len(self.series)
        if count and self.seqs[count - 1] >= limit:  # rows queued after the batch began wait
            count = bisect.bisect_left(self.seqs, limit, 0, count)
        if not count:
            return None
        taken = []
        for column, dtype in ((self.series, np.int64), (self.values, np.float64), (self.steps, np.int64),
                              (self.walls, np.float64), (self.seqs, np.int64)):
            taken.append(np.frombuffer(column[:count], dtype=dtype))
            del column[:count]
        return taken

    def abandoned(self):
        """Whether the thread that appends here has ended (and left no row behind)."""
        owner = self._owner()
        return (owner is None or not owner.is_alive()) and not len(self.series)


class Worker:
    """One writer thread, its queues and its files. Knows files, series and items, not the
    writer that feeds it (so that the exit hook, which holds the worker, never keeps a
    SummaryWriter alive)."""

    def __init__(self, storage: Storage, flush_secs, max_queue, read_scalars=None, max_bytes=MAX_QUEUE_BYTES):
        """`storage` (storage/): where event files go. `read_scalars(values)`: the floats of
        PendingScalars' captured values, in order."""
        self._storage = storage
        self.state = State.OPEN
        self.attention = False  # whether the caller's next call must `report()`: an error waits, or not OPEN
        self._error = None  # the writer thread's error for the caller's next call
        self.max_scalars = max(max_queue, 1) * WAKE_EVERY
        self._read_scalars = read_scalars
        self._next_seq = itertools.count().__next__  # call order, shared by rows and items
        self._items = collections.deque()  # (seq, item, bytes)
        self._scalars = collections.deque()  # (seq, PendingScalar)
        self._series = []  # ScalarSeries by id
        self._columns = []  # ScalarColumns, one per producing thread
        self._files = []  # every EventFile this worker writes, closed with it
        self._lock = threading.Lock()  # guards registering series and columns, and `_queued` (a C
        # lock: `with` takes it in one C call, which a signal cannot split from its release)
        self._flush_secs = flush_secs
        self._max_shares, self._max_bytes = max(max_queue, 1) * SLOT_SHARES, max_bytes
        self._queued = [0, 0]  # slot shares, bytes put and not yet written
        self._wake = Pulse()  # the caller's: something waits for the writer thread
        self._progress = Pulse()  # the thread's: a batch was written (room in the queues)
        self._write_error = None  # the I/O error after which nothing more is written
        self._close_error = None  # an error of close()'s own last writes
        self._stopping = False
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="mxboard-writer", daemon=True)
        self._thread.start()
        lifecycle.watch(self)

    # -- the caller's side ------------------------------------------------------------------
    @property
    def forked(self):
        """Whether this is a forked child's copy of the parent's worker (it writes nothing)."""
        return self.state is State.FORKED

    def open_file(self, directory, suffix="", restart_at=None):
        """A new event file in `directory` (created if need be), its first record written. With
        `restart_at` (a step), it begins as a restarted run: TensorBoard's Python loader then
        hides the steps >= `restart_at` logged before (SessionLog.START: the first START of a
        run is its beginning, a later one a restart, so two are written)."""
        if self.state is State.CLOSED:
            raise closed_error()
        event_file = self._storage.open_event_file(directory, suffix)
        now = time.time()
        head = encode_event(Event(file_version=FILE_VERSION), 0, now)
        if restart_at is not None:
            head += 2 * encode_event(Event(session_log=SessionLog(status=SessionLog.START)), restart_at, now)
        event_file.write(head)
        with self._lock:
            self._files.append(event_file)
        return event_file

    def add_series(self, event_file, tag):
        """An id for the scalar rows of `tag` in `event_file`."""
        with self._lock:
            self._series.append(ScalarSeries(event_file, tag))
            return len(self._series) - 1  # appended before any row names it

    def columns(self):
        """New scalar columns for the calling thread (keep them per thread: only their thread
        may append). Reclaimed once the thread has ended and its rows are written: with many
        short threads, the writer thread is woken to reclaim them every RECLAIM_EVERY."""
        columns = ScalarColumns(self._next_seq)
        with self._lock:
            self._columns.append(columns)
            crowded = len(self._columns) % RECLAIM_EVERY == 0
        if crowded:
            self._wake.set()
        return columns

    def put_scalar(self, item):
        """Queue a PendingScalar, in call order: batched like scalar rows (no lock, no wake
        until a batch waits), bounded by `max_scalars`."""
        if self.state is State.CLOSED:
            raise closed_error()
        self._scalars.append((self._next_seq(), item))
        if len(self._scalars) >= WAKE_EVERY:
            self._wake.set()
            self._wait_for_writer(lambda: len(self._scalars) >= self.max_scalars and not self.attention)

    def put(self, item):
        """Queue a Record or Task, in call order. Blocks while `max_queue` slots (SLOT_BYTES)
        or `max_bytes` of array data wait (a larger item waits for an empty queue)."""
        if self.state is State.CLOSED:
            raise closed_error()
        size = _footprint(item)
        shares = _shares(size)
        queued = self._queued
        self._wait_for_writer(lambda: queued[0] > 0 and (queued[0] + shares > self._max_shares
                                                         or queued[1] + size > self._max_bytes),
                              closing_raises=True)
        # queued, then counted: a signal between the two can only undercount (never block a
        # later call for room that is free); concurrent callers may pass the bound by one item each
        self._items.append((self._next_seq(), item, size))
        with self._lock:
            queued[0] += shares
            queued[1] += size
        self._wake.set()

    def hand_over(self, columns):
        """Called once a batch of scalars waits in `columns`: wake the thread; if too many wait,
        block until it took them (so memory stays bounded)."""
        self._wake.set()
        if len(columns.series) >= self.max_scalars:
            self._wait_for_writer(lambda: len(columns.series) >= self.max_scalars and not self.attention)

    def _wait_for_writer(self, blocked, closing_raises=False):
        """Wake the writer thread until `blocked()` is false. Closing, a caller's item can no
        longer be taken (`closing_raises`), or the call's own check says whether its row made
        it; a writer thread that died is an error. Signal-safe (Pulse)."""
        while blocked():
            self._wake.set()
            if not self._progress.wait(0.05):  # one waiter takes a pulse: others look again soon
                if self._stopping:
                    if closing_raises:
                        raise closed_error()
                    return
                self._check_alive()

    def flush(self, timeout=None):
        """Return when everything queued before the call is written to the OS (False if
        `timeout` seconds passed first)."""
        if self.state is State.CLOSED:
            raise closed_error()
        done = Pulse()
        self._items.append((self._next_seq(), _Barrier(done), 0))
        self._wake.set()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done.wait(0.5):
            self._check_alive()
            if deadline is not None and time.monotonic() > deadline:
                return False
        return True

    def close(self):
        """Write what is queued, stop the thread, close the files. Returns the writer thread's
        error that no call has reported yet (or None). Safe to call twice."""
        if self._pid != os.getpid() or self.state is not State.OPEN:  # a forked child's copy, or done
            return None
        if self._thread.is_alive():
            self._stopping = True
            self.flush()
            self._thread.join()
        unreported, self._error = self._error, None
        self.state, self.attention = State.CLOSED, True
        self._drain()  # calls that raced close(): what they queued before `state` said so
        lifecycle.forget(self)
        for event_file in self._files:
            try:
                event_file.close()
            except OSError as exc:
                self._hold_for_caller(exc)
        fault = unreported or self._close_error
        if isinstance(fault, WriterError):
            return None  # nothing new: a WriterError repeats an error already raised
        return fault

    def report(self):
        """Raise what the writer thread has to say (once; after an I/O error, a WriterError on
        every call). Closed: raise if the call's data came too late to be written. (A forked
        copy, see `forked`, has nothing to say.)"""
        if self.state is State.FORKED:
            return
        if self.state is State.CLOSED:
            if self._items or self._scalars or any(len(c.series) for c in self._columns):
                self._items.clear()
                self._scalars.clear()
                for columns in self._columns:
                    columns.take(float("inf"))
                raise closed_error()
            return
        error, self._error = self._error, None
        if self._write_error is not None:
            self._error = WriterError("the mxboard writer stopped writing after an earlier error: %r"
                                      % (self._write_error,))
            self._error.__cause__ = self._write_error
        self.attention = False  # cleared first: an error the thread holds from now on sets it again
        if self._error is not None:
            self.attention = True
        if error is not None:
            raise error

    def abandon(self):
        """In a forked child: drop the parent's queues and file descriptors, write nothing."""
        self._items.clear()
        self._scalars.clear()
        self._columns = []
        self._pid = None
        for event_file in self._files:
            event_file.abandon()
        self.state, self.attention = State.FORKED, True

    def _check_alive(self):
        if not self._thread.is_alive():
            raise WriterError("the mxboard writer thread is not running")

    # -- the thread's side ------------------------------------------------------------------
    def _run(self):
        lifecycle.keep_signals_off_this_thread()
        while True:
            self._wake.wait(self._flush_secs)
            self._drain()
            self._progress.set()
            if self._stopping and not self._items and not self._scalars:
                return

    def _drain(self):
        """Build, encode and write everything queued before now, one write per file, in call
        order per tag; then release the flush barriers that were queued."""
        limit = self._next_seq()
        items = []
        while self._items and self._items[0][0] < limit:
            items.append(self._items.popleft())
        pending = []
        while self._scalars and self._scalars[0][0] < limit:
            pending.append(self._scalars.popleft())
        with self._lock:
            chunks = [c for c in (columns.take(limit) for columns in self._columns) if c is not None]
            self._columns = [c for c in self._columns if not c.abandoned()]
        try:
            if self._write_error is None:
                chunks.extend(self._resolve(pending))
                self._write(self._encode(items, chunks))
                self._sync(force=any(type(item) is _Barrier for _, item, _ in items))
        except Exception as exc:  # noqa: BLE001 - never let the thread die: the caller hears of it instead
            self._hold_for_caller(exc)
        finally:
            shares = sum(_shares(size) for _, item, size in items if type(item) is not _Barrier)
            with self._lock:
                self._queued[0] -= shares
                self._queued[1] -= sum(size for _, _, size in items)
            for _, item, _ in items:
                if type(item) is _Barrier:
                    item.done.set()

    def _encode(self, items, chunks):
        """{file: bytes} of one batch. Scalar rows (MXNet ones already read: `_resolve`) by series,
        then by call order; other records follow in call order. A bad item is reported, the
        rest written."""
        out = collections.defaultdict(list)
        for _, item, _ in items:
            kind = type(item)
            try:
                if kind is Record:
                    message = item.build(*[resolve(a) for a in item.args])
                    out[item.file].append(encode_event(message, item.step, item.wall))
                elif kind is Task:
                    item.fn(*[resolve(a) for a in item.args])
            except Exception as exc:  # noqa: BLE001 - a bad item: report it, write the others
                self._hold_for_caller(exc)
        if chunks:
            series, values, steps, walls, seqs = (np.concatenate(c) for c in zip(*chunks)) \
                if len(chunks) > 1 else chunks[0]
            for event_file, records in encode_scalar_rows(self._series, series, values, steps, walls, seqs):
                out[event_file].insert(0, records)
        return {event_file: b"".join(pieces) for event_file, pieces in out.items()}

    def _resolve(self, pending):
        """Scalar rows (numpy columns) of the PendingScalars: their values, once MXNet has them.
        A value that cannot be had is reported, the others kept."""
        if not pending:
            return []
        try:
            values = self._read_scalars([item.value for _, item in pending])
        except Exception as exc:  # noqa: BLE001 - reported to the caller
            self._hold_for_caller(exc)
            return []
        series, steps, walls, seqs = zip(*[(item.series, item.step, item.wall, seq) for seq, item in pending])
        return [[np.array(series, np.int64), np.array(values, np.float64), np.array(steps, np.int64),
                 np.array(walls, np.float64), np.array(seqs, np.int64)]]

    def _write(self, out):
        for event_file, data in out.items():
            try:
                event_file.write(data)
            except OSError as exc:
                self._write_error = exc
                self._hold_for_caller(exc)
                return

    def _sync(self, force):
        """Files that keep data back (an object store's: storage/remote.py) upload it when it is time,
        or now if `force`d (flush)."""
        for event_file in self._files:
            if self._write_error is not None:
                return
            try:
                event_file.sync(force)
            except OSError as exc:
                self._write_error = exc
                self._hold_for_caller(exc)

    def _hold_for_caller(self, exc):
        if self.state is State.OPEN and self._error is None:
            self._error = exc
            self.attention = True
        elif self.state is State.CLOSED and self._close_error is None:  # while close() writes the rest
            self._close_error = exc
        else:
            log.error("mxboard: a further error on the writer thread: %r", exc)


def _shares(size):
    """The shares of a `max_queue` slot (SLOT_SHARES to a slot) an item of `size` bytes takes."""
    return min(SLOT_SHARES, max(1, size * SLOT_SHARES // SLOT_BYTES))


def _footprint(item):
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
