"""What a writer thread tells the process around it (writer_thread.py calls both): `watch` when
it starts, `forget` when it closes. Each end of the process is a module of its own:
lifecycle.py (the registry of writer threads, a fork, the reaper), process_exit.py (the
interpreter's exit) and signals.py (SIGTERM and SIGHUP). The hooks are installed with the first
writer that asks for them, never at import.
"""
from __future__ import annotations

from . import lifecycle, process_exit, signals
from .lifecycle import Watched

__all__ = ["watch", "forget"]


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
