"""The interpreter's exit: every writer still open is closed within one deadline
(lifecycle.END_SECS), stderr says what failed or was kept, and the exit status stays the
program's. MXBOARD_EXIT_STATUS_ON_ERROR=1 asks for status 1 after a failure, at a documented
cost. A multiprocessing child, which its parent ends with `os._exit`, closes its writers among
multiprocessing's finalizers. Once the exit began (`began`), a writer opened again starts no
thread and writes each call on the caller's thread before it returns: no exit hook of mxboard's
runs after this one (process.threads_start).
"""
from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import signal
import sys
import time
from typing import Any, Callable, Optional

from . import lifecycle

__all__ = ["watch", "began", "STATUS_VARIABLE"]

# MXBOARD_EXIT_STATUS_ON_ERROR=1: a writer that failed at exit makes the exit status 1.
STATUS_VARIABLE = "MXBOARD_EXIT_STATUS_ON_ERROR"


@dataclasses.dataclass
class _Exit:
    """The exit's state. There is one instance, `_EXIT`."""

    # Whether the atexit hook is registered.
    registered: bool = False
    # The multiprocessing child whose finalizers close its writers.
    child_pid: Optional[int] = None
    # The process whose exit hook began to close its writers (a forked child's is not).
    began_pid: Optional[int] = None


_EXIT = _Exit()


def watch() -> None:
    """With the first writer that asks for the process's hooks: the atexit hook, and in a
    multiprocessing child, the finalizer that closes the writers before its `os._exit`."""
    if not _EXIT.registered:
        _EXIT.registered = True
        atexit.register(_at_exit)
    _watch_multiprocessing_exit()


def began() -> bool:
    """Whether this process's exit hook has begun to close the writers. A writer opened after
    that is never closed by mxboard, so it writes each call before the call returns."""
    return _EXIT.began_pid == os.getpid()


def _at_exit() -> None:
    """Close every writer still open, all within one deadline (END_SECS): a store's files wait
    for their uploads until then and keep the rest on disk; stderr says what failed or was kept.
    A Ctrl-C meanwhile stops the waiting, not the keeping: the writers left keep what waits at
    once. Then return: the program's other exit hooks, multiprocessing's exit (its daemonic
    children ended) and the interpreter's finalization (its open files flushed) run, and the exit
    status is the program's, also after that Ctrl-C (said on stderr). Only where
    MXBOARD_EXIT_STATUS_ON_ERROR=1 asks for it does a failure end the process with status 1
    (130 after the Ctrl-C), by `os._exit`: Python fixes the status before exit hooks run."""
    _EXIT.began_pid = os.getpid()
    deadline = time.monotonic() + lifecycle.END_SECS
    failed = interrupted = False
    for writer_thread in lifecycle.hooked():
        try:
            fault = writer_thread.close(time.monotonic() if interrupted else deadline)
        # Every writer gets its turn.
        except Exception as exc:  # noqa: BLE001
            fault = exc
        except KeyboardInterrupt:
            # A Ctrl-C: the other writers are still closed, each keeping what waits at once.
            interrupted, fault = True, None
        if fault is not None:
            failed = True
            lifecycle.tell("mxboard: events logged before exit could not all be written: %r" % (fault,))
    if interrupted:
        lifecycle.tell("mxboard: interrupted while the writers closed; what the stores had not taken is kept on "
                       "disk, as said above")
    if failed or interrupted:
        try:
            wanted = lifecycle.flag(STATUS_VARIABLE, False)
        except ValueError as exc:
            lifecycle.tell("mxboard: %s; the exit status is left as it is" % exc)
            wanted = False
        if wanted:
            _end_with_status(1 if failed else 128 + signal.SIGINT)


def _end_with_status(status: int) -> None:
    """MXBOARD_EXIT_STATUS_ON_ERROR's end: multiprocessing's exit function first (its daemonic
    children ended, its others joined), logging and stdio flushed, then `os._exit(status)`. The
    exit hooks registered before the first writer's, and the interpreter's finalization, are
    skipped: that is the setting's cost."""
    util = sys.modules.get("multiprocessing.util")
    exit_function: Optional[Callable[[], Any]] = getattr(util, "_exit_function", None)
    if exit_function is not None:
        # It runs once: where it runs already (our exit is among its finalizers), it does nothing.
        try:
            exit_function()
        # The status must still be given.
        except Exception as exc:  # noqa: BLE001
            lifecycle.tell("mxboard: multiprocessing's exit function failed: %r" % (exc,))
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(status)


def _watch_multiprocessing_exit() -> None:
    """In a multiprocessing child (which its parent's multiprocessing ends with `os._exit`: its
    registry of finalizers starts empty), close the writers among its finalizers. The main
    process's own exit hook closes them there."""
    if "multiprocessing" not in sys.modules or _EXIT.child_pid == os.getpid():
        return
    import multiprocessing.util

    if multiprocessing.parent_process() is None:
        return
    _EXIT.child_pid = os.getpid()
    multiprocessing.util.Finalize(None, _at_exit, exitpriority=10)
