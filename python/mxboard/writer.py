"""`SummaryWriter`: the public face. Each call checks its arguments and captures its data on the
caller's thread (checks.py), then queues one item for the writer thread through the worker's
verbs (worker.py); building, encoding and writing happen there. After queueing, a call hears
what the writer thread has to report (an error raised, or a closed writer), so that a bad item
never costs a later call its data.
"""
import logging
import os
import socket
import sys
import warnings
import weakref
from collections.abc import Mapping
from datetime import datetime
from time import time as _now

import numpy as np

from . import checks, convert, projector
from .compat import peer_names
from .storage import open_storage
from .summaries.audio import audio_summary
from .summaries.custom_scalars import custom_scalars_summary, layout_proto
from .summaries.hparams import hparams_summary
from .summaries.histogram import histogram_of, histogram_raw_summary
from .summaries.image import boxes_summary, figure_pixels, image_summary, video_summary
from .summaries.mesh import mesh_summary
from .summaries.pr_curve import pr_curve_raw_summary, pr_curve_summary
from .summaries.text import text_summary
from .mxnet_capture import DeviceHistogram, ScalarSlots
from .scalars import Scalars
from .worker import Record, Task, Worker, WriterError, closed_error

__all__ = ["SummaryWriter"]

log = logging.getLogger("mxboard")

# tensorboardX's and torch's positional order for the constructor, taken when the second
# positional argument is a str (their `comment`; mxboard's `max_queue` cannot be one)
PEER_ORDER = ("logdir", "comment", "purge_step", "max_queue", "flush_secs", "filename_suffix", "write_to_disk")


def _audio_order(args, kwargs):
    """add_audio(tag, audio, 5): a rate below 1 kHz given third is a step in the peers' order."""
    if len(args) > 2 and isinstance(args[2], (int, float, np.number)) and not isinstance(args[2], bool) \
            and args[2] < 1000:
        raise ValueError(
            "add_audio: the third argument is sample_rate in mxboard's order (0.1.0's); %r Hz is "
            "no audio rate. tensorboardX and torch take global_step there: write "
            "add_audio(tag, audio, global_step=%r, sample_rate=...), or sample_rate=%r by keyword "
            "if you mean it" % (args[2], args[2], args[2]))


def _pr_curve_order(args, kwargs):
    """add_pr_curve(tag, labels, predictions, 10): thresholds here, the step in the peers' order."""
    if len(args) == 4 and "global_step" not in kwargs:
        warnings.warn(
            "add_pr_curve: the fourth argument (%r) is num_thresholds in mxboard's order (0.1.0's); "
            "tensorboardX and torch take global_step there. Pass num_thresholds= or global_step= "
            "by keyword" % (args[3],), UserWarning, stacklevel=3)


class SummaryWriter:
    """Writes TensorBoard event files into `logdir`, on a background thread.

    Arguments are mxboard 0.1.0's: `max_queue` is how many array summaries (histograms,
    images...) of 1 MiB or more may wait for the writer thread before `add_*` blocks (smaller
    ones share a slot by size, up to 64 to a slot; scalars are batched, 8192 to a slot; array
    data is also bounded to 64 MiB); `flush_secs` is the longest
    time anything waits before it reaches the file, 2 s by default so a running TensorBoard
    shows new points within seconds; `filename_suffix` ends the event file's name; `verbose`
    logs where the file is (at INFO on the `mxboard` logger).
    """

    @peer_names({"log_dir": "logdir"}, peer_order=PEER_ORDER,
                is_peer_order=lambda args: len(args) > 1 and isinstance(args[1], str))
    def __init__(self, logdir=None, max_queue=10, flush_secs=2, filename_suffix=None, verbose=True, *,
                 comment="", purge_step=None, write_to_disk=True):
        if logdir is None:  # the peers' default: runs/<date>_<host><comment>
            if not isinstance(comment, str):
                raise TypeError("comment must be a str; got %s" % type(comment).__name__)
            logdir = os.path.join("runs", "%s_%s%s" % (datetime.now().strftime("%b%d_%H-%M-%S"),
                                                       socket.gethostname(), comment))
        if isinstance(logdir, bytes) or not isinstance(logdir, (str, os.PathLike)):
            raise TypeError("logdir must be a str or os.PathLike; got %s" % type(logdir).__name__)
        if isinstance(max_queue, bool) or not isinstance(max_queue, int) or max_queue < 1:
            raise ValueError("max_queue must be an int >= 1; got %r" % (max_queue,))
        if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)) or not flush_secs > 0:
            raise ValueError("flush_secs must be a number > 0; got %r" % (flush_secs,))
        if filename_suffix is not None and not isinstance(filename_suffix, str):
            raise TypeError("filename_suffix must be a str or None; got %s" % type(filename_suffix).__name__)
        if filename_suffix and ("/" in filename_suffix or "\\" in filename_suffix or "\0" in filename_suffix):
            raise ValueError("filename_suffix must not contain path separators or NUL: %r" % filename_suffix)
        purge_step = None if purge_step is None else checks.step(purge_step, "purge_step")
        if purge_step is not None and purge_step < 0:
            raise ValueError("purge_step must be >= 0; got %d" % purge_step)
        self._logdir = os.fspath(logdir)
        self._storage = open_storage(self._logdir, write_to_disk)
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._suffix = filename_suffix or ""
        self._verbose = verbose
        self._closed = False
        self._open(purge_step)

    @property
    def closed(self):
        """Whether `close()` was called (and `reopen()` not since)."""
        return self._closed

    @property
    def logdir(self):
        """Where this writer writes (tensorboardX's attribute; torch's is `log_dir`)."""
        return self._logdir

    log_dir = logdir

    def _open(self, purge_step=None):
        """Start a worker and the main event file (again after reopen, or in a forked child).
        `purge_step`: the main file begins as a restart at that step (the peers' purge_step)."""
        slots = ScalarSlots()  # where NDArray scalars are snapshotted
        self._worker = Worker(self._storage, self._flush_secs, self._max_queue, slots.read)
        self._finalizer = weakref.finalize(self, _close_unattended, self._worker)
        self._finalizer.atexit = False  # at exit, lifecycle.py closes every worker (and tells)
        self._files = []  # every event file opened, for export_scalars
        self._group_files = set()  # the sub-run files of named scalars
        self._file = self._new_file(self._storage.root, purge_step)
        self._scalars = Scalars(self._worker, self._file, slots, self._open_run)
        self._cleared = {}  # event file path -> offset export_scalars starts from

    def _new_file(self, directory, purge_step=None):
        event_file = self._worker.open_file(directory, self._suffix, purge_step)
        if event_file.path is not None:  # None: write_to_disk=False
            self._files.append(event_file)
        if self._verbose:
            log.info("mxboard: writing events to %s", event_file.path or "nowhere (write_to_disk=False)")
        return event_file

    # -- scalars: the hot path (scalars.py) --------------------------------------------------
    def add_scalar(self, tag, value=None, global_step=None, walltime=None, **peer):
        """Log a number under `tag`. `value` is a number, numpy scalar, one-element array or
        NDArray; or a `(name, value)` pair, a `[name, value]` list, or a mapping of them: each
        name one line in the same chart, written to the sub-run `logdir/<tag>/<name>/`.
        The peers' `scalar_value=` names `value`; torch's `new_style` and `double_precision`
        are accepted (TensorBoard shows the same chart either way; values are float32)."""
        kind = type(value)
        if kind is not float or peer:
            if peer:
                return self._add_scalar_peer(tag, value, global_step, walltime, **peer)
            if kind is dict or kind is tuple or kind is list or isinstance(value, Mapping):
                return self._add_scalar_group(tag, value, global_step, walltime)
            if convert.is_ndarray(value):
                self._ready()
                self._scalars.add_ndarray(tag, value, *checks.stamp(global_step, walltime))
                return self._report()
            value = convert.to_float(value)
        scalars = self._scalars
        try:
            series = scalars.ids[tag]
        except (KeyError, TypeError):
            self._ready()
            scalars = self._scalars  # a forked child's own
            series = scalars.series(tag)
        if global_step is None:
            global_step = 0
        elif type(global_step) is not int or not 0 <= global_step < 0x7FFFFFFFFFFFFFFF:
            global_step = checks.step(global_step)
        scalars.append(series, value, global_step, _now() if walltime is None else checks.walltime(walltime))
        if self._worker.attention and self._report_or_reopen():  # a forked child: once more
            self.add_scalar(tag, value, global_step, walltime)

    def _add_scalar_peer(self, tag, value, global_step, walltime, scalar_value=None, new_style=False,
                         double_precision=False):
        if scalar_value is not None:
            if value is not None:
                raise TypeError("add_scalar() got both 'value' and 'scalar_value' (tensorboardX's name for it)")
            value = scalar_value
        return self.add_scalar(tag, value, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Lines in one chart, as `add_scalar(main_tag, dict)`: each name's values go to the sub-run
        `logdir/<main_tag>/<name>/` (tensorboardX's layout; torch's is `<main_tag>_<name>`)."""
        if not isinstance(tag_scalar_dict, Mapping):
            raise TypeError("tag_scalar_dict must be a dict of name -> value; got %s"
                            % type(tag_scalar_dict).__name__)
        self._add_scalar_group(main_tag, tag_scalar_dict, global_step, walltime)

    def _add_scalar_group(self, tag, group, global_step, walltime):
        self._ready()
        self._scalars.add_group(tag, group, *checks.stamp(global_step, walltime))
        self._report()

    def _open_run(self, tag, name):
        """The event file of the sub-run `logdir/<tag>/<name>/` of a named scalar."""
        run_file = self._new_file(self._storage.subdir(tag, name))
        self._group_files.add(run_file)
        return run_file

    # -- every other kind goes through here -------------------------------------------------
    def _log(self, build, tag, args, global_step=None, walltime=None, event_file=None):
        """Queue `build(tag, *args)` (a Summary or an Event; `args` checked already) for the
        writer thread, then raise what it has to report."""
        self._ready()
        tag = checks.tag(tag)
        self._put(build, (tag,) + tuple(args), global_step, walltime, event_file)

    def _put(self, build, args, global_step=None, walltime=None, event_file=None):
        """Queue `build(*args)` (a Summary or an Event) for the writer thread."""
        step, wall = checks.stamp(global_step, walltime)
        self._queue(Record(event_file or self._file, build, args, step, wall))

    def _queue(self, item):
        self._worker.put(item)
        self._report()

    def _ready(self):
        """Before a call queues its item: a closed writer raises; a forked child opens a worker
        (and files) of its own."""
        if self._closed:
            raise closed_error("this SummaryWriter (logdir %r)" % self._logdir)
        if self._worker.forked:
            self._reopen_in_child()

    def _report(self):
        """After a call queued its item: raise what the writer thread has to report."""
        if self._worker.attention:
            self._worker.report()

    def _report_or_reopen(self):
        """The scalar hot path's one check, after queueing: raise what the writer thread has to
        report; True in a forked child, which now has a worker of its own for the call."""
        if self._worker.forked:
            self._reopen_in_child()
            return True
        self._worker.report()
        return False

    def _reopen_in_child(self):
        """A forked child logs to files of its own, named with its own pid (closed at its exit,
        multiprocessing's too: lifecycle.py)."""
        self._finalizer.detach()
        self._open()

    # -- arrays -------------------------------------------------------------------------------
    def add_histogram(self, tag, values, global_step=None, bins="default", walltime=None):
        """Histogram of `values` (any shape). `bins`: 'default' (TensorBoard's exponential
        buckets, trimmed to the occupied range), an int, a numpy rule name ('auto', 'fd',
        'doane', 'scott', 'stone', 'rice', 'sturges', 'sqrt') or increasing bin edges. NaN and
        ±Inf cannot be binned: they are dropped, with one warning a tag."""
        bins = checks.bins(bins)
        if convert.on_accelerator(values) and not (isinstance(bins, str) and bins != "default"):
            # counted on the GPU: only the counts cross to the host
            if not values.size:
                raise ValueError("values is empty (shape %s)" % (values.shape,))
            values = DeviceHistogram(values, bins)
        else:  # numpy, or a CPU NDArray: one engine copy, binned on the writer thread
            values = convert.capture(values, "values")
        self._log(histogram_of, tag, (values, bins), global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step=None, walltime=None):
        """A histogram counted already (tensorboardX's signature): bucket `i` holds
        `bucket_counts[i]` values up to `bucket_limits[i]`, the first from `min`. TensorBoard's
        histogram plugin draws buckets only: `max`, `num`, `sum` and `sum_squares` are accepted
        for compatibility and not written (the plugin would not show them)."""
        self._log(histogram_raw_summary, tag, checks.histogram_raw(min, bucket_limits, bucket_counts),
                  global_step, walltime)

    @peer_names({"img_tensor": "image"})
    def add_image(self, tag, image, global_step=None, walltime=None, dataformats="CHW"):
        """An image: float pixels in [0, 1] (clipped, never wrapped), or integers in [0, 255].
        `dataformats`: 'CHW' (default; a 2-D array is taken as HW and a 4-D one as a batch NCHW
        shown as a grid, as mxboard did), 'HWC', 'HW', 'NCHW' or 'NHWC'. 1, 3 or 4 channels."""
        if dataformats == "CHW" and getattr(image, "ndim", None) in (2, 4):  # mxboard took these
            dataformats = "HW" if image.ndim == 2 else "NCHW"
        self._log(image_summary, tag, checks.image(image, dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """A batch of images, shown as one grid (tensorboardX's add_images)."""
        self._log(image_summary, tag, checks.image(img_tensor, dataformats, "img_tensor"), global_step, walltime)

    def add_image_with_boxes(self, tag, img_tensor, box_tensor, global_step=None, walltime=None, rescale=1,
                             dataformats="CHW", labels=None):
        """An image with boxes drawn on it (tensorboardX's and torch's signature): `box_tensor`
        (N, 4) of [xmin, ymin, xmax, ymax] in pixels, `labels` one str a box, `rescale` scales
        the image and its boxes."""
        pixels, dataformats = checks.image(img_tensor, dataformats, "img_tensor")
        boxes, labels, scale = checks.boxes(box_tensor, labels, rescale, dataformats, pixels.shape)
        self._log(boxes_summary, tag, (pixels, dataformats, boxes, labels, scale), global_step, walltime)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        """A video, (N, T, C, H, W) or (T, C, H, W), float in [0, 1] or uint8, as an animated GIF."""
        self._log(video_summary, tag, checks.video(vid_tensor, fps), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them, shown as a grid), rendered here on the
        caller's thread (matplotlib is not thread-safe) and logged as an image."""
        checks.tag(tag)
        figures = figure if isinstance(figure, (list, tuple)) else [figure]
        rendered = [figure_pixels(f, close) for f in figures]
        if len(rendered) == 1:
            self._log(image_summary, tag, (rendered[0], "HWC"), global_step, walltime)
        else:
            shape = rendered[0].shape
            if any(i.shape != shape for i in rendered):
                raise ValueError("figures of a list must have one size; got %s"
                                 % sorted({i.shape for i in rendered}))
            self._log(image_summary, tag, (np.stack(rendered), "NHWC"), global_step, walltime)

    @peer_names({"snd_tensor": "audio"}, check_positional=_audio_order)
    def add_audio(self, tag, audio, sample_rate=44100, global_step=None, walltime=None):
        """Audio, float in [-1, 1] (clipped) or int16: (frames,) mono, or (frames, channels) /
        (channels, frames) with 1 or 2 channels. Written as 16-bit WAV. The third argument is
        the sample rate (mxboard 0.1.0's order; the peers take the step there): a positional
        rate below 1 kHz is refused as a likely step."""
        self._log(audio_summary, tag, checks.audio(audio, sample_rate), global_step, walltime)

    @peer_names({"text_string": "text"})
    def add_text(self, tag, text, global_step=None, walltime=None):
        """Markdown text; a list or 1-D array of strings, or a 2-D one, is shown as a table."""
        self._log(text_summary, tag, (checks.text(text),), global_step, walltime)

    @peer_names(check_positional=_pr_curve_order)
    def add_pr_curve(self, tag, labels, predictions, num_thresholds=127, global_step=None,
                     weights=None, walltime=None):
        """Precision-recall curve of `predictions` (probabilities in [0, 1]) against `labels`
        (0/1 or bool), `num_thresholds` >= 2 thresholds. mxboard 0.1.0's argument order: the
        fourth is `num_thresholds` (the peers take the step there), so a fourth positional
        argument without a fifth warns; pass both by keyword."""
        self._log(pr_curve_summary, tag, checks.pr_curve(labels, predictions, num_thresholds, weights),
                  global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall,
                         global_step=None, num_thresholds=127, weights=None, walltime=None):
        """A precision-recall curve counted already (tensorboardX's signature; `weights` is
        accepted and ignored, as there)."""
        columns, num_thresholds = checks.pr_curve_raw({
            "true_positive_counts": true_positive_counts, "false_positive_counts": false_positive_counts,
            "true_negative_counts": true_negative_counts, "false_negative_counts": false_negative_counts,
            "precision": precision, "recall": recall}, num_thresholds)
        self._log(pr_curve_raw_summary, tag, (*columns, num_thresholds), global_step, walltime)

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None,
                 walltime=None):
        """A mesh or point cloud for the Mesh dashboard: `vertices` (B, N, 3) or (N, 3) floats;
        `faces` (B, F, 3) integer vertex indices; `colors` (B, N, 3) uint8; `config_dict` JSON
        data for the viewer (copied at the call)."""
        self._log(mesh_summary, tag, checks.mesh(vertices, colors, faces, config_dict), global_step, walltime)

    @peer_names({"mat": "embedding", "metadata": "labels", "label_img": "images"},
                peer_order=("mat", "metadata", "label_img", "global_step", "tag", "metadata_header"),
                is_peer_order=lambda args: not isinstance(args[0], str))
    def add_embedding(self, tag="default", embedding=None, labels=None, images=None, global_step=None,
                      metadata_header=None):
        """Data points for the projector: `embedding` (N, D); `labels` N labels, or N rows of
        labels with `metadata_header` naming the columns; `images` (N, C, H, W) thumbnails for
        the sprite. Assets go to `logdir/<tag>[_<step>]/`, registered in the logdir's
        projector_config.pbtxt (safe when many writers share the logdir). tensorboardX's
        `add_embedding(mat, metadata, label_img, global_step, tag)` works as well (an array
        first is its order)."""
        self._ready()
        tag = checks.tag(tag)
        if embedding is None:
            raise TypeError("add_embedding() needs the embedding matrix (`embedding`, or `mat`)")
        matrix, labels, images, header = checks.embedding(embedding, labels, images, metadata_header)
        step = None if global_step is None else checks.step(global_step)
        self._queue(Task(projector.write_embedding, (self._storage, tag, step, matrix, labels, header, images)))

    @peer_names({"name": "run_name"}, peer_order=("hparam_dict", "metric_dict", "name", "global_step"),
                is_peer_order=lambda args: len(args) > 2 and isinstance(args[2], str))
    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """One run of a hyper-parameter search for the HParams dashboard, in the sub-run
        `logdir/<run_name>/` (default: the time): the hparams, and the metrics as scalars there.
        torch's signature; tensorboardX's `(hparam_dict, metric_dict, name, global_step)` works
        as well (a str third is its order)."""
        self._ready()
        values, metrics, domains = checks.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        step, now = checks.stamp(global_step, None)
        run = checks.tag(run_name, "run_name") if run_name is not None else "%.6f" % now
        run_file = self._new_file(self._storage.subdir(run))
        self._scalars.add_to_file(run_file, metrics, step, now)
        self._put(hparams_summary, (values, list(metrics), now, now, domains), global_step, now,
                  event_file=run_file)

    def add_graph(self, net, input_shape=None):
        """The network's graph for the Graphs dashboard: an `mx.sym.Symbol` or a Gluon
        `HybridBlock` (the graph it cached once hybridized and run forward; else traced with a
        symbolic input `data`). With `input_shape` (a tuple for the input, or a dict of input
        name -> shape), the edges carry tensor shapes."""
        from .graph import graph_def, graph_event

        self._ready()
        self._put(graph_event, (graph_def(net, input_shape).SerializeToString(),))

    def add_onnx_graph(self, onnx_model_file):
        """An ONNX model's graph for the Graphs dashboard (needs the `onnx` package):
        `onnx_model_file` is a path or a loaded `onnx.ModelProto`."""
        from .graph import graph_event, onnx_graph_def

        self._ready()
        self._put(graph_event, (onnx_graph_def(onnx_model_file).SerializeToString(),))

    def add_custom_scalars(self, layout):
        """The Custom Scalars dashboard's charts: `{category: {title: ["Multiline", [tags]] or
        ["Margin", [value, lower, upper]]}}` (tensorboardX's layout)."""
        self._ready()
        self._put(custom_scalars_summary, (layout_proto(layout),))

    # -- lifecycle --------------------------------------------------------------------------
    def flush(self):
        """Return when everything logged before the call is in the event files."""
        self._ready()
        self._worker.flush()
        self._report()

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        """A Custom Scalars chart of `tags` as lines (tensorboardX's shorthand)."""
        self.add_custom_scalars({category: {title: ["Multiline", list(tags)]}})

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        """A Custom Scalars chart of a value between two bounds: `tags` is [value, lower, upper]
        (tensorboardX's shorthand)."""
        self.add_custom_scalars({category: {title: ["Margin", list(tags)]}})

    def close(self):
        """Write everything queued and close the files. Safe to call twice; logging afterwards
        raises. Raises a writer-thread error that no earlier call has reported."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        fault = self._worker.close()
        if fault is not None:
            raise fault

    def reopen(self):
        """After `close()`, start logging again, into a new event file (mxboard's reopen)."""
        if self._closed:
            self._closed = False
            self._open()

    def export_scalars(self, path):
        """Write to `path` a JSON file of the scalars this writer has written (since
        `clear_scalar_dict()`), as mxboard did: `{"<logdir>/<tag>[/<name>]": [[wall_time, step,
        value], ...]}`. Read back from the event files: no scalar is kept in memory."""
        import json

        from .proto import Event
        from .reader import read_records

        self.flush()
        exported = {}
        for event_file in self._files:
            run = self._storage.run(event_file.directory)
            prefix = [self._logdir] + ([run] if run != "." else [])  # mxboard's keys: <logdir>/<tag>, and
            for piece, _ in event_file.pieces():  # <logdir>/<tag>/<name> for named values
                for payload in read_records(piece, self._cleared.get(piece, 0)):
                    event = Event.FromString(payload)
                    for value in event.summary.value:
                        if value.WhichOneof("value") == "simple_value":
                            key = prefix if event_file in self._group_files else prefix + [value.tag]
                            exported.setdefault("/".join(key), []).append(
                                [event.wall_time, event.step, value.simple_value])
        with open(path, "w") as f:
            json.dump(exported, f)

    def export_scalars_to_json(self, path):
        """tensorboardX's name for `export_scalars`."""
        self.export_scalars(path)

    def clear_scalar_dict(self):
        """Start `export_scalars` afresh from here."""
        self.flush()
        self._cleared = {piece: size for f in self._files for piece, size in f.pieces()}

    def get_logdir(self):
        return self._logdir

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def _close_unattended(worker):
    """A writer collected without close(): close its worker; an error has nobody to raise to,
    so it is told on stderr."""
    fault = worker.close()
    if fault is not None and not isinstance(fault, WriterError):
        sys.stderr.write("mxboard: a SummaryWriter collected unclosed could not write everything: %r\n" % (fault,))
