"""The uploader thread of one event file in a store, as a small state machine, and what it
measures of the link (`Link`).

    WAITING --due--> PUTTING --stored--> WAITING
                        |
                        +--failed--> WAITING (a backoff: retry_secs, doubled at each failure)
                        +--failed for give_up_secs, or while the file closes--> STOPPED (the error held)
    WAITING --the file closes, nothing left--> STOPPED

A put is due when something waits and `upload_secs` passed since the last upload, or at once
when the writer needs room, an object's worth waits, or a flush or close() asks (a flush even
cuts a backoff short). Only WAITING holds the file's lock; a put runs outside it, so the writer
thread never waits on the store. The file's side of the exchange is `Uploads`.
"""
from __future__ import annotations

import enum
import errno
import logging
import time
from typing import Any, Callable, Optional, Protocol, Tuple

from ..._format.sizes import readable
from ...signal_mask import keep_signals_off_this_thread
from .policy import UploadPolicy

__all__ = ["ASSUMED_RATE", "Link", "MIN_PUT", "State", "Uploader", "Uploads"]

log = logging.getLogger("mxboard")

# A put carries about this many seconds of the link's measured throughput...
PUT_SECS = 10
# ...but never fewer bytes than this (a slow link's objects: smaller, never tiny).
MIN_PUT = 256 << 10
# Bytes a second a link is taken to carry before a put measured it.
ASSUMED_RATE = 256 << 10
# The slowest link a put waits for (a MIN_PUT put's bound: request_secs + 32 s).
FLOOR_RATE = 16 << 10
# A put of at least this many bytes measures the link.
MEASURED_FROM = 64 << 10
MAX_BACKOFF_SECS = 60


class Link:
    """What the puts measured of the way to the store: its throughput (bytes a second), which sets
    how much one put carries (`cap`: about PUT_SECS of it, within [MIN_PUT, max_object]; MIN_PUT
    until a put of MEASURED_FROM bytes or more measured it) and how long one may take (`bound`:
    request_secs beyond twice its bytes' time at that rate, ASSUMED_RATE before it is known). A
    put whose bytes are moving is slow, not dead: a slow link gets smaller objects, each within
    its bound. A put that timed out says the link carries at most half of what it got: the same
    bytes are put again with twice the time, and so on until they are stored or the rate is at
    FLOOR_RATE (the link then counts as down, and the give-up clock runs). Read and written by the
    uploader thread only."""

    def __init__(self, policy: UploadPolicy) -> None:
        self._policy = policy
        self.rate: Optional[float] = None

    def cap(self) -> int:
        largest = self._policy.max_object
        if self.rate is None:
            return min(largest, MIN_PUT)
        return int(min(largest, max(MIN_PUT, self.rate * PUT_SECS)))

    def bound(self, size: int) -> float:
        rate = ASSUMED_RATE if self.rate is None else self.rate
        return self._policy.request_secs + 2 * size / max(rate, FLOOR_RATE)

    def took(self, size: int, seconds: float) -> None:
        if size >= MEASURED_FROM:
            self.rate = size / max(seconds, 1e-3)

    def timed_out(self, size: int, seconds: float) -> None:
        rate = ASSUMED_RATE if self.rate is None else self.rate
        self.rate = max(FLOOR_RATE, min(rate, size / max(seconds, 1e-3)) / 2)


class Uploads(Protocol):
    """The event file's side of its uploader: each method and attribute under `lock` but `put`."""

    path: Optional[str]
    # A threading.Condition.
    lock: Any
    # close() stops the uploader once nothing is left.
    closing: bool
    # Forced uploads asked for so far.
    flushes: int

    def pending(self) -> int:
        """Bytes not yet stored."""

    def urgent(self, cap: int) -> bool:
        """Whether a put is due now, whatever upload_secs says (room, a full put, a flush)."""

    def next_body(self, cap: int) -> Tuple[int, bytes, int]:
        """(part, body, position after it) of the next put, within `cap` bytes of new records."""

    def put(self, part: int, body: bytes, seconds: float) -> None:
        """Put `body` as `part`, within `seconds` (outside the lock)."""

    def stored(self, part: int, body: bytes, upto: int) -> None:
        """The store acknowledged the put."""

    def gave_up(self, error: OSError) -> None:
        """Uploads stopped: `error` is the caller's."""

    def waiting_bytes(self) -> int:
        """Bytes that wait for a put."""


class State(enum.Enum):
    WAITING = "waiting"
    PUTTING = "putting"
    STOPPED = "stopped"


class Uploader:
    """The uploader of `file`, run by its thread (`run`): see the module's docstring."""

    def __init__(self, file: Uploads, policy: UploadPolicy) -> None:
        self._file = file
        self._policy = policy
        self.link = Link(policy)
        self.state = State.WAITING
        self._failures = 0
        self._failing_since: Optional[float] = None
        # The backoff's end.
        self._next_try = 0.0
        self._last_upload = float("-inf")
        # The file's flushes seen so far.
        self._flushes = 0
        self._body: Tuple[int, bytes, int] = (0, b"", 0)

    def run(self) -> None:
        """The thread. It cannot die of an error: anything unexpected (a spool that can no longer
        be read) stops uploads as a give-up does, with one error in the log; what waits is kept, the writer's next
        call raises it, and a flush or close() tries again."""
        keep_signals_off_this_thread()
        steps: dict[State, Callable[[], State]] = {State.WAITING: self._wait, State.PUTTING: self._put}
        try:
            while self.state is not State.STOPPED:
                self.state = steps[self.state]()
        # Held for the caller, never a dead thread's traceback.
        except BaseException as exc:  # noqa: BLE001
            self.state = State.STOPPED
            error = OSError(errno.EIO, "%s: uploads stopped: %s: %s" % (self._file.path, type(exc).__name__, exc))
            error.__cause__ = exc
            with self._file.lock:
                self._file.gave_up(error)
            log.error("mxboard: %s: uploads stopped (%s: %s); what waits is kept, and the next call raises it",
                      self._file.path, type(exc).__name__, exc)

    def _wait(self) -> State:
        """WAITING: until a put is due (then take its body) or the file closes with nothing left."""
        file = self._file
        with file.lock:
            while True:
                if not file.pending():
                    if file.closing:
                        return State.STOPPED
                    file.lock.wait()
                    continue
                if file.flushes != self._flushes:
                    # A flush, or close(): one more try now, whatever the backoff.
                    when = 0.0
                elif file.urgent(self.link.cap()):
                    when = self._next_try
                else:
                    when = max(self._next_try, self._last_upload + self._policy.upload_secs)
                now = time.monotonic()
                if now >= when:
                    break
                file.lock.wait(when - now)
            self._flushes = file.flushes
            self._body = file.next_body(self.link.cap())
        return State.PUTTING

    def _put(self) -> State:
        """PUTTING: one put, outside the lock; then WAITING, or STOPPED where the uploads give up."""
        part, body, upto = self._body
        started = time.monotonic()
        try:
            self._file.put(part, body, self.link.bound(len(body)))
        # Any failure of the store is retried.
        except Exception as exc:  # noqa: BLE001
            return self._failed(exc, len(body), started)
        self.link.took(len(body), time.monotonic() - started)
        with self._file.lock:
            if self._failures:
                log.warning("mxboard: the store took %s again, after %d failed tries in %.0f s",
                            self._file.path, self._failures, time.monotonic() - (self._failing_since or 0.0))
            self._failures, self._failing_since, self._last_upload = 0, None, time.monotonic()
            self._file.stored(part, body, upto)
        return State.WAITING

    def _failed(self, exc: Exception, size: int, started: float) -> State:
        self._failures += 1
        now = time.monotonic()
        if isinstance(exc, TimeoutError):
            self.link.timed_out(size, now - started)
        self._failing_since = self._failing_since or now
        with self._file.lock:
            kept = self._file.waiting_bytes() + size
            if now - self._failing_since >= self._policy.give_up_secs or self._file.closing:
                error = OSError(errno.EIO, "%s: the store did not take %d bytes after %d tries in %d s: %s: %s"
                                % (self._file.path, kept, self._failures, now - self._failing_since,
                                   type(exc).__name__, exc))
                error.__cause__ = exc
                self._file.gave_up(error)
                return State.STOPPED
            self._next_try = now + min(MAX_BACKOFF_SECS, self._policy.retry_secs * 2 ** (self._failures - 1))
        # one warning for each outage (at its first failure) and one at its end; each try in the debug log
        (log.warning if self._failures == 1 else log.debug)(
            "mxboard: upload to %s failed (%s: %s); %s kept, retried (with backoff) for up to %d s",
            self._file.path, type(exc).__name__, exc, readable(kept), self._policy.give_up_secs)
        return State.WAITING
