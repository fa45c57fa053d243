"""Inputs to numbers and numpy arrays: the one place that knows array types (an MXNet array's
capture without waiting for its engine is mxnet_capture.py's; a GPU array's without a device
sync, device_capture.py's).

numpy, Python numbers and lists, MXNet NDArray, torch tensors, CuPy and JAX arrays, and anything
with `__array__`, `__dlpack__` or `__cuda_array_interface__`. No framework is imported here: a
value can only be one of their arrays if its module is already loaded, so `sys.modules` is asked
instead.
"""
import math
import numbers
import sys
from collections.abc import Mapping
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple, Union

import numpy as np

from ..frameworks import device_capture
from ..frameworks.mxnet_capture import Snapshot

__all__ = ["Deferred", "Named", "capture", "describe", "is_ndarray", "named", "numbers_of", "on_accelerator",
           "on_device", "one_scalar", "positive", "scalar_value", "to_float", "to_int", "to_numpy"]


class Deferred(NamedTuple):
    """A scalar call's device array of one element (an MXNet NDArray, a torch CUDA tensor, any
    `device_capture.on_device` array; its shape checked: `one_scalar`), read by the writer thread
    once its device computed it."""

    array: Any
    shape: Tuple[int, ...]


class Named(NamedTuple):
    """A scalar call's named values, each checked (`one_scalar`): `{name: value}`, each name a
    line of its own in one chart."""

    values: Dict[Any, Union[float, Deferred]]


def is_ndarray(value: Any) -> bool:
    """Whether `value` is an MXNet NDArray (never importing mxnet to find out)."""
    mx = sys.modules.get("mxnet")
    return mx is not None and isinstance(value, mx.nd.NDArray)


def on_accelerator(value: Any) -> bool:
    """Whether `value` is an MXNet NDArray on a GPU (not the CPU, where the host bins faster than
    MXNet's operators, which would also share the engine's threads with training)."""
    return is_ndarray(value) and bool(value.context.device_type != "cpu")


def _torch_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def to_numpy(value: Any, name: str = "value") -> Any:
    """`value` as a numpy array (a view where the input already is one, else a new array). A
    device array is read now: the caller waits for its device (`capture` does not)."""
    if isinstance(value, np.ndarray):
        return value
    if is_ndarray(value):
        return value.asnumpy()
    if _torch_tensor(value):
        tensor = value.detach().cpu()
        try:
            return tensor.numpy()
        except TypeError:  # a dtype numpy lacks (bfloat16, float8...): as float32, as torch's writer
            return tensor.float().numpy()
    host = isinstance(value, (np.generic, list, tuple, numbers.Number))
    if not host and device_capture.on_device(value):
        return device_capture.to_host(value, name)
    if host or hasattr(value, "__array__"):
        try:
            return np.asarray(value)
        except (TypeError, ValueError) as exc:
            if not hasattr(value, "__dlpack__"):  # else (an __array__ that refuses): read by DLPack
                raise TypeError("%s: could not make an array of %s: %s" % (name, describe(value), exc)) from None
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (TypeError, ValueError, RuntimeError, BufferError) as exc:
            raise TypeError("%s: could not read %s by DLPack: %s" % (name, describe(value), exc)) from None
    raise TypeError("%s must be a number or an array (numpy, MXNet NDArray, torch, CuPy, JAX, list, or anything "
                    "with __array__ or __dlpack__); got %s" % (name, describe(value)))


def capture(value: Any, name: str = "value", numeric: bool = True, defer: bool = True,
            check: Optional[Callable[[Any], Any]] = None) -> Any:
    """`value` as data the caller can no longer change: with `defer`, an MXNet NDArray as a
    `Snapshot` (no waiting for the engine) and a GPU array as a device_capture snapshot (no
    device sync), anything else as a numpy array, copied wherever the conversion shared memory
    with the input. With `numeric`, the dtype must be a real number or bool, and the array
    non-empty. `check(array)` checks the values: now, or for a snapshot when the writer thread
    resolves it."""
    array: Any
    if defer and not isinstance(value, np.ndarray) and is_ndarray(value):
        array, check = Snapshot(value, check), None
    elif defer and not isinstance(value, np.ndarray) and device_capture.on_device(value):
        if numeric:
            numbers_of(value, name)  # before anything is queued
        array, check = device_capture.snapshot(value, check, name), None
    else:
        array = to_numpy(value, name)
        if array is value or array.base is not None or not array.flags.owndata:
            array = np.array(array, copy=True)
    if numeric:
        numbers_of(array, name)
    return array if check is None else check(array)


def numbers_of(value: Any, name: str = "value") -> Tuple[Tuple[int, ...], Any]:
    """(shape, numpy dtype) of an array (numpy, a snapshot, or a device array, not read) that
    must hold real numbers or bools, and at least one."""
    shape, dtype = ((tuple(value.shape), value.dtype) if isinstance(value, np.ndarray) or hasattr(value, "result")
                    else device_capture.numbers_of(value))
    if np.dtype(dtype).kind not in "biuf":
        raise TypeError("%s must hold real numbers; got dtype %s" % (name, dtype))
    if not int(np.prod(shape, dtype=np.int64)):
        raise ValueError("%s is empty (shape %s)" % (name, shape))
    return shape, dtype


def on_device(value: Any) -> bool:
    """Whether `value` is an array in GPU memory that mxboard reads without a device sync (not
    an MXNet NDArray: `on_accelerator`)."""
    return not isinstance(value, np.ndarray) and device_capture.on_device(value)


def scalar_value(value: Any, name: str = "value") -> Union[float, Named, Deferred]:
    """What a scalar call was given, decided here once for every type: `Named` values (a
    mapping, or one `(name, value)` pair or `[name, value]` list), else `one_scalar(value)`."""
    if isinstance(value, (dict, tuple, list, Mapping)):
        if isinstance(value, (tuple, list)):
            if len(value) != 2 or not isinstance(value[0], str):  # several numbers: no scalar
                error = ValueError if len(value) != 2 else TypeError
                raise error("%s must be one number (an int, a float, a numpy or torch scalar, an array of one "
                            "element) or named numbers (a dict {name: number}, or one (name, number) pair); got "
                            "%s: several numbers are several lines of one chart, each named: add_scalars(tag, "
                            "{name: number, ...}, step)" % (name, describe(value)))
            value = {value[0]: value[1]}
        return named(value)
    return one_scalar(value, name)


def named(values: Mapping[Any, Any]) -> Named:
    """`{name: value}` as `Named` values, every value checked (`one_scalar`) before any is used."""
    return Named({key: one_scalar(v, "value[%r]" % (key,)) for key, v in values.items()})


def one_scalar(value: Any, name: str = "value") -> Union[float, Deferred]:
    """A single scalar: a device array of one element (an MXNet NDArray, a GPU array) as
    `Deferred` (read once its device computed it: its shape and dtype are checked here, the
    values then), else the number as a float (checked)."""
    if isinstance(value, (np.generic, float, int)):
        return to_float(value, name)
    if is_ndarray(value):
        shape = tuple(value.shape)
        if shape != (1,) and int(np.prod(shape)) != 1:
            raise ValueError("%s must be a single number; got an NDArray of shape %s" % (name, shape))
        return Deferred(value, shape)
    if device_capture.on_device(value):
        shape, dtype = device_capture.numbers_of(value)
        if int(np.prod(shape, dtype=np.int64)) != 1:
            raise ValueError("%s must be a single number; got a %s of shape %s" % (name, type(value).__name__, shape))
        if np.dtype(dtype).kind not in "biuf":
            raise TypeError("%s must be a real number; got dtype %s" % (name, dtype))
        return Deferred(value, shape)
    return to_float(value, name)


def to_float(value: Any, name: str = "value") -> float:
    """A scalar as a Python float: a number, a numpy scalar, or any array of exactly one element."""
    if isinstance(value, (float, int)) and not isinstance(value, bool):
        return _float(value, name)
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError("%s must be a number or a one-element array; got %s" % (name, describe(value)))
    array = to_numpy(value, name)  # an NDArray waits for the engine here: see writer.add_scalar
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
    Python, numpy or one-element array one) is truncated by int(), as mxboard 0.1.0 and the peers
    do (`global_step=epoch * 100` where epoch is a float)."""
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
