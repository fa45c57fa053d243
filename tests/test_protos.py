"""The vendored protos: TensorBoard's field numbers, loadable on protobuf 3.20 to the newest,
and living in one process with TensorBoard, tensorboardX and torch."""
import importlib
import os
import subprocess
import sys

import pytest

from conftest import ROOT, accumulator, pip_target, plugin_accumulator, projector_config, run_python
from mxboard import proto

# Our message -> TensorBoard's generated class that defines the same wire format.
TENSORBOARD_TWINS = {
    "Event": "tensorboard.compat.proto.event_pb2.Event",
    "SessionLog": "tensorboard.compat.proto.event_pb2.SessionLog",
    "Summary": "tensorboard.compat.proto.summary_pb2.Summary",
    "SummaryMetadata": "tensorboard.compat.proto.summary_pb2.SummaryMetadata",
    "HistogramProto": "tensorboard.compat.proto.summary_pb2.HistogramProto",
    "TensorProto": "tensorboard.compat.proto.tensor_pb2.TensorProto",
    "TensorShapeProto": "tensorboard.compat.proto.tensor_shape_pb2.TensorShapeProto",
    "GraphDef": "tensorboard.compat.proto.graph_pb2.GraphDef",
    "NodeDef": "tensorboard.compat.proto.node_def_pb2.NodeDef",
    "AttrValue": "tensorboard.compat.proto.attr_value_pb2.AttrValue",
    "NameAttrList": "tensorboard.compat.proto.attr_value_pb2.NameAttrList",
    "VersionDef": "tensorboard.compat.proto.versions_pb2.VersionDef",
    "ScalarPluginData": "tensorboard.plugins.scalar.plugin_data_pb2.ScalarPluginData",
    "HistogramPluginData": "tensorboard.plugins.histogram.plugin_data_pb2.HistogramPluginData",
    "ImagePluginData": "tensorboard.plugins.image.plugin_data_pb2.ImagePluginData",
    "AudioPluginData": "tensorboard.plugins.audio.plugin_data_pb2.AudioPluginData",
    "TextPluginData": "tensorboard.plugins.text.plugin_data_pb2.TextPluginData",
    "PrCurvePluginData": "tensorboard.plugins.pr_curve.plugin_data_pb2.PrCurvePluginData",
    "MeshPluginData": "tensorboard.plugins.mesh.plugin_data_pb2.MeshPluginData",
    "Layout": "tensorboard.plugins.custom_scalar.layout_pb2.Layout",
    "Category": "tensorboard.plugins.custom_scalar.layout_pb2.Category",
    "Chart": "tensorboard.plugins.custom_scalar.layout_pb2.Chart",
    "MarginChartContent": "tensorboard.plugins.custom_scalar.layout_pb2.MarginChartContent",
    "hparams.Experiment": "tensorboard.plugins.hparams.api_pb2.Experiment",
    "hparams.HParamInfo": "tensorboard.plugins.hparams.api_pb2.HParamInfo",
    "hparams.MetricInfo": "tensorboard.plugins.hparams.api_pb2.MetricInfo",
    "hparams.HParamsPluginData": "tensorboard.plugins.hparams.plugin_data_pb2.HParamsPluginData",
    "hparams.SessionStartInfo": "tensorboard.plugins.hparams.plugin_data_pb2.SessionStartInfo",
    "hparams.SessionEndInfo": "tensorboard.plugins.hparams.plugin_data_pb2.SessionEndInfo",
    "projector_config.ProjectorConfig": "tensorboard.plugins.projector.projector_config_pb2.ProjectorConfig",
    "projector_config.EmbeddingInfo": "tensorboard.plugins.projector.projector_config_pb2.EmbeddingInfo",
}


def _resolve(dotted, root):
    for part in dotted.split("."):
        root = getattr(root, part)
    return root


def _shape(descriptor, seen=None):
    """Every field, recursively: (path, number, type, repeated), for comparing two definitions."""
    seen = seen if seen is not None else set()
    if descriptor.full_name in seen:
        return {}
    seen.add(descriptor.full_name)
    fields = {}
    for field in descriptor.fields:
        # protobuf >= 6.31: is_repeated (`label` deprecated, then gone); before: label
        repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED
        fields[field.name] = (field.number, field.type, repeated)
        if field.message_type is not None:
            for name, value in _shape(field.message_type, seen).items():
                fields[field.name + "." + name] = value
    return fields


@pytest.mark.parametrize("ours", sorted(TENSORBOARD_TWINS))
def test_field_numbers_and_types_are_tensorboards(ours):
    module, _, name = TENSORBOARD_TWINS[ours].rpartition(".")
    theirs = getattr(importlib.import_module(module), name)
    our_fields = _shape(_resolve(ours, proto).DESCRIPTOR)
    their_fields = _shape(theirs.DESCRIPTOR)
    assert our_fields, ours
    for path, value in our_fields.items():
        assert their_fields.get(path) == value, (ours, path)


@pytest.mark.slow
def test_descriptor_module_matches_the_proto_files():
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_protos.py"), "--check"], check=True)


WRITE_AND_READ = r"""
import sys, google.protobuf, numpy
import mxboard
from mxboard import proto
from mxboard.reader import read_events
with mxboard.SummaryWriter(LOGDIR) as w:
    w.add_scalar("loss", numpy.float32(0.25), 7)
    w.add_scalar("acc", {"train": 0.5, "val": 0.75}, 7)
    rng = numpy.random.default_rng(0)
    w.add_histogram("hist", rng.normal(size=1000), 7)
    w.add_image("image", rng.random((3, 8, 8)), 7)
    w.add_audio("audio", numpy.sin(numpy.arange(800) / 5.0), sample_rate=8000, global_step=7)
    w.add_text("text", "**hi**", 7)
    w.add_pr_curve("pr", rng.integers(2, size=50), rng.random(50), num_thresholds=20, global_step=7)
    w.add_mesh("mesh", rng.random((5, 3)), global_step=7)
    w.add_embedding("emb", rng.random((4, 2)), labels=list("abcd"))
info = proto.hparams.SessionStartInfo()
info.hparams["lr"].number_value = 0.1
assert proto.hparams.SessionStartInfo.FromString(info.SerializeToString()).hparams["lr"].number_value == 0.1
print(google.protobuf.__version__, numpy.__version__, len(list(read_events(LOGDIR))))
"""


@pytest.mark.parametrize("protobuf, numpy", [
    ("protobuf==3.20.3", "numpy==1.23.5"),  # the oldest protobuf we support; MXNet's numpy
    ("protobuf==4.21.12", "numpy==2.4.6"),  # the last protobuf without GetMessageClass; numpy 2
    (None, None),  # this environment's: the newest protobuf
])
@pytest.mark.slow
@pytest.mark.timeout(600)  # pip installs an old protobuf and numpy, once
def test_loads_and_writes_on_protobuf_range(tmp_path, protobuf, numpy):
    paths = [pip_target(spec) for spec in (protobuf, numpy) if spec]
    code = "LOGDIR = %r\n" % str(tmp_path) + WRITE_AND_READ
    out = run_python(code, env={"PYTHONPATH_PREPEND": os.pathsep.join(paths)}).stdout.split()
    if protobuf:
        assert out[0] == protobuf.split("==")[1]
    if numpy:
        assert out[1] == numpy.split("==")[1]
    assert out[2] == "12"  # 3 files (main, acc/train, acc/val): file_version + one scalar each; 6 kinds more
    acc = accumulator(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(7, 0.25)]
    kinds = plugin_accumulator(tmp_path).PluginTagToContent
    plugins = ("histograms", "images", "audio", "text", "pr_curves", "mesh")
    assert [(plugin, list(kinds(plugin))) for plugin in plugins] == [
        ("histograms", ["hist"]), ("images", ["image"]), ("audio", ["audio"]), ("text", ["text"]),
        ("pr_curves", ["pr"]), ("mesh", ["mesh_VERTEX"])]
    assert [e.tensor_name for e in projector_config(tmp_path).embeddings] == ["emb"]
    assert [(e.step, e.value) for e in accumulator(tmp_path / "acc" / "val").Scalars("acc")] == [(7, 0.75)]


COEXIST = r"""
import importlib.util, sys
import tensorboard.compat.proto.event_pb2 as tb_event
import tensorboard.summary  # TensorBoard's own writer stack
import tensorboardX
from tensorboardX.proto import event_pb2 as tbx_event
torch_loaded = importlib.util.find_spec("torch") is not None
if torch_loaded:
    import torch.utils.tensorboard
import mxboard
from mxboard import proto
# every library's Event, each from its own definitions, in one process
e = proto.Event(step=3, summary=proto.Summary(value=[proto.Summary.Value(tag="x", simple_value=1)]))
for other in (tb_event.Event, tbx_event.Event):
    assert other.FromString(e.SerializeToString()).summary.value[0].tag == "x"
with mxboard.SummaryWriter(LOGDIR + "/mx") as w:
    w.add_scalar("x", 1.0, 1)
with tensorboardX.SummaryWriter(LOGDIR + "/tbx") as w:
    w.add_scalar("x", 2.0, 1)
if torch_loaded:
    with torch.utils.tensorboard.SummaryWriter(LOGDIR + "/torch") as w:
        w.add_scalar("x", 3.0, 1)
print("torch" if torch_loaded else "no-torch")
"""


@pytest.mark.slow
@pytest.mark.parametrize("order", ["mxboard-last", "mxboard-first"])
def test_coexists_with_tensorboard_tensorboardx_and_torch(tmp_path, order):
    code = "LOGDIR = %r\n" % str(tmp_path) + COEXIST
    if order == "mxboard-first":
        code = "import mxboard\n" + code
    proc = run_python(code, timeout=300)
    runs = {"mx": 1.0, "tbx": 2.0}
    if proc.stdout.strip() == "torch":
        runs["torch"] = 3.0
    for run, value in runs.items():
        assert [e.value for e in accumulator(tmp_path / run).Scalars("x")] == [value], run
