"""The calls of the Histograms, PR Curves, Mesh, Projector, HParams, Graphs and Custom Scalars
dashboards. Parts of `SummaryWriter` (writer.py); `WriterCore` (writer_core.py) gives them `_log`, `_put`,
`_queue` and `_ready`: each call checks and captures its arguments (checks.py) and queues a summary builder
(summaries/) or a task (projector.py)."""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Optional

import numpy as np

from . import checks, convert, projector
from ._format.names import components
from .callsite import call_site
from .compat import peer_names
from .mxnet_capture import DeviceHistogram
from .summaries._common import tensor_summary
from .summaries.custom_scalars import custom_scalars_summary, layout_proto
from .summaries.histogram import histogram_of, histogram_raw_summary
from .summaries.hparams import hparams_summary
from .summaries.mesh import mesh_summary
from .summaries.pr_curve import pr_curve_raw_summary, pr_curve_summary
from .writer_core import WriterCore

__all__ = ["HistogramCalls", "LayoutCalls", "ModelCalls"]


def _pr_curve_peer_order(args):
    """add_pr_curve(tag, labels, predictions, N[, M]): mxboard 0.1.0 took (num_thresholds,
    global_step) there, tensorboardX and torch take (global_step, num_thresholds). A lone N is the
    step (the peers' idiom: tensorboardX's own demo passes it so; mxboard 0.1.0's examples pass
    num_thresholds by keyword); with M too, 0.1.0's order holds, unless N < 2 cannot be
    num_thresholds. Either reading is said in a warning: by keyword, nothing is guessed."""
    if len(args) < 4:
        return False
    lone = len(args) == 4
    peers = lone or (isinstance(args[3], (int, float, np.integer)) and args[3] < 2)
    if lone:
        message = "a lone fourth positional argument is read as global_step (tensorboardX's and torch's order)"
    elif peers:
        message = "positional (global_step, num_thresholds): the fourth, below 2, is no num_thresholds"
    else:
        message = "positional (num_thresholds, global_step), mxboard 0.1.0's order"
    warnings.warn("add_pr_curve: %s; pass num_thresholds= and global_step= by keyword" % message, UserWarning,
                  stacklevel=3)
    return peers


class HistogramCalls(WriterCore):
    """`SummaryWriter`'s histogram, PR-curve and tensor calls."""

    def add_histogram(self, tag: str, values: Any, global_step: Optional[int] = None, bins: Any = "default",
                      walltime: Optional[float] = None, max_bins: Optional[int] = None) -> None:
        """A histogram of `values` (any shape), for the Histograms and Distributions dashboards.

        Args:
            tag: the chart's name.
            values: an array of real numbers (numpy, NDArray, torch, list...). NaN and +-Inf
                cannot be binned: they are dropped, with one warning a tag.
            bins: 'default' (TensorBoard's exponential buckets, trimmed to the occupied range),
                'tensorflow' (the same), an int, a numpy rule name ('auto', 'fd', 'doane',
                'scott', 'stone', 'rice', 'sturges', 'sqrt') or increasing bin edges.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.
            max_bins: at most this many buckets: neighbours are merged (tensorboardX's and torch's).

        Raises:
            TypeError, ValueError: values that are empty or not real numbers; bad bins.

        Example:
            >>> for name, param in net.collect_params().items():
            ...     sw.add_histogram(name, param.data(), global_step=step)
        """
        bins = checks.bins(bins)
        max_bins = None if max_bins is None else checks.max_bins(max_bins)
        if convert.on_accelerator(values) and not (isinstance(bins, str) and bins != "default"):
            # counted on the GPU: only the counts cross to the host
            if not values.size:
                raise ValueError("values is empty (shape %s)" % (values.shape,))
            values = DeviceHistogram(values, bins)
        else:  # numpy, or a CPU NDArray: one engine copy, binned on the writer thread
            values = convert.capture(values, "values")
        warn = self._worker.warner(call_site())  # a NaN the writer thread finds: shown at this call's line
        self._log(histogram_of, tag, (values, bins, max_bins, warn), global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: float, sum: float, sum_squares: float,
                          bucket_limits: Any, bucket_counts: Any, global_step: Optional[int] = None,
                          walltime: Optional[float] = None) -> None:
        """A histogram counted already (tensorboardX's signature).

        Args:
            tag: the chart's name.
            min: the lowest value (the first bucket's left edge).
            max, num, sum, sum_squares: the highest value (the last bucket's right edge as
                TensorBoard draws it), how many, their sum and sum of squares (written as given,
                for readers such as tbparse; TensorBoard's dashboards show the buckets).
            bucket_limits: the buckets' right edges, increasing (the last may be +inf).
            bucket_counts: values in each bucket, finite and >= 0.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            ValueError: lengths that differ, limits that decrease or are NaN, counts < 0.

        Example:
            >>> sw.add_histogram_raw("h", min=0, max=3, num=6, sum=9, sum_squares=17,
            ...                      bucket_limits=[1, 2, 3], bucket_counts=[1, 2, 3])
        """
        fields = checks.histogram_raw(min, max, num, sum, sum_squares, bucket_limits, bucket_counts)
        self._log(histogram_raw_summary, tag, (fields,), global_step, walltime)

    @peer_names(peer_order=("tag", "labels", "predictions", "global_step", "num_thresholds", "weights", "walltime"),
                is_peer_order=_pr_curve_peer_order)
    def add_pr_curve(self, tag: str, labels: Any, predictions: Any, num_thresholds: int = 127,
                     global_step: Optional[int] = None, weights: Any = None,
                     walltime: Optional[float] = None) -> None:
        """A precision-recall curve for the PR Curves dashboard.

        Args:
            tag: the curve's name.
            labels: the truth, 0/1 or bool, one a prediction.
            predictions: probabilities in [0, 1], finite.
            num_thresholds: thresholds >= 2. By keyword: mxboard 0.1.0 took it fourth, the peers
                take the step there; a lone fourth positional argument is read as the step, and
                with a fifth as (num_thresholds, global_step), each with a warning.
            weights: a weight a prediction (broadcast to the labels' shape).
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: shapes that differ, labels outside {0, 1}, predictions NaN.

        Example:
            >>> sw.add_pr_curve("pr/cat", labels == 3, probabilities[:, 3], global_step=epoch)
        """
        self._log(pr_curve_summary, tag, checks.pr_curve(labels, predictions, num_thresholds, weights),
                  global_step, walltime)

    def add_pr_curve_raw(self, tag: str, true_positive_counts: Any, false_positive_counts: Any,
                         true_negative_counts: Any, false_negative_counts: Any, precision: Any, recall: Any,
                         global_step: Optional[int] = None, num_thresholds: Optional[int] = None, weights: Any = None,
                         walltime: Optional[float] = None) -> None:
        """A precision-recall curve counted already (tensorboardX's signature).

        Args:
            tag: the curve's name.
            true_positive_counts, false_positive_counts, true_negative_counts,
                false_negative_counts, precision, recall: one value a threshold each.
            num_thresholds: how many thresholds each column has (None: their length).
            weights: accepted and ignored, as in tensorboardX.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            ValueError: a column whose length is not `num_thresholds`.

        Example:
            >>> sw.add_pr_curve_raw("pr", tp, fp, tn, fn, precision, recall, num_thresholds=len(tp))
        """
        columns, num_thresholds = checks.pr_curve_raw({
            "true_positive_counts": true_positive_counts, "false_positive_counts": false_positive_counts,
            "true_negative_counts": true_negative_counts, "false_negative_counts": false_negative_counts,
            "precision": precision, "recall": recall}, num_thresholds)
        self._log(pr_curve_raw_summary, tag, (*columns, num_thresholds), global_step, walltime)

    def add_tensor(self, tag: str, tensor: Any, global_step: Optional[int] = None,
                   walltime: Optional[float] = None) -> None:
        """A tensor as it is (torch's add_tensor): the TensorProto of `tensor` under the plugin
        name 'tensor', which TensorBoard keeps and no dashboard draws (read it back with its
        loaders or `mxboard.reader.read_events`).

        Args:
            tag: the tensor's name.
            tensor: an array of numbers (or of str).
            global_step: the step. Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError: an array of another kind.

        Example:
            >>> sw.add_tensor("confusion", confusion_matrix, global_step=epoch)
        """
        self._log(tensor_summary, tag, (checks.tensor_text(convert.capture(tensor, "tensor", numeric=False)),),
                  global_step, walltime)


def _refuse_points_on_own_curves(metrics: Mapping, logged: Mapping[str, int], global_step: Optional[int]) -> None:
    """`add_hparams(in_run=True)` never adds a point to a curve the run logs: a number for such a
    tag would be one more point at `global_step` (0 by default), a step going back, which
    TensorBoard reads as a restart (100 points logged, 1 shown). None names the curve itself."""
    for tag, value in metrics.items():
        if value is not None and isinstance(tag, str) and tag in logged:
            raise ValueError(
                "add_hparams: metric_dict[%r] is a number, but this run logs %r with add_scalar: it would add a point "
                "at step %d to that curve, and TensorBoard would show only the points from it on (a step going back "
                "reads as a restart). Give {%r: None}: the dashboard shows the curve's last value."
                % (tag, tag, 0 if global_step is None else global_step, tag))


class ModelCalls(WriterCore):
    """`SummaryWriter`'s graph, embedding and mesh calls."""

    @peer_names({"model": "net", "input_to_model": "input_shape"})
    def add_graph(self, net: Any, input_shape: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """The network's graph for the Graphs dashboard.

        Args:
            net: an `mx.sym.Symbol`, or a Gluon `HybridBlock` (the graph it cached once
                hybridized and run forward; else traced with a symbolic input `data`); or a
                torch `nn.Module` (traced by torch's own tracer, as torch's writer and
                tensorboardX do).
            input_shape: for MXNet, a tuple for the input, or `{input name: shape}`: the edges
                then carry tensor shapes. For torch, the example input to trace with (torch's
                `input_to_model`: a tensor or a tuple of them).
            verbose, use_strict_trace: torch's tracer's options.

        Raises:
            TypeError: a net of another kind.
            ValueError: a torch module without an example input.

        Example:
            >>> net.hybridize(); net(x)
            >>> sw.add_graph(net)
            >>> sw.add_graph(torch_model, torch.rand(1, 3, 32, 32))
        """
        from .graph import graph_def, graph_event, is_torch_module, torch_graph_def

        self._ready()
        if is_torch_module(net):  # traced here: the module is the caller's, and may change
            serialized = torch_graph_def(net, input_shape, verbose, use_strict_trace)
        else:
            serialized = graph_def(net, input_shape).SerializeToString()
        self._put(graph_event, (serialized,))

    @peer_names({"prototxt": "onnx_model_file"})  # torch's name
    def add_onnx_graph(self, onnx_model_file: Any) -> None:
        """An ONNX model's graph for the Graphs dashboard (needs the `onnx` package).

        Args:
            onnx_model_file: a path, or a loaded `onnx.ModelProto`.

        Raises:
            ImportError: `onnx` is not installed.

        Example:
            >>> sw.add_onnx_graph("model.onnx")
        """
        from .graph import graph_event, onnx_graph_def

        self._ready()
        self._put(graph_event, (onnx_graph_def(onnx_model_file).SerializeToString(),))

    def add_openvino_graph(self, xmlname: str) -> None:
        """tensorboardX's OpenVINO graph: not drawn by mxboard.

        Raises:
            NotImplementedError: always, saying what to do instead.
        """
        raise NotImplementedError("add_openvino_graph(%r): mxboard does not read OpenVINO IR; export the model "
                                  "to ONNX and log it with add_onnx_graph" % (xmlname,))

    @peer_names({"mat": "embedding", "metadata": "labels", "label_img": "images"},
                peer_order=("mat", "metadata", "label_img", "global_step", "tag", "metadata_header"),
                is_peer_order=lambda args: not isinstance(args[0], str))
    def add_embedding(self, tag: str = "default", embedding: Any = None, labels: Any = None, images: Any = None,
                      global_step: Optional[int] = None, metadata_header: Optional[Sequence[str]] = None) -> None:
        """Data points for the Projector.

        Assets go to `logdir/<tag>[_<step>]/`, registered in the logdir's projector_config.pbtxt
        (safe when many writers and processes share the logdir). tensorboardX's
        `add_embedding(mat, metadata, label_img, global_step, tag)` works as well (an array
        first is its order).

        Args:
            tag: the embedding's name.
            embedding: (N, D) points.
            labels: N labels, or N rows of labels with `metadata_header` naming the columns.
            images: (N, C, H, W) thumbnails for the sprite.
            global_step: a step, to keep one embedding a step.
            metadata_header: the labels' column names.

        Raises:
            TypeError, ValueError: shapes or label counts that disagree.

        Example:
            >>> sw.add_embedding("features", features, labels=list(y), images=x[:, None])
        """
        self._ready()
        tag = checks.tag(tag)
        if embedding is None:
            raise TypeError("add_embedding() needs the embedding matrix (`embedding`, or `mat`)")
        matrix, labels, images, header = checks.embedding(embedding, labels, images, metadata_header)
        step = None if global_step is None else checks.step(global_step)
        self._worker.run(projector.write_embedding, tag, step, matrix, labels, header, images)  # files in place
        self._report()

    def add_mesh(self, tag: str, vertices: Any, colors: Any = None, faces: Any = None,
                 config_dict: Optional[dict] = None, global_step: Optional[int] = None,
                 walltime: Optional[float] = None) -> None:
        """A mesh or point cloud for the Mesh dashboard.

        Args:
            tag: the mesh's name.
            vertices: (B, N, 3) or (N, 3) floats.
            colors: (B, N, 3) RGB, integers in [0, 255].
            faces: (B, F, 3) integer vertex indices.
            config_dict: JSON data for the viewer (copied at the call).
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: shapes that disagree, indices out of range, bad colors.

        Example:
            >>> sw.add_mesh("cloud", np.random.rand(100, 3), colors=np.full((100, 3), 200))
        """
        self._log(mesh_summary, tag, checks.mesh(vertices, colors, faces, config_dict), global_step, walltime)


class LayoutCalls(WriterCore):
    """`SummaryWriter`'s hparams and custom-scalar layout calls."""

    # The Custom Scalars charts logged so far, replaced whole by each call (never changed in
    # place); the writer's `_layout_lock` (writer_core.py: one a writer) makes a call's merge and
    # its queueing one step, so that the last layout queued holds every call's charts.
    _layout: Mapping[str, Mapping[str, Any]] = MappingProxyType({})

    @peer_names({"name": "run_name"}, peer_order=("hparam_dict", "metric_dict", "name", "global_step"),
                is_peer_order=lambda args: len(args) > 2 and isinstance(args[2], str))
    def add_hparams(self, hparam_dict: Mapping, metric_dict: Mapping, hparam_domain_discrete: Optional[Mapping] = None,
                    run_name: Optional[str] = None, global_step: Optional[int] = None, *,
                    in_run: bool = False) -> None:
        """One run of a hyper-parameter search for the HParams dashboard.

        By default (the peers' way), written to a sub-run `logdir/<run_name>/` of its own: the
        hparams, and the metrics as scalars there. With `in_run=True`, written into this writer's
        own run instead, so that the dashboard shows the run's own curves on the hparams' row;
        a metric given as None is a tag the run logs itself (its last value is shown). torch's
        signature; tensorboardX's `(hparam_dict, metric_dict, name, global_step)` works as well
        (a str third is its order).

        Args:
            hparam_dict: `{name: bool, number or str}`.
            metric_dict: `{metric tag: number}`. With `in_run`, a number or None; a key
                `(tag, name)` with None names the run's own `add_scalar(tag, {name: ...})` line.
            hparam_domain_discrete: `{name: [the values it may take]}`.
            run_name: the sub-run's name. Default: the time. Not with `in_run`.
            global_step: the metrics' step. Default 0.
            in_run: into this writer's run, not a sub-run of its own.

        Raises:
            TypeError, ValueError: values of other types, a domain without the value, a run_name
                with `in_run`.

        Example:
            >>> sw.add_hparams({"lr": 0.1, "batch": 64}, {"hparam/accuracy": 0.93})
            >>> sw.add_hparams({"lr": 0.1}, {"loss/validation": None}, in_run=True)
            >>> sw.add_hparams({"lr": 0.1}, {("loss", "validation"): None}, in_run=True)
        """
        self._ready()
        if in_run and run_name is not None:
            raise ValueError("add_hparams: run_name=%r with in_run=True: the hparams go into this writer's run"
                             % (run_name,))
        values, metrics, domains = checks.hparams(hparam_dict, metric_dict, hparam_domain_discrete, in_run)
        if in_run:
            _refuse_points_on_own_curves(metrics, self._scalars.ids, global_step)
        step, now = self._stamp(global_step, None)
        run_file = None  # in_run: the main file
        if not in_run:
            run_file = self._open_run(checks.tag(run_name, "run_name") if run_name is not None else "%.6f" % now)
        self._scalars.add_to_file(run_file, {tag: value for tag, value in metrics.items() if value is not None}, step,
                                  now)
        names = [(key[0], "/".join(components(*key)), "%s (%s)" % key) if isinstance(key, tuple) else key
                 for key in metrics]  # (tag, name): "accuracy (validation)", not accuracy/validation.accuracy
        self._put(hparams_summary, (values, names, now, now, domains), global_step, now, run=run_file)

    def add_custom_scalars(self, layout: Mapping) -> None:
        """The Custom Scalars dashboard's charts (tensorboardX's layout), merged with this
        writer's earlier ones (a chart of the same category and title is replaced): TensorBoard
        shows a run's last layout, so each call writes them all.

        Args:
            layout: `{category: {title: ["Multiline", [tags]] or ["Margin", [value, lower,
                upper]]}}`.

        Raises:
            TypeError, ValueError: a layout of another form.

        Example:
            >>> sw.add_custom_scalars({"loss": {"train vs val": ["Multiline", ["loss/train", "loss/val"]]}})
        """
        layout_proto(layout)  # checked as given
        self._ready()
        with self._layout_lock:  # every call's charts in one layout: TensorBoard shows a run's last
            merged = {category: dict(charts) for category, charts in self._layout.items()}
            for category, charts in layout.items():
                merged.setdefault(category, {}).update(charts)
            self._layout = merged
            self._put(custom_scalars_summary, (layout_proto(merged),))

    def add_custom_scalars_multilinechart(self, tags: Sequence[str], category: str = "default",
                                          title: str = "untitled") -> None:
        """A Custom Scalars chart of `tags` as lines (tensorboardX's shorthand).

        Args:
            tags: the scalar tags to draw.
            category: the chart's section.
            title: the chart's title.
        """
        self.add_custom_scalars({category: {title: ["Multiline", list(tags)]}})

    def add_custom_scalars_marginchart(self, tags: Sequence[str], category: str = "default",
                                       title: str = "untitled") -> None:
        """A Custom Scalars chart of a value between two bounds (tensorboardX's shorthand).

        Args:
            tags: the scalar tags [value, lower, upper].
            category: the chart's section.
            title: the chart's title.
        """
        self.add_custom_scalars({category: {title: ["Margin", list(tags)]}})
