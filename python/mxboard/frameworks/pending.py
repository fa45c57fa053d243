"""What a call captures for the writer thread: the `Kind` of array it was given, decided once at
the call by _api/convert.py, and `Pending`, a value still on its way from a device (an MXNet
engine copy, a CUDA copy into pinned memory, a JAX transfer, a histogram being counted there).
The caller's thread never waits for a Pending; the writer thread's `resolve` does."""
import enum
from typing import Any

__all__ = ["Kind", "Pending", "resolve"]


class Kind(enum.IntEnum):
    """The kinds of input that mxboard reads differently. _api/convert.py's `kind_of` is the one
    place that tells them apart; everything after it is given the kind."""

    # A number, a numpy array or scalar, a list, or any other array in host memory.
    HOST = 0
    # An MXNet NDArray (on any context).
    MXNET = 1
    # A torch tensor in host memory.
    TORCH = 2
    # A torch tensor on a GPU.
    TORCH_CUDA = 3
    CUPY = 4
    JAX = 5
    # Another array in device memory that speaks DLPack.
    DLPACK = 6
    # Another array in device memory that offers the CUDA array interface only.
    CUDA_INTERFACE = 7
    # A Pending made at the call: a device scalar read on its own, not from a ring.
    CAPTURED = 8


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
