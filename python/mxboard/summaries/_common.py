"""What every summary builder shares: plugin metadata, tensors, and one-value summaries."""
from typing import Any, Optional

import numpy as np

from ..proto import DataType, Message, Summary, SummaryMetadata, TensorProto, TensorShapeProto

__all__ = ["data_type", "metadata", "summary", "tensor", "tensor_summary", "TENSOR_DTYPES"]

_DTYPES = {
    np.dtype(np.float16): DataType.DT_HALF, np.dtype(np.float32): DataType.DT_FLOAT,
    np.dtype(np.float64): DataType.DT_DOUBLE, np.dtype(np.int8): DataType.DT_INT8,
    np.dtype(np.int16): DataType.DT_INT16, np.dtype(np.int32): DataType.DT_INT32,
    np.dtype(np.int64): DataType.DT_INT64, np.dtype(np.uint8): DataType.DT_UINT8,
    np.dtype(np.uint16): DataType.DT_UINT16, np.dtype(np.uint32): DataType.DT_UINT32,
    np.dtype(np.uint64): DataType.DT_UINT64, np.dtype(np.bool_): DataType.DT_BOOL,
    np.dtype(np.complex64): DataType.DT_COMPLEX64, np.dtype(np.complex128): DataType.DT_COMPLEX128,
}
# What a tensor may hold, as an error message names it: the numbers above, and str or bytes.
TENSOR_DTYPES = "bool, int8 to int64, uint8 to uint64, float16, float32, float64, complex64, complex128, str or bytes"


def data_type(dtype: "np.dtype[Any]") -> Optional[int]:
    """TensorBoard's DataType of a numpy number dtype (of either byte order), or None where it has
    none (float128, datetime64, structured dtypes and the like). Strings are not numbers: None."""
    if dtype.byteorder not in "=|":
        dtype = dtype.newbyteorder("=")
    found: Optional[int] = _DTYPES.get(dtype)
    return found


def metadata(plugin_name: str, content: bytes = b"", display_name: Optional[str] = None,
             description: Optional[str] = None) -> Message:
    """SummaryMetadata that names the plugin which renders a value, with `content` as the plugin's
    serialized data."""
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name=plugin_name, content=content))
    if display_name:
        meta.display_name = display_name
    if description:
        meta.summary_description = description
    return meta


def tensor(array: Any) -> Message:
    """A TensorProto of a numpy array. Numbers go in `tensor_content`, little-endian; complex
    numbers there too, each as its real and imaginary parts (float32 for complex64, float64 for
    complex128), which is TensorFlow's layout of DT_COMPLEX64 and DT_COMPLEX128 and what
    TensorBoard's `tensor_util.make_ndarray` reads. Strings (str or bytes, of any shape) go in
    `string_val`, in row-major order. The writer's calls check the dtype (checks.tensor), so the
    TypeError here is for a caller of this function alone."""
    array = np.asarray(array)
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=n) for n in array.shape])
    if array.dtype.kind in "USO":
        flat = [s if isinstance(s, bytes) else str(s).encode("utf-8") for s in array.reshape(-1).tolist()]
        return TensorProto(dtype=DataType.DT_STRING, tensor_shape=shape, string_val=flat)
    dtype = data_type(array.dtype)
    if dtype is None:
        raise TypeError("no TensorBoard dtype for %s: a tensor holds %s" % (array.dtype, TENSOR_DTYPES))
    content = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return TensorProto(dtype=dtype, tensor_shape=shape, tensor_content=content)


def summary(tag: str, meta: Optional[Message] = None, **value: Any) -> Message:
    """A Summary of one Value, with `tag`, optional metadata and one of the Value's fields."""
    entry = Summary.Value(tag=tag, **value)
    if meta is not None:
        entry.metadata.CopyFrom(meta)
    return Summary(value=[entry])


def tensor_summary(tag: str, array: Any) -> Message:
    """A Summary of a whole tensor under the plugin name 'tensor' (torch's add_tensor)."""
    return summary(tag, metadata("tensor"), tensor=tensor(array))
