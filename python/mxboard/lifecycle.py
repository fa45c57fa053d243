"""The process around the writer threads: one registry of live workers (weak references) and the
three moments a process can end or split without closing its writers.

- Exit: writers still open are closed (everything queued written). A write error then is told
  on stderr and the process exits with status 1: Python fixes the exit status before exit hooks
  run, so only `os._exit` can still change it (stdio and logging are flushed first; exit hooks
  registered before the first SummaryWriter are then skipped).
- SIGTERM (docker stop, Kubernetes, SLURM, `Pool.terminate()`), while its handler is the default
  one: every writer is flushed on a thread of its own (the main thread, where Python runs
  handlers, may hold a lock the writer needs), then the signal is raised again and the handler,
  back on the main thread, restores the default one and raises it once more, so the process
  ends as it would have. A user's handler is never replaced.
- Fork: a child drops its copies of the parent's workers (their queues, their descriptors); its
  writers open files of their own at their next call.

Hooks are installed with the first worker, never at import.
"""
import atexit
import logging
import os
import signal
import sys
import threading
import weakref

__all__ = ["watch", "forget"]

_LIVE = weakref.WeakSet()
_INSTALLED = []


def watch(worker):
    """Register a started worker (and the hooks, the first time)."""
    _LIVE.add(worker)
    if not _INSTALLED:
        _INSTALLED.append(True)
        atexit.register(_at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
    _watch_sigterm()


def forget(worker):
    _LIVE.discard(worker)


def _at_exit():
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


def _tell(message):
    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr closed: nothing more to do
        pass


def _after_fork_in_child():
    for worker in list(_LIVE):
        worker.abandon()
    _LIVE.clear()


def _watch_sigterm():
    """Install the SIGTERM flush where the handler is the default one (only the main thread can
    install handlers; elsewhere nothing is done)."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError, AttributeError):  # no SIGTERM here, or not allowed
        pass


def _on_sigterm(signum, frame):
    if _FLUSHED:  # second round, from _flush_then_die: end as the default handler would
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    threading.Thread(target=_flush_then_die, args=(signum,), name="mxboard-sigterm", daemon=True).start()


_FLUSHED = []


def _flush_then_die(signum):
    for worker in list(_LIVE):
        try:
            worker.flush(timeout=30)
        except Exception as exc:  # noqa: BLE001 - the signal must still end the process
            _tell("mxboard: could not write every event before %s: %r" % (signal.Signals(signum).name, exc))
    _FLUSHED.append(True)
    os.kill(os.getpid(), signum)  # only the main thread may restore the default handler
