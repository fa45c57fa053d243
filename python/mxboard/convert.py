"""Inputs to numbers and numpy arrays: the one place that knows array types.

numpy, Python numbers and lists, MXNet NDArray, torch tensors, and anything with `__array__` or
`__dlpack__`. MXNet and torch are never imported here: a value can only be one of their arrays if
its module is already loaded, so `sys.modules` is asked instead.
"""
import numbers
import sys

import numpy as np

__all__ = ["Snapshot", "DeviceHistogram", "capture", "resolve", "to_numpy", "to_float", "to_int",
           "check_tag"]


def _mxnet_ndarray(value):
    mx = sys.modules.get("mxnet")
    return mx is not None and isinstance(value, mx.nd.NDArray)


def _torch_tensor(value):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def to_numpy(value, name="value"):
    """`value` as a numpy array (a view where the input already is one, else a new array)."""
    if isinstance(value, np.ndarray):
        return value
    if _mxnet_ndarray(value):
        return value.asnumpy()
    if _torch_tensor(value):
        return value.detach().cpu().numpy()
    if isinstance(value, (numbers.Number, np.generic, list, tuple)) or hasattr(value, "__array__"):
        try:
            return np.asarray(value)
        except (TypeError, ValueError) as exc:
            raise TypeError("%s: could not make an array of %s: %s" % (name, _describe(value), exc)) from None
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    raise TypeError("%s must be a number or an array (numpy, MXNet NDArray, list, or anything "
                    "with __array__ or __dlpack__); got %s" % (name, _describe(value)))


class Snapshot:
    """An MXNet NDArray as it was at the call, without waiting for MXNet's engine: an
    engine-side copy, ordered after the writes pending on the array and before any later one
    (in-place updates included), taken outside autograd recording. `result()` (on the writer
    thread) waits for it and returns numpy. Has the array's shape, dtype, ndim and size."""

    __slots__ = ("_copy", "shape", "dtype", "ndim", "size")

    def __init__(self, array):
        mx = sys.modules["mxnet"]
        with mx.autograd.pause():
            self._copy = array.copyto(mx.cpu())  # asynchronous: queued on the engine
        self.shape = tuple(array.shape)
        self.dtype = np.dtype(array.dtype)
        self.ndim = len(self.shape)
        self.size = int(np.prod(self.shape))

    def result(self):
        return self._copy.asnumpy()


class DeviceHistogram:
    """A histogram of an MXNet NDArray computed by MXNet's operators where the array lives,
    queued at the call (after the array's pending writes, outside autograd): only the counts,
    the finite min and max and the number of NaN/Inf values cross to the host, when the writer
    thread calls `result()`. `edges`: increasing bin edges (numpy), or an int for that many
    equal-width bins between min and max."""

    def __init__(self, array, edges):
        mx = sys.modules["mxnet"]
        nd = mx.nd
        with mx.autograd.pause():
            data = array.reshape(-1)
            if data.dtype not in (np.float32, np.float64):  # float16 would overflow the edges
                data = data.astype(np.float32)
            finite = nd.contrib.isfinite(data)
            inf = nd.full(data.shape, np.inf, ctx=data.context, dtype=data.dtype)
            low = nd.min(nd.where(finite, data, inf))
            high = nd.max(nd.where(finite, data, -inf))
            clean = nd.where(finite, data, inf)  # beyond every edge: not counted
            if isinstance(edges, int):
                span = nd.maximum(high - low, nd.full((1,), 1e-12, ctx=data.context, dtype=data.dtype))
                steps = nd.arange(edges, ctx=data.context, dtype=data.dtype) / edges
                # the last edge is the max itself: low + span * 1 may round below it
                bins = nd.concat(nd.broadcast_add(low, nd.broadcast_mul(span, steps)), high, dim=0)
            else:
                # zero-copy: nd.array() would wait for the engine to finish the pending work
                self._edges = np.ascontiguousarray(edges, dtype=data.dtype)
                bins = nd.from_numpy(self._edges, zero_copy=True)
                if bins.context != data.context:
                    bins = bins.copyto(data.context)
            counts, _ = nd.histogram(clean, bins=bins)
            self._parts = (counts, bins, low, high, nd.sum(finite))
        self._size = int(np.prod(array.shape))

    def result(self):
        """(edges, counts, low, high, dropped), as numpy."""
        counts, bins, low, high, finite = (part.asnumpy() for part in self._parts)
        return bins.astype(np.float64), counts, float(low[0]), float(high[0]), self._size - int(finite[0])


def resolve(value):
    """What the writer thread builds from: a Snapshot's or DeviceHistogram's result, or the
    value itself."""
    return value.result() if isinstance(value, (Snapshot, DeviceHistogram)) else value


def capture(value, name="value", numeric=True, defer=True):
    """`value` as data the caller can no longer change: an MXNet NDArray as a `Snapshot` (with
    `defer`: no waiting for the engine), anything else as a numpy array, copied wherever the
    conversion shared memory with the input. With `numeric`, the dtype must be a real number or
    bool, and the array non-empty."""
    if defer and _mxnet_ndarray(value):
        array = Snapshot(value)
    else:
        array = to_numpy(value, name)
        if array is value or array.base is not None or not array.flags.owndata:
            array = np.array(array, copy=True)
    if numeric:
        if not (array.dtype.kind in "biuf"):
            raise TypeError("%s must hold real numbers; got dtype %s" % (name, array.dtype))
        if array.size == 0:
            raise ValueError("%s is empty (shape %s)" % (name, array.shape))
    return array


def to_float(value, name="value"):
    """A scalar as a Python float: a number, a numpy scalar, or any array of exactly one element."""
    if isinstance(value, (float, int)) and not isinstance(value, bool):
        return _float(value, name)
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError("%s must be a number or a one-element array; got %s" % (name, _describe(value)))
    array = to_numpy(value, name)  # an NDArray waits for the engine here: see writer.add_scalar
    if array.size != 1:
        raise ValueError("%s must be a single number; got an array of shape %s" % (name, array.shape))
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_) or np.iscomplexobj(array):
        raise TypeError("%s must be a real number; got dtype %s" % (name, array.dtype))
    return _float(array.reshape(()).item(), name)


def _float(value, name):
    try:
        return float(value)
    except OverflowError:
        raise ValueError("%s is too large for a float: %r" % (name, value)) from None


def to_int(value, name="global_step"):
    """A step: an int, a numpy integer or a one-element integer array (int64 range)."""
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
            array = None
            if not isinstance(value, (str, bytes, float)) and value is not None:
                try:
                    array = to_numpy(value, name)
                except TypeError:
                    pass
            if array is None or array.size != 1 or not np.issubdtype(array.dtype, np.integer):
                raise TypeError("%s must be an int; got %s" % (name, _describe(value)))
            value = array.reshape(()).item()
        value = int(value)
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError("%s must fit in int64; got %d" % (name, value))
    return value


def check_tag(tag, name="tag"):
    """A tag is a non-empty str; returned as given (its text is kept in the event)."""
    if not isinstance(tag, str):
        raise TypeError("%s must be a str; got %s" % (name, _describe(tag)))
    if not tag:
        raise ValueError("%s must not be empty" % name)
    try:
        tag.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("%s must be valid Unicode text (protobuf strings are UTF-8); %r has %s"
                         % (name, tag, exc.reason)) from None
    return tag


def _describe(value):
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return "%s %s" % (type(value).__name__, text)
