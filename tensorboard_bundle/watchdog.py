"""The data server, watched: if the fast (Rust) loader's process dies, TensorBoard's Python loader
serves from then on, said once, instead of HTTP 500 for every run for the server's life.

The data server aborts on a record header claiming more bytes than it can allocate (an 80-byte
event file with a header of 2^62 bytes is enough), and restarting it would only read that file
again. The Python loader reads such a file safely (patches/0008: it never asks for more bytes
than a file holds). Mirrored logdirs never get such a file (the mirror checks each record's
header as it copies: mirror/); a local logdir is read by the data server itself, so this is
what protects it.
"""
import logging
import sys
import threading
from typing import Any, Callable

import grpc

__all__ = ["Watched"]

log = logging.getLogger("tensorboard_bundle")


class Watched:
    """A data provider that delegates to the data server's (`fast`) while it answers. A call
    that finds it unavailable (its process gone) starts `fallback()`'s provider, and that call
    and every later one go there."""

    def __init__(self, fast: Any, fallback: Callable[[], Any]) -> None:
        self._current, self._fallback, self._lock = fast, fallback, threading.Lock()
        self._fell_back = False

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._current, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            current = self._current
            try:
                return getattr(current, name)(*args, **kwargs)
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                return getattr(self._fall_back(current, exc), name)(*args, **kwargs)

        return call

    def _fall_back(self, failed: Any, exc: Any) -> Any:
        with self._lock:
            if self._current is failed and not self._fell_back:
                self._fell_back = True
                sys.stderr.write("note: the fast data loader stopped answering (%s); TensorBoard's Python loader "
                                 "serves this logdir from now on (slower)\n" % exc.details())
                sys.stderr.flush()
                self._current = self._fallback()
            return self._current
