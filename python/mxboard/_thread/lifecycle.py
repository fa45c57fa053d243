"""The process around the writer threads: one registry of live workers (weak references) and the
three moments a process can end or split without closing its writers.

- Exit: writers still open are closed (everything queued written), all within one deadline
  (END_SECS, whatever their number): a store's files wait for their uploads until then and
  keep the rest on disk, and a Ctrl-C meanwhile ends the waiting, not the keeping. A write
  error (or data kept on disk) is then told on stderr and the process exits with status 1:
  Python fixes the exit status before exit hooks run, so only `os._exit` can still change it
  (stdio and logging are flushed first; exit hooks registered before the first SummaryWriter
  are then skipped).
- The end of a multiprocessing child (a Pool, ProcessPoolExecutor or Process worker started by
  fork or forkserver): it leaves through `os._exit`, which skips exit hooks, after running
  multiprocessing's own finalizers; one of those closes the writers made or reopened there.
- SIGTERM (docker stop, Kubernetes, SLURM, `Pool.terminate()`) and SIGHUP (an SSH session that
  drops, a terminal window closed), each while its handler is the default one: on a thread of
  ours every writer's queue is written out, then a store's files wait for their uploads and keep
  the rest on disk (END_SECS in all), the default action is put back, and the signal is raised
  again: the process ends by it as it would have. Python runs a handler only on the main thread,
  between bytecodes; a process-directed signal may be given to any thread that does not block it
  (a BLAS or OpenMP thread, a user's), and a main thread asleep in a lock (a pool worker's task
  queue) or a C call then never runs it. Python's C-level handler, which runs on whatever thread
  the kernel chose, also writes the signal's number to the wakeup fd (`signal.set_wakeup_fd`):
  the watcher thread reads it there and starts the flush, whichever thread got the signal. Where
  the wakeup fd is already someone's (asyncio's loop owns it while it has signal handlers), the
  main thread's handler alone starts the flush. The default action is put back at the
  start (a second SIGTERM ends the process at once): by `signal.signal` on the main thread, else
  by libc's `signal()` (ctypes); where neither can be had, the process ends by `os._exit(128 +
  signum)` after the flush. A user's handler is never replaced; ours is taken back when the last
  writer closes (an in-process TensorBoard's own SIGTERM handler, installed later, then exits
  cleanly instead of chaining to ours), and a forked child starts with the default action (its
  parent's writers are not its own).
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
from typing import List, Optional, Protocol, Tuple, Union

from ..threads import keep_signals_off_this_thread


class Worker(Protocol):
    """What this module asks of a writer thread's worker (worker.py's, which imports this one)."""

    def write_out(self, timeout: float) -> bool: ...

    def save_what_waits(self, deadline: float) -> None: ...

    def close(self, deadline: Optional[float] = None) -> Optional[BaseException]: ...

    def abandon(self) -> None: ...

__all__ = ["watch", "forget", "reap", "reaped", "END_SECS"]

END_SECS = 30  # seconds all the writers together may take at exit and at SIGTERM (a store's wait)

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
    _give_back_sigterm()


def _at_exit() -> None:
    """Close every writer still open, all within one deadline (END_SECS): a store's files wait
    for their uploads until then and keep the rest on disk. A Ctrl-C meanwhile stops the waiting,
    not the keeping: the writers left keep what waits at once. The status then tells: 1 where a
    writer failed (data kept on disk, or lost), else 130 after a Ctrl-C (as a shell reports one)."""
    deadline = time.monotonic() + END_SECS
    failed = False
    interrupted: Optional[KeyboardInterrupt] = None
    for worker in list(_LIVE):
        try:
            fault = worker.close(deadline if interrupted is None else time.monotonic())
        except Exception as exc:  # noqa: BLE001 - every writer gets its turn
            fault = exc
        except KeyboardInterrupt as exc:  # a Ctrl-C: the others are still closed (keeping at once)
            interrupted, fault = interrupted or exc, None
        if fault is not None:
            failed = True
            _tell("mxboard: events logged before exit could not all be written: %r" % (fault,))
    if failed or interrupted is not None:
        # the status must tell: a KeyboardInterrupt raised from an exit hook is only printed
        # ("Exception ignored in atexit callback") and the process would end with 0
        if interrupted is not None and not failed:
            _tell("mxboard: interrupted while the writers closed; what the stores had not taken is kept on disk, "
                  "as said above")
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(1 if failed else 128 + signal.SIGINT)


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
    _drop_sigterm_in_child()


class _Sigterm:
    """Our SIGTERM handling in this process: the wakeup fd's pipe and its watcher thread, and
    whether the flush has begun (once)."""

    pid: Optional[int] = None  # the process the pipe and the watcher belong to
    pipe: Optional[Tuple[int, int]] = None  # (read, write) ends, the write end Python's wakeup fd
    begun = threading.Lock()  # taken by the first SIGTERM: the flush starts once


def _ends() -> List[int]:
    """The signals that end a process and that we flush at: SIGTERM (docker stop, Kubernetes,
    SLURM), and SIGHUP (an SSH session that drops, a terminal window closed) where it exists."""
    return [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]


def _watch_sigterm() -> None:
    """Install the flush at SIGTERM and SIGHUP, each where its handler is the default one, with
    the wakeup fd's watcher where the wakeup fd is free (only the main thread can do either;
    elsewhere nothing is done). A handler of the user's, or SIG_IGN (nohup), is never replaced."""
    if threading.current_thread() is not threading.main_thread():
        return
    ours = False
    for signum in _ends():
        try:
            handler = signal.getsignal(signum)
            if handler is signal.SIG_DFL:
                signal.signal(signum, _on_sigterm)
            elif handler is not _on_sigterm:
                continue  # the user's (or nobody's: SIG_IGN): never replaced
        except (ValueError, OSError, AttributeError):  # not here, or not allowed
            continue
        ours = True
    if ours and _Sigterm.pid != os.getpid():
        _watch_wakeup_fd()


def _watch_wakeup_fd() -> None:
    """Make Python's C-level handler tell our watcher thread of a signal, whatever thread the
    kernel gave it to (main thread only; left alone if the wakeup fd is someone else's)."""
    read, write = os.pipe()
    os.set_blocking(write, False)  # set_wakeup_fd's rule: a full pipe never blocks a handler
    try:
        previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except (ValueError, OSError, TypeError):
        previous = None
    if previous != -1:  # someone's (asyncio's), or not allowed: the main thread's handler alone
        if previous is not None:
            signal.set_wakeup_fd(previous)
        os.close(read)
        os.close(write)
        return
    _Sigterm.pid, _Sigterm.pipe = os.getpid(), (read, write)
    threading.Thread(target=_watch_signals, args=(read,), name="mxboard-signals", daemon=True).start()


def _watch_signals(read: int) -> None:
    """The watcher thread: each byte the C-level handler wrote is a signal's number."""
    keep_signals_off_this_thread()
    while True:
        try:
            numbers = os.read(read, 64)
        except OSError:  # closed (a fork's child dropped its copy)
            return
        if not numbers:
            return
        for signum in _ends():
            if signum in numbers and signal.getsignal(signum) is _on_sigterm:
                _begin(signum)


def _give_back_sigterm() -> None:
    """No writer left: SIGTERM's and SIGHUP's default actions again, where ours is still the
    handler (main thread only). The watcher stays: it acts only while ours is the handler."""
    if threading.current_thread() is not threading.main_thread() or _LIVE:
        return
    _default_where_ours()


def _default_where_ours() -> None:
    """The default action again for each of `_ends()` whose handler is ours (main thread only)."""
    for signum in _ends():
        try:
            if signal.getsignal(signum) is _on_sigterm:
                signal.signal(signum, signal.SIG_DFL)
        except (ValueError, OSError, AttributeError):
            pass


def _drop_sigterm_in_child() -> None:
    """In a forked child: the parent's writers are not ours, nor its pipe (a signal to the child
    must never wake the parent's watcher). The child's first writer installs everything anew."""
    _default_where_ours()
    if _Sigterm.pipe is not None:
        read, write = _Sigterm.pipe
        try:
            current = signal.set_wakeup_fd(-1)
            if current not in (write, -1):  # someone else's since: theirs again
                signal.set_wakeup_fd(current)
        except (ValueError, OSError):
            pass
        for fd in (read, write):
            try:
                os.close(fd)
            except OSError:
                pass
    _Sigterm.pid = _Sigterm.pipe = None
    _Sigterm.begun = threading.Lock()


def _on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
    """The Python-level handler, on the main thread (when it runs bytecode)."""
    _begin(signum)


def _begin(signum: int) -> None:
    """The first SIGTERM or SIGHUP, from the main thread's handler or the watcher: put the default
    actions back (a second one ends the process at once), then flush and re-raise on a thread of
    ours (the main thread may hold a lock the writers need, or sit in a C call for minutes)."""
    if not _Sigterm.begun.acquire(blocking=False):
        return
    for other in _ends():
        if other != signum and signal.getsignal(other) is _on_sigterm:
            _default_action(other)
    _default_action(signum)
    threading.Thread(target=_flush_then_die, args=(signum,), name="mxboard-sigterm", daemon=True).start()


def _default_action(signum: int) -> bool:
    """Put `signum`'s default action back, from any thread (True if it is)."""
    try:
        signal.signal(signum, signal.SIG_DFL)  # the main thread
        return True
    except ValueError:  # another thread: Python refuses, libc does not
        pass
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
        previous = libc.signal(signum, None)  # None: SIG_DFL (0)
        return bool(previous != ctypes.c_void_p(-1).value)  # not SIG_ERR
    except (ImportError, OSError, AttributeError):
        return False


def _flush_then_die(signum: int) -> None:
    """Everything queued written (every writer at once, no wait on a store), then a store's
    files wait for their uploads and keep the rest on disk: all within END_SECS. Then the
    signal's default action ends the process."""
    keep_signals_off_this_thread()
    deadline = time.monotonic() + END_SECS
    workers = list(_LIVE)
    for worker in workers:
        try:
            if not worker.write_out(max(0.0, deadline - time.monotonic())):
                _tell("mxboard: not every event could be written within %d s of %s"
                      % (END_SECS, signal.Signals(signum).name))
        except Exception as exc:  # noqa: BLE001 - the signal must still end the process
            _tell("mxboard: could not write every event before %s: %r" % (signal.Signals(signum).name, exc))
    for worker in workers:
        try:
            worker.save_what_waits(deadline)
        except Exception as exc:  # noqa: BLE001
            _tell("mxboard: could not keep every event before %s: %r" % (signal.Signals(signum).name, exc))
    if _default_action(signum):  # ended by the signal, as it would have been without us
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        signal.pthread_kill(threading.get_ident(), signum)
        time.sleep(1)  # the process ends during it
    logging.shutdown()
    os._exit(128 + signum)
