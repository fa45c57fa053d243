"""The writer thread: a queue, one thread that encodes and writes it, and the lifecycle around
them (flush barrier, periodic write, error hand-back, exit and fork).

The training thread only appends tuples to a deque (atomic, no lock); the thread wakes when
there is a batch or an array to write, when asked to flush, and at least every `flush_secs`,
encodes what is queued and writes it with one `os.write` per file. Whatever the thread raises is
kept and handed to the caller's next call; it never leaves producers blocked.
"""
import collections
import logging
import os
import threading
import weakref

from .encoding import ScalarSeries, encode_batch

__all__ = ["Worker", "WriterError"]

log = logging.getLogger("mxboard")

# Queue items are encoding.py's 4-tuples, and flush barriers: (None, threading.Event, 0, 0.0).
WAKE_EVERY = 8192  # scalars queued before the thread is woken (else it wakes every flush_secs)


class WriterError(RuntimeError):
    """The writer thread could not write; raised on the caller's next call, `__cause__` says why."""


class _Forked(Exception):
    pass


class Worker:
    """One writer thread and its queue. Knows files and bytes, not the writer that feeds it (so
    that the exit hook, which holds the worker, never keeps a SummaryWriter alive)."""

    def __init__(self, flush_secs, max_queue):
        self.queue = collections.deque()
        self.fault = None  # an exception for the caller's next call; checked on every add_*
        self.max_scalars = max(max_queue, 1) * WAKE_EVERY
        self.files = []  # every EventFile this worker writes, closed with it
        self._flush_secs = flush_secs
        self._slots = threading.BoundedSemaphore(max(max_queue, 1))  # arrays waiting, at most
        self._wake = threading.Event()
        self._drained = threading.Condition()
        self._broken = None  # the I/O error after which nothing more is written
        self._stopping = False
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="mxboard-writer", daemon=True)
        self._thread.start()
        _LIVE.add(self)

    # -- the caller's side ------------------------------------------------------------------
    def put_event(self, item):
        """Queue an array-carrying item; blocks while `max_queue` of them wait."""
        while not self._slots.acquire(timeout=0.5):
            if not self._thread.is_alive():
                raise WriterError("the mxboard writer thread is not running")
        self.queue.append(item)
        self._wake.set()

    def nudge(self):
        """Called once a batch of scalars waits: wake the thread; if too many wait, block until
        it caught up (so memory stays bounded)."""
        self._wake.set()
        if len(self.queue) < self.max_scalars:
            return
        with self._drained:
            while len(self.queue) >= self.max_scalars and self.fault is None:
                self._wake.set()
                if not self._drained.wait(0.5) and not self._thread.is_alive():
                    raise WriterError("the mxboard writer thread is not running")

    def flush(self):
        """Return when everything queued before the call is written to the OS."""
        done = threading.Event()
        self.queue.append((None, done, 0, 0.0))
        self._wake.set()
        while not done.wait(0.5):
            if not self._thread.is_alive():
                raise WriterError("the mxboard writer thread is not running")

    def close(self):
        """Write what is queued, stop the thread, close the files. Safe to call twice."""
        if self._pid != os.getpid():  # a forked child's copy: the parent's files are not ours
            return
        if self._thread.is_alive():
            self._stopping = True
            self.flush()
            self._wake.set()
            self._thread.join()
        _LIVE.discard(self)
        for event_file in self.files:
            try:
                event_file.close()
            except OSError as exc:
                self._keep(exc)

    def abandon(self):
        """In a forked child: drop the parent's queue and file descriptors, write nothing."""
        self.queue.clear()
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

    # -- the thread's side ------------------------------------------------------------------
    def _run(self):
        wake, queue = self._wake, self.queue
        while True:
            wake.wait(self._flush_secs)
            wake.clear()
            self._drain(queue)
            with self._drained:
                self._drained.notify_all()
            if self._stopping and not queue:
                return

    def _drain(self, queue):
        """Encode and write everything queued now: one write per file, and per flush barrier."""
        popleft = queue.popleft
        items = [popleft() for _ in range(len(queue))]
        while items:
            targets = [item[0] for item in items]
            cut = targets.index(None) if None in targets else len(items)
            if cut:
                self._write_batch(items[:cut], targets[:cut])
            if cut < len(items):
                items[cut][1].set()
            items = items[cut + 1:]

    def _write_batch(self, batch, targets):
        try:
            if self._broken is None:
                out, errors = encode_batch(batch, targets)
                for exc in errors:
                    self._keep(exc)
                self._write(out)
        except Exception as exc:  # never let the thread die: the caller hears of it instead
            self._keep(exc)
        finally:
            if any(type(target) is not ScalarSeries for target in set(targets)):
                for _ in range(sum(type(target) is not ScalarSeries for target in targets)):
                    self._slots.release()

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


def _after_fork_in_child():
    for worker in list(_LIVE):
        worker.abandon()
    _LIVE.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
