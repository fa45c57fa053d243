"""What becomes of the open writer threads when the process ends, forks or drops a writer.

The process keeps one registry of its live writer threads (weak references), in one `_Process`
object. At exit, every writer still open is closed within END_SECS and stderr says what failed;
the exit status stays the program's. At SIGTERM and SIGHUP, while no other handler is installed,
every writer is flushed before the signal's default action. A forked child drops its copies of
the parent's writer threads, and a writer collected unclosed is closed on the reaper thread.
`SummaryWriter(process_hooks=False)` (MXBOARD_PROCESS_HOOKS=0) leaves signals and the exit to the
program. The hooks are installed with the first writer, never at import. docs/guarantees.md
states each case, and docs/architecture.md explains why each works as it does.
"""
from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import queue
import signal
import sys
import threading
import time
import weakref
from types import FrameType
from typing import Any, Callable, List, Optional, Protocol, Set, Tuple, Union

from ..errors import WriterError
from ..signal_mask import keep_signals_off_this_thread
from .callsite import CallSite, call_site, warn_at


class Watched(Protocol):
    """What this module asks of a writer thread (writer_thread.WriterThread, which imports this
    module)."""

    def write_out(self, timeout: float) -> bool: ...

    def save_what_waits(self, deadline: float) -> None: ...

    def close(self, deadline: Optional[float] = None) -> Optional[BaseException]: ...

    def abandon(self) -> None: ...


__all__ = ["watch", "forget", "reap", "reaped", "process_hooks", "END_SECS", "HOOKS_VARIABLE",
           "STATUS_VARIABLE"]

END_SECS = 30  # seconds all the writers together may take at exit and at SIGTERM (a store's wait)
HOOKS_VARIABLE = "MXBOARD_PROCESS_HOOKS"  # 0: SummaryWriter's process_hooks=False by default
STATUS_VARIABLE = "MXBOARD_EXIT_STATUS_ON_ERROR"  # 1: a writer that failed at exit makes the status 1
MAIN_THREAD_SECS = 2.0  # how long a writer made off the main thread waits for it to install the handlers


@dataclasses.dataclass
class _Process:
    """This process's state: its writer threads, the hooks it installed, the reaper, and the state
    of the signal handlers. There is one instance, `_PROCESS`; a forked child resets its part."""

    # the writer threads whose writers asked for the process's hooks
    live: weakref.WeakSet[Watched] = dataclasses.field(default_factory=weakref.WeakSet)
    # the writer threads made with process_hooks=False: only dropped in a forked child
    unhooked: weakref.WeakSet[Watched] = dataclasses.field(default_factory=weakref.WeakSet)
    installed: Set[str] = dataclasses.field(default_factory=set)  # the hooks registered: "fork", "exit"
    child_exit_pid: Optional[int] = None  # the multiprocessing child whose exit closes its writers
    # writer threads for the reaper to close, and the marks `reaped` waits for
    to_reap: queue.SimpleQueue[Union[Watched, threading.Event]] = dataclasses.field(
        default_factory=queue.SimpleQueue)
    reaper: Optional[threading.Thread] = None
    # SIGTERM and SIGHUP: the process that owns the wakeup fd's pipe and its watcher thread, the
    # pipe's (read, write) ends (the write end is Python's wakeup fd), the lock the first signal
    # takes (so that the flush starts once), and the lock held while a flush for a handler that
    # chains to ours runs
    signals_pid: Optional[int] = None
    wakeup_pipe: Optional[Tuple[int, int]] = None
    flush_begun: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    chained_flush: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    # a turn of the main thread asked for by another thread (`Py_AddPendingCall`): the C callback,
    # kept alive for as long as a pending call may run it; the turn asked and not yet run (set
    # once the main thread ran it); the lock around asking; and whether the one warning that the
    # turn could not be had was given
    turn_callback: Any = None
    turn_asked: Optional[threading.Event] = None
    turn_lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    warned_off_main: bool = False


_PROCESS = _Process()


def watch(writer_thread: Watched, hooks: bool = True) -> None:
    """Register a started writer thread (and the hooks, the first time in each process). Without
    `hooks` (process_hooks=False), the program closes it: no exit hook closes it, no signal
    handler flushes it, and none is installed for it."""
    if "fork" not in _PROCESS.installed:
        _PROCESS.installed.add("fork")
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
    _start_reaper()
    if not hooks:
        _PROCESS.unhooked.add(writer_thread)
        return
    if "exit" not in _PROCESS.installed:
        _PROCESS.installed.add("exit")
        atexit.register(_at_exit)
    _PROCESS.live.add(writer_thread)
    _watch_multiprocessing_exit()
    _watch_sigterm()


def process_hooks(value: Optional[bool]) -> bool:
    """SummaryWriter's `process_hooks`: as given (a bool), else as MXBOARD_PROCESS_HOOKS says
    (default on)."""
    if value is None:
        return _flag(HOOKS_VARIABLE, True)
    if not isinstance(value, bool):
        raise TypeError("process_hooks must be a bool or None; got %s" % type(value).__name__)
    return value


def _flag(name: str, default: bool) -> bool:
    """An on/off environment variable: 1, true, yes, on or 0, false, no, off (any case); unset
    or empty, `default`."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError("%s must be 1 or 0 (true/false, yes/no, on/off); got %r" % (name, os.environ[name]))


def reap(writer_thread: Watched) -> None:
    """Close `writer_thread`, whose writer was collected unclosed, on the reaper thread,
    never on the thread that collected it. This is one C-level put, which is safe wherever a
    collection runs."""
    _PROCESS.to_reap.put(writer_thread)


def reaped(timeout: float) -> bool:
    """Wait until the writer threads handed to `reap` before the call are closed. Returns False
    if `timeout` seconds pass first."""
    passed = threading.Event()
    _PROCESS.to_reap.put(passed)
    return passed.wait(timeout)


def _start_reaper() -> None:
    """The reaper thread, started with a process's first writer thread (a thread started while a
    collection runs could wait on a lock its own thread holds)."""
    thread = _PROCESS.reaper
    if thread is None or not thread.is_alive():
        thread = _PROCESS.reaper = threading.Thread(target=_reap_loop, name="mxboard-reaper", daemon=True)
        thread.start()


def _reap_loop() -> None:
    keep_signals_off_this_thread()
    while True:
        writer_thread = _PROCESS.to_reap.get()
        if isinstance(writer_thread, threading.Event):  # a mark of `reaped`
            writer_thread.set()
            continue
        try:
            fault = writer_thread.close()
        except Exception as exc:  # noqa: BLE001 - nobody to raise to: told here
            fault = exc
        if fault is not None and not isinstance(fault, WriterError):  # a WriterError repeats a told one
            _tell("mxboard: a SummaryWriter collected unclosed could not write everything: %r" % (fault,))
        del writer_thread, fault  # the writer thread is freed as soon as it is closed


def forget(writer_thread: Watched) -> None:
    """A closed writer thread leaves the registry (and the signal handlers go when none is left)."""
    _PROCESS.unhooked.discard(writer_thread)
    _PROCESS.live.discard(writer_thread)
    _give_back_sigterm()


def _at_exit() -> None:
    """Close every writer still open, all within one deadline (END_SECS): a store's files wait
    for their uploads until then and keep the rest on disk; stderr says what failed or was kept.
    A Ctrl-C meanwhile stops the waiting, not the keeping: the writers left keep what waits at
    once. Then return: the program's other exit hooks, multiprocessing's exit (its daemonic
    children ended) and the interpreter's finalization (its open files flushed) run, and the exit
    status is the program's, also after that Ctrl-C (said on stderr). Only where
    MXBOARD_EXIT_STATUS_ON_ERROR=1 asks for it does a failure end the process with status 1
    (130 after the Ctrl-C), by `os._exit`: Python fixes the status before exit hooks run."""
    deadline = time.monotonic() + END_SECS
    failed = interrupted = False
    for writer_thread in list(_PROCESS.live):
        try:
            fault = writer_thread.close(time.monotonic() if interrupted else deadline)
        except Exception as exc:  # noqa: BLE001 - every writer gets its turn
            fault = exc
        except KeyboardInterrupt:  # a Ctrl-C: the others are still closed (keeping at once)
            interrupted, fault = True, None
        if fault is not None:
            failed = True
            _tell("mxboard: events logged before exit could not all be written: %r" % (fault,))
    if interrupted:
        _tell("mxboard: interrupted while the writers closed; what the stores had not taken is kept on disk, "
              "as said above")
    if failed or interrupted:
        try:
            wanted = _flag(STATUS_VARIABLE, False)
        except ValueError as exc:
            _tell("mxboard: %s; the exit status is left as it is" % exc)
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
        try:
            exit_function()  # once: it does nothing where it runs already (our exit is among its finalizers)
        except Exception as exc:  # noqa: BLE001 - the status must still be given
            _tell("mxboard: multiprocessing's exit function failed: %r" % (exc,))
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
    if "multiprocessing" not in sys.modules or _PROCESS.child_exit_pid == os.getpid():
        return
    import multiprocessing.util

    if multiprocessing.parent_process() is None:
        return
    _PROCESS.child_exit_pid = os.getpid()
    multiprocessing.util.Finalize(None, _at_exit, exitpriority=10)


def _tell(message: str) -> None:
    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr closed: nothing more to do
        pass


def _after_fork_in_child() -> None:
    for writer_thread in list(_PROCESS.live) + list(_PROCESS.unhooked):
        writer_thread.abandon()
    _PROCESS.live.clear()
    _PROCESS.unhooked.clear()
    _PROCESS.turn_asked = None  # the parent's pending call, if the child runs it, finds what the child has
    _PROCESS.turn_lock = threading.Lock()
    _PROCESS.reaper = None  # the parent's thread is not in the child: the child's first writer starts one
    _drop_sigterm_in_child()


def _ends() -> List[int]:
    """The signals that end a process and that we flush at: SIGTERM (docker stop, Kubernetes,
    SLURM), and SIGHUP (an SSH session that drops, a terminal window closed) where it exists."""
    return [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]


def _watch_sigterm() -> None:
    """Install the flush at SIGTERM and SIGHUP, each where its handler is the default one, with
    the wakeup fd's watcher where the wakeup fd is free (only the main thread can do either:
    another thread asks it). A handler of the user's, or SIG_IGN (nohup), is never replaced."""
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
                continue  # the user's (or nobody's: SIG_IGN): never replaced
        except (ValueError, OSError, AttributeError):  # not here, or not allowed
            continue
        ours = True
    if ours and _PROCESS.signals_pid != os.getpid():
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
    _PROCESS.signals_pid, _PROCESS.wakeup_pipe = os.getpid(), (read, write)
    threading.Thread(target=_watch_signals, args=(read,), name="mxboard-signals", daemon=True).start()


def _is_default(signum: int) -> bool:
    try:
        return signal.getsignal(signum) is signal.SIG_DFL
    except (ValueError, OSError):
        return False


def _main_thread_turn(_: Any) -> int:
    """On the main thread, between two bytecodes: the handlers installed where writers are
    open, given back where none is (a pending call's callback: never raises, returns 0)."""
    try:
        if _PROCESS.live:
            _watch_sigterm()
        else:
            _default_where_ours()
    except Exception as exc:  # noqa: BLE001 - a pending call must not fail
        _tell("mxboard: could not install the SIGTERM and SIGHUP handlers on the main thread: %r" % (exc,))
    finally:
        asked = _PROCESS.turn_asked
        if asked is not None:
            asked.set()
    return 0


def _ask_main_thread(site: Optional[CallSite] = None) -> None:
    """Ask the main thread for a turn (`_main_thread_turn`), once at a time. With `site` (a
    writer made here, the user's line), warn where it cannot be had within MAIN_THREAD_SECS."""
    with _PROCESS.turn_lock:
        if _PROCESS.turn_asked is not None and not _PROCESS.turn_asked.is_set():
            return  # asked already: the turn looks at what is open when it runs
        asked = threading.Event()
        if not threading.main_thread().is_alive():
            why: Optional[str] = "the main thread has finished"
        else:
            why = _pending_call()
        if why is None:
            _PROCESS.turn_asked = asked
    if site is None:
        return
    thread = threading.current_thread().name
    if why is not None:
        _warn_off_main(site, thread, why)
    else:
        threading.Thread(target=_warn_unless_taken, args=(asked, site, thread), name="mxboard-signals-ask",
                         daemon=True).start()


def _pending_call() -> Optional[str]:
    """`Py_AddPendingCall(_main_thread_turn)`: None once asked, else why it cannot be."""
    try:
        import ctypes

        if _PROCESS.turn_callback is None:
            _PROCESS.turn_callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(_main_thread_turn)
        add = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(
            ("Py_AddPendingCall", ctypes.pythonapi))
        pointer = ctypes.cast(_PROCESS.turn_callback, ctypes.c_void_p)
        if add(pointer, None) != 0:
            return "Python's queue of pending calls is full"
    except (ImportError, AttributeError, OSError) as exc:
        return "this Python cannot run a call on the main thread (%s)" % exc
    return None


def _warn_unless_taken(asked: threading.Event, site: Optional[CallSite], thread: str) -> None:
    keep_signals_off_this_thread()
    if not asked.wait(MAIN_THREAD_SECS):
        _warn_off_main(site, thread, "the main thread has run no Python code for %g s (it waits in a join() without a "
                             "timeout, or in a C call)" % MAIN_THREAD_SECS)


def _warn_off_main(site: Optional[CallSite], thread: str, why: str) -> None:
    """The one warning that the handlers could not be installed for a writer made off the main
    thread (a RuntimeWarning at the user's line; on stderr where a filter makes it an error)."""
    with _PROCESS.turn_lock:
        if _PROCESS.warned_off_main:
            return
        _PROCESS.warned_off_main = True
    message = ("mxboard: a SummaryWriter made on thread %r: only the main thread can install the SIGTERM and "
               "SIGHUP handlers that flush it, and %s. Until it does, SIGTERM and SIGHUP end the process without "
               "that flush (a normal exit still closes every writer). Make the first writer on the main thread, "
               "or let the main thread wait with a timeout (thread.join(1.0) in a loop)."
               % (thread, why))
    try:
        warn_at(site, message, RuntimeWarning)
    except Exception:  # noqa: BLE001 - an "error" filter: never raised into a writer's start or our thread
        _tell(message)


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
            if signum in numbers and _is_ours(signum):
                _begin(signum)


def _give_back_sigterm() -> None:
    """No writer left: SIGTERM's and SIGHUP's default actions again, where ours is still the
    handler (by the main thread: another thread asks it). The watcher stays: it acts only while
    ours is the handler."""
    if _PROCESS.live:
        return
    if threading.current_thread() is threading.main_thread():
        _default_where_ours()
    elif any(_is_ours(signum) for signum in _ends()):
        _ask_main_thread()


def _is_ours(signum: int) -> bool:
    try:
        return signal.getsignal(signum) is _on_sigterm
    except (ValueError, OSError):
        return False


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
    if _PROCESS.wakeup_pipe is not None:
        read, write = _PROCESS.wakeup_pipe
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
    _PROCESS.signals_pid = _PROCESS.wakeup_pipe = None
    _PROCESS.flush_begun = threading.Lock()
    _PROCESS.chained_flush = threading.Lock()


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
    elif _PROCESS.chained_flush.acquire(blocking=False):  # else a flush runs already
        try:
            threading.Thread(target=_flush_then_go_on, args=(signum,), name="mxboard-sigterm", daemon=True).start()
        except BaseException:
            _PROCESS.chained_flush.release()
            raise


def _begin(signum: int) -> None:
    """The first SIGTERM or SIGHUP, from the main thread's handler or the watcher: put the default
    actions back (a second one ends the process at once), then flush and re-raise on a thread of
    ours (the main thread may hold a lock the writers need, or sit in a C call for minutes)."""
    if not _PROCESS.flush_begun.acquire(blocking=False):
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


def _write_out(writer_threads: List[Watched], signum: int, deadline: float) -> None:
    """Everything queued in `writer_threads` written (no wait on a store), by `deadline`; what could
    not be is said on stderr."""
    name = signal.Signals(signum).name
    for writer_thread in writer_threads:
        try:
            if not writer_thread.write_out(max(0.0, deadline - time.monotonic())):
                _tell("mxboard: not every event could be written within %d s of %s" % (END_SECS, name))
        except WriterError:  # closed meanwhile, or its thread's error: its close or next call tells
            pass
        except Exception as exc:  # noqa: BLE001 - every writer gets its turn
            _tell("mxboard: could not write every event at %s: %r" % (name, exc))


def _flush_then_go_on(signum: int) -> None:
    """A handler over ours chained to it: everything queued written, within END_SECS, and the
    process goes on (a store's files go on uploading; the exit's close waits for them)."""
    keep_signals_off_this_thread()
    try:
        _write_out(list(_PROCESS.live), signum, time.monotonic() + END_SECS)
    finally:
        _PROCESS.chained_flush.release()


def _flush_then_die(signum: int) -> None:
    """Everything queued written (every writer at once, no wait on a store), then a store's
    files wait for their uploads and keep the rest on disk: all within END_SECS. Then the
    signal's default action ends the process."""
    keep_signals_off_this_thread()
    deadline = time.monotonic() + END_SECS
    writer_threads = list(_PROCESS.live)
    _write_out(writer_threads, signum, deadline)
    for writer_thread in writer_threads:
        try:
            writer_thread.save_what_waits(deadline)
        except Exception as exc:  # noqa: BLE001
            _tell("mxboard: could not keep every event before %s: %r" % (signal.Signals(signum).name, exc))
    if _default_action(signum):  # ended by the signal, as it would have been without us
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        signal.pthread_kill(threading.get_ident(), signum)
        time.sleep(1)  # the process ends during it
    logging.shutdown()
    os._exit(128 + signum)
