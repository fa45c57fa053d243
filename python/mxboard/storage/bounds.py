"""One bound of mxboard's own on every request to a store, whatever its client library does.

A store that takes the connection and never answers (a hung server, a dead peer behind a load
balancer, a dropped NAT entry) must never hold a caller for ever: gcsfs waits without a timeout by
default, s3fs' wait for `100 Continue` is outside botocore's timeouts, and the Azure SDK's own
policy retries for a minute. `within(seconds, fs.method, ...)` answers within `seconds`, or
raises TimeoutError:

- an async filesystem's (s3fs, gcsfs, adlfs) blocking calls take fsspec's `timeout`: the request
  is cancelled when it passes and its connection dropped, so a late answer changes nothing;
- any other filesystem's call runs on a watchdog thread of its own, left behind (a daemon) if it
  never returns.

The caller decides what a timeout means: the uploader retries with backoff, the constructor says
the store does not answer, the mirror calls the pass an outage.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, List, Optional, TypeVar

from ..signal_mask import keep_signals_off_this_thread

__all__ = ["within"]

T = TypeVar("T")


def within(seconds: float, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
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
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
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
