"""`UploadPolicy`: how a writer of an object store uploads, as one value (`SummaryWriter(...,
upload_policy=UploadPolicy(...))`), passed down to each of its event files."""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

__all__ = ["DEFAULT_POLICY", "UploadPolicy"]


@dataclass(frozen=True)
class UploadPolicy:
    """How a writer of an object store uploads its event files. The defaults suit a real store
    and a training loop; each is checked when the policy is made.

    Attributes:
        upload_secs: seconds between uploads of what was logged (sooner on flush(), close(), or a
            full object's worth): with TensorBoard's reload, a point is served within seconds.
        max_object: bytes an object grows to before the file's next object begins.
        max_unsent: bytes that wait in memory for the store; past them, the spool on disk.
        request_secs: one request at most, as a whole, beyond the time its bytes take.
        check_secs: the constructor's check of the store, all its requests together.
        retry_secs: the first wait after a failed upload, doubled at each failure (at most 60 s).
        give_up_secs: uploads failing for this long stop writing; the caller hears of it.
        flush_secs: flush() and close() wait at most this long for the store.
        first_part: the number of a file's second object (`.part0001`); any other only to see
            names past `.part9999` without 10,000 uploads.
    """

    upload_secs: float = 10
    max_object: int = 16 << 20
    max_unsent: int = 64 << 20
    request_secs: float = 30
    check_secs: float = 10
    retry_secs: float = 2
    give_up_secs: float = 180
    flush_secs: float = 30
    first_part: int = 1

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            whole = item.name in _WHOLE
            if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
                raise TypeError("UploadPolicy.%s must be %s; got %s"
                                % (item.name, "an int" if whole else "a number of seconds", type(value).__name__))
            if item.name in _MAY_BE_ZERO:
                if not (math.isfinite(value) and value >= 0):
                    raise ValueError("UploadPolicy.%s must be >= 0; got %r" % (item.name, value))
            elif not (math.isfinite(value) and value > 0):
                raise ValueError("UploadPolicy.%s must be > 0; got %r" % (item.name, value))


_WHOLE = ("max_object", "max_unsent", "first_part")
_MAY_BE_ZERO = ("upload_secs", "max_unsent", "retry_secs", "give_up_secs")


# A writer's policy when none is given, and the readers' bound on one request.
DEFAULT_POLICY = UploadPolicy()
