"""Arrays on a GPU captured at the call without waiting for the device: torch CUDA tensors,
CuPy and JAX arrays, and other arrays in device memory (read through torch or CuPy).

A capture queues a copy into pinned host memory on the array's current stream and records an
event after it; the writer thread waits on that event and reads. A histogram is counted where
the tensor lives, and only its counts and sums cross. Which class captures a value is decided
by _api/convert.py, which knows the value's kind: nothing here asks what an array is. A JAX
array is first copied on its device at the call, so that a step that donates it later cannot
take the value away (`JaxSnapshot`). The seam to CUDA is `Cuda`; `HOST` is the same seam for
tensors in host memory. docs/architecture.md, "Device arrays, from the call to the writer
thread", says why it works as it does.
"""
import collections
import importlib
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import NDArray

from .pending import Pending

__all__ = ["CUDA", "HOST", "Cuda", "CupySnapshot", "JaxSnapshot", "TorchHistogram", "TorchScalarSlots",
           "TorchSlot", "TorchSnapshot", "as_cupy", "as_torch", "numpy_dtype", "read_host"]


class Cuda:
    """The seam between a capture and CUDA, as torch speaks it: pinned host buffers, a copy
    queued on the current stream, and an event recorded there after it (`synchronize()` is the
    one wait, on the writer thread)."""

    def pinned(self, shape: Sequence[int], dtype: Any) -> Any:
        return sys.modules["torch"].empty(tuple(shape), dtype=dtype, pin_memory=True)

    def copy(self, target: Any, source: Any) -> None:
        """Queue `source` into `target` (pinned host memory), converting its dtype on the device."""
        target.copy_(source, non_blocking=True)

    def upload(self, array: NDArray[Any], device: Any) -> Any:
        """A small host array (bin edges) on `device`, queued from pinned memory (no wait)."""
        torch = sys.modules["torch"]
        return torch.from_numpy(np.ascontiguousarray(array)).pin_memory().to(device, non_blocking=True)

    def record(self, event: Optional[Any], device: Any) -> Any:
        """`event` (a new one if None) recorded on `device`'s current stream."""
        torch = sys.modules["torch"]
        if event is None:
            event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(device))
        return event


class _Done:
    """The event of a copy that is done already (host memory)."""

    def synchronize(self) -> None:
        pass


class _Host(Cuda):
    """The seam for tensors in host memory: plain buffers, copies done at once."""

    _DONE = _Done()

    def pinned(self, shape: Sequence[int], dtype: Any) -> Any:
        return sys.modules["torch"].empty(tuple(shape), dtype=dtype)

    def copy(self, target: Any, source: Any) -> None:
        target.copy_(source)

    def upload(self, array: NDArray[Any], device: Any) -> Any:
        return sys.modules["torch"].from_numpy(np.array(array)).to(device)

    def record(self, event: Optional[Any], device: Any) -> Any:
        return self._DONE


CUDA = Cuda()
HOST = _Host()


_NUMPY_DTYPES: Dict[Any, "np.dtype[Any]"] = {}


def numpy_dtype(dtype: Any) -> "np.dtype[Any]":
    """The numpy dtype a torch dtype is read as (bfloat16 and float8, which numpy lacks, as
    float32, as torch's writer reads them)."""
    known = _NUMPY_DTYPES.get(dtype)
    if known is None:
        try:
            known = sys.modules["torch"].empty(0, dtype=dtype).numpy().dtype
        except TypeError:
            known = np.dtype(np.float32)
        _NUMPY_DTYPES[dtype] = known
    return known


def read_host(host: Any) -> Any:
    """A host tensor as numpy (a dtype numpy lacks as float32)."""
    try:
        return host.numpy()
    except TypeError:
        return host.float().numpy()


class TorchSnapshot(Pending):
    """A torch tensor as it was at the call: copied in its current stream's order into a pinned
    host buffer of its shape and dtype (outside autograd), an event recorded after the copy.
    `result()` (the writer thread) waits on the event and returns numpy, checked by `check`.
    `cuda`: `CUDA` for a tensor on a GPU, `HOST` for one in host memory (copied at once)."""

    def __init__(self, tensor: Any, check: Optional[Callable[[Any], Any]] = None, *, cuda: Cuda) -> None:
        source = tensor.detach()
        self.shape = tuple(source.shape)
        self.dtype = numpy_dtype(source.dtype)
        self.ndim = len(self.shape)
        self.size = int(source.numel())
        self.nbytes = self.size * int(source.element_size())
        self._host = cuda.pinned(self.shape, source.dtype)
        cuda.copy(self._host, source)
        self._event = cuda.record(None, source.device)
        self._check = check

    def result(self) -> Any:
        self._event.synchronize()
        array = read_host(self._host)
        return array if self._check is None else self._check(array)


class CupySnapshot(Pending):
    """A CuPy array as it was at the call: CuPy's own stream-ordered copy into pinned host memory
    (`get(..., blocking=False)`), an event recorded after it on the current stream."""

    def __init__(self, array: Any, check: Optional[Callable[[Any], Any]] = None) -> None:
        cupy = sys.modules["cupy"]
        self.shape, self.dtype = tuple(array.shape), np.dtype(array.dtype)
        self.ndim, self.size, self.nbytes = len(self.shape), int(array.size), int(array.nbytes)
        stream = cupy.cuda.get_current_stream()
        self._host = importlib.import_module("cupyx").empty_pinned(self.shape, self.dtype)
        try:
            array.get(stream=stream, out=self._host, blocking=False)
        # CuPy < 13: a copy given a stream is asynchronous already.
        except TypeError:
            array.get(stream=stream, out=self._host)
        self._event = stream.record()
        self._check = check

    def result(self) -> Any:
        self._event.synchronize()
        return self._host if self._check is None else self._check(self._host)


# The jitted copy that JaxSnapshot queues, made at the first JAX capture (jax is never imported
# here before the user has).
_JAX_COPY: Optional[Callable[[Any], Any]] = None


def _jax_copy() -> Callable[[Any], Any]:
    """`jax.jit` of a copy: a new buffer (XLA never hands back an input it was not allowed to
    donate), dispatched by jit's C++ path (about 3 us, where `array.copy()` takes 15 to 50 us)."""
    global _JAX_COPY
    if _JAX_COPY is None:
        _JAX_COPY = sys.modules["jax"].jit(lambda array: array.copy())
    return _JAX_COPY


class JaxSnapshot(Pending):
    """A JAX array as it was at the call: a device-side copy of it dispatched at the call (no
    wait: XLA queues it, and a jitted step that donates the array, `donate_argnums`, runs after
    the copy, since a donated buffer is given up only once the work queued on it is done), then
    that copy's transfer to the host started (`copy_to_host_async`). The writer thread reads the
    copy, which no step can donate, waiting for that one array only. Keeping the array itself
    would not do: a donated array is deleted, and reading it raises. A dtype numpy lacks
    (bfloat16) is read as float32. `array.copy()` would do the same as the jitted copy, slower."""

    def __init__(self, array: Any, check: Optional[Callable[[Any], Any]] = None) -> None:
        dtype = np.dtype(array.dtype)
        self.shape, self.dtype = tuple(array.shape), dtype if dtype.kind in "biufc" else np.dtype(np.float32)
        self.ndim, self.size = len(self.shape), int(np.prod(self.shape, dtype=np.int64))
        self.nbytes = self.size * dtype.itemsize
        # A jitted program is one that every process it spans must run: an array with shards in
        # other processes (multi-host JAX) is copied through its shard here where that holds the
        # whole value (replicated), and kept as it is otherwise, which JAX cannot read here.
        if array.is_fully_addressable:
            array = _jax_copy()(array)
        elif array.is_fully_replicated:
            array = _jax_copy()(array.addressable_data(0))
        array.copy_to_host_async()
        self._array, self._check = array, check

    def result(self) -> Any:
        array = np.asarray(self._array)
        if array.dtype != self.dtype:
            array = array.astype(self.dtype)
        return array if self._check is None else self._check(array)


# -- arrays that torch or CuPy read for mxboard ------------------------------------------------
def as_torch(value: Any, dlpack: bool, name: str = "value") -> Any:
    """A device array as a torch tensor sharing its memory: by DLPack where `dlpack`, else by the
    CUDA array interface (torch's import orders its own stream after the array's: no host wait).
    A TypeError naming `name` where torch cannot read it."""
    torch = sys.modules["torch"]
    try:
        return torch.from_dlpack(value) if dlpack else torch.as_tensor(value, device="cuda")
    except Exception as exc:
        raise TypeError("%s: torch could not read the device array %s: %s"
                        % (name, type(value).__name__, exc)) from exc


def as_cupy(value: Any, dlpack: bool) -> Any:
    """A device array as a CuPy array sharing its memory (where torch is not loaded)."""
    cupy = sys.modules["cupy"]
    return cupy.from_dlpack(value) if dlpack else cupy.asarray(value)


# -- scalars: a ring of pinned slots ---------------------------------------------------------
class TorchSlot:
    """One float64 slot of a pinned ring, and the event of the copy into it."""

    __slots__ = ("ring", "index", "event")

    def __init__(self, ring: int, index: int) -> None:
        self.ring, self.index = ring, index
        self.event: Any = None


class TorchScalarSlots:
    """Where torch CUDA scalars are copied: one-element slots of pinned float64 rings of `size`,
    made once and reused, each with an event reused for every copy into it. A capture is one
    copy (converting the dtype on the device) and one event record: no allocation, no wait.
    The writer thread waits on each slot's event, reads it, and frees it; the rings are freed
    with the writer's slots at close."""

    def __init__(self, size: int = 1024, cuda: Optional[Cuda] = None) -> None:
        self._size = size
        self._cuda = cuda
        self._rings: List[Any] = []
        # Each ring's numpy view.
        self._views: List[Any] = []
        # Appends and pops are atomic.
        self._free: collections.deque[TorchSlot] = collections.deque()
        self._growing = threading.Lock()

    def hold(self, tensor: Any) -> TorchSlot:
        """A tensor of one element on a GPU as of now, in a free slot."""
        cuda = self._cuda or CUDA
        try:
            slot = self._free.popleft()
        except IndexError:
            slot = self._grow(cuda)
        source = tensor.detach().reshape(1)
        cuda.copy(self._rings[slot.ring][slot.index:slot.index + 1], source)
        slot.event = cuda.record(slot.event, source.device)
        return slot

    def _grow(self, cuda: Cuda) -> TorchSlot:
        torch = sys.modules["torch"]
        ring = cuda.pinned((self._size,), torch.float64)
        # Two threads growing at once: each ring its own number.
        with self._growing:
            number = len(self._rings)
            self._rings.append(ring)
            self._views.append(ring.numpy())
        slots = [TorchSlot(number, i) for i in range(self._size)]
        self._free.extend(slots[1:])
        return slots[0]

    def read(self, slots: Sequence[TorchSlot]) -> List[float]:
        """On the writer thread: the values of `slots`, in order, once their copies are done;
        the slots are then free again."""
        values = []
        for slot in slots:
            slot.event.synchronize()
            values.append(float(self._views[slot.ring][slot.index]))
        self._free.extend(slots)
        return values


# -- histograms counted on the device --------------------------------------------------------
# (device, dtype) -> the default edges there, rounded up.
_EDGES: Dict[Tuple[str, Any], Any] = {}


def _default_edges(cuda: Cuda, values: Any) -> Any:
    from ..summaries.histogram import default_edges, rounded_up

    key = (str(values.device), values.dtype)
    edges = _EDGES.get(key)
    if edges is None:
        edges = _EDGES[key] = cuda.upload(rounded_up(default_edges(), numpy_dtype(values.dtype)), values.device)
    return edges


class TorchHistogram(Pending):
    """A histogram of a torch tensor counted where it lives, queued at the call in stream order
    (outside autograd). bfloat16/float16 and small integers are counted as float32, wider ones
    as float64 (both exact). `bins`: 'default' (TensorBoard's buckets: each value's bucket
    found by a binary search of the edges rounded up to the values' dtype, the same test as
    the host path's `edges[i] <= v < edges[i+1]` in float64), an int (equal-width between
    min and max, settled against the edges as numpy settles them), or increasing edges (numpy's
    rule: the last bucket holds its right edge). NaN/Inf are not counted, and counted as
    dropped. Only one float64 vector crosses: the counts, then the finite min and max, the
    number of finite values, their sum and sum of squares. Any tensor, on any device: a CPU
    tensor runs the same code (`cuda=HOST`)."""

    def __init__(self, tensor: Any, bins: Union[str, int, Any], *, cuda: Cuda) -> None:
        torch = sys.modules["torch"]
        from ..summaries.histogram import default_edges

        data = tensor.detach().reshape(-1)
        self.size = self._size = int(data.numel())
        self.shape, self.ndim, self.dtype = (self._size,), 1, np.dtype(np.float64)
        self._bins = bins
        wide = data.dtype == torch.float64 or (not data.dtype.is_floating_point and data.element_size() > 2)
        values = data.to(torch.float64 if wide or not isinstance(bins, str) else torch.float32)
        finite = torch.isfinite(values)
        low = torch.where(finite, values, float("inf")).min()
        high = torch.where(finite, values, float("-inf")).max()
        if isinstance(bins, str):
            self._edges: Any = default_edges()
            size = len(self._edges) - 1
            index = torch.searchsorted(_default_edges(cuda, values), values, right=True) - 1
            valid = finite
        elif isinstance(bins, int):
            self._edges = size = bins
            index, valid = self._equal_width(torch, values, finite, low, high, bins)
        else:
            self._edges = np.asarray(bins, dtype=np.float64)
            size = len(self._edges) - 1
            edges = cuda.upload(self._edges, values.device)
            index = torch.searchsorted(edges, values, right=True) - 1
            # numpy's last bucket holds its right edge.
            index = torch.where(values == edges[-1], size - 1, index)
            valid = finite & (index >= 0) & (index < size)
        # The rest into a bucket past the end.
        index = torch.where(valid, index.clamp(0, size - 1), size)
        counts = torch.zeros(size + 1, dtype=torch.int64, device=values.device)
        counts.index_add_(0, index, torch.ones(1, dtype=torch.int64, device=values.device).expand(len(index)))
        kept = torch.where(finite, values, 0)
        facts = torch.stack([low.double(), high.double(), finite.sum().double(),
                             kept.sum(dtype=torch.float64), (kept * kept).sum(dtype=torch.float64)])
        packed = torch.cat([counts[:size].double(), facts])
        self.nbytes = int(packed.numel()) * 8
        self._host = cuda.pinned(packed.shape, torch.float64)
        cuda.copy(self._host, packed)
        self._event = cuda.record(None, packed.device)

    @staticmethod
    def _equal_width(torch: Any, values: Any, finite: Any, low: Any, high: Any, bins: int) -> Tuple[Any, Any]:
        """Bucket indices of `bins` equal-width buckets between `low` and `high`, as numpy finds
        them: estimated, then settled against `np.linspace(low, high, bins + 1)`'s edges."""
        span = torch.where(high > low, high - low, torch.ones_like(low))
        start = torch.where(high >= low, low, torch.zeros_like(low))
        estimate = ((values - start) / span * bins).nan_to_num(0.0, 0.0, 0.0).clamp(0, bins)
        index = estimate.floor().long().clamp(0, bins - 1)
        edges = torch.arange(bins + 1, dtype=torch.float64, device=values.device) * (span / bins) + start
        edges[bins] = torch.where(high > low, high, start + span)
        index = index - (values < edges[index]).long()
        index = index + ((values >= edges[(index + 1).clamp(max=bins)]) & (index < bins - 1)).long()
        return index, finite

    def result(self) -> Tuple[NDArray[np.float64], NDArray[np.int64], float, float, int, Tuple[float, float]]:
        """(edges, counts, low, high, dropped, (sum, sum of squares)), as numpy."""
        self._event.synchronize()
        packed = self._host.numpy()
        counts = packed[:-5].astype(np.int64)
        low, high, finite, total, squares = (float(v) for v in packed[-5:])
        if not finite:
            low = high = 0.0
        edges = self._edges
        if isinstance(edges, int):
            edges = np.linspace(low, high, edges + 1)
        return np.asarray(edges, np.float64), counts, low, high, self._size - int(finite), (total, squares)
