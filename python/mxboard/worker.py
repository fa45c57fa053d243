"""The writer thread: queues, one thread that encodes and writes them, and the lifecycle around
them (flush barrier, periodic write, error hand-back, exit and fork).

The training thread only appends: scalars to columns of its own (`ScalarColumns`: no Python
object per scalar crosses threads, no lock), everything else as a tuple to a deque (atomic).
The thread wakes when a batch of scalars or an array waits, when asked to flush, and at least
every `flush_secs`; it encodes what is queued (encoding.py) and writes it with one `os.write`
per file. Whatever it raises is kept and handed to the caller's next call; it never leaves
producers blocked.
"""
import collections
import logging
import os
import threading
import weakref
from array import array

import numpy as np

from .encoding import encode_batch

__all__ = ["ScalarColumns", "Worker", "WriterError", "WAKE_EVERY"]

log = logging.getLogger("mxboard")

WAKE_EVERY = 8192  # scalars a thread queues before it wakes the writer thread


class WriterError(RuntimeError):
    """The writer thread could not write; raised on the caller's next call, `__cause__` says why."""


class _Forked(Exception):
    pass


TASK = object()  # the "file" of a queued task: not an event, something to do


class ScalarColumns:
    """The scalars one thread queued, as parallel columns. Only that thread appends, always in
    the order values, steps, walls, series, so that `series` is the last to grow: the writer
    thread takes as many rows as `series` has, and every other column has at least as many.
    Slicing and deleting a prefix are single C calls, atomic under the GIL, and an append that
    comes between them lands after the prefix: no lock is needed."""

    __slots__ = ("values", "steps", "walls", "series", "append")

    def __init__(self):
        self.values, self.steps, self.walls, self.series = array("d"), array("q"), array("d"), array("q")
        # bound appends, for the caller's hot path
        self.append = (self.values.append, self.steps.append, self.walls.append, self.series.append)

    def take(self):
        """Remove and return the complete rows as numpy columns (ids, values, steps, walls)."""
        count = len(self.series)
        if not count:
            return None
        columns = []
        for column, dtype in ((self.series, np.int64), (self.values, np.float64),
                              (self.steps, np.int64), (self.walls, np.float64)):
            columns.append(np.frombuffer(column[:count], dtype=dtype))
            del column[:count]
        return columns


class Worker:
    """One writer thread and its queues. Knows series, files and bytes, not the writer that
    feeds it (so that the exit hook, which holds the worker, never keeps a SummaryWriter alive)."""

    def __init__(self, flush_secs, max_queue):
        self.events = collections.deque()  # (file, (build, args), step, wall); (None, Event): flush
        self.series = []  # ScalarSeries by id
        self.columns = []  # ScalarColumns, one per producing thread
        self.files = []  # every EventFile this worker writes, closed with it
        self.fault = None  # an exception for the caller's next call; checked on every add_*
        self.max_scalars = max(max_queue, 1) * WAKE_EVERY
        self._flush_secs = flush_secs
        self._slots = threading.BoundedSemaphore(max(max_queue, 1))  # arrays waiting, at most
        self._wake = threading.Event()
        self._drained = threading.Condition()
        self._broken = None  # the I/O error after which nothing more is written
        self._stopping = False
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="mxboard-writer", daemon=True)
        self._thread.start()
        _watch_forks()
        _LIVE.add(self)

    # -- the caller's side ------------------------------------------------------------------
    def new_columns(self):
        columns = ScalarColumns()
        self.columns.append(columns)
        return columns

    def put_event(self, item):
        """Queue an array-carrying item; blocks while `max_queue` of them wait."""
        while not self._slots.acquire(timeout=0.5):
            self._check_alive()
        self.events.append(item)
        self._wake.set()

    def put_task(self, fn, args):
        """Queue `fn(*args)` to run on the writer thread (file work that is no event, such as
        embedding assets); errors reach the caller like any other. Counts as an array item."""
        self.put_event((TASK, (fn, args), 0, 0.0))

    def nudge(self, columns):
        """Called once a batch of scalars waits: wake the thread; if too many wait, block until
        it took them (so memory stays bounded)."""
        self._wake.set()
        if len(columns.series) < self.max_scalars:
            return
        with self._drained:
            while len(columns.series) >= self.max_scalars and self.fault is None:
                self._wake.set()
                if not self._drained.wait(0.5):
                    self._check_alive()

    def flush(self):
        """Return when everything queued before the call is written to the OS."""
        done = threading.Event()
        self.events.append((None, done))
        self._wake.set()
        while not done.wait(0.5):
            self._check_alive()

    def close(self):
        """Write what is queued, stop the thread, close the files. Safe to call twice."""
        if self._pid != os.getpid():  # a forked child's copy: the parent's files are not ours
            return
        if self._thread.is_alive():
            self._stopping = True
            self.flush()
            self._thread.join()
        _LIVE.discard(self)
        for event_file in self.files:
            try:
                event_file.close()
            except OSError as exc:
                self._keep(exc)

    def abandon(self):
        """In a forked child: drop the parent's queues and file descriptors, write nothing."""
        self.events.clear()
        self.columns = []
        self._pid = None
        for event_file in self.files:
            event_file.abandon()
        self.fault = _Forked()

    def take_fault(self):
        """The pending exception, once; after an I/O error, every later call gets a WriterError."""
        fault, self.fault = self.fault, None
        if self._broken is not None:
            self.fault = WriterError("the mxboard writer stopped writing after an earlier error: %r"
                                     % (self._broken,))
            self.fault.__cause__ = self._broken
        return fault

    def _check_alive(self):
        if not self._thread.is_alive():
            raise WriterError("the mxboard writer thread is not running")

    # -- the thread's side ------------------------------------------------------------------
    def _run(self):
        while True:
            self._wake.wait(self._flush_secs)
            self._wake.clear()
            self._drain()
            with self._drained:
                self._drained.notify_all()
            if self._stopping and not self.events:
                return

    def _drain(self):
        """Encode and write everything queued now, one write per file; then release the flush
        barriers that were queued (everything queued before them is in this batch)."""
        popleft = self.events.popleft
        items = [popleft() for _ in range(len(self.events))]
        events = [item for item in items if item[0] is not None and item[0] is not TASK]
        tasks = [item for item in items if item[0] is TASK]
        chunks = [c for c in (columns.take() for columns in list(self.columns)) if c is not None]
        for _, (fn, args), _, _ in tasks:
            try:
                if self._broken is None:
                    fn(*args)
            except Exception as exc:
                self._keep(exc)
        try:
            if self._broken is None and (events or chunks):
                scalars = chunks[0] if len(chunks) == 1 else (
                    [np.concatenate(column) for column in zip(*chunks)] if chunks else None)
                out, errors = encode_batch(self.series, scalars, events)
                for exc in errors:
                    self._keep(exc)
                self._write(out)
        except Exception as exc:  # never let the thread die: the caller hears of it instead
            self._keep(exc)
        finally:
            for _ in range(len(events) + len(tasks)):
                self._slots.release()
            for item in items:
                if item[0] is None:
                    item[1].set()

    def _write(self, out):
        for event_file, data in out.items():
            try:
                event_file.write(data)
            except OSError as exc:
                self._broken = exc
                self._keep(exc)
                return

    def _keep(self, exc):
        if self.fault is None:
            self.fault = exc
        else:
            log.error("mxboard: a further error on the writer thread: %r", exc)


_LIVE = weakref.WeakSet()  # workers of this process, for the fork hook
_FORK_HOOK = []  # registered once, with the first worker (nothing happens at import)


def _after_fork_in_child():
    for worker in list(_LIVE):
        worker.abandon()
    _LIVE.clear()


def _watch_forks():
    if not _FORK_HOOK and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _FORK_HOOK.append(True)
