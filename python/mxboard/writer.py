"""`SummaryWriter`: the public face. Checks arguments and captures data on the caller's thread;
everything costly happens on the writer thread (worker.py)."""
import logging
import os
import sys
import threading
import weakref
from time import time as _now

import numpy as np

from . import convert, projector
from ._paths import subdir
from .encoding import ScalarSeries, encode_event
from .events import FILE_VERSION, EventFile
from .proto import Event
from .summaries import audio as audio_mod
from .summaries import custom_scalars, hparams, histogram, mesh, pr_curve
from .summaries import image as image_mod
from .summaries._common import scalar_summary
from .summaries import text as text_mod
from .worker import WAKE_EVERY, Worker, WriterError, _Forked

__all__ = ["SummaryWriter"]

log = logging.getLogger("mxboard")
_CLOSED = object()


class SummaryWriter:
    """Writes TensorBoard event files into `logdir`, on a background thread.

    Arguments are mxboard 0.1.0's: `max_queue` is how many array summaries (histograms,
    images...) may wait for the writer thread before `add_*` blocks (scalars are batched,
    8192 to such a slot); `flush_secs` is the longest time anything waits before it reaches the
    file, 2 s by default so a running TensorBoard shows new points within seconds;
    `filename_suffix` ends the event file's name; `verbose` logs where the file is (at INFO on
    the `mxboard` logger).
    """

    def __init__(self, logdir, max_queue=10, flush_secs=2, filename_suffix=None, verbose=True):
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
        self._logdir = os.fspath(logdir)
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._suffix = filename_suffix or ""
        self._verbose = verbose
        self._closed = False
        self._lock = threading.RLock()  # guards new series and sub-run files
        self._open()

    def _open(self):
        """Start a worker and the main event file (again in a forked child)."""
        self._worker = Worker(self._flush_secs, self._max_queue)
        self._finalizer = weakref.finalize(self, self._worker.close)
        self._local = threading.local()  # .columns: this thread's ScalarColumns
        self._file = self._new_file(self._logdir)
        self._series = {}  # tag -> series id of the tag's scalars in the main file
        self._runs = {}  # (tag, name) -> series id of the sub-run logdir/<tag>/<name>/
        self._cleared = {}  # event file path -> offset export_scalars starts from

    def _new_file(self, directory):
        os.makedirs(directory, exist_ok=True)
        event_file = EventFile(directory, self._suffix)
        event_file.write(encode_event(Event(wall_time=_now(), file_version=FILE_VERSION)))
        self._worker.files.append(event_file)
        if self._verbose:
            log.info("mxboard: writing events to %s", event_file.path)
        return event_file

    def _new_series(self, event_file, tag):
        with self._lock:
            self._worker.series.append(ScalarSeries(event_file, tag))
            return len(self._worker.series) - 1  # appended before any scalar names it

    # -- scalars: the hot path --------------------------------------------------------------
    def add_scalar(self, tag, value, global_step=None, walltime=None):
        """Log a number under `tag`. `value` is a number, numpy scalar, one-element array or
        NDArray; or a `(name, value)` pair, a `[name, value]` list, or a dict of them: each name
        one line in the same chart, written to the sub-run `logdir/<tag>/<name>/`."""
        if self._worker.fault is not None:
            self._recover()
        kind = type(value)
        if kind is not float:
            if kind is dict or kind is tuple or kind is list:
                return self._add_scalar_group(tag, value, global_step, walltime)
            if convert.is_ndarray(value):
                return self._add_ndarray_scalar(self._file, tag, value, global_step, walltime)
            value = convert.to_float(value)
        try:
            series = self._series[tag]
        except (KeyError, TypeError):
            series = self._series[tag] = self._new_series(self._file, convert.check_tag(tag))
        if global_step is None:
            global_step = 0
        elif type(global_step) is not int or not 0 <= global_step < 0x7FFFFFFFFFFFFFFF:
            global_step = convert.to_int(global_step)
        wall = _now() if walltime is None else _walltime(walltime)
        self._append(series, value, global_step, wall)

    def _add_ndarray_scalar(self, event_file, tag, value, global_step, walltime, name="value"):
        """An NDArray scalar (say `loss.mean()`): snapshotted, converted on the writer thread, so
        the training loop does not wait for the engine."""
        if value.size != 1:
            raise ValueError("%s must be a single number; got an NDArray of shape %s" % (name, value.shape))
        snapshot = convert.capture(value, name)
        self._put(scalar_summary, (convert.check_tag(tag), snapshot), global_step, walltime, event_file=event_file)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """tensorboardX's name for a dict of lines in one chart: `add_scalar(main_tag, dict)`."""
        if not isinstance(tag_scalar_dict, dict):
            raise TypeError("tag_scalar_dict must be a dict of name -> value; got %s"
                            % type(tag_scalar_dict).__name__)
        self._add_scalar_group(main_tag, tag_scalar_dict, global_step, walltime)

    def _add_scalar_group(self, tag, group, global_step, walltime):
        self._check()
        convert.check_tag(tag)
        if isinstance(group, (tuple, list)):
            if len(group) != 2:
                raise ValueError("a %s value must be a (name, value) pair; got %d elements"
                                 % (type(group).__name__, len(group)))
            group = {group[0]: group[1]}
        if not group:
            raise ValueError("value: the dict of named scalars for %r is empty" % tag)
        step = 0 if global_step is None else convert.to_int(global_step)
        wall = _now() if walltime is None else _walltime(walltime)
        values = [(convert.check_tag(name, "scalar name"),
                   v if convert.is_ndarray(v) else convert.to_float(v, "value[%r]" % (name,)))
                  for name, v in group.items()]
        for name, value in values:
            self._add_to_run(tag, name, value, step, wall)

    def _add_to_run(self, tag, name, value, step, wall):
        series = self._runs.get((tag, name))
        if series is None:
            with self._lock:
                if (tag, name) not in self._runs:
                    run_file = self._new_file(subdir(self._logdir, tag, name))
                    self._runs[(tag, name)] = self._new_series(run_file, tag)
            series = self._runs[(tag, name)]
        if isinstance(value, float):
            self._append(series, value, step, wall)
        else:  # an NDArray
            self._add_ndarray_scalar(self._worker.series[series].file, tag, value, step, wall,
                                     "value[%r]" % (name,))

    def _append(self, series, value, step, wall):
        """Queue one checked scalar. Nothing here can fail, so the four columns stay aligned."""
        try:
            columns = self._local.columns
        except AttributeError:
            columns = self._local.columns = self._worker.new_columns()
        add_value, add_step, add_wall, add_series = columns.append
        add_value(value)
        add_step(step)
        add_wall(wall)
        add_series(series)
        if len(columns.series) >= WAKE_EVERY:
            self._worker.nudge(columns)

    # -- every other kind goes through here -------------------------------------------------
    def _put(self, build, args, global_step, walltime, event_file=None):
        """Queue `build(*args)` (a Summary or an Event) for the writer thread; MXNet snapshots
        among `args` are converted there, when the engine has computed them."""
        self._check()
        step = 0 if global_step is None else convert.to_int(global_step)
        wall = _now() if walltime is None else _walltime(walltime)
        if any(isinstance(a, (convert.Snapshot, convert.DeviceHistogram)) for a in args):
            args = (build,) + tuple(args)
            build = _resolved
        self._worker.put_event((event_file or self._file, (build, args), step, wall))

    # -- arrays -------------------------------------------------------------------------------
    def add_histogram(self, tag, values, global_step=None, bins="default", walltime=None):
        """Histogram of `values` (any shape). `bins`: 'default' (TensorBoard's exponential
        buckets, trimmed to the occupied range), an int, a numpy rule name ('auto', 'fd',
        'doane', 'scott', 'stone', 'rice', 'sturges', 'sqrt') or increasing bin edges. NaN and
        ±Inf cannot be binned: they are dropped, with one warning a tag."""
        tag = convert.check_tag(tag)
        bins = _check_bins(bins)
        if convert.is_ndarray(values) and not (isinstance(bins, str) and bins != "default"):
            # on the array's device: only the counts cross to the host
            if not values.size:
                raise ValueError("values is empty (shape %s)" % (values.shape,))
            values = convert.DeviceHistogram(values, bins)
        else:
            values = convert.capture(values, "values")
        self._put(histogram.histogram_of, (tag, values, bins), global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step=None, walltime=None):
        """A histogram counted already (tensorboardX's signature): bucket `i` holds
        `bucket_counts[i]` values up to `bucket_limits[i]`, the first from `min`."""
        tag = convert.check_tag(tag)
        limits = convert.capture(bucket_limits, "bucket_limits", defer=False).astype(np.float64).reshape(-1)
        counts = convert.capture(bucket_counts, "bucket_counts", defer=False).astype(np.float64).reshape(-1)
        if len(limits) != len(counts):
            raise ValueError("bucket_limits and bucket_counts must have the same length; got %d and %d"
                             % (len(limits), len(counts)))
        if np.any(np.diff(limits) < 0):
            raise ValueError("bucket_limits must be increasing")
        lowest = convert.to_float(min, "min")
        self._put(histogram.histogram_raw_summary, (tag, limits, counts, lowest), global_step, walltime)

    def add_image(self, tag, image, global_step=None, walltime=None, dataformats="CHW"):
        """An image: float pixels in [0, 1] (clipped, never wrapped), or uint8. `dataformats`:
        'CHW' (default; a 2-D array is taken as HW and a 4-D one as a batch NCHW shown as a
        grid, as mxboard did), 'HWC', 'HW', 'NCHW' or 'NHWC'. 1, 3 or 4 channels."""
        tag = convert.check_tag(tag)
        image = convert.capture(image, "image")
        if dataformats == "CHW" and image.ndim in (2, 4):  # mxboard's add_image took these
            dataformats = "HW" if image.ndim == 2 else "NCHW"
        dataformats = image_mod.check_dataformats(image.shape, dataformats)
        self._put(image_mod.image_summary, (tag, image, dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """A batch of images, shown as one grid (tensorboardX's add_images)."""
        tag = convert.check_tag(tag)
        images = convert.capture(img_tensor, "img_tensor")
        dataformats = image_mod.check_dataformats(images.shape, dataformats, "img_tensor")
        self._put(image_mod.image_summary, (tag, images, dataformats), global_step, walltime)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        """A video, (N, T, C, H, W) or (T, C, H, W), float in [0, 1] or uint8, as an animated GIF."""
        tag = convert.check_tag(tag)
        frames = convert.capture(vid_tensor, "vid_tensor")
        if frames.ndim not in (4, 5) or frames.shape[-3] not in (1, 3, 4) or 0 in frames.shape:
            raise ValueError("vid_tensor must be (N, T, C, H, W) or (T, C, H, W) with 1, 3 or 4 "
                             "channels; got shape %s" % (frames.shape,))
        fps = convert.to_float(fps, "fps")
        if not fps > 0:
            raise ValueError("fps must be > 0; got %r" % fps)
        self._put(image_mod.video_summary, (tag, frames, fps), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them, shown as a grid), rendered here on the
        caller's thread (matplotlib is not thread-safe) and logged as an image."""
        tag = convert.check_tag(tag)
        figures = figure if isinstance(figure, (list, tuple)) else [figure]
        images = [image_mod.figure_pixels(f, close) for f in figures]
        if len(images) == 1:
            self._put(image_mod.image_summary, (tag, images[0], "HWC"), global_step, walltime)
        else:
            shape = images[0].shape
            if any(i.shape != shape for i in images):
                raise ValueError("figures of a list must have one size; got %s"
                                 % sorted({i.shape for i in images}))
            self._put(image_mod.image_summary, (tag, np.stack(images), "NHWC"), global_step, walltime)

    def add_audio(self, tag, audio, sample_rate=44100, global_step=None, walltime=None):
        """Audio, float in [-1, 1] (clipped) or int16: (frames,) mono, or (frames, channels) /
        (channels, frames) with 1 or 2 channels. Written as 16-bit WAV."""
        tag = convert.check_tag(tag)
        samples = convert.capture(audio, "audio")
        audio_mod.frames_layout(samples.shape)
        rate = convert.to_float(sample_rate, "sample_rate")
        if not (rate > 0 and rate == int(rate)):
            raise ValueError("sample_rate must be a positive whole number of Hz; got %r" % (sample_rate,))
        self._put(audio_mod.audio_summary, (tag, samples, int(rate)), global_step, walltime)

    def add_text(self, tag, text, global_step=None, walltime=None):
        """Markdown text; a list or 1-D array of strings, or a 2-D one, is shown as a table."""
        tag = convert.check_tag(tag)
        if not isinstance(text, str):
            if isinstance(text, bytes):
                raise TypeError("text must be str (decode bytes first); got bytes")
            if isinstance(text, (list, tuple)) and text and all(isinstance(r, (list, tuple)) for r in text):
                lengths = sorted({len(row) for row in text})
                if len(lengths) > 1:
                    raise ValueError("text: rows of a table must have equal lengths; got %s" % lengths)
            array = np.array(text, dtype=object)
            if array.ndim not in (1, 2) or array.size == 0 or not all(isinstance(t, str) for t in array.flat):
                raise TypeError("text must be a str, or a non-empty 1-D or 2-D list/array of str; "
                                "got %s of shape %s" % (type(text).__name__, array.shape))
            text = array
        self._put(text_mod.text_summary, (tag, text), global_step, walltime)

    def add_pr_curve(self, tag, labels, predictions, num_thresholds=127, global_step=None,
                     weights=None, walltime=None):
        """Precision-recall curve of `predictions` (probabilities in [0, 1]) against `labels`
        (0/1 or bool), `num_thresholds` >= 2 thresholds (mxboard's argument order)."""
        tag = convert.check_tag(tag)
        labels = convert.capture(labels, "labels")
        predictions = convert.capture(predictions, "predictions")
        if labels.shape != predictions.shape:
            raise ValueError("labels and predictions must have one shape; got %s and %s"
                             % (labels.shape, predictions.shape))
        if weights is not None:
            weights = convert.capture(weights, "weights")
            try:
                np.broadcast_shapes(weights.shape, labels.shape)
            except ValueError:
                raise ValueError("weights of shape %s do not broadcast to labels' %s"
                                 % (weights.shape, labels.shape)) from None
        num_thresholds = _check_thresholds(num_thresholds)
        self._put(pr_curve.pr_curve_summary, (tag, labels, predictions, num_thresholds, weights),
                  global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall,
                         global_step=None, num_thresholds=127, weights=None, walltime=None):
        """A precision-recall curve counted already (tensorboardX's signature; `weights` is
        accepted and ignored, as there)."""
        tag = convert.check_tag(tag)
        num_thresholds = _check_thresholds(num_thresholds)
        names = ("true_positive_counts", "false_positive_counts", "true_negative_counts",
                 "false_negative_counts", "precision", "recall")
        columns = [convert.capture(a, n, defer=False).reshape(-1) for a, n in zip(
            (true_positive_counts, false_positive_counts, true_negative_counts,
             false_negative_counts, precision, recall), names)]
        for column, name in zip(columns, names):
            if len(column) != num_thresholds:
                raise ValueError("%s must have num_thresholds (%d) values; got %d"
                                 % (name, num_thresholds, len(column)))
        self._put(pr_curve.pr_curve_raw_summary, (tag, *columns, num_thresholds), global_step, walltime)

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None,
                 walltime=None):
        """A mesh or point cloud for the Mesh dashboard: `vertices` (B, N, 3) or (N, 3) floats;
        `faces` (B, F, 3) vertex indices; `colors` (B, N, 3) uint8."""
        tag = convert.check_tag(tag)
        parts = {"vertices": convert.capture(vertices, "vertices")}
        for name, value in (("colors", colors), ("faces", faces)):
            if value is not None:
                parts[name] = convert.capture(value, name)
        shapes = {}
        for name, array in parts.items():
            shapes[name] = (1,) + tuple(array.shape) if array.ndim == 2 else tuple(array.shape)
            if len(shapes[name]) != 3 or shapes[name][-1] != 3:
                raise ValueError("%s must be (B, N, 3) or (N, 3); got shape %s" % (name, tuple(array.shape)))
        if "colors" in parts and shapes["colors"][:2] != shapes["vertices"][:2]:
            raise ValueError("colors must have one (B, N) with vertices; got %s and %s"
                             % (shapes["colors"], shapes["vertices"]))
        faces = parts.get("faces")
        if isinstance(faces, np.ndarray) and (faces.min() < 0 or faces.max() >= shapes["vertices"][1]):
            raise ValueError("faces must index vertices (0 to %d)" % (shapes["vertices"][1] - 1))
        self._put(mesh.mesh_summary, (tag, parts["vertices"], parts.get("colors"), parts.get("faces"),
                                      config_dict), global_step, walltime)

    def add_embedding(self, tag, embedding, labels=None, images=None, global_step=None,
                      metadata_header=None):
        """Data points for the projector: `embedding` (N, D); `labels` N labels, or N rows of
        labels with `metadata_header` naming the columns; `images` (N, C, H, W) thumbnails for
        the sprite. Assets go to `logdir/<tag>[_<step>]/`, registered in the logdir's
        projector_config.pbtxt (safe when many writers share the logdir)."""
        tag = convert.check_tag(tag)
        matrix = convert.capture(embedding, "embedding")
        if matrix.ndim != 2:
            raise ValueError("embedding must be 2-D (points, dimensions); got shape %s" % (matrix.shape,))
        count = matrix.shape[0]
        if labels is not None:
            labels = _labels(labels, count, metadata_header)
        if images is not None:
            images = convert.capture(images, "images")
            image_mod.check_dataformats(images.shape, "NCHW", "images")
            if images.shape[0] != count:
                raise ValueError("images must have one per point: %d; got %d" % (count, images.shape[0]))
        step = None if global_step is None else convert.to_int(global_step)
        self._check()
        self._worker.put_task(_embedding, (self._logdir, tag, step, matrix, labels, metadata_header, images))

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """One run of a hyper-parameter search for the HParams dashboard, in the sub-run
        `logdir/<run_name>/` (default: the time): the hparams, and the metrics as scalars there."""
        if not isinstance(hparam_dict, dict) or not hparam_dict:
            raise TypeError("hparam_dict must be a non-empty dict of name -> bool, number or str")
        if not isinstance(metric_dict, dict):
            raise TypeError("metric_dict must be a dict of metric tag -> number")
        values = {convert.check_tag(k, "hparam name"): hparams.hparam_value(v, k) for k, v in hparam_dict.items()}
        metrics = {convert.check_tag(k, "metric tag"): convert.to_float(v, "metric_dict[%r]" % (k,))
                   for k, v in metric_dict.items()}
        domains = {}
        for name, domain in (hparam_domain_discrete or {}).items():
            if name not in values or not isinstance(domain, (list, tuple)) or not domain:
                raise ValueError("hparam_domain_discrete[%r] must be a non-empty list for a hparam in "
                                 "hparam_dict" % (name,))
            domains[name] = [hparams.hparam_value(v, name) for v in domain]
        now = _now()
        run = convert.check_tag(run_name, "run_name") if run_name is not None else "%.6f" % now
        with self._lock:
            run_file = self._new_file(subdir(self._logdir, run))
        self._put(hparams.hparams_summary, (values, list(metrics), now, now, domains), global_step, now,
                  event_file=run_file)
        step = 0 if global_step is None else convert.to_int(global_step)
        for metric, value in metrics.items():
            self._append(self._new_series(run_file, metric), value, step, now)

    def add_graph(self, net, input_shape=None):
        """The network's graph for the Graphs dashboard: an `mx.sym.Symbol` or a Gluon
        `HybridBlock` (the graph it cached once hybridized and run forward; else traced with a
        symbolic input `data`). With `input_shape` (a tuple for the input, or a dict of input
        name -> shape), the edges carry tensor shapes."""
        from .graph import graph_def

        serialized = graph_def(net, input_shape).SerializeToString()
        self._put(_graph_event, (serialized,), None, None)

    def add_custom_scalars(self, layout):
        """The Custom Scalars dashboard's charts: `{category: {title: ["Multiline", [tags]] or
        ["Margin", [value, lower, upper]]}}` (tensorboardX's layout)."""
        proto = custom_scalars.layout_proto(layout)
        self._put(custom_scalars.custom_scalars_summary, (proto,), None, None)

    # -- lifecycle --------------------------------------------------------------------------
    def flush(self):
        """Return when everything logged before the call is in the event files."""
        self._check()
        self._worker.flush()
        self._check()

    def close(self):
        """Write everything queued and close the files. Safe to call twice; logging afterwards
        raises. Raises a writer-thread error that no earlier call has reported."""
        if self._closed:
            return
        self._closed = True
        worker = self._worker
        self._finalizer()
        fault = worker.take_fault()
        worker.fault = _CLOSED
        if fault is not None and not isinstance(fault, (_Forked, WriterError)):  # not a repeat
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

        from .reader import read_records

        self.flush()
        group_runs = {self._worker.series[sid].file for sid in self._runs.values()}
        exported = {}
        for event_file in self._worker.files:
            run = os.path.relpath(os.path.dirname(event_file.path), self._logdir).replace(os.sep, "/")
            for payload in read_records(event_file.path, self._cleared.get(event_file.path, 0)):
                event = Event.FromString(payload)
                for value in event.summary.value:
                    if value.WhichOneof("value") != "simple_value":
                        continue
                    # mxboard's keys: <logdir>/<tag>, and <logdir>/<tag>/<name> for named values
                    parts = [self._logdir] + ([] if run == "." else [run])
                    if event_file not in group_runs:
                        parts.append(value.tag)
                    exported.setdefault("/".join(parts), []).append(
                        [event.wall_time, event.step, value.simple_value])
        with open(path, "w") as f:
            json.dump(exported, f)

    def clear_scalar_dict(self):
        """Start `export_scalars` afresh from here."""
        self.flush()
        self._cleared = {f.path: os.path.getsize(f.path) for f in self._worker.files}

    def get_logdir(self):
        return self._logdir

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _check(self):
        if self._worker.fault is not None:
            self._recover()

    def _recover(self):
        """Called when the worker has something to say: raise it, or reopen after a fork."""
        if self._closed:
            raise RuntimeError("this SummaryWriter (logdir %r) is closed" % self._logdir)
        fault = self._worker.take_fault()
        if isinstance(fault, _Forked):
            # A forked child logs to files of its own, named with its own pid. Children of
            # multiprocessing leave through os._exit (no atexit): close at its exit too.
            self._finalizer.detach()
            self._lock = threading.RLock()  # the parent's may have been held by another thread
            self._open()
            if "multiprocessing" in sys.modules:
                import multiprocessing.util

                multiprocessing.util.Finalize(self, self._worker.close, exitpriority=10)
        elif fault is not None:
            raise fault
        return self._worker


def _walltime(walltime):
    wall = convert.to_float(walltime, "walltime")
    if not wall > 0:
        raise ValueError("walltime must be seconds since the epoch (> 0); got %r" % (walltime,))
    return wall


_BIN_RULES = ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt")


def _check_bins(bins):
    if isinstance(bins, str):
        if bins != "default" and bins not in _BIN_RULES:
            raise ValueError("bins must be 'default', %s, an int or bin edges; got %r"
                             % (", ".join(repr(r) for r in _BIN_RULES), bins))
        return bins
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise ValueError("bins must be >= 1; got %d" % bins)
        return int(bins)
    edges = convert.capture(bins, "bins").astype(np.float64)
    if edges.ndim != 1 or len(edges) < 2 or np.any(np.diff(edges) <= 0) or not np.all(np.isfinite(edges)):
        raise ValueError("bins given as edges must be a 1-D increasing sequence of at least 2 finite numbers")
    return edges


def _check_thresholds(num_thresholds):
    num_thresholds = convert.to_int(num_thresholds, "num_thresholds")
    if num_thresholds < 2:
        raise ValueError("num_thresholds must be >= 2; got %d" % num_thresholds)
    return num_thresholds


def _labels(labels, count, header):
    if convert.is_ndarray(labels) and header is None:  # converted on the writer thread
        if labels.shape[0] != count:
            raise ValueError("labels must have one per point: %d; got %d" % (count, labels.shape[0]))
        return convert.capture(labels, "labels", numeric=False)
    if header is not None:
        header = [str(h) for h in header]
        rows = [list(row) for row in labels]
        if any(len(row) != len(header) for row in rows):
            raise ValueError("labels: every row must have len(metadata_header) = %d values" % len(header))
        labels = rows
    elif isinstance(labels, list):
        labels = list(labels)
    else:
        labels = convert.to_numpy(labels, "labels").reshape(-1).tolist()
    if len(labels) != count:
        raise ValueError("labels must have one per point: %d; got %d" % (count, len(labels)))
    return labels


def _embedding(logdir, tag, step, matrix, labels, header, images):
    matrix, labels, images = (convert.resolve(a) for a in (matrix, labels, images))
    if isinstance(labels, np.ndarray):
        labels = labels.reshape(-1).tolist()
    if images is not None:
        images = image_mod.to_uint8(images.transpose(0, 2, 3, 1))
    projector.write_embedding(logdir, tag, step, matrix, labels, header, images)


def _graph_event(serialized):
    return Event(graph_def=serialized)


def _resolved(build, *args):
    """On the writer thread: wait for the MXNet snapshots among `args`, then build."""
    return build(*[convert.resolve(a) for a in args])
