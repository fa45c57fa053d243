"""The two calls mxboard makes into C through ctypes, each for what Python refuses off the main
thread: a turn of the main thread asked from another one (`Py_AddPendingCall`), and a signal's
default action put back from any thread (libc's `signal`). signals.py uses both;
docs/architecture.md ("The process's end") says what each buys, and which test shows it.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

__all__ = ["pending_call", "default_action"]

# The C callbacks made for `pending_call`, by the function each runs. They are kept for the
# process: a pending call may run its callback at any later time.
_CALLBACKS: Dict[Callable[[], None], Any] = {}


def pending_call(turn: Callable[[], None]) -> Optional[str]:
    """`Py_AddPendingCall`: the main thread runs `turn()` between two of its bytecodes, the next
    time it runs Python code. `turn` must not raise. Returns None once asked, else why it
    cannot be."""
    try:
        import ctypes

        callback = _CALLBACKS.get(turn)
        if callback is None:
            def run(_: Any) -> int:
                turn()
                return 0

            callback = _CALLBACKS[turn] = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(run)
        add = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(
            ("Py_AddPendingCall", ctypes.pythonapi))
        if add(ctypes.cast(callback, ctypes.c_void_p), None) != 0:
            return "Python's queue of pending calls is full"
    except (ImportError, AttributeError, OSError) as exc:
        return "this Python cannot run a call on the main thread (%s)" % exc
    return None


def default_action(signum: int) -> bool:
    """libc's `signal(signum, SIG_DFL)`, which works on any thread (Python's `signal.signal`
    works on the main thread only). Returns whether the default action is back."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
        # None is SIG_DFL (0); SIG_ERR (-1) says that it failed.
        previous = libc.signal(signum, None)
        return bool(previous != ctypes.c_void_p(-1).value)
    except (ImportError, OSError, AttributeError):
        return False
