"""Inputs to numbers and arrays, and the one place that asks what kind of array a value is.

`kind_of` decides it once a call (numpy, a Python number or list, an MXNet NDArray, a torch CPU
or CUDA tensor, CuPy, JAX, any other array that speaks DLPack or the CUDA array interface), and
everything after it is given the kind: the capture (device_capture.py, mxnet_capture.py), the
device scalars' rings (scalar_slots.py) and the writer thread never ask again. No framework is
imported here: a value can only be one of their arrays if its module is loaded already, so
`sys.modules` is asked instead. docs/architecture.md, "Device arrays, from the call to the
writer thread", draws the path.
"""
import math
import numbers
import sys
from collections.abc import Mapping
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple, Union

import numpy as np

from ..frameworks import device_capture
from ..frameworks.mxnet_capture import MxnetHistogram, Snapshot
from ..frameworks.pending import Kind, Pending

__all__ = ["Deferred", "Kind", "Named", "capture", "describe", "histogram_input", "is_cuda_tensor", "is_ndarray",
           "kind_of", "named", "numbers_of", "one_scalar", "positive", "scalar_alone", "scalar_value", "to_float",
           "to_int", "to_numpy"]

_HOST_TYPES = (np.ndarray, np.generic, int, float, complex, bool, list, tuple, str, bytes, type(None))
# DLPack device types numpy reads: kDLCPU, kDLCUDAHost (pinned host memory).
_HOST_DLPACK = (1, 3)
_ON_DEVICE = frozenset((Kind.TORCH_CUDA, Kind.CUPY, Kind.JAX, Kind.DLPACK, Kind.CUDA_INTERFACE))


class Deferred(NamedTuple):
    """A scalar call's device value of one element, its shape and dtype checked at the call
    (`one_scalar`) and read by the writer thread once its device computed it: an MXNet NDArray of
    shape (1,) or a torch CUDA tensor (`kind` names the ring it is copied into), or else the
    Pending captured at the call (`Kind.CAPTURED`)."""

    array: Any
    shape: Tuple[int, ...]
    kind: Kind


class Named(NamedTuple):
    """A scalar call's named values, each checked (`one_scalar`): `{name: value}`, each name a
    line of its own in one chart. `runs` names their sub-runs: "tensorboardx" (mxboard's own and
    tensorboardX's, `<tag>/<name>`) or "torch" (`<tag with / as _>_<name>`)."""

    values: Dict[Any, Union[float, Deferred]]
    runs: str = "tensorboardx"


# -- what a value is: asked here, and nowhere else -------------------------------------------
def is_cuda_tensor(tensor: Any) -> bool:
    """Whether a torch tensor is on a GPU (a seam: the device tests take CPU tensors for CUDA ones)."""
    return bool(tensor.is_cuda)


def kind_of(value: Any) -> Kind:
    """What `value` is, for every path that reads it: the one decision."""
    if isinstance(value, _HOST_TYPES):
        return Kind.HOST
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return Kind.TORCH_CUDA if is_cuda_tensor(value) else Kind.TORCH
    mx = sys.modules.get("mxnet")
    if mx is not None and isinstance(value, mx.nd.NDArray):
        return Kind.MXNET
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(value, cupy.ndarray):
        return Kind.CUPY
    if hasattr(value, "copy_to_host_async") and type(value).__module__.startswith(("jax", "jaxlib")):
        return Kind.JAX
    if hasattr(value, "__cuda_array_interface__"):
        return Kind.DLPACK if hasattr(value, "__dlpack__") else Kind.CUDA_INTERFACE
    device = getattr(value, "__dlpack_device__", None)
    if device is not None:
        try:
            if int(device()[0]) not in _HOST_DLPACK:
                return Kind.DLPACK
        # No usable DLPack device: read it as a host array.
        except Exception:  # noqa: BLE001
            pass
    return Kind.HOST


def is_ndarray(value: Any) -> bool:
    """Whether `value` is an MXNet NDArray (never importing mxnet to find out)."""
    return kind_of(value) is Kind.MXNET


def _counted_there(value: Any, kind: Kind) -> bool:
    """Whether a histogram of `value` is counted where it lives: an NDArray on a GPU (on the CPU
    the host bins faster than MXNet's operators, which would also share the engine's threads
    with training), or a device array torch can count (torch loaded with CUDA; not JAX's)."""
    if kind is Kind.MXNET:
        return bool(value.context.device_type != "cpu")
    if kind is Kind.TORCH_CUDA:
        return True
    torch = sys.modules.get("torch")
    return kind in _ON_DEVICE and kind is not Kind.JAX and torch is not None and bool(torch.cuda.is_available())


def _readable(value: Any, kind: Kind, name: str) -> Tuple[Any, Kind]:
    """A device array of no framework mxboard reads directly (`Kind.DLPACK`, `CUDA_INTERFACE`),
    as torch's tensor sharing its memory, or CuPy's where torch is not loaded, with its kind."""
    dlpack = hasattr(value, "__dlpack__")
    if sys.modules.get("torch") is not None:
        tensor = device_capture.as_torch(value, dlpack, name)
        return tensor, kind_of(tensor)
    if sys.modules.get("cupy") is not None:
        return device_capture.as_cupy(value, dlpack), Kind.CUPY
    raise TypeError("%s: %s is an array in device memory, which numpy cannot read: import torch or "
                    "cupy first (mxboard reads device arrays through them), or pass a host copy"
                    % (name, type(value).__name__))


# -- captures, by kind -------------------------------------------------------------------------
def _snapshot(value: Any, kind: Kind, check: Optional[Callable[[Any], Any]], name: str) -> Pending:
    """A device array of `kind` as of now, read on the writer thread: no engine wait, no device sync."""
    if kind is Kind.MXNET:
        return Snapshot(value, check)
    if kind is Kind.TORCH_CUDA or kind is Kind.TORCH:
        return device_capture.TorchSnapshot(value, check, cuda=_seam(kind))
    if kind is Kind.CUPY:
        return device_capture.CupySnapshot(value, check)
    if kind is Kind.JAX:
        return device_capture.JaxSnapshot(value, check)
    # A tensor torch placed elsewhere than CUDA: copied at once.
    converted, kind = _readable(value, kind, name)
    return _snapshot(converted, kind, check, name)


def _seam(kind: Kind) -> device_capture.Cuda:
    return device_capture.CUDA if kind is Kind.TORCH_CUDA else device_capture.HOST


def histogram_input(values: Any, bins: Any) -> Any:
    """What `add_histogram` queues for `values`, decided by their kind: counted where they live
    (an NDArray on a GPU: MxnetHistogram; a torch CUDA tensor, or a CuPy or DLPack array torch
    can read: TorchHistogram), else captured (`capture`) for the writer thread to bin. A numpy
    rule name as `bins` needs the values themselves: captured."""
    kind = kind_of(values)
    if kind is Kind.HOST or (isinstance(bins, str) and bins != "default") or not _counted_there(values, kind):
        return capture(values, "values", kind=kind)
    numbers_of(values, "values", kind)
    if kind is Kind.MXNET:
        return MxnetHistogram(values, bins)
    if kind is not Kind.TORCH_CUDA:
        values, kind = _readable(values, kind, "values")
    return device_capture.TorchHistogram(values, bins, cuda=_seam(kind))


def to_numpy(value: Any, name: str = "value", kind: Optional[Kind] = None) -> Any:
    """`value` as a numpy array (a view where the input already is one, else a new array). A
    device array is read now: the caller waits for its device (`capture` does not)."""
    if isinstance(value, np.ndarray):
        return value
    kind = kind_of(value) if kind is None else kind
    if kind is Kind.MXNET:
        return value.asnumpy()
    if kind is Kind.TORCH or kind is Kind.TORCH_CUDA:
        return device_capture.read_host(value.detach().cpu())
    if kind in _ON_DEVICE:
        return _snapshot(value, kind, None, name).result()
    if isinstance(value, (np.generic, list, tuple, numbers.Number)) or hasattr(value, "__array__"):
        try:
            return np.asarray(value)
        except (TypeError, ValueError) as exc:
            # Otherwise (an __array__ that refuses), it is read by DLPack.
            if not hasattr(value, "__dlpack__"):
                raise TypeError("%s: could not make an array of %s: %s" % (name, describe(value), exc)) from None
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (TypeError, ValueError, RuntimeError, BufferError) as exc:
            raise TypeError("%s: could not read %s by DLPack: %s" % (name, describe(value), exc)) from None
    raise TypeError("%s must be a number or an array (numpy, MXNet NDArray, torch, CuPy, JAX, list, or anything "
                    "with __array__ or __dlpack__); got %s" % (name, describe(value)))


def capture(value: Any, name: str = "value", numeric: bool = True, defer: bool = True,
            check: Optional[Callable[[Any], Any]] = None, kind: Optional[Kind] = None) -> Any:
    """`value` as data the caller can no longer change: with `defer`, a device array (an MXNet
    NDArray, a GPU array) as a Pending snapshot (no engine wait, no device sync), anything else
    as a numpy array, copied wherever the conversion shared memory with the input. With
    `numeric`, the dtype must be a real number or bool, and the array non-empty. `check(array)`
    checks the values: now, or for a snapshot when the writer thread resolves it."""
    array: Any
    kind = kind_of(value) if kind is None else kind
    if defer and (kind is Kind.MXNET or kind in _ON_DEVICE):
        if numeric and kind is not Kind.MXNET:
            # Before a copy is queued on the device.
            numbers_of(value, name, kind)
        array, check = _snapshot(value, kind, check, name), None
    else:
        array = to_numpy(value, name, kind)
        if array is value or array.base is not None or not array.flags.owndata:
            array = np.array(array, copy=True)
    if numeric:
        numbers_of(array, name)
    return array if check is None else check(array)


def numbers_of(value: Any, name: str = "value", kind: Optional[Kind] = None) -> Tuple[Tuple[int, ...], Any]:
    """(shape, numpy dtype) of an array (numpy, a Pending, or a device array of `kind`, not read)
    that must hold real numbers or bools, and at least one."""
    if isinstance(value, (np.ndarray, Pending)) or kind is Kind.MXNET:
        shape, dtype = tuple(value.shape), value.dtype
    elif kind is Kind.TORCH or kind is Kind.TORCH_CUDA:
        shape, dtype = tuple(value.shape), device_capture.numpy_dtype(value.dtype)
    elif hasattr(value, "shape") and hasattr(value, "dtype"):
        dtype = np.dtype(value.dtype)
        shape, dtype = tuple(value.shape), dtype if dtype.kind in "biufc" else np.dtype(np.float32)
    # DLPack alone says neither.
    else:
        converted, kind = _readable(value, Kind.DLPACK, name)
        return numbers_of(converted, name, kind)
    if np.dtype(dtype).kind not in "biuf":
        raise TypeError("%s must hold real numbers; got dtype %s" % (name, dtype))
    if not int(np.prod(shape, dtype=np.int64)):
        raise ValueError("%s is empty (shape %s)" % (name, shape))
    return shape, dtype


def scalar_value(value: Any, name: str = "value") -> Union[float, Named, Deferred]:
    """What a scalar call was given, decided here once for every type: `Named` values (a
    mapping, or one `(name, value)` pair or `[name, value]` list), else `one_scalar(value)`."""
    if isinstance(value, (dict, tuple, list, Mapping)):
        if isinstance(value, (tuple, list)):
            # Several numbers make no scalar.
            if len(value) != 2 or not isinstance(value[0], str):
                error = ValueError if len(value) != 2 else TypeError
                raise error("%s must be one number (an int, a float, a numpy or torch scalar, an array of one "
                            "element) or named numbers (a dict {name: number}, or one (name, number) pair); got "
                            "%s: several numbers are several lines of one chart, each named: add_scalars(tag, "
                            "{name: number, ...}, step)" % (name, describe(value)))
            value = {value[0]: value[1]}
        return named(value)
    return one_scalar(value, name)


def named(values: Mapping[Any, Any], name: str = "value", runs: str = "tensorboardx") -> Named:
    """`{name: value}` as `Named` values, every value checked (`one_scalar`, its errors naming
    `name[key]`) before any is used, their sub-runs named as `runs` says (`Named`)."""
    # For torch's runs, each name is its str, as torch's stand-in always took it (the run of 0 is
    # <tag>_0). A float is taken as it is (its error's name is made only for the values checked).
    torch = runs == "torch"
    return Named({str(key) if torch else key: v if type(v) is float else one_scalar(v, "%s[%r]" % (name, key))
                  for key, v in values.items()}, runs)


def one_scalar(value: Any, name: str = "value") -> Union[float, Deferred]:
    """A single scalar: a device array of one element (an MXNet NDArray, a GPU array) as
    `Deferred` (read once its device computed it: its shape and dtype are checked here, the
    values then), else the number as a float (checked)."""
    if isinstance(value, (np.generic, float, int)):
        return to_float(value, name)
    kind = kind_of(value)
    if kind is Kind.MXNET or kind is Kind.TORCH_CUDA:
        shape = tuple(value.shape)
        if shape != (1,) and int(np.prod(shape)) != 1:
            raise ValueError("%s must be a single number; got a%s %s of shape %s"
                             % (name, "n" if kind is Kind.MXNET else "", type(value).__name__, shape))
        if kind is Kind.TORCH_CUDA and value.dtype.is_complex:
            raise TypeError("%s must be a real number; got dtype %s" % (name, str(value.dtype)[len("torch."):]))
        # The value is copied into a slot of its ring.
        if kind is Kind.TORCH_CUDA or shape == (1,):
            return Deferred(value, shape, kind)
        return Deferred(Snapshot(value), shape, Kind.CAPTURED)
    if kind in _ON_DEVICE:
        shape, dtype = numbers_of(value, name, kind)
        if int(np.prod(shape, dtype=np.int64)) != 1:
            raise ValueError("%s must be a single number; got a %s of shape %s" % (name, type(value).__name__, shape))
        return Deferred(_snapshot(value, kind, None, name), shape, Kind.CAPTURED)
    return to_float(value, name, kind)


def scalar_alone(value: Any, name: str = "value") -> Union[float, Pending]:
    """A single scalar read on its own (a described scalar's Record resolves it): a device array
    of one element as a Pending captured now, else the number as a float."""
    scalar = one_scalar(value, name)
    if isinstance(scalar, Deferred):
        return scalar.array if scalar.kind is Kind.CAPTURED else _snapshot(scalar.array, scalar.kind, None, name)
    return scalar


def to_float(value: Any, name: str = "value", kind: Optional[Kind] = None) -> float:
    """A scalar as a Python float: a number, a numpy scalar, or any array of exactly one element."""
    if isinstance(value, (float, int)) and not isinstance(value, bool):
        return _float(value, name)
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError("%s must be a number or a one-element array; got %s" % (name, describe(value)))
    # An NDArray waits for the engine here: see writer.add_scalar.
    array = to_numpy(value, name, kind)
    if array.size != 1:
        raise ValueError("%s must be a single number; got an array of shape %s" % (name, array.shape))
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_) or np.iscomplexobj(array):
        raise TypeError("%s must be a real number; got dtype %s" % (name, array.dtype))
    return _float(array.reshape(()).item(), name)


def positive(value: Any, name: str, must: str = "a finite number > 0") -> float:
    """A finite number > 0 (seconds, a scale) as a float: a number, a numpy scalar or a
    one-element array, never a bool; anything else is a ValueError naming `name` and what it
    `must` be. The one check of every such argument (flush_secs, system_metrics, rescale)."""
    try:
        number = math.nan if isinstance(value, (bool, np.bool_)) else to_float(value, name)
    except TypeError:
        number = math.nan
    if not (number > 0 and math.isfinite(number)):
        raise ValueError("%s must be %s; got %r" % (name, must, value))
    return number


def _float(value: Any, name: str) -> float:
    try:
        return float(value)
    except OverflowError:
        raise ValueError("%s is too large for a float: %r" % (name, value)) from None


def to_int(value: Any, name: str = "global_step") -> int:
    """A step: an int, a numpy integer or a one-element integer array (int64 range); a float (a
    Python, numpy or one-element array one) is truncated by int(), as mxboard 0.1.0, tensorboardX
    and torch.utils.tensorboard do (`global_step=epoch * 100` where epoch is a float)."""
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
            array = None
            if not isinstance(value, (str, bytes)) and value is not None:
                try:
                    array = to_numpy(value, name)
                except TypeError:
                    pass
            if array is None or array.size != 1 or not (np.issubdtype(array.dtype, np.integer)
                                                        or np.issubdtype(array.dtype, np.floating)):
                raise TypeError("%s must be a number (an int, or a float taken as int(value)); got %s"
                                % (name, describe(value)))
            value = array.reshape(()).item()
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError("%s must be finite; got %r" % (name, value))
        value = int(value)
    number: int = value
    if not -(1 << 63) <= number < (1 << 63):
        raise ValueError("%s must fit in int64; got %d" % (name, number))
    return number


def describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return "%s %s" % (type(value).__name__, text)
