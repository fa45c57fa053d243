"""3-D meshes and point clouds for the Mesh dashboard: up to three tensors (vertices, faces and
colors), each a value tagged `<tag>_VERTEX`, `<tag>_FACE` or `<tag>_COLOR`."""
from typing import Any, List, Optional, Tuple

import numpy as np
from numpy.typing import NDArray

from ..proto import MeshPluginData, Message, Summary
from ._common import metadata, tensor

__all__ = ["mesh_summary"]

PLUGIN = "mesh"


def batched(array: Any) -> NDArray[Any]:
    """An (N, 3) array as (1, N, 3); a batched array as it is."""
    out: NDArray[Any] = np.asarray(array)
    return out.reshape((1,) + out.shape) if out.ndim == 2 else out


def mesh_summary(tag: str, vertices: Any, colors: Optional[Any] = None, faces: Optional[Any] = None,
                 json_config: str = "") -> Message:
    """A Summary of a mesh or point cloud.

    Args:
        tag: the tag; each tensor's value is tagged `<tag>_<VERTEX|FACE|COLOR>`.
        vertices: (B, N, 3) or (N, 3) floats.
        colors: (B, N, 3) uint8 values.
        faces: (B, F, 3) vertex indices.
        json_config: the viewer's configuration, as JSON text.
    """
    vertices = batched(vertices)
    parts: List[Tuple[int, str, NDArray[Any]]] = [(MeshPluginData.VERTEX, "VERTEX", vertices.astype(np.float32))]
    if faces is not None:
        parts.append((MeshPluginData.FACE, "FACE", batched(faces).astype(np.int32)))
    if colors is not None:
        parts.append((MeshPluginData.COLOR, "COLOR", batched(colors).astype(np.uint8)))
    components = 0
    for content_type, _, _ in parts:
        components |= 1 << content_type
    values = []
    for content_type, suffix, data in parts:
        content = MeshPluginData(version=0, name=tag, content_type=content_type, components=components,
                                 shape=list(data.shape), json_config=json_config).SerializeToString()
        value = Summary.Value(tag="%s_%s" % (tag, suffix), tensor=tensor(data))
        value.metadata.CopyFrom(metadata(PLUGIN, content, display_name=tag))
        values.append(value)
    return Summary(value=values)
