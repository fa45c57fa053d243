"""What a writer thread tells the process around it (writer_thread.py calls both): `watch` when
it starts, `forget` when it closes. Each end of the process is a module of its own:
lifecycle.py (the registry of writer threads, a fork, the reaper), process_exit.py (the
interpreter's exit) and signals.py (SIGTERM and SIGHUP). The hooks are installed with the first
writer that asks for them, never at import. `threads_start` and `threads_run` say what the
interpreter's exit allows a writer thread.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from . import lifecycle, process_exit, signals
from .encoding import ScalarSeries, encode_scalar_rows
from .lifecycle import Watched

__all__ = ["watch", "forget", "threads_start", "threads_run", "ready_for_finalization"]

# Whether this process has run `ready_for_finalization`.
_READY = [False]


def watch(writer_thread: Watched, hooks: bool = True) -> None:
    """Register a started writer thread. With `hooks` (SummaryWriter's process_hooks), the exit
    closes it and SIGTERM and SIGHUP flush it; without, only a fork and its collection act on it,
    and no hook is installed for it."""
    lifecycle.register(writer_thread, hooks)
    if hooks:
        process_exit.watch()
        signals.watch()


def forget(writer_thread: Watched) -> None:
    """A closed writer thread leaves the registry; the signal handlers go when none is left."""
    lifecycle.unregister(writer_thread)
    signals.give_back()


def threads_start() -> bool:
    """Whether a writer may start a thread of its own. Not once this process's exit hook began
    to close the writers: no hook of mxboard's would close it. Nor in any exit hook (the main
    thread runs them once it has ended): an exit hook registered then never runs, so a first
    writer made there would not be closed either, and Python 3.12 starts no thread there. Nor
    once the interpreter finalizes (a `__del__` at the modules' teardown): there
    `Thread.start()` waits for ever on Python 3.9-3.11, and raises RuntimeError on 3.12 and
    3.13. A writer that may not writes each call on the caller's thread (writer_thread.py)."""
    main = threading.main_thread()
    in_exit_hooks = threading.current_thread() is main and not main.is_alive()
    return not (in_exit_hooks or process_exit.began() or sys.is_finalizing())


def threads_run() -> bool:
    """Whether threads other than the caller's still run Python: not once the interpreter
    finalizes, after the exit hooks (a daemon thread stops where it next takes the GIL; on 3.13
    it waits there for ever, still alive)."""
    return not sys.is_finalizing()


def ready_for_finalization() -> None:
    """Once a process: import now what numpy's array methods (`any`, `clip`, `mean`, ...) import
    at their first use, their Python half, and run the scalar rows' encoding once. A `__del__` at
    the interpreter's finalization, where nothing can be imported any more, then writes a scalar,
    a text or (on numpy 2: numpy 1.23's `clip` imports at every call) a histogram as any call
    does, whatever was logged before it. About 1 ms (numpy 1.23) to 8 ms (numpy 2.5, most of it
    numpy.ma, which `np.unique` imports and the first batch of scalars would import anyway)."""
    if _READY[0]:
        return
    _READY[0] = True
    values = np.arange(4.0)
    try:
        for method in ("any", "all", "sum", "prod", "max", "min", "mean", "var", "std"):
            getattr(values, method)()
        values.clip(1.0, 2.0)
        # The scalar rows' own path, all of it: two tags out of call order, between two records.
        ids, order = np.array([1, 0, 1, 0]), np.array([3, 0, 2, 1])
        list(encode_scalar_rows([ScalarSeries(None, "a"), ScalarSeries(None, "b")], ids, values, ids, values, order,
                                {None: np.array([2])}))
    # Too late (the interpreter finalizes already: a builder that imports says so at its call),
    # or a numpy that differs: this only readies what it can.
    except Exception:  # noqa: BLE001
        pass
