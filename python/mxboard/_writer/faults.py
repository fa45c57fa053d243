"""A writer thread's errors, as its caller sees them, held in one place (`Faults`): what the next
call raises, and what close() raises.

The writer thread meets two kinds of error. A bad item (a builder that fails, a device array
whose values cannot be read) is reported, and the other items are written. An I/O error (a full
disk, a store that gave up, a deleted logdir) stops the writing: the next call raises it, and
every call after it raises that the writer stopped. Each error has one face (`face`): an OSError
becomes a `WriterIOError`, an MXBoardError that is also an OSError, with the cause's errno,
strerror, filename and message, and the cause chained; an MXBoardError stays itself, and so does
a bad item's other error (a bad argument found late, raised as the call would have raised it).
docs/guarantees.md ("Errors reach you") says the same for users.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable, Optional, Tuple

from ..errors import FileDeletedError, MXBoardError, WriterError, WriterIOError, WriterTimeoutError

__all__ = ["Faults", "face"]

log = logging.getLogger("mxboard")

STOPPED = "the mxboard writer stopped writing after an earlier error"


def face(error: BaseException, filename: Optional[str] = None) -> BaseException:
    """`error` as the caller sees it. An OSError that is no MXBoardError becomes a WriterIOError
    with its errno, strerror, filename (`filename`, the file written, where it names none) and
    message, and `__cause__` the OSError. Any other error stays itself."""
    if isinstance(error, MXBoardError) or not isinstance(error, OSError):
        return error
    if error.errno is not None:
        faced: OSError = _io_error(error, error.strerror, filename)
    else:
        faced = (WriterTimeoutError if isinstance(error, TimeoutError) else WriterIOError)(*error.args)
    faced.__cause__ = error
    return faced


def stopped_face(cause: BaseException, filename: Optional[str] = None) -> WriterError:
    """What a call raises once the writer has stopped writing after `cause`: a WriterIOError with
    the cause's errno and filename where the cause is an OSError, else a WriterError."""
    stopped: WriterError
    if not isinstance(cause, OSError):
        stopped = WriterError("%s: %r" % (STOPPED, cause))
    elif cause.errno is None:
        stopped = (WriterTimeoutError if isinstance(cause, TimeoutError) else WriterIOError)(
            "%s: %s" % (STOPPED, cause))
    else:
        stopped = _io_error(cause, "%s: %s" % (STOPPED, cause.strerror), filename)
    stopped.__cause__ = cause
    return stopped


def _io_error(cause: OSError, strerror: Optional[str], filename: Optional[str]) -> WriterIOError:
    """A WriterIOError of `cause`'s errno and filenames (`filename` where it names none); a
    WriterTimeoutError where the cause is a TimeoutError."""
    kind = WriterTimeoutError if isinstance(cause, TimeoutError) else WriterIOError
    first = cause.filename if cause.filename is not None else filename
    if first is None:
        return kind(cause.errno, strerror)
    if cause.filename2 is None:
        return kind(cause.errno, strerror, first)
    return kind(cause.errno, strerror, first, None, cause.filename2)


class Faults:
    """One writer thread's errors for its caller. The writer thread reports them (`hold` for a
    bad item, `stop` for the error after which nothing more is written); the caller's side asks
    at each call (`take`) and at close() (`begin_close`, `end_close`). `flag()` is called
    whenever an error waits for the caller's next call: the hot path reads one flag
    (WriterThread.holds_for_caller), never this object."""

    def __init__(self, flag: Callable[[], None]) -> None:
        self._flag = flag
        self._lock = threading.Lock()
        # What the next call raises, once, and what it is: "item" (a bad item's error), "stop"
        # (the error that stopped the writing) or "repeat" (that the writer stopped, once told).
        self._next: Optional[BaseException] = None
        self._next_is = ""
        # The error after which nothing more is written (as the writer thread met it), and
        # whether it is a store's give-up whose files kept what came after it: close() then
        # tries the store once more, and a store that takes everything makes the error moot.
        self.stopped: Optional[BaseException] = None
        self._kept_after = False
        self._filename: Optional[str] = None
        # close() writes the rest: an error from then on is close()'s own (the first one).
        self._closing = False
        self._at_close: Optional[BaseException] = None

    # -- the writer thread's side ------------------------------------------------------------
    def hold(self, error: BaseException) -> None:
        """A bad item's error: the next call raises it (close() does, once it has begun)."""
        self._keep(face(error), "item")

    def stop(self, error: BaseException, kept_after: bool = False, filename: Optional[str] = None) -> None:
        """The error after which nothing more is written. `kept_after`: a store's give-up, whose
        files keep what comes after it (close() tries the store once more). `filename`: the file
        written, named where the error names none."""
        faced = face(error, filename)
        if not isinstance(faced, MXBoardError):
            faced = WriterError("the mxboard writer could not write: %r" % (error,))
            faced.__cause__ = error
        self._keep(faced, "stop", (error, kept_after, filename))

    def stopped_error(self) -> WriterError:
        """What a call raises once the writer has stopped (a task's caller, say)."""
        assert self.stopped is not None
        return stopped_face(self.stopped, self._filename)

    def _keep(self, error: BaseException, kind: str,
              stop: Optional[Tuple[BaseException, bool, Optional[str]]] = None) -> None:
        with self._lock:
            # Set under the lock: a call that takes the error meanwhile raises it first, and only
            # then that the writer stopped.
            if stop is not None:
                self.stopped, self._kept_after, self._filename = stop
            closing = self._closing
            if closing:
                kept = self._at_close is None
                if kept:
                    self._at_close = error
            else:
                kept = self._next is None
                if kept:
                    self._next, self._next_is = error, kind
        if not kept:
            log.error("mxboard: a further error on the writer thread: %r", error)
        elif not closing:
            self._flag()

    # -- the caller's side -------------------------------------------------------------------
    def take(self) -> Tuple[Optional[BaseException], bool]:
        """At a call, the writer open: what the call raises (None: nothing), and whether the next
        call has something to raise too. Once the writer has stopped, every call raises so."""
        with self._lock:
            error, self._next = self._next, None
            self._next_is = ""
            if self.stopped is not None:
                self._next, self._next_is = stopped_face(self.stopped, self._filename), "repeat"
            return error, self._next is not None

    def begin_close(self) -> None:
        """close() has stopped the thread: an error from now on is close()'s own."""
        with self._lock:
            self._closing = True

    def end_close(self, closed_clean: bool) -> Tuple[Optional[BaseException], bool]:
        """close() has closed the files (`closed_clean`: without an error). Returns what close()
        gives the callers it found waiting for room, and whether close() raises it too.

        That is close()'s own error, else the error no call has raised yet. A store's give-up
        is dropped where the store took everything at close after all. close()'s own error
        tells the unraised one as its cause. close() does not raise a repeat of an error a call
        raised already, nor a deletion of the logdir (the user's own tear-down)."""
        with self._lock:
            unreported, kind = self._next, self._next_is
            self._next, self._next_is = None, ""
            fault, self._at_close = self._at_close, None
        if closed_clean and self._kept_after and kind in ("stop", "repeat"):
            unreported = None
        if fault is None:
            fault = unreported
        elif unreported is not None and kind != "repeat":
            _chain(fault, unreported)
        if fault is None or isinstance(fault, FileDeletedError):
            return fault, False
        return fault, not (fault is unreported and kind == "repeat")


def _chain(error: BaseException, cause: BaseException) -> None:
    """`cause` told as the cause of the last error in `error`'s chain of causes, unless the
    chain holds it already."""
    seen = {id(error)}
    while error.__cause__ is not None:
        error = error.__cause__
        if error is cause or id(error) in seen:
            return
        seen.add(id(error))
    if error is not cause:
        error.__cause__ = cause
