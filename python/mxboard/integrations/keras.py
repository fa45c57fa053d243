"""Keras 3's TensorBoard callback, writing through mxboard: no TensorFlow needed, on any backend.

    from mxboard.integrations.keras import TensorBoard
    model.fit(x, y, validation_split=0.2, callbacks=[TensorBoard("logs", histogram_freq=1)])

It keeps the arguments, defaults, runs (`log_dir/train`, `log_dir/validation`), tags and steps of
`keras.callbacks.TensorBoard`: `epoch_<metric>` every epoch, `batch_<metric>` every `update_freq`
batches, `evaluation_<metric>_vs_iterations` after each evaluation, weight histograms and images
every `histogram_freq` epochs, and the model's conceptual graph. Embeddings (`embeddings_freq`)
are written in the form the Projector reads, whereas Keras's own callback saves a `.weights.h5`
file that the Projector cannot open. Keras's profiler needs TensorFlow's or JAX's, so a
`profile_batch` other than 0 is an error that names the alternatives. Importing this module
imports keras.
"""
from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
from keras import backend, callbacks, layers, ops, optimizers

from .. import SummaryWriter
from ..proto import DataType, Summary, SummaryMetadata, TensorProto, TensorShapeProto

__all__ = ["TensorBoard"]

MAX_IMAGES = 3  # tf.summary.image's max_outputs, which Keras's callback leaves at its default


def _keras_model_summary(tag: str, json_config: str) -> Any:
    """The model's config as the Graphs dashboard's conceptual graph (Keras's keras_model_summary):
    a Summary of one string tensor, under the plugin name `graph_keras_model`."""
    config = TensorProto(dtype=DataType.DT_STRING, tensor_shape=TensorShapeProto(),
                         string_val=[json_config.encode("utf-8")])
    plugin = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="graph_keras_model", content=b"1"))
    return Summary(value=[Summary.Value(tag=tag, metadata=plugin, tensor=config)])


class TensorBoard(callbacks.Callback):  # type: ignore[misc]  # keras's types are not checked here
    """`keras.callbacks.TensorBoard`, written by mxboard.

    Args:
        log_dir: where the runs go (a path, or an `s3://`, `gs://` or `az://` URL).
        histogram_freq: epochs between two sets of weight histograms (0 logs none).
        write_graph: write the model's conceptual graph (a Functional or Sequential model's
            config, as Keras does). The op graph of a `tf.function` exists only with TensorFlow.
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
        ValueError: a `profile_batch` other than 0, or an `update_freq` that is not "epoch",
            "batch" or an int of 1 or more.
    """

    def __init__(self, log_dir: Union[str, "os.PathLike[str]"] = "logs", histogram_freq: int = 0,
                 write_graph: bool = True, write_images: bool = False, write_steps_per_second: bool = False,
                 update_freq: Union[str, int] = "epoch", profile_batch: Union[int, str, Tuple[int, int]] = 0,
                 embeddings_freq: int = 0, embeddings_metadata: Optional[Union[str, Dict[str, str]]] = None,
                 **writer_args: Any) -> None:
        super().__init__()
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
        """Keep the model, write its conceptual graph and read the embeddings' labels."""
        self._model = model
        self._close_writers()
        if self.write_graph and model.__class__.__name__ in ("Functional", "Sequential"):
            try:
                config = model.to_json()
            except (TypeError, ValueError, NotImplementedError):  # as in Keras, a graph is no reason to fail
                config = None
            if config is not None:
                self._writer("train").add_summary(_keras_model_summary("keras", config), 0)
        if self.embeddings_freq:
            self._configure_embeddings()

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
        optimizer = getattr(optimizer, "inner_optimizer", optimizer)  # the one a LossScaleOptimizer wraps
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
                if hasattr(value, "detach"):  # torch's Parameter
                    value = value.detach()
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
            else:  # tf.summary.image's samples (3 at most), side by side in one grid image
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


def _read_labels(path: str) -> Tuple[Optional[List[str]], List[Any]]:
    """Read a Projector metadata file: one label per line, or a header line and then rows of
    tab-separated columns."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if lines and "\t" in lines[0]:
        return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]
    return None, lines
