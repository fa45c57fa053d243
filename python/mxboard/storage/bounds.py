"""A bound of mxboard's own on every request to an object store, whatever its client library does.

A store that accepts the connection and never answers must not hold a caller for ever: gcsfs
waits without a timeout by default, s3fs waits for `100 Continue` outside botocore's timeouts, and
the Azure SDK retries for a minute. `call_with_timeout(seconds, fs.method, ...)` returns within
`seconds` or raises TimeoutError, and `put_with_timeout` does the same for one PUT. An async
filesystem (s3fs, gcsfs, adlfs) gets fsspec's `timeout`, which cancels the request and drops its
connection. Any other filesystem's call runs on a watchdog thread of its own, which is left
behind as a daemon if it never returns. The caller decides what a timeout means.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, List, Optional, TypeVar

from ..signal_mask import keep_signals_off_this_thread

__all__ = ["call_with_timeout", "put_with_timeout"]

T = TypeVar("T")


def call_with_timeout(seconds: float, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`method(*args, **kwargs)`, a method of an fsspec filesystem, answered within `seconds`;
    else TimeoutError (an OSError), naming the bound."""
    from fsspec.asyn import AsyncFileSystem
    from fsspec.exceptions import FSTimeoutError

    seconds = max(0.1, seconds)
    if isinstance(getattr(method, "__self__", None), AsyncFileSystem):
        try:
            return method(*args, timeout=seconds, **kwargs)
        except FSTimeoutError:
            raise TimeoutError("no answer within %.0f s" % seconds) from None
    return _on_a_watchdog(seconds, method, args, kwargs)


def put_with_timeout(fs: Any, key: str, body: bytes, seconds: float) -> None:
    """One PUT of `body` to `key`, bounded as a whole by `seconds` (the connection, the wait for
    100-continue, the body, the answer); the request is cancelled when it passes."""
    call_with_timeout(seconds, fs.pipe_file, key, body)


def _on_a_watchdog(seconds: float, method: Callable[..., T], args: Any, kwargs: Any) -> T:
    """`method` on a thread of its own: its result or error within `seconds`, else TimeoutError
    (the thread is left to finish, or not, on its own)."""
    outcome: List[Any] = []
    error: List[Optional[BaseException]] = [None]
    done = threading.Event()

    def call() -> None:
        keep_signals_off_this_thread()
        try:
            outcome.append(method(*args, **kwargs))
        # Handed to the caller.
        except BaseException as exc:  # noqa: BLE001
            error[0] = exc
        finally:
            done.set()

    threading.Thread(target=call, name="mxboard-request", daemon=True).start()
    if not done.wait(seconds):
        raise TimeoutError("no answer within %.0f s" % seconds)
    if error[0] is not None:
        raise error[0]
    result: T = outcome[0]
    return result
