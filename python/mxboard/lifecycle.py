"""The process around the writer threads: one registry of live workers (weak references) and the
three moments a process can end or split without closing its writers.

- Exit: writers still open are closed (everything queued written). A write error then is told
  on stderr and the process exits with status 1: Python fixes the exit status before exit hooks
  run, so only `os._exit` can still change it (stdio and logging are flushed first; exit hooks
  registered before the first SummaryWriter are then skipped).
- The end of a multiprocessing child (a Pool, ProcessPoolExecutor or Process worker started by
  fork or forkserver): it leaves through `os._exit`, which skips exit hooks, after running
  multiprocessing's own finalizers; one of those closes the writers made or reopened there.
- SIGTERM (docker stop, Kubernetes, SLURM, `Pool.terminate()`), while its handler is the default
  one: the handler puts the default action back at once, and every writer is flushed on a thread
  of its own (the main thread, where Python runs handlers, may hold a lock the writer needs, or
  sit in a C call for minutes), which then raises the signal again: the process ends as it would
  have, within the flush (at most 30 s), whatever the main thread is doing. A second SIGTERM
  ends it at once. A user's handler is never replaced.
- Fork: a child drops its copies of the parent's workers (their queues, their descriptors); its
  writers open files of their own at their next call.
- Collection: a writer collected unclosed hands its worker to the reaper thread, which closes it.
  Garbage collection runs on whatever thread allocates, a writer thread among them: closing
  there would make that thread wait for itself (and the exit hook wait for it).

Hooks are installed with the first worker, never at import.
"""
from __future__ import annotations

import atexit
import logging
import os
import queue
import signal
import sys
import threading
import time
import weakref
from types import FrameType
from typing import List, Optional, Protocol, Union


class Worker(Protocol):
    """What this module asks of a writer thread's worker (worker.py's, which imports this one)."""

    def flush(self, timeout: Optional[float] = None) -> bool: ...

    def close(self) -> Optional[BaseException]: ...

    def abandon(self) -> None: ...

__all__ = ["watch", "forget", "reap", "reaped", "keep_signals_off_this_thread", "FLUSH_ON_SIGTERM"]

FLUSH_ON_SIGTERM = 30  # seconds the writers may take to flush before SIGTERM ends the process

_LIVE: weakref.WeakSet[Worker] = weakref.WeakSet()
_INSTALLED: List[bool] = []
_CHILD_EXIT: List[Optional[int]] = [None]  # the pid whose multiprocessing exit closes its writers
_REAP: queue.SimpleQueue[Union[Worker, threading.Event]] = queue.SimpleQueue()  # workers to close, and marks
_REAPER: List[Optional[threading.Thread]] = [None]


def watch(worker: Worker) -> None:
    """Register a started worker (and the hooks, the first time in each process)."""
    _LIVE.add(worker)
    if not _INSTALLED:
        _INSTALLED.append(True)
        atexit.register(_at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
    _watch_multiprocessing_exit()
    _watch_sigterm()
    _start_reaper()


def reap(worker: Worker) -> None:
    """Close `worker`, whose writer was collected unclosed, on the reaper thread: never on the
    thread that collected it. (One C-level put: safe wherever a collection runs.)"""
    _REAP.put(worker)


def reaped(timeout: float) -> bool:
    """Wait until the workers handed to `reap` before the call are closed (False after `timeout`
    seconds)."""
    passed = threading.Event()
    _REAP.put(passed)
    return passed.wait(timeout)


def _start_reaper() -> None:
    """The reaper thread, started with a process's first worker (a thread started while a
    collection runs could wait on a lock its own thread holds)."""
    thread = _REAPER[0]
    if thread is None or not thread.is_alive():
        thread = _REAPER[0] = threading.Thread(target=_reap_loop, name="mxboard-reaper", daemon=True)
        thread.start()


def _reap_loop() -> None:
    from .intake import WriterError

    keep_signals_off_this_thread()
    while True:
        worker = _REAP.get()
        if isinstance(worker, threading.Event):  # a mark of `reaped`
            worker.set()
            continue
        try:
            fault = worker.close()
        except Exception as exc:  # noqa: BLE001 - nobody to raise to: told here
            fault = exc
        if fault is not None and not isinstance(fault, WriterError):  # a WriterError repeats a told one
            _tell("mxboard: a SummaryWriter collected unclosed could not write everything: %r" % (fault,))
        del worker, fault  # the worker is free as soon as it is closed


def forget(worker: Worker) -> None:
    _LIVE.discard(worker)


def _at_exit() -> None:
    failed = False
    for worker in list(_LIVE):
        try:
            fault = worker.close()
        except Exception as exc:  # noqa: BLE001 - every writer gets its turn
            fault = exc
        if fault is not None:
            failed = True
            _tell("mxboard: events logged before exit could not all be written: %r" % (fault,))
    if failed:
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(1)


def _watch_multiprocessing_exit() -> None:
    """In a process multiprocessing may end with `os._exit` (its children: their registry of
    finalizers starts empty), close the writers among its finalizers."""
    if "multiprocessing" not in sys.modules or _CHILD_EXIT[0] == os.getpid():
        return
    import multiprocessing.util

    _CHILD_EXIT[0] = os.getpid()
    multiprocessing.util.Finalize(None, _at_exit, exitpriority=10)


def _tell(message: str) -> None:
    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr closed: nothing more to do
        pass


def _after_fork_in_child() -> None:
    for worker in list(_LIVE):
        worker.abandon()
    _LIVE.clear()
    _REAPER[0] = None  # the parent's thread is not in the child: the child's first worker starts one


def _watch_sigterm() -> None:
    """Install the SIGTERM flush where the handler is the default one (only the main thread can
    install handlers; elsewhere nothing is done)."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError, AttributeError):  # no SIGTERM here, or not allowed
        pass


def keep_signals_off_this_thread() -> None:
    """Block SIGTERM and SIGINT in the calling (mxboard) thread: the kernel then gives a
    process-directed one to another thread, never to one of ours, where the main thread (which
    alone runs Python's handlers) might not wake up for it."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})


def _on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
    """Put the default action back (only the main thread may), then flush and re-raise from a
    thread: the re-raised signal ends the process at once, with the main thread in Python or in
    a C call (a Python-level handler would wait for that call to return)."""
    signal.signal(signum, signal.SIG_DFL)
    threading.Thread(target=_flush_then_die, args=(signum,), name="mxboard-sigterm", daemon=True).start()


def _flush_then_die(signum: int) -> None:
    keep_signals_off_this_thread()
    deadline = time.monotonic() + FLUSH_ON_SIGTERM
    for worker in list(_LIVE):
        try:
            worker.flush(timeout=max(0.0, deadline - time.monotonic()))
        except Exception as exc:  # noqa: BLE001 - the signal must still end the process
            _tell("mxboard: could not write every event before %s: %r" % (signal.Signals(signum).name, exc))
    os.kill(os.getpid(), signum)
