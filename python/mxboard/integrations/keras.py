"""Keras 3's TensorBoard callback, writing through mxboard: no TensorFlow needed, on any backend.

    from mxboard.integrations.keras import TensorBoard
    model.fit(x, y, validation_split=0.2, callbacks=[TensorBoard("logs", histogram_freq=1)])

It keeps the arguments, defaults, runs (`log_dir/train`, `log_dir/validation`), tags and steps of
`keras.callbacks.TensorBoard`: `epoch_<metric>` every epoch, `batch_<metric>` every `update_freq`
batches, `evaluation_<metric>_vs_iterations` after each evaluation, weight histograms and images
every `histogram_freq` epochs, and the model's conceptual graph, with an op graph of its layers
(Keras's callback writes none outside TensorFlow). Embeddings (`embeddings_freq`)
are written in the form the Projector reads, whereas Keras's own callback saves a `.weights.h5`
file that the Projector cannot open. Keras's profiler needs TensorFlow's or JAX's, so a
`profile_batch` other than 0 is an error that names the alternatives. Importing this module
imports keras.
"""
from __future__ import annotations

import json
import os
import time
import warnings
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from .. import SummaryWriter
from ..proto import (
    AttrValue,
    DataType,
    GraphDef,
    NodeDef,
    Summary,
    SummaryMetadata,
    TensorProto,
    TensorShapeProto,
    VersionDef,
)
from ._shared import check_writer_arguments, missing_trainer

try:
    from keras import backend, callbacks, layers, ops, optimizers, tree
except ImportError as error:
    raise missing_trainer(__name__, "keras", error) from None

__all__ = ["TensorBoard"]

# tf.summary.image's max_outputs, which Keras's callback leaves at its default.
MAX_IMAGES = 3


def _keras_model_summary(tag: str, json_config: str) -> Any:
    """The model's config as the Graphs dashboard's conceptual graph (Keras's keras_model_summary):
    a Summary of one string tensor, under the plugin name `graph_keras_model`."""
    config = TensorProto(dtype=DataType.DT_STRING, tensor_shape=TensorShapeProto(),
                         string_val=[json_config.encode("utf-8")])
    plugin = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="graph_keras_model", content=b"1"))
    return Summary(value=[Summary.Value(tag=tag, metadata=plugin, tensor=config)])


# The tag under which the Graphs dashboard finds a run's op graph: TensorBoard's loaders turn a
# GraphDef event into a Summary value of this tag, the plugin `graphs` and one blob, and this
# callback writes that Summary itself, through SummaryWriter.add_summary.
RUN_GRAPH_TAG = "__run_graph__"


def _op_graph_summary(graph: Any) -> Any:
    """A run's op graph (a GraphDef) as the Summary that TensorBoard's loaders make of a GraphDef
    event, which the Graphs dashboard opens on."""
    blob = TensorProto(dtype=DataType.DT_STRING, tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]),
                       string_val=[graph.SerializeToString()])
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="graphs"),
                               data_class="DATA_CLASS_BLOB_SEQUENCE")
    return Summary(value=[Summary.Value(tag=RUN_GRAPH_TAG, metadata=metadata, tensor=blob)])


def _layer_graph(model: Any, config: Dict[str, Any]) -> Any:
    """The op graph of a Functional or Sequential model's layers, from its config (`config`, as
    `to_json` gives it) and its layers. Each layer is a node named by its scopes (`<model>/<layer>`;
    a nested model's layers in the nested model's scope), its op the layer's class, its inputs the
    layers it is called on, `_output_shapes` its output's shape (which the dashboard writes on the
    edges), and the config's plain values (units, activation...) as attributes."""
    graph = GraphDef(versions=VersionDef(producer=22))
    _add_model(graph, model, config, model.name, [])
    return graph


def _is_model(entry: Dict[str, Any]) -> bool:
    """Whether a layer's config is a model's (Functional or Sequential), which has layers."""
    return isinstance(entry.get("config"), dict) and isinstance(entry["config"].get("layers"), list)


def _entry_name(entry: Dict[str, Any]) -> str:
    name: str = entry.get("name") or entry["config"]["name"]
    return name


def _references(value: Any) -> List[Tuple[str, int]]:
    """The (layer, tensor index) of each `[layer, node index, tensor index]` in a Functional
    config's `input_layers` or `output_layers`, which nest them in lists (or dicts) as the model's
    inputs and outputs nest."""
    if isinstance(value, dict):
        return [ref for item in value.values() for ref in _references(item)]
    if isinstance(value, list):
        if len(value) == 3 and isinstance(value[0], str) and isinstance(value[2], int):
            return [(value[0], value[2])]
        return [ref for item in value for ref in _references(item)]
    return []


def _histories(value: Any) -> List[Tuple[str, int]]:
    """The (layer, tensor index) of each tensor in a layer's serialized inbound nodes (its
    `keras_history`), in order: the tensors the layer was called on."""
    found: List[Tuple[str, int]] = []
    if isinstance(value, dict):
        history = value.get("keras_history")
        if isinstance(history, list) and len(history) == 3 and isinstance(history[0], str):
            found.append((history[0], int(history[2])))
        for item in value.values():
            found.extend(_histories(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(_histories(item))
    return found


def _output_names(entry: Dict[str, Any], scope: str) -> List[str]:
    """The graph's names of the outputs of a layer (`scope` its node's name): for a model, those
    of the layers that give its outputs."""
    if not _is_model(entry):
        return [scope]
    config = entry["config"]
    nested = {_entry_name(e): e for e in config["layers"] if _is_model(e)}
    if "output_layers" in config:
        return [_output_names(nested[name], scope + "/" + name)[index] if name in nested
                else scope + "/" + name + (":%d" % index if index else "")
                for name, index in _references(config["output_layers"])]
    last = config["layers"][-1:] if config["layers"] else []
    return [name for e in last for name in _output_names(e, scope + "/" + _entry_name(e))]


def _add_model(graph: Any, model: Any, config: Dict[str, Any], scope: str, inputs: List[str]) -> List[str]:
    """Add the nodes of a model's layers to `graph` under `scope`; `inputs` are the graph's names
    of what the model is called on (none for the model being trained). Returns its outputs'."""
    live = {layer.name: layer for layer in getattr(model, "layers", None) or []}
    entries = [e for e in config.get("layers") or [] if isinstance(e, dict)]
    # A Sequential model: each layer is called on the one before.
    if "input_layers" not in config:
        previous = inputs[:1]
        for entry in entries:
            name = _entry_name(entry)
            previous = _add_layer(graph, live.get(name), entry, scope + "/" + name, previous)[:1]
        return previous
    # A Functional model: each layer is called on the tensors of its inbound nodes, and an input
    # layer of a nested model on what the outer model calls that model on.
    nested = {_entry_name(e): _output_names(e, scope + "/" + _entry_name(e)) for e in entries if _is_model(e)}
    positions = {name: i for i, (name, _) in enumerate(_references(config.get("input_layers")))}

    def source(name: str, index: int) -> str:
        # A nested model's output: the layer inside that gives it.
        if nested.get(name):
            return nested[name][min(index, len(nested[name]) - 1)]
        return scope + "/" + name + (":%d" % index if index else "")

    for entry in entries:
        name = _entry_name(entry)
        if name in positions:
            called_on = inputs[positions[name]:positions[name] + 1]
        else:
            called_on = [source(*reference) for reference in _histories(entry.get("inbound_nodes"))]
        _add_layer(graph, live.get(name), entry, scope + "/" + name, called_on)
    return [source(*reference) for reference in _references(config.get("output_layers"))]


def _add_layer(graph: Any, layer: Any, entry: Dict[str, Any], name: str, inputs: List[str]) -> List[str]:
    """Add a layer's node (a model's nodes, for a nested model) and return its outputs' names."""
    if _is_model(entry):
        return _add_model(graph, layer, entry["config"], name, inputs)
    # A layer called on its own output (a layer shared along a chain) gets no edge to itself, and
    # a layer called twice on the same tensor one edge.
    node = NodeDef(name=name, op=str(entry.get("class_name") or "Layer"),
                   input=[i for i in dict.fromkeys(inputs) if i.split(":")[0] != name])
    for key, value in sorted((entry.get("config") or {}).items()):
        attr = _attr_value(key, value)
        if attr is not None:
            node.attr[key].CopyFrom(attr)
    shapes = _output_shapes(layer, entry)
    if shapes:
        node.attr["_output_shapes"].CopyFrom(AttrValue(list=AttrValue.ListValue(shape=[
            TensorShapeProto(dim=[TensorShapeProto.Dim(size=-1 if n is None else int(n)) for n in shape])
            for shape in shapes])))
    graph.node.append(node)
    return [name]


def _attr_value(key: str, value: Any) -> Optional[Any]:
    """A config value as a node's attribute: a number, a str, a bool or a list of ints (a kernel
    size), and a dtype policy by its name; None for the rest (initializers, regularizers...)."""
    if key == "name":
        return None
    if key == "dtype" and isinstance(value, dict):
        value = (value.get("config") or {}).get("name")
    if isinstance(value, bool):
        return AttrValue(b=value)
    if isinstance(value, int) and -2 ** 63 <= value < 2 ** 63:
        return AttrValue(i=value)
    if isinstance(value, float):
        return AttrValue(f=value)
    if isinstance(value, str):
        return AttrValue(s=value.encode("utf-8"))
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return AttrValue(list=AttrValue.ListValue(i=value))
    return None


def _output_shapes(layer: Any, entry: Dict[str, Any]) -> List[List[Optional[int]]]:
    """The shapes of a layer's outputs, the batch size None: an input layer's from its config,
    another's from the output of its first call (none for a layer never called on Keras tensors)."""
    if entry.get("class_name") == "InputLayer":
        config = entry.get("config") or {}
        shape = config.get("batch_shape") or config.get("batch_input_shape")
        return [list(shape)] if shape else []
    try:
        outputs = layer.output
    # Never called, or no layer of that name.
    except (AttributeError, ValueError):
        return []
    return [list(tensor.shape) for tensor in tree.flatten(outputs) if getattr(tensor, "shape", None) is not None]


# Keras's types are not checked here.
class TensorBoard(callbacks.Callback):  # type: ignore[misc]
    """`keras.callbacks.TensorBoard`, written by mxboard.

    Args:
        log_dir: where the runs go (a path, or an `s3://`, `gs://` or `az://` URL).
        histogram_freq: epochs between two sets of weight histograms (0 logs none).
        write_graph: write a Functional or Sequential model's graphs: the conceptual graph (its
            config, as Keras does) and the op graph of its layers (a node for each, which the
            Graphs dashboard opens on). The op graph of a `tf.function` exists only with
            TensorFlow.
        write_images: with the histograms, each weight as an image.
        write_steps_per_second: log the training steps per second (epoch and batch level).
        update_freq: "epoch", "batch" (every batch) or N, to log `batch_<metric>` every N batches.
        profile_batch: must be 0 (see the module).
        embeddings_freq: epochs between two sets of embeddings (0 logs none).
        embeddings_metadata: a labels file (TSV, as the Projector reads it) for every Embedding
            layer, or `{layer name: file}`.
        **writer_args: `mxboard.SummaryWriter`'s arguments for both runs (`flush_secs`,
            `upload_policy`, `spool`...).

    Raises:
        TypeError: a keyword argument that neither `keras.callbacks.TensorBoard` nor
            `SummaryWriter` takes (naming the closest that one of them does).
        ValueError: a `profile_batch` other than 0, or an `update_freq` that is not "epoch",
            "batch" or an int of 1 or more.
    """

    def __init__(self, log_dir: Union[str, "os.PathLike[str]"] = "logs", histogram_freq: int = 0,
                 write_graph: bool = True, write_images: bool = False, write_steps_per_second: bool = False,
                 update_freq: Union[str, int] = "epoch", profile_batch: Union[int, str, Tuple[int, int]] = 0,
                 embeddings_freq: int = 0, embeddings_metadata: Optional[Union[str, Dict[str, str]]] = None,
                 **writer_args: Any) -> None:
        super().__init__()
        # A misspelled argument is refused here, naming this class, rather than when the writers
        # are made (at fit, naming SummaryWriter).
        check_writer_arguments("mxboard.integrations.keras.TensorBoard", writer_args, _OWN_ARGUMENTS)
        if profile_batch not in (0, "0", None):
            raise ValueError(
                "profile_batch=%r: mxboard's TensorBoard callback does not profile (Keras's profiler needs "
                "TensorFlow's or JAX's). Give profile_batch=0, and profile with torch.profiler (its "
                "tensorboard_trace_handler writes the Profile dashboard's files) or jax.profiler.trace(log_dir), or "
                "use keras.callbacks.TensorBoard with TensorFlow installed" % (profile_batch,))
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and (isinstance(update_freq, bool) or not isinstance(update_freq, int)
                                       or update_freq < 1):
            raise ValueError("update_freq must be 'epoch', 'batch' or an int >= 1; got %r" % (update_freq,))
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = update_freq
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._writer_args = writer_args
        self._writers: Dict[str, SummaryWriter] = {}
        self._global_train_batch = 0
        self._batch_start_time = 0.0
        self._epoch_start_time = 0.0
        self._previous_epoch_iterations = 0.0
        self._embedding_labels: Dict[str, Tuple[Optional[List[str]], List[Any]]] = {}

    # -- the two runs ------------------------------------------------------------------------------
    def _writer(self, run: str) -> SummaryWriter:
        """The writer of the run `train` or `validation`, made on first use, as in Keras's callback."""
        writer = self._writers.get(run)
        if writer is None:
            writer = self._writers[run] = SummaryWriter(os.path.join(self.log_dir, run), **self._writer_args)
        return writer

    def _close_writers(self) -> None:
        writers, self._writers = list(self._writers.values()), {}
        for writer in writers:
            writer.close()

    # -- Keras's hooks -----------------------------------------------------------------------------
    def set_model(self, model: Any) -> None:
        """Keep the model, write its graphs and read the embeddings' labels."""
        self._model = model
        self._close_writers()
        if self.write_graph and model.__class__.__name__ in ("Functional", "Sequential"):
            self._write_graphs(model)
        if self.embeddings_freq:
            self._configure_embeddings()

    def _write_graphs(self, model: Any) -> None:
        """Write the model's conceptual graph (its config, as Keras's callback does) and the op
        graph of its layers, which the Graphs dashboard opens on. As in Keras, a graph that
        cannot be made is no reason to fail: the training goes on (an op graph that cannot be made
        is said in a warning)."""
        try:
            config = model.to_json()
        except (TypeError, ValueError, NotImplementedError):
            return
        writer = self._writer("train")
        writer.add_summary(_keras_model_summary("keras", config), 0)
        try:
            graph = _layer_graph(model, json.loads(config)["config"])
        except (AttributeError, KeyError, IndexError, TypeError, ValueError) as error:
            warnings.warn("mxboard's Keras callback wrote no op graph of %s (%s: %s); the conceptual graph "
                          "is written" % (model.name, type(error).__name__, error), RuntimeWarning, stacklevel=2)
            return
        # A model without layers has none to draw.
        if graph.node:
            writer.add_summary(_op_graph_summary(graph), 0)

    def on_train_begin(self, logs: Optional[Dict[str, Any]] = None) -> None:
        self._global_train_batch = 0
        self._previous_epoch_iterations = 0.0

    def on_train_end(self, logs: Optional[Dict[str, Any]] = None) -> None:
        self._close_writers()

    def on_test_end(self, logs: Optional[Dict[str, Any]] = None) -> None:
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer and hasattr(optimizer, "iterations"):
            step = int(ops.convert_to_numpy(optimizer.iterations))
            writer = self._writer("validation")
            for name, value in (logs or {}).items():
                writer.add_scalar("evaluation_%s_vs_iterations" % name, value, step)

    def on_train_batch_begin(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self._global_train_batch += 1
        if self.write_steps_per_second:
            self._batch_start_time = time.time()

    def on_train_batch_end(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        step, every = self._global_train_batch, self.update_freq
        if not isinstance(every, int) or step % every:
            return
        writer = self._writer("train")
        if self.write_steps_per_second:
            writer.add_scalar("batch_steps_per_second", 1.0 / (time.time() - self._batch_start_time), step)
        if isinstance(logs, dict):
            for name, value in logs.items():
                writer.add_scalar("batch_" + name, value, step)

    def on_epoch_begin(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        if self.write_steps_per_second:
            self._previous_epoch_iterations = float(ops.convert_to_numpy(self.model.optimizer.iterations))
            self._epoch_start_time = time.time()

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self._log_epoch_metrics(epoch, logs)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)
        if self.embeddings_freq and epoch % self.embeddings_freq == 0:
            self._log_embeddings(epoch)

    # -- what is logged ----------------------------------------------------------------------------
    def _learning_rates(self) -> Dict[str, float]:
        optimizer = self.model.optimizer
        # The one a LossScaleOptimizer wraps.
        optimizer = getattr(optimizer, "inner_optimizer", optimizer)
        if hasattr(optimizer, "optimizers"):
            return {"learning_rate_" + opt.name: float(ops.convert_to_numpy(opt.learning_rate))
                    for opt in optimizer.optimizers}
        if isinstance(optimizer, optimizers.Optimizer):
            return {"learning_rate": float(ops.convert_to_numpy(optimizer.learning_rate))}
        return {}

    def _log_epoch_metrics(self, epoch: int, logs: Optional[Dict[str, Any]]) -> None:
        if not logs:
            return
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        validation = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        train.update(self._learning_rates())
        if self.write_steps_per_second:
            iterations = float(ops.convert_to_numpy(self.model.optimizer.iterations))
            train["steps_per_second"] = ((iterations - self._previous_epoch_iterations)
                                         / (time.time() - self._epoch_start_time))
        for run, values in (("train", train), ("validation", validation)):
            if values:
                writer = self._writer(run)
                for name, value in values.items():
                    writer.add_scalar("epoch_" + name, value, epoch)

    def _log_weights(self, epoch: int) -> None:
        """Log each weight's histogram and, if asked, its image. The histogram has mxboard's
        buckets, where tf.summary.histogram has 30 of equal width, and it is computed on the
        weight's own device (on a GPU, without waiting for it)."""
        writer = self._writer("train")
        for layer in self.model.layers:
            for weight in layer.weights:
                name = weight.path.replace(":", "_")
                value = ops.convert_to_tensor(weight)
                # Torch's Parameter.
                if hasattr(value, "detach"):
                    value = value.detach()
                elif backend.backend() == "jax":
                    # Keras's JAX trainer donates the weights' buffers to its next step, which
                    # deletes them before the writer thread reads them: the writer gets a copy
                    # of its own, made on the device without waiting for it.
                    value = ops.copy(value)
                writer.add_histogram(name + "/histogram", value, epoch)
                if self.write_images:
                    self._log_weight_as_image(writer, weight, name + "/image", epoch)

    def _log_weight_as_image(self, writer: SummaryWriter, weight: Any, tag: str, epoch: int) -> None:
        """Log a weight as an image, as Keras's callback does. A bias is an image 1 pixel high, a
        dense kernel is one image (wider than high), and a 1-D convolution's kernels are one image
        each (the first 3, in one grid); other shapes are not drawn. Values are clipped to [0, 1],
        as TensorFlow converts a float image."""
        image = ops.squeeze(weight)
        shape = image.shape
        if len(shape) == 1:
            image = ops.reshape(image, [1, shape[0], 1, 1])
        elif len(shape) == 2:
            if shape[0] > shape[1]:
                image = ops.transpose(image)
                shape = image.shape
            image = ops.reshape(image, [1, shape[0], shape[1], 1])
        elif len(shape) == 3:
            if backend.image_data_format() == "channels_last":
                image = ops.transpose(image, [2, 0, 1])
                shape = image.shape
            image = ops.reshape(image, [shape[0], shape[1], shape[2], 1])
        pixels = ops.convert_to_numpy(image)
        if pixels.ndim == 4 and pixels.shape[-1] in (1, 3, 4):
            pixels = np.clip(pixels[:MAX_IMAGES], 0, 1)
            if len(pixels) == 1:
                writer.add_image(tag, pixels[0], epoch, dataformats="HWC")
            # tf.summary.image's samples (3 at most), side by side in one grid image.
            else:
                writer.add_images(tag, pixels, epoch, dataformats="NHWC")

    def _configure_embeddings(self) -> None:
        """Read each Embedding layer's labels once. As in Keras, a dict that names a layer the
        model does not have is an error."""
        named = dict(self.embeddings_metadata) if isinstance(self.embeddings_metadata, dict) else {}
        self._embedding_labels = {}
        for layer in self.model.layers:
            if isinstance(layer, layers.Embedding):
                path = self.embeddings_metadata if isinstance(self.embeddings_metadata, str) else named.pop(
                    layer.name, None)
                self._embedding_labels[layer.name] = _read_labels(path) if path else (None, [])
        if named:
            raise ValueError("Unrecognized `Embedding` layer names passed to `keras.callbacks.TensorBoard` "
                             "`embeddings_metadata` argument: %s" % (named.keys(),))

    def _log_embeddings(self, epoch: int) -> None:
        writer = self._writer("train")
        for layer in self.model.layers:
            if layer.name in self._embedding_labels:
                header, rows = self._embedding_labels[layer.name]
                points = ops.convert_to_numpy(layer.embeddings)
                labels = rows[:len(points)] if len(rows) >= len(points) else None
                writer.add_embedding(layer.name, points, labels=labels, global_step=epoch,
                                     metadata_header=header if labels is not None else None)


# This callback's own arguments, Keras's callback's: the others go to the writers.
_OWN_ARGUMENTS = ("log_dir", "histogram_freq", "write_graph", "write_images", "write_steps_per_second", "update_freq",
                  "profile_batch", "embeddings_freq", "embeddings_metadata")


def _read_labels(path: str) -> Tuple[Optional[List[str]], List[Any]]:
    """Read a Projector metadata file: one label per line, or a header line and then rows of
    tab-separated columns."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if lines and "\t" in lines[0]:
        return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]
    return None, lines
