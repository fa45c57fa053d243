"""MXNet arrays captured at the call without waiting for MXNet's engine, and read on the writer
thread once the engine has computed them: `Snapshot` of an array, `MxnetScalarSlots` for scalars
(copied through MXNet's C API), and `MxnetHistogram`, counted on the device. mxnet is never
imported here: these are made only for values that _api/convert.py found to be NDArrays, so it
is loaded already (`sys.modules`)."""
import collections
import ctypes
import functools
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import NDArray

from .pending import Pending

__all__ = ["MxnetHistogram", "MxnetScalarSlots", "Snapshot"]


class Snapshot(Pending):
    """An MXNet NDArray as it was at the call, without waiting for MXNet's engine: an
    engine-side copy, ordered after the writes pending on the array and before any later one
    (in-place updates included), taken outside autograd recording. `result()` (on the writer
    thread) waits for it and returns numpy. Has the array's shape, dtype, ndim and size."""

    __slots__ = ("_copy", "_check", "shape", "dtype", "ndim", "size", "nbytes")

    def __init__(self, array: Any, check: Optional[Callable[[Any], Any]] = None) -> None:
        mx = sys.modules["mxnet"]
        self.shape = shape = array.shape
        self.dtype = dtype = np.dtype(array.dtype)
        if shape:
            self._copy = _copy(mx, array, mx.cpu())
        # MXNet copies a 0-d array only with NumPy's shape semantics on (else () is "unknown").
        else:
            with mx.util.np_shape(True):
                self._copy = _copy(mx, array, mx.cpu())
        self._check = check
        self.ndim = len(shape)
        self.size = int(np.prod(shape))
        self.nbytes = self.size * dtype.itemsize

    def result(self) -> Any:
        # Waits for the copy, and reads it.
        array = self._copy.asnumpy()
        return array if self._check is None else self._check(array)


# MXNet's module and its arrays are Any here: mxnet ships no types, and is never imported
def _copy(mx: Any, array: Any, target: Any) -> Any:
    """`array` copied to `target` (a context or an NDArray), queued on the engine after the
    writes pending on it (no waiting), outside autograd recording (a copy must not join the
    graph; pausing costs a call into MXNet, so only while recording)."""
    if mx.autograd.is_recording():
        with mx.autograd.pause():
            return array.copyto(target)
    return array.copyto(target)


@functools.lru_cache(maxsize=1)
def _copyto_call() -> Optional[Tuple[Any, Any, Any]]:
    """MXNet 1.x's C entry point for running an operator, with the handle of `_copyto` (the
    operator `NDArray.copyto` runs), or None where MXNet's C API differs."""
    try:
        from mxnet.base import _LIB, OpHandle, c_str, check_call
        op = OpHandle()
        check_call(_LIB.NNGetOpHandle(c_str("_copyto"), ctypes.byref(op)))
        return _LIB.MXImperativeInvokeEx, ctypes.c_void_p(op.value), check_call
    except (ImportError, AttributeError):
        return None


class _IntoView:
    """Copies into one fixed NDArray: `_copyto` called straight through MXNet's C API, one
    engine push, without `copyto`'s Python wrapper (which builds ctypes arrays and checks argument
    types at every call: docs/performance.md, "Where the time went")."""

    def __init__(self, target: Any) -> None:
        self._target = target
        self._outputs: Any = None
        if _copyto_call():
            from mxnet.base import NDArrayHandle
            self._outputs = ctypes.cast((NDArrayHandle * 1)(target.handle), ctypes.POINTER(NDArrayHandle))

    def __call__(self, mx: Any, array: Any) -> None:
        """Queue the copy of `array` into the target (no waiting), outside autograd recording."""
        call = _copyto_call()
        if self._outputs is None or call is None or mx.autograd.is_recording():
            _copy(mx, array, self._target)
            return
        invoke, op, check_call = call
        check_call(invoke(op, 1, ctypes.byref(array.handle), ctypes.byref(ctypes.c_int(1)),
                          ctypes.byref(self._outputs), 0, None, None,
                          ctypes.byref(ctypes.POINTER(ctypes.c_int)())))


class MxnetScalarSlots:
    """Where NDArray scalars of shape (1,) (what `loss.mean()` gives) are copied: one-element
    views into float64 host NDArrays (rings of `size`), made once and reused. A capture is a
    single engine copy into a free view (no new array, no waiting); the writer thread reads a
    whole ring with one `asnumpy` and frees the views it read."""

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._rings: list[Any] = []
        self._growing = threading.Lock()
        # (ring, slot, copy into the slot): appends and pops are atomic
        self._free: collections.deque[Any] = collections.deque()

    def hold(self, array: Any) -> Tuple[int, int, _IntoView]:
        """An NDArray of shape (1,) as of now, without waiting for the engine: a `(ring, slot,
        copier)` that the writer thread reads in a batch."""
        try:
            slot = self._free.popleft()
        except IndexError:
            slot = self._grow()
        slot[2](sys.modules["mxnet"], array)
        return slot  # type: ignore[no-any-return]

    def _grow(self) -> Tuple[int, int, _IntoView]:
        mx = sys.modules["mxnet"]
        ring = mx.nd.zeros((self._size,), ctx=mx.cpu(), dtype=np.float64)
        # Two threads growing at once: each ring its own number.
        with self._growing:
            number = len(self._rings)
            self._rings.append(ring)
        slots = [(number, i, _IntoView(ring[i:i + 1])) for i in range(self._size)]
        self._free.extend(slots[1:])
        return slots[0]

    def read(self, slots: Sequence[Tuple[int, int, _IntoView]]) -> List[float]:
        """On the writer thread: the float values of `slots`, in order, once MXNet has them; the
        slots are then free again."""
        rings: Dict[int, NDArray[Any]] = {}
        values: List[float] = []
        for number, index, _ in slots:
            if number not in rings:
                # Waits for the copies into it.
                rings[number] = self._rings[number].asnumpy()
            values.append(float(rings[number][index]))
        self._free.extend(slots)
        return values


class MxnetHistogram(Pending):
    """A histogram of an MXNet NDArray computed by MXNet's operators where the array lives (used
    for GPU arrays: a CPU array is binned faster on the host),
    queued at the call (after the array's pending writes, outside autograd): only the counts,
    the finite min and max and the number of NaN/Inf values cross to the host, when the writer
    thread calls `result()`. `bins`: 'default' (TensorBoard's buckets), an int (equal-width
    between min and max), or increasing edges (numpy).

    Default and int bins are counted as a uniform histogram of each value's bucket index (from a
    logarithm, or linearly, settled exactly against the edges): MXNet's histogram with explicit
    edges binary-searches them one value at a time, far slower on the engine."""

    def __init__(self, array: Any, bins: Union[str, int, Any]) -> None:
        from ..summaries.histogram import default_edges, default_layout

        mx = sys.modules["mxnet"]
        nd = mx.nd
        self._edges: Union[int, NDArray[Any]]
        with mx.autograd.pause():
            data = array.reshape(-1)
            # float16 would overflow the edges.
            if data.dtype not in (np.float32, np.float64):
                data = data.astype(np.float32)
            finite = nd.contrib.isfinite(data)
            inf = nd.full(data.shape, np.inf, ctx=data.context, dtype=data.dtype)
            # Beyond every edge.
            clean = nd.where(finite, data, inf)
            low = nd.min(clean)
            high = nd.max(nd.where(finite, data, -inf))
            # TensorBoard's default buckets.
            if isinstance(bins, str):
                self._edges = default_edges()
                # from a logarithm, settled against the edges (see histogram.default_layout)
                log_first, per_step, positive, middle = default_layout()
                steps = nd.clip(nd.floor((nd.log(nd.abs(clean)) - log_first) * per_step), -1, positive - 1)
                index = (middle + 1 + steps) - (clean < 0) * (3 + 2 * steps)
                edges = self._device(nd, self._edges, data)
                index = self._settle(nd, nd.clip(index, 0, len(self._edges) - 2), clean, edges)
            # Equal-width between min and max, as numpy.
            elif isinstance(bins, int):
                self._edges = bins
                span = nd.maximum(high - low, nd.full((1,), 1e-30, ctx=data.context, dtype=data.dtype))
                index = nd.floor(nd.broadcast_div(nd.broadcast_sub(clean, low), span) * bins)
                # The max goes in the last bin, as numpy.
                index = nd.clip(index, 0, bins - 1)
            # Explicit edges: few, searched.
            else:
                self._edges = np.asarray(bins, dtype=np.float64)
                edges = self._device(nd, self._edges, data)
                counts, _ = nd.histogram(clean, bins=edges)
                self._parts = (counts, low, high, nd.sum(finite))
                index = None
            if index is not None:
                index = nd.where(finite, index, nd.full(data.shape, -1, ctx=data.context, dtype=data.dtype))
                size = self._edges if isinstance(self._edges, int) else len(self._edges) - 1
                counts, _ = nd.histogram(index, bins=size, range=(0, size))
                self._parts = (counts, low, high, nd.sum(finite))
        self._size = int(np.prod(array.shape))

    def _device(self, nd: Any, edges: NDArray[Any], data: Any) -> Any:
        """`edges` (float64) as an NDArray beside `data`, in its dtype, rounded up
        (`histogram.rounded_up`). Without waiting for the engine (zero-copy: nd.array() would
        wait for pending work)."""
        from ..summaries.histogram import rounded_up

        self._kept = rounded_up(edges, data.dtype)
        device = nd.from_numpy(self._kept, zero_copy=True)
        return device if device.context == data.context else device.copyto(data.context)

    @staticmethod
    def _settle(nd: Any, index: Any, values: Any, edges: Any) -> Any:
        """Bucket indices within one of the right one made exact: edges[i] <= v < edges[i+1]."""
        index = index - (values < nd.take(edges, index))
        index = index + (values >= nd.take(edges, index + 1))
        return nd.clip(index, 0, edges.shape[0] - 2)

    def result(self) -> Tuple[NDArray[np.float64], NDArray[Any], float, float, int, None]:
        """(edges, counts, low, high, dropped, None: no sums), as numpy."""
        counts, low, high, finite = (part.asnumpy() for part in self._parts)
        low, high = float(low.reshape(-1)[0]), float(high.reshape(-1)[0])
        edges = self._edges
        if isinstance(edges, int):
            edges = np.linspace(low, high, edges + 1)
        return np.asarray(edges, np.float64), counts, low, high, self._size - int(finite.reshape(-1)[0]), None

