"""`SummaryWriter`: the public face. Each call checks its arguments and captures its data on the
caller's thread (checks.py), then queues one item for the writer thread through the worker's
verbs (worker.py); building, encoding and writing happen there. After queueing, a call hears
what the writer thread has to report (an error raised, or a closed writer), so that a bad item
never costs a later call its data.
"""
from __future__ import annotations

import logging
import os
import socket
import sys
import warnings
import weakref
from collections.abc import Mapping, Sequence
from datetime import datetime
from time import time as _now
from typing import Any, Optional, Union

import numpy as np

from . import checks, convert, projector
from .compat import peer_names
from .mxnet_capture import DeviceHistogram, ScalarSlots
from .scalars import Scalars
from .storage import open_storage
from .summaries.audio import audio_summary
from .summaries.custom_scalars import custom_scalars_summary, layout_proto
from .summaries.histogram import histogram_of, histogram_raw_summary
from .summaries.hparams import hparams_summary
from .summaries.image import boxes_summary, figure_pixels, image_summary, video_summary
from .summaries.mesh import mesh_summary
from .summaries.pr_curve import pr_curve_raw_summary, pr_curve_summary
from .summaries.text import text_summary
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

    Every `add_*` checks its arguments and captures its data on the calling thread, then queues
    it: building, encoding and writing happen on the writer thread, so the training loop never
    waits for them. An error of the writer thread is raised by the next call.

    Args:
        logdir: the run's directory, or an object-store URL (`s3://bucket/prefix/run`, any
            fsspec URL). Default: `runs/<date>_<host><comment>`, as tensorboardX and torch.
        max_queue: array summaries of 1 MiB or more that may wait for the writer thread before
            `add_*` blocks (smaller ones share a slot by size, up to 64 to a slot; scalars are
            batched, 8192 to a slot; array data is bounded to 64 MiB as well).
        flush_secs: the longest time anything logged waits before it reaches the file (a running
            TensorBoard shows it within seconds).
        filename_suffix: ends the event file's name.
        verbose: log where the file is (INFO on the `mxboard` logger).
        comment: appended to the default logdir's name (ignored when `logdir` is given).
        purge_step: resume a run at this step: TensorBoard hides the steps >= it logged before.
        write_to_disk: False writes nothing (the calls are still checked).

    Raises:
        TypeError, ValueError: an argument of the wrong type or value (named in the message).
        ImportError, PermissionError, ConnectionError: a logdir URL whose package is missing,
            whose store refuses the credentials, or cannot be reached.

    Example:
        >>> with SummaryWriter("runs/exp1") as sw:
        ...     for step in range(100):
        ...         sw.add_scalar("loss", 1.0 / (step + 1), global_step=step)
    """

    @peer_names({"log_dir": "logdir"}, peer_order=PEER_ORDER,
                is_peer_order=lambda args: len(args) > 1 and isinstance(args[1], str))
    def __init__(self, logdir: Optional[Union[str, os.PathLike]] = None, max_queue: int = 10, flush_secs: float = 2,
                 filename_suffix: Optional[str] = None, verbose: bool = True, *, comment: str = "",
                 purge_step: Optional[int] = None, write_to_disk: bool = True) -> None:
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
    def closed(self) -> bool:
        """Whether `close()` was called (and `reopen()` not since)."""
        return self._closed

    @property
    def logdir(self) -> str:
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
    def add_scalar(self, tag: str, value: Any = None, global_step: Optional[int] = None,
                   walltime: Optional[float] = None, **peer: Any) -> None:
        """Log a number under `tag` (the training loop's hot path: a few microseconds).

        Args:
            tag: the chart's name.
            value: a number, numpy scalar, one-element array, torch tensor or MXNet NDArray (read
                once the engine has computed it: the loop never waits); or a `(name, value)`
                pair, a `[name, value]` list or a mapping of them: each name one line in the same
                chart, from the sub-run `logdir/<tag>/<name>/`.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.
            **peer: the peers' `scalar_value=` (for `value`); torch's `new_style` and
                `double_precision` are accepted (values are float32 either way).

        Raises:
            TypeError, ValueError: a value that is no single real number, a bad tag or step.
            WriterError: the writer thread failed earlier (its cause is attached).

        Example:
            >>> sw.add_scalar("loss", loss.mean(), global_step=step)  # an NDArray: no wait
            >>> sw.add_scalar("accuracy", {"train": 0.91, "val": 0.87}, global_step=epoch)
        """
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

    def add_scalars(self, main_tag: str, tag_scalar_dict: Mapping, global_step: Optional[int] = None,
                    walltime: Optional[float] = None) -> None:
        """Lines in one chart (tensorboardX's call), as `add_scalar(main_tag, dict)`.

        Args:
            main_tag: the chart's name.
            tag_scalar_dict: `{name: value}`; each name's values go to the sub-run
                `logdir/<main_tag>/<name>/` (tensorboardX's layout; torch's is `<main_tag>_<name>`).
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: not a mapping, or a value that is no single number.

        Example:
            >>> sw.add_scalars("loss", {"train": 0.3, "val": 0.4}, global_step=10)
        """
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
    def add_histogram(self, tag: str, values: Any, global_step: Optional[int] = None, bins: Any = "default",
                      walltime: Optional[float] = None) -> None:
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

        Raises:
            TypeError, ValueError: values that are empty or not real numbers; bad bins.

        Example:
            >>> for name, param in net.collect_params().items():
            ...     sw.add_histogram(name, param.data(), global_step=step)
        """
        bins = checks.bins(bins)
        if convert.on_accelerator(values) and not (isinstance(bins, str) and bins != "default"):
            # counted on the GPU: only the counts cross to the host
            if not values.size:
                raise ValueError("values is empty (shape %s)" % (values.shape,))
            values = DeviceHistogram(values, bins)
        else:  # numpy, or a CPU NDArray: one engine copy, binned on the writer thread
            values = convert.capture(values, "values")
        self._log(histogram_of, tag, (values, bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: float, sum: float, sum_squares: float,
                          bucket_limits: Any, bucket_counts: Any, global_step: Optional[int] = None,
                          walltime: Optional[float] = None) -> None:
        """A histogram counted already (tensorboardX's signature).

        Args:
            tag: the chart's name.
            min: the lowest value (the first bucket's left edge).
            max, num, sum, sum_squares: accepted for compatibility; the plugin shows buckets only.
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
        self._log(histogram_raw_summary, tag, checks.histogram_raw(min, bucket_limits, bucket_counts),
                  global_step, walltime)

    @peer_names({"img_tensor": "image"})
    def add_image(self, tag: str, image: Any, global_step: Optional[int] = None, walltime: Optional[float] = None,
                  dataformats: str = "CHW") -> None:
        """An image, for the Images dashboard.

        Args:
            tag: the image's name.
            image: float pixels in [0, 1] (clipped, never wrapped) or integers in [0, 255]; 1, 3
                or 4 channels.
            dataformats: 'CHW' (a 2-D array is taken as HW and a 4-D one as a batch NCHW shown
                as a grid, as mxboard did), 'HWC', 'HW', 'NCHW' or 'NHWC'.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: a shape that does not fit `dataformats`, pixels out of range.

        Example:
            >>> sw.add_image("digit", np.random.rand(1, 28, 28), global_step=0)
        """
        if dataformats == "CHW" and getattr(image, "ndim", None) in (2, 4):  # mxboard took these
            dataformats = "HW" if image.ndim == 2 else "NCHW"
        self._log(image_summary, tag, checks.image(image, dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: Optional[int] = None,
                   walltime: Optional[float] = None, dataformats: str = "NCHW") -> None:
        """A batch of images shown as one grid (tensorboardX's add_images).

        Args:
            tag: the grid's name.
            img_tensor: (N, C, H, W) or (N, H, W, C) pixels, as `add_image` takes them.
            dataformats: 'NCHW' or 'NHWC'.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: as `add_image`.

        Example:
            >>> sw.add_images("batch", data.asnumpy()[:16], global_step=step)
        """
        self._log(image_summary, tag, checks.image(img_tensor, dataformats, "img_tensor"), global_step, walltime)

    def add_image_with_boxes(self, tag: str, img_tensor: Any, box_tensor: Any, global_step: Optional[int] = None,
                             walltime: Optional[float] = None, rescale: float = 1, dataformats: str = "CHW",
                             labels: Optional[Sequence[str]] = None) -> None:
        """An image with boxes drawn on it (tensorboardX's and torch's signature).

        Args:
            tag: the image's name.
            img_tensor: one image, as `add_image` takes it.
            box_tensor: (N, 4) boxes [xmin, ymin, xmax, ymax] in pixels, xmin <= xmax, ymin <= ymax.
            rescale: scales the image and its boxes (the result at most 16384 px a side).
            dataformats: the image's, as `add_image`.
            labels: one str a box, drawn above it.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: a bad image, inverted or non-finite boxes, a bad rescale.

        Example:
            >>> sw.add_image_with_boxes("detections", image, [[10, 10, 40, 50]], labels=["cat"])
        """
        pixels, dataformats = checks.image(img_tensor, dataformats, "img_tensor")
        boxes, labels, scale = checks.boxes(box_tensor, labels, rescale, dataformats, pixels.shape)
        self._log(boxes_summary, tag, (pixels, dataformats, boxes, labels, scale), global_step, walltime)

    def add_video(self, tag: str, vid_tensor: Any, global_step: Optional[int] = None, fps: float = 4,
                  walltime: Optional[float] = None) -> None:
        """A video, shown as an animated GIF in the Images dashboard.

        Args:
            tag: the video's name.
            vid_tensor: (N, T, C, H, W) (a grid of N videos) or (T, C, H, W); float in [0, 1] or uint8.
            fps: frames a second.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: a bad shape, pixels out of range, fps <= 0.

        Example:
            >>> sw.add_video("rollout", np.random.rand(8, 3, 32, 32), fps=4)
        """
        self._log(video_summary, tag, checks.video(vid_tensor, fps), global_step, walltime)

    def add_figure(self, tag: str, figure: Any, global_step: Optional[int] = None, close: bool = True,
                   walltime: Optional[float] = None) -> None:
        """A matplotlib figure (or a list of them, shown as a grid), logged as an image.

        Rendered here, on the caller's thread (matplotlib is not thread-safe).

        Args:
            tag: the image's name.
            figure: a `matplotlib.figure.Figure`, or a list of them of one size.
            close: close the figure once rendered.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: not a Figure, or figures of different sizes.

        Example:
            >>> fig = plt.figure(); plt.plot([1, 2, 3])
            >>> sw.add_figure("curve", fig, global_step=0)
        """
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
    def add_audio(self, tag: str, audio: Any, sample_rate: int = 44100, global_step: Optional[int] = None,
                  walltime: Optional[float] = None) -> None:
        """Audio, written as 16-bit WAV, for the Audio dashboard.

        Args:
            tag: the clip's name.
            audio: float in [-1, 1] (clipped) or int16: (frames,) mono, or (frames, channels) /
                (channels, frames) with 1 or 2 channels.
            sample_rate: Hz. Third, as in mxboard 0.1.0 (the peers take the step there): a
                positional rate below 1 kHz is refused as a likely step.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: a bad shape or rate.

        Example:
            >>> sw.add_audio("tone", np.sin(np.arange(16000) / 10), sample_rate=16000)
        """
        self._log(audio_summary, tag, checks.audio(audio, sample_rate), global_step, walltime)

    @peer_names({"text_string": "text"})
    def add_text(self, tag: str, text: Any, global_step: Optional[int] = None,
                 walltime: Optional[float] = None) -> None:
        """Markdown text for the Text dashboard; a list (or a 2-D list) of str is shown as a table.

        Args:
            tag: the text's name.
            text: a str, a list or 1-D array of str, or a 2-D one of equal-length rows.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: no str, invalid Unicode, rows of different lengths.

        Example:
            >>> sw.add_text("config", "lr: **0.1**, batch: 64")
        """
        self._log(text_summary, tag, (checks.text(text),), global_step, walltime)

    @peer_names(check_positional=_pr_curve_order)
    def add_pr_curve(self, tag: str, labels: Any, predictions: Any, num_thresholds: int = 127,
                     global_step: Optional[int] = None, weights: Any = None,
                     walltime: Optional[float] = None) -> None:
        """A precision-recall curve for the PR Curves dashboard.

        Args:
            tag: the curve's name.
            labels: the truth, 0/1 or bool, one a prediction.
            predictions: probabilities in [0, 1], finite.
            num_thresholds: thresholds >= 2. Fourth, as in mxboard 0.1.0 (the peers take the step
                there): a fourth positional argument without a fifth warns; pass both by keyword.
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
                         global_step: Optional[int] = None, num_thresholds: int = 127, weights: Any = None,
                         walltime: Optional[float] = None) -> None:
        """A precision-recall curve counted already (tensorboardX's signature).

        Args:
            tag: the curve's name.
            true_positive_counts, false_positive_counts, true_negative_counts,
                false_negative_counts, precision, recall: one value a threshold each.
            num_thresholds: how many thresholds each column has.
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
        self._queue(Task(projector.write_embedding, (self._storage, tag, step, matrix, labels, header, images)))

    @peer_names({"name": "run_name"}, peer_order=("hparam_dict", "metric_dict", "name", "global_step"),
                is_peer_order=lambda args: len(args) > 2 and isinstance(args[2], str))
    def add_hparams(self, hparam_dict: Mapping, metric_dict: Mapping, hparam_domain_discrete: Optional[Mapping] = None,
                    run_name: Optional[str] = None, global_step: Optional[int] = None) -> None:
        """One run of a hyper-parameter search for the HParams dashboard.

        Written to the sub-run `logdir/<run_name>/`: the hparams, and the metrics as scalars
        there. torch's signature; tensorboardX's `(hparam_dict, metric_dict, name, global_step)`
        works as well (a str third is its order).

        Args:
            hparam_dict: `{name: bool, number or str}`.
            metric_dict: `{metric tag: number}`.
            hparam_domain_discrete: `{name: [the values it may take]}`.
            run_name: the sub-run's name. Default: the time.
            global_step: the metrics' step. Default 0.

        Raises:
            TypeError, ValueError: values of other types, a domain without the value.

        Example:
            >>> sw.add_hparams({"lr": 0.1, "batch": 64}, {"hparam/accuracy": 0.93})
        """
        self._ready()
        values, metrics, domains = checks.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        step, now = checks.stamp(global_step, None)
        run = checks.tag(run_name, "run_name") if run_name is not None else "%.6f" % now
        run_file = self._new_file(self._storage.subdir(run))
        self._scalars.add_to_file(run_file, metrics, step, now)
        self._put(hparams_summary, (values, list(metrics), now, now, domains), global_step, now,
                  event_file=run_file)

    def add_graph(self, net: Any, input_shape: Any = None) -> None:
        """The network's graph for the Graphs dashboard.

        Args:
            net: an `mx.sym.Symbol`, or a Gluon `HybridBlock` (the graph it cached once
                hybridized and run forward; else traced with a symbolic input `data`).
            input_shape: a tuple for the input, or `{input name: shape}`: the edges then carry
                tensor shapes.

        Raises:
            TypeError: a net of another kind.

        Example:
            >>> net.hybridize(); net(x)
            >>> sw.add_graph(net)
        """
        from .graph import graph_def, graph_event

        self._ready()
        self._put(graph_event, (graph_def(net, input_shape).SerializeToString(),))

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

    def add_custom_scalars(self, layout: Mapping) -> None:
        """The Custom Scalars dashboard's charts (tensorboardX's layout).

        Args:
            layout: `{category: {title: ["Multiline", [tags]] or ["Margin", [value, lower,
                upper]]}}`.

        Raises:
            TypeError, ValueError: a layout of another form.

        Example:
            >>> sw.add_custom_scalars({"loss": {"train vs val": ["Multiline", ["loss/train", "loss/val"]]}})
        """
        self._ready()
        self._put(custom_scalars_summary, (layout_proto(layout),))

    # -- lifecycle --------------------------------------------------------------------------
    def flush(self) -> None:
        """Return when everything logged before the call is in the event files.

        Raises:
            RuntimeError: the writer is closed.
            WriterError: the writer thread failed.
        """
        self._ready()
        self._worker.flush()
        self._report()

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

    def close(self) -> None:
        """Write everything queued and close the files. Safe to call twice; logging afterwards
        raises.

        Raises:
            OSError, WriterError: a writer-thread error that no earlier call has reported.
        """
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        fault = self._worker.close()
        if fault is not None:
            raise fault

    def reopen(self) -> None:
        """After `close()`, start logging again, into a new event file (mxboard's reopen)."""
        if self._closed:
            self._closed = False
            self._open()

    def export_scalars(self, path: str) -> None:
        """Write the scalars this writer has written (since `clear_scalar_dict()`) to a JSON file.

        As mxboard did: `{"<logdir>/<tag>[/<name>]": [[wall_time, step, value], ...]}`, read back
        from the event files (no scalar is kept in memory).

        Args:
            path: the JSON file to write.
        """
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

    def export_scalars_to_json(self, path: str) -> None:
        """tensorboardX's name for `export_scalars`."""
        self.export_scalars(path)

    def clear_scalar_dict(self) -> None:
        """Start `export_scalars` afresh from here."""
        self.flush()
        self._cleared = {piece: size for f in self._files for piece, size in f.pieces()}

    def get_logdir(self) -> str:
        """Where this writer writes (torch's method)."""
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
