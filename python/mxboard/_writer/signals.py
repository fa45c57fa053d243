"""SIGTERM and SIGHUP: every writer is flushed before the signal's default action ends the process.

Our handler is installed with the first writer that asks for the process's hooks, only where the
default action is the signal's handler (never over a user's, nor over SIG_IGN), and given back
when the last writer closes. A watcher thread reads the wakeup fd, so that the flush starts
whatever thread the kernel gave the signal to. Called by a handler installed over ours, ours
starts the flush and returns. Only the main thread may install a handler: a writer made on
another thread asks it for a turn (c_calls.pending_call), and one warning says when it cannot
have one. docs/architecture.md ("The process's end") explains why each works as it does.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import signal
import threading
import time
from types import FrameType
from typing import List, Optional, Tuple

from ..errors import WriterError
from ..signal_mask import keep_signals_off_this_thread
from . import c_calls, lifecycle
from .callsite import CallSite, call_site, warn_at

__all__ = ["watch", "give_back", "MAIN_THREAD_SECS"]

# How long a writer made off the main thread waits for the main thread to install the handlers
# before the one warning says that it has not.
MAIN_THREAD_SECS = 2.0


@dataclasses.dataclass
class _Signals:
    """The state of the handlers. There is one instance, `_SIGNALS`; a forked child resets it."""

    # Whether the fork hook that resets this state is registered.
    fork_hook: bool = False
    # The process that owns the wakeup fd's pipe and its watcher thread, and the pipe's (read,
    # write) ends: the write end is Python's wakeup fd.
    owner_pid: Optional[int] = None
    wakeup_pipe: Optional[Tuple[int, int]] = None
    # The lock that the first signal takes, so that the flush starts once.
    flush_begun: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    # The lock held while a flush for a handler that chains to ours runs.
    chained_flush: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    # The turn of the main thread asked for by another thread and not yet run (set once it ran),
    # and the lock around asking.
    turn_asked: Optional[threading.Event] = None
    turn_lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    # Whether the one warning that the turn could not be had was given.
    warned_off_main: bool = False


_SIGNALS = _Signals()


def watch() -> None:
    """Install the flush at SIGTERM and SIGHUP, each where its handler is the default one, with
    the wakeup fd's watcher where the wakeup fd is free. Only the main thread can do either:
    another thread asks it. A handler of the user's, or SIG_IGN (nohup), is never replaced."""
    if not _SIGNALS.fork_hook:
        _SIGNALS.fork_hook = True
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
    if threading.current_thread() is not threading.main_thread():
        if any(_is_default(signum) for signum in _ends()):
            _ask_main_thread(call_site())
        return
    ours = False
    for signum in _ends():
        try:
            handler = signal.getsignal(signum)
            if handler is signal.SIG_DFL:
                signal.signal(signum, _on_sigterm)
            elif handler is not _on_sigterm:
                # The user's (or nobody's: SIG_IGN), which is never replaced.
                continue
        except (ValueError, OSError, AttributeError):
            # Not on this platform, or not allowed.
            continue
        ours = True
    if ours and _SIGNALS.owner_pid != os.getpid():
        _watch_wakeup_fd()


def give_back() -> None:
    """With no writer left: SIGTERM's and SIGHUP's default actions again, where ours is still the
    handler (by the main thread: another thread asks it). The watcher stays: it acts only while
    ours is the handler."""
    if lifecycle.hooked():
        return
    if threading.current_thread() is threading.main_thread():
        _default_where_ours()
    elif any(_is_ours(signum) for signum in _ends()):
        _ask_main_thread()


def _ends() -> List[int]:
    """The signals that end a process and that we flush at: SIGTERM (docker stop, Kubernetes,
    SLURM), and SIGHUP (an SSH session that drops, a terminal window closed) where it exists."""
    return [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]


def _watch_wakeup_fd() -> None:
    """Make Python's C-level handler tell our watcher thread of a signal, whatever thread the
    kernel gave it to (main thread only; left alone if the wakeup fd is someone else's)."""
    read, write = os.pipe()
    # set_wakeup_fd's rule: a full pipe must never block a handler.
    os.set_blocking(write, False)
    try:
        previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except (ValueError, OSError, TypeError):
        previous = None
    # Someone's (asyncio's), or not allowed: the main thread's handler alone starts the flush.
    if previous != -1:
        if previous is not None:
            signal.set_wakeup_fd(previous)
        os.close(read)
        os.close(write)
        return
    _SIGNALS.owner_pid, _SIGNALS.wakeup_pipe = os.getpid(), (read, write)
    threading.Thread(target=_watch_signals, args=(read,), name="mxboard-signals", daemon=True).start()


def _is_default(signum: int) -> bool:
    try:
        return signal.getsignal(signum) is signal.SIG_DFL
    except (ValueError, OSError):
        return False


def _is_ours(signum: int) -> bool:
    try:
        return signal.getsignal(signum) is _on_sigterm
    except (ValueError, OSError):
        return False


def _main_thread_turn() -> None:
    """On the main thread, between two bytecodes: the handlers installed where writers are
    open, given back where none is (a pending call's callback: it never raises)."""
    try:
        if lifecycle.hooked():
            watch()
        else:
            _default_where_ours()
    # A pending call must not fail.
    except Exception as exc:  # noqa: BLE001
        lifecycle.tell("mxboard: could not install the SIGTERM and SIGHUP handlers on the main thread: %r" % (exc,))
    finally:
        asked = _SIGNALS.turn_asked
        if asked is not None:
            asked.set()


def _ask_main_thread(site: Optional[CallSite] = None) -> None:
    """Ask the main thread for a turn (`_main_thread_turn`), once at a time. With `site` (a
    writer made here, the user's line), warn where it cannot be had within MAIN_THREAD_SECS."""
    with _SIGNALS.turn_lock:
        # Asked already: the turn looks at what is open when it runs.
        if _SIGNALS.turn_asked is not None and not _SIGNALS.turn_asked.is_set():
            return
        asked = threading.Event()
        if not threading.main_thread().is_alive():
            why: Optional[str] = "the main thread has finished"
        else:
            why = c_calls.pending_call(_main_thread_turn)
        if why is None:
            _SIGNALS.turn_asked = asked
    if site is None:
        return
    thread = threading.current_thread().name
    if why is not None:
        _warn_off_main(site, thread, why)
    else:
        threading.Thread(target=_warn_unless_taken, args=(asked, site, thread), name="mxboard-signals-ask",
                         daemon=True).start()


def _warn_unless_taken(asked: threading.Event, site: Optional[CallSite], thread: str) -> None:
    keep_signals_off_this_thread()
    if not asked.wait(MAIN_THREAD_SECS):
        _warn_off_main(site, thread, "the main thread has run no Python code for %g s (it waits in a join() without a "
                                     "timeout, or in a C call)" % MAIN_THREAD_SECS)


def _warn_off_main(site: Optional[CallSite], thread: str, why: str) -> None:
    """The one warning that the handlers could not be installed for a writer made off the main
    thread (a RuntimeWarning at the user's line; on stderr where a filter makes it an error)."""
    with _SIGNALS.turn_lock:
        if _SIGNALS.warned_off_main:
            return
        _SIGNALS.warned_off_main = True
    message = ("mxboard: a SummaryWriter made on thread %r: only the main thread can install the SIGTERM and "
               "SIGHUP handlers that flush it, and %s. Until it does, SIGTERM and SIGHUP end the process without "
               "that flush (a normal exit still closes every writer). Make the first writer on the main thread, "
               "or let the main thread wait with a timeout (thread.join(1.0) in a loop)."
               % (thread, why))
    try:
        warn_at(site, message, RuntimeWarning)
    # An "error" filter: never raised into a writer's start or our thread.
    except Exception:  # noqa: BLE001
        lifecycle.tell(message)


def _watch_signals(read: int) -> None:
    """The watcher thread: each byte the C-level handler wrote is a signal's number."""
    keep_signals_off_this_thread()
    while True:
        try:
            numbers = os.read(read, 64)
        except OSError:
            # Closed: a forked child dropped its copy.
            return
        if not numbers:
            return
        for signum in _ends():
            if signum in numbers and _is_ours(signum):
                _begin(signum)


def _default_where_ours() -> None:
    """The default action again for each of `_ends()` whose handler is ours (main thread only)."""
    for signum in _ends():
        try:
            if signal.getsignal(signum) is _on_sigterm:
                signal.signal(signum, signal.SIG_DFL)
        except (ValueError, OSError, AttributeError):
            pass


def _after_fork_in_child() -> None:
    """In a forked child: the parent's writers are not ours, nor its pipe (a signal to the child
    must never wake the parent's watcher), nor a turn the parent asked for (if the child runs it,
    it finds what the child has). The child's first writer installs everything anew."""
    _default_where_ours()
    if _SIGNALS.wakeup_pipe is not None:
        read, write = _SIGNALS.wakeup_pipe
        try:
            current = signal.set_wakeup_fd(-1)
            # Someone else's since: theirs again.
            if current not in (write, -1):
                signal.set_wakeup_fd(current)
        except (ValueError, OSError):
            pass
        for fd in (read, write):
            try:
                os.close(fd)
            except OSError:
                pass
    _SIGNALS.owner_pid = _SIGNALS.wakeup_pipe = None
    _SIGNALS.flush_begun = threading.Lock()
    _SIGNALS.chained_flush = threading.Lock()
    _SIGNALS.turn_asked = None
    _SIGNALS.turn_lock = threading.Lock()


def _on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
    """The Python-level handler, on the main thread (when it runs bytecode). Installed, and
    alone: flush, then the signal's default action ends the process (`_begin`). Called by a
    handler installed over ours, which chains to the one it found (PyTorch Lightning's, a
    launcher's): start the flush on a thread of ours and return, so that its own stop goes on.
    Found given back (the default action: the last writer closed after the signal came), it was
    ours when the signal came: it ends the process as it would have."""
    try:
        current = signal.getsignal(signum)
    except (ValueError, OSError):
        current = _on_sigterm
    if current is _on_sigterm or not callable(current):
        _begin(signum)
    # Else chained to: a flush starts unless one runs already.
    elif _SIGNALS.chained_flush.acquire(blocking=False):
        try:
            threading.Thread(target=_flush_then_go_on, args=(signum,), name="mxboard-sigterm", daemon=True).start()
        except BaseException:
            _SIGNALS.chained_flush.release()
            raise


def _begin(signum: int) -> None:
    """The first SIGTERM or SIGHUP, from the main thread's handler or the watcher: put the default
    actions back (a second one ends the process at once), then flush and re-raise on a thread of
    ours (the main thread may hold a lock the writers need, or sit in a C call for minutes)."""
    if not _SIGNALS.flush_begun.acquire(blocking=False):
        return
    for other in _ends():
        if other != signum and signal.getsignal(other) is _on_sigterm:
            _default_action(other)
    _default_action(signum)
    threading.Thread(target=_flush_then_die, args=(signum,), name="mxboard-sigterm", daemon=True).start()


def _default_action(signum: int) -> bool:
    """Put `signum`'s default action back, from any thread (True if it is): Python's call on the
    main thread, libc's on another one, where Python refuses."""
    try:
        signal.signal(signum, signal.SIG_DFL)
        return True
    except ValueError:
        return c_calls.default_action(signum)


def _write_out(writer_threads: List[lifecycle.Watched], signum: int, deadline: float) -> None:
    """Everything queued in `writer_threads` written (no wait on a store), by `deadline`; what could
    not be is said on stderr."""
    name = signal.Signals(signum).name
    for writer_thread in writer_threads:
        try:
            if not writer_thread.write_out(max(0.0, deadline - time.monotonic())):
                lifecycle.tell("mxboard: not every event could be written within %d s of %s"
                               % (lifecycle.END_SECS, name))
        except WriterError:
            # Closed meanwhile, or its thread's error: its close or its next call tells it.
            pass
        # Every writer gets its turn.
        except Exception as exc:  # noqa: BLE001
            lifecycle.tell("mxboard: could not write every event at %s: %r" % (name, exc))


def _flush_then_go_on(signum: int) -> None:
    """A handler over ours chained to it: everything queued written, within END_SECS, and the
    process goes on (a store's files go on uploading; the exit's close waits for them)."""
    keep_signals_off_this_thread()
    try:
        _write_out(lifecycle.hooked(), signum, time.monotonic() + lifecycle.END_SECS)
    finally:
        _SIGNALS.chained_flush.release()


def _flush_then_die(signum: int) -> None:
    """Everything queued written (every writer at once, no wait on a store), then a store's
    files wait for their uploads and keep the rest on disk: all within END_SECS. Then the
    signal's default action ends the process."""
    keep_signals_off_this_thread()
    deadline = time.monotonic() + lifecycle.END_SECS
    writer_threads = lifecycle.hooked()
    _write_out(writer_threads, signum, deadline)
    for writer_thread in writer_threads:
        try:
            writer_thread.save_what_waits(deadline)
        except Exception as exc:  # noqa: BLE001
            lifecycle.tell("mxboard: could not keep every event before %s: %r" % (signal.Signals(signum).name, exc))
    # Ended by the signal, as the process would have been without us.
    if _default_action(signum):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        signal.pthread_kill(threading.get_ident(), signum)
        # The process ends during this sleep.
        time.sleep(1)
    logging.shutdown()
    os._exit(128 + signum)
