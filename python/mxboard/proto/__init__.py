"""The protobuf messages mxboard writes, loaded into a descriptor pool of mxboard's own.

The .proto files beside this module are the source, and `_descriptors.py` holds them compiled
(tools/gen_protos.py). The classes are built from that serialized set at import time, in a pool of
their own. So they load on every protobuf from 3.20 to the newest, as no generated `_pb2` code
ties them to one release ("Descriptors cannot be created directly"), and they live in one process
with TensorBoard, tensorboardX, torch or TensorFlow, whose pools never meet ours ("duplicate
symbol"). The field numbers are TensorBoard's, so TensorBoard reads the bytes mxboard writes.
"""
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ._descriptors import SERIALIZED

__all__ = [
    "POOL", "Message", "AttrValue", "AudioPluginData", "Category", "Chart", "DataType", "Event",
    "GraphDef", "HistogramPluginData", "HistogramProto", "ImagePluginData", "Layout",
    "MarginChartContent", "MeshPluginData", "MultilineChartContent", "NameAttrList", "NodeDef",
    "PrCurvePluginData", "ScalarPluginData", "SessionLog", "Summary", "SummaryMetadata",
    "TensorProto", "TensorShapeProto", "TextPluginData", "VersionDef", "hparams", "projector_config",
]

POOL = descriptor_pool.DescriptorPool()
for _file in descriptor_pb2.FileDescriptorSet.FromString(SERIALIZED).file:
    POOL.AddSerializedFile(_file.SerializeToString())


# The classes are built at run time, so to a type checker a message class is Any (as protobuf's
# own factories return it), and so is a message. `Message` names one where a signature takes or
# returns it.
Message = Any


def _message(full_name: str) -> Any:
    return _class(POOL.FindMessageTypeByName(full_name))


def _class(descriptor: Any) -> Any:
    # Protobuf >= 4.22.
    if hasattr(message_factory, "GetMessageClass"):
        cls = message_factory.GetMessageClass(descriptor)
    # Protobuf 3.20 - 4.21.
    else:
        cls = message_factory.MessageFactory(POOL).GetPrototype(descriptor)  # type: ignore[attr-defined]
    # Older runtimes do not attach the nested classes.
    for nested in descriptor.nested_types:
        if not nested.GetOptions().map_entry and not hasattr(cls, nested.name):
            setattr(cls, nested.name, _class(nested))
    return cls


def _enum(full_name: str) -> Any:
    """An enum's names and numbers, both ways, like a generated enum wrapper."""
    descriptor = POOL.FindEnumTypeByName(full_name)
    return type(full_name.rsplit(".", 1)[-1], (), dict(
        {value.name: value.number for value in descriptor.values},
        Name=staticmethod(lambda number: descriptor.values_by_number[number].name),
        Value=staticmethod(lambda name: descriptor.values_by_name[name].number),
    ))


Event = _message("mxboard.Event")
SessionLog = _message("mxboard.SessionLog")
Summary = _message("mxboard.Summary")
SummaryMetadata = _message("mxboard.SummaryMetadata")
HistogramProto = _message("mxboard.HistogramProto")
TensorProto = _message("mxboard.TensorProto")
TensorShapeProto = _message("mxboard.TensorShapeProto")
DataType = _enum("mxboard.DataType")
GraphDef = _message("mxboard.GraphDef")
NodeDef = _message("mxboard.NodeDef")
AttrValue = _message("mxboard.AttrValue")
NameAttrList = _message("mxboard.NameAttrList")
VersionDef = _message("mxboard.VersionDef")
ScalarPluginData = _message("mxboard.ScalarPluginData")
HistogramPluginData = _message("mxboard.HistogramPluginData")
ImagePluginData = _message("mxboard.ImagePluginData")
AudioPluginData = _message("mxboard.AudioPluginData")
TextPluginData = _message("mxboard.TextPluginData")
PrCurvePluginData = _message("mxboard.PrCurvePluginData")
MeshPluginData = _message("mxboard.MeshPluginData")
Layout = _message("mxboard.Layout")
Category = _message("mxboard.Category")
Chart = _message("mxboard.Chart")
MultilineChartContent = _message("mxboard.MultilineChartContent")
MarginChartContent = _message("mxboard.MarginChartContent")


# A namespace, like a generated module.
class hparams:  # noqa: N801
    Experiment = _message("mxboard.hparams.Experiment")
    HParamInfo = _message("mxboard.hparams.HParamInfo")
    Interval = _message("mxboard.hparams.Interval")
    MetricName = _message("mxboard.hparams.MetricName")
    MetricInfo = _message("mxboard.hparams.MetricInfo")
    HParamsPluginData = _message("mxboard.hparams.HParamsPluginData")
    SessionStartInfo = _message("mxboard.hparams.SessionStartInfo")
    SessionEndInfo = _message("mxboard.hparams.SessionEndInfo")
    DataType = _enum("mxboard.hparams.DataType")
    DatasetType = _enum("mxboard.hparams.DatasetType")
    Status = _enum("mxboard.hparams.Status")
    ListValue = _message("google.protobuf.ListValue")
    Value = _message("google.protobuf.Value")


# As TensorBoard's projector_config_pb2.
class projector_config:  # noqa: N801
    ProjectorConfig = _message("mxboard.projector.ProjectorConfig")
    EmbeddingInfo = _message("mxboard.projector.EmbeddingInfo")
    SpriteMetadata = _message("mxboard.projector.SpriteMetadata")
