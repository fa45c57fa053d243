"""A value captured at the call and read on the writer thread: an array still on its way from a
device (an MXNet engine copy, a CUDA copy into pinned memory, a JAX transfer) or a histogram
still being counted there. The caller's thread never waits for one; the writer thread's
`resolve` does."""
from typing import Any

__all__ = ["Pending", "resolve"]


class Pending:
    """What the writer thread resolves: `result()` waits for the device and returns numpy (for an
    array: its values, checked; for a histogram: `(edges, counts, low, high, dropped, sums)`).
    An array's shape, dtype (numpy's, as the values will be read), ndim, size and nbytes are
    known at the call, for the checks that need no values and for the queue's byte bound."""

    __slots__ = ()
    shape: Any
    dtype: Any
    ndim: int
    size: int
    nbytes: int

    def result(self) -> Any:
        raise NotImplementedError


def resolve(value: Any) -> Any:
    """What the writer thread builds from: a Pending's result, or the value itself."""
    return value.result() if isinstance(value, Pending) else value
