"""The life of the process's writer threads: registered when they start, dropped in a forked child,
closed on the reaper thread when their writer is collected unclosed, forgotten when they close.

This module also holds what every end of the process shares: the one deadline (END_SECS), the
MXBOARD_PROCESS_HOOKS setting and a line on stderr. Each end has a module of its own above this
one: process_exit.py (the interpreter's exit) and signals.py (SIGTERM and SIGHUP); process.py
installs them with the first writer, never at import. docs/guarantees.md states each case, and
docs/architecture.md explains why each works as it does.
"""
from __future__ import annotations

import dataclasses
import os
import queue
import sys
import threading
import weakref
from typing import List, Optional, Protocol, Union

# Every on/off variable of mxboard's is read by one rule, the start-up module's: 1, true, yes, on or
# 0, false, no, off (any case); unset or empty, the default; anything else a ValueError in one line.
from _mxboard_startup import flag

from ..signal_mask import keep_signals_off_this_thread


class Watched(Protocol):
    """What the process's ends ask of a writer thread (writer_thread.WriterThread)."""

    def write_out(self, timeout: float) -> bool: ...

    def save_what_waits(self, deadline: float) -> None: ...

    def close(self, deadline: Optional[float] = None) -> Optional[BaseException]: ...

    def abandon(self) -> None: ...


__all__ = ["Watched", "register", "unregister", "hooked", "reap", "reaped", "process_hooks", "flag", "tell",
           "END_SECS", "HOOKS_VARIABLE"]

# The seconds all the writers together may take at exit and at SIGTERM (a store's wait).
END_SECS = 30
# MXBOARD_PROCESS_HOOKS=0 makes SummaryWriter's process_hooks False by default.
HOOKS_VARIABLE = "MXBOARD_PROCESS_HOOKS"


@dataclasses.dataclass
class _Threads:
    """The process's writer threads and the reaper's state. There is one instance, `_THREADS`;
    a forked child empties it."""

    # The writer threads whose writers asked for the process's hooks. The references are weak,
    # so that the registry never keeps a writer alive.
    hooked: weakref.WeakSet[Watched] = dataclasses.field(default_factory=weakref.WeakSet)
    # The writer threads made with process_hooks=False, which are only dropped in a forked child.
    unhooked: weakref.WeakSet[Watched] = dataclasses.field(default_factory=weakref.WeakSet)
    # Whether the fork hook is registered (once for each process, with its first writer).
    fork_hook: bool = False
    # The writer threads for the reaper to close, and the marks that `reaped` waits for.
    to_reap: queue.SimpleQueue[Union[Watched, threading.Event]] = dataclasses.field(
        default_factory=queue.SimpleQueue)
    reaper: Optional[threading.Thread] = None


_THREADS = _Threads()


def register(writer_thread: Watched, hooks: bool = True) -> None:
    """Register a started writer thread; the first one also starts the reaper and registers the
    fork hook. With `hooks` False (process_hooks=False) the program closes it: no end of the
    process acts on it but a fork."""
    if not _THREADS.fork_hook:
        _THREADS.fork_hook = True
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
    _start_reaper()
    if hooks:
        _THREADS.hooked.add(writer_thread)
    else:
        _THREADS.unhooked.add(writer_thread)


def unregister(writer_thread: Watched) -> None:
    """A closed writer thread leaves the registry."""
    _THREADS.unhooked.discard(writer_thread)
    _THREADS.hooked.discard(writer_thread)


def hooked() -> List[Watched]:
    """The live writer threads that the process's ends close or flush, at this moment."""
    return list(_THREADS.hooked)


def process_hooks(value: Optional[bool]) -> bool:
    """SummaryWriter's `process_hooks`: as given (a bool), else as MXBOARD_PROCESS_HOOKS says
    (default on)."""
    if value is None:
        return flag(HOOKS_VARIABLE, True)
    if not isinstance(value, bool):
        raise TypeError("process_hooks must be a bool or None; got %s" % type(value).__name__)
    return value


def tell(message: str) -> None:
    """One line on stderr, where nobody is left to raise to; nothing if stderr is closed."""
    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    # With stderr closed, there is nothing more to do.
    except Exception:  # noqa: BLE001
        pass


def reap(writer_thread: Watched) -> None:
    """Close `writer_thread`, whose writer was collected unclosed, on the reaper thread, never on
    the thread that collected it. This is one C-level put, which is safe wherever a collection
    runs."""
    _THREADS.to_reap.put(writer_thread)


def reaped(timeout: float) -> bool:
    """Wait until the writer threads handed to `reap` before the call are closed. Returns False
    if `timeout` seconds pass first."""
    passed = threading.Event()
    _THREADS.to_reap.put(passed)
    return passed.wait(timeout)


def _start_reaper() -> None:
    """The reaper thread, started with a process's first writer thread (a thread started while a
    collection runs could wait on a lock its own thread holds)."""
    thread = _THREADS.reaper
    if thread is None or not thread.is_alive():
        thread = _THREADS.reaper = threading.Thread(target=_reap_loop, name="mxboard-reaper", daemon=True)
        thread.start()


def _reap_loop() -> None:
    keep_signals_off_this_thread()
    while True:
        writer_thread = _THREADS.to_reap.get()
        # A mark of `reaped`: everything handed over before it is closed.
        if isinstance(writer_thread, threading.Event):
            writer_thread.set()
            continue
        # close() returns only what no call has raised yet: nobody else can tell it.
        try:
            fault = writer_thread.close()
        # Nobody to raise to: told here.
        except Exception as exc:  # noqa: BLE001
            fault = exc
        if fault is not None:
            tell("mxboard: a SummaryWriter collected unclosed could not write everything: %r" % (fault,))
        # The writer thread is freed as soon as it is closed.
        del writer_thread, fault


def _after_fork_in_child() -> None:
    """A forked child drops its copies of the parent's writer threads (their queues, their
    descriptors): its writers open files of their own at their next call. The parent's reaper
    thread is not in the child, whose first writer starts one."""
    for writer_thread in list(_THREADS.hooked) + list(_THREADS.unhooked):
        writer_thread.abandon()
    _THREADS.hooked.clear()
    _THREADS.unhooked.clear()
    _THREADS.reaper = None
