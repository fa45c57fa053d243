"""What every summary builder shares: plugin metadata, tensors, and one-value summaries."""
from typing import Any, Optional

import numpy as np

from ..proto import DataType, Message, Summary, SummaryMetadata, TensorProto, TensorShapeProto

__all__ = ["metadata", "summary", "tensor", "tensor_summary"]

_DTYPES = {
    np.dtype(np.float16): DataType.DT_HALF, np.dtype(np.float32): DataType.DT_FLOAT,
    np.dtype(np.float64): DataType.DT_DOUBLE, np.dtype(np.int8): DataType.DT_INT8,
    np.dtype(np.int16): DataType.DT_INT16, np.dtype(np.int32): DataType.DT_INT32,
    np.dtype(np.int64): DataType.DT_INT64, np.dtype(np.uint8): DataType.DT_UINT8,
    np.dtype(np.uint16): DataType.DT_UINT16, np.dtype(np.uint32): DataType.DT_UINT32,
    np.dtype(np.uint64): DataType.DT_UINT64, np.dtype(np.bool_): DataType.DT_BOOL,
}


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
    """A TensorProto of a numpy array. Numbers go in `tensor_content`, little-endian; strings (str
    or bytes, of any shape) go in `string_val`, in row-major order."""
    array = np.asarray(array)
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=n) for n in array.shape])
    if array.dtype.kind in "USO":
        flat = [s if isinstance(s, bytes) else str(s).encode("utf-8") for s in array.reshape(-1).tolist()]
        return TensorProto(dtype=DataType.DT_STRING, tensor_shape=shape, string_val=flat)
    dtype = _DTYPES.get(array.dtype)
    if dtype is None:
        raise TypeError("no TensorBoard dtype for %s" % array.dtype)
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
