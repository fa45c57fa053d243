"""`SummaryWriter`, with every call a user makes in one place.

Each call is a few lines and its docstring, but for `add_scalar`, the training loop's hot path,
written out straight through in one function: each further function call would add a few per
cent to its cost. Each call checks and captures its arguments on the caller's
thread (checks.py, convert.py), then queues a summary builder (summaries/) or a task
(projector.py) for the writer thread, through the one `WriterCore` the writer holds
(writer_core.py). `compat.accepts_tensorboardx` lets the calls take tensorboardX's and torch's
argument names and orders.
"""
from __future__ import annotations

import contextlib
import math
import os
import socket
from collections.abc import Mapping, Sequence
from datetime import datetime
from time import time as _now
from typing import Any, Dict, FrozenSet, Iterator, Optional, Union

import numpy as np
from google.protobuf.message import Message as ProtoMessage

from .._format.names import components
from .._writer import lifecycle
from ..proto import Event, Summary
from ..storage import SpoolSettings, UploadPolicy, checked_logdir
from ..summaries import projector
from ..summaries._common import tensor_summary
from ..summaries.audio import audio_summary
from ..summaries.custom_scalars import custom_scalars_summary, layout_proto
from ..summaries.histogram import histogram_of, histogram_raw_summary
from ..summaries.hparams import hparams_summary
from ..summaries.image import boxes_summary, figure_pixels, image_summary, video_summary
from ..summaries.mesh import mesh_summary
from ..summaries.pr_curve import pr_curve_raw_summary, pr_curve_summary
from ..summaries.text import text_summary
from ..system_metrics import SystemMetrics, psutil_module
from . import checks, convert
from .compat import (
    accepts_tensorboardx,
    audio_in_tensorboardx_order,
    pr_curve_in_tensorboardx_order,
    scalar_of_tensorboardx_keywords,
)
from .scalars import Described
from .writer_core import WriterCore

__all__ = ["SummaryWriter"]

# tensorboardX's and torch's positional order for the constructor, taken when the second
# positional argument is a str (their `comment`; mxboard's `max_queue` cannot be one)
TENSORBOARDX_ORDER = ("logdir", "comment", "purge_step", "max_queue", "flush_secs", "filename_suffix", "write_to_disk")

# The Summary messages add_summary takes, by their protos' full names: mxboard's, tensorboardX's,
# TensorBoard's (which torch uses) and TensorFlow's. All have TensorBoard's fields and numbers.
SUMMARY_TYPES = frozenset({"mxboard.Summary", "tensorboardX.Summary", "tensorboard.Summary", "tensorflow.Summary"})

# The Event messages add_event takes, by their protos' full names, as SUMMARY_TYPES.
EVENT_TYPES = frozenset({"mxboard.Event", "tensorboardX.Event", "tensorboard.Event", "tensorflow.Event"})


class SummaryWriter:
    """Writes TensorBoard event files into `logdir`, on a background thread.

    Every `add_*` checks its arguments and captures its data on the calling thread, then queues
    it: building, encoding and writing happen on the writer thread, so the training loop never
    waits for them. An error of the writer thread is raised by the next call. After `close()`,
    the next call reopens the writer with a new event file, as tensorboardX and torch do.
    `add_summary` writes a Summary protocol buffer made elsewhere as it is (the `add_summary` of
    tensorboardX's and torch's FileWriter), for what no `add_*` call makes.

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
        comet_config: tensorboardX's; only `{'disabled': True}` (its default) is taken.
        system_metrics: True (every 10 s) or a number of seconds: CPU, memory, disk and network
            I/O (and NVIDIA GPUs) as scalars under `system/` (system_metrics.py; needs psutil:
            `pip install 'mxboard[system]'`).
        upload_policy: for a logdir URL, how its files upload (`mxboard.UploadPolicy`: how often,
            how large an object, how long a request or a flush may wait, when to give up).
        spool: for a logdir URL, where what the store has not taken waits on disk, and how much
            (`mxboard.SpoolSettings`). Default: as MXBOARD_SPOOL_DIR and MXBOARD_SPOOL_MAX_BYTES
            say now.
        process_hooks: False leaves the process's end to the program (for frameworks that manage
            their own): no exit hook closes this writer and no SIGTERM or SIGHUP handler flushes
            it or is installed for it; close it yourself. Default: as MXBOARD_PROCESS_HOOKS says
            (0 for False), else True (docs/guarantees.md).

    Raises:
        TypeError, ValueError: an argument of the wrong type or value (named in the message).
        ImportError, PermissionError, ConnectionError: a logdir URL whose package is missing,
            whose store refuses the credentials, or cannot be reached.
        FileNotFoundError: a logdir URL whose bucket or container does not exist (mxboard
            creates none).
        TimeoutError: a logdir URL whose store does not answer the constructor's check within
            `upload_policy.check_secs` (10 s by default).

    Example:
        >>> with SummaryWriter("runs/exp1") as sw:
        ...     for step in range(100):
        ...         sw.add_scalar("loss", 1.0 / (step + 1), global_step=step)
    """

    @accepts_tensorboardx({"log_dir": "logdir"}, order=TENSORBOARDX_ORDER,
                          in_order=lambda args: len(args) > 1 and isinstance(args[1], str))
    def __init__(self, logdir: Optional[Union[str, os.PathLike[str]]] = None, max_queue: int = 10,
                 flush_secs: float = 2, filename_suffix: Optional[str] = None, verbose: bool = True, *,
                 comment: str = "", purge_step: Optional[int] = None, write_to_disk: bool = True,
                 comet_config: Optional[Dict[str, Any]] = None, system_metrics: Union[bool, float] = False,
                 upload_policy: Optional[UploadPolicy] = None, spool: Optional[SpoolSettings] = None,
                 process_hooks: Optional[bool] = None) -> None:
        if comet_config is not None and not (isinstance(comet_config, dict) and comet_config.get("disabled")):
            raise ValueError("comet_config=%r: mxboard logs to TensorBoard only, not to Comet (tensorboardX's "
                             "comet_config={'disabled': True}, its default, is taken)" % (comet_config,))
        # tensorboardX's and torch's default: runs/<date>_<host><comment>.
        if logdir is None:
            if not isinstance(comment, str):
                raise TypeError("comment must be a str; got %s" % type(comment).__name__)
            logdir = os.path.join("runs", "%s_%s%s" % (datetime.now().strftime("%b%d_%H-%M-%S"),
                                                       socket.gethostname(), comment))
        if isinstance(logdir, bytes) or not isinstance(logdir, (str, os.PathLike)):
            raise TypeError("logdir must be a str or os.PathLike; got %s" % type(logdir).__name__)
        if isinstance(max_queue, bool) or not isinstance(max_queue, int) or max_queue < 1:
            raise ValueError("max_queue must be an int >= 1; got %r" % (max_queue,))
        flush_secs = convert.positive(flush_secs, "flush_secs")
        if filename_suffix is not None and not isinstance(filename_suffix, str):
            raise TypeError("filename_suffix must be a str or None; got %s" % type(filename_suffix).__name__)
        if filename_suffix and ("/" in filename_suffix or "\\" in filename_suffix or "\0" in filename_suffix):
            raise ValueError("filename_suffix must not contain path separators or NUL: %r" % filename_suffix)
        purge_step = None if purge_step is None else checks.step(purge_step, "purge_step")
        if purge_step is not None and purge_step < 0:
            raise ValueError("purge_step must be >= 0; got %d" % purge_step)
        hooks = lifecycle.process_hooks(process_hooks)
        interval = checks.system_metrics(system_metrics)
        if interval is not None:
            # If psutil is missing, an ImportError names the extra, before any file is made.
            psutil_module()
        # The one check of a logdir (`~` expanded, a mistyped scheme refused before anything is made).
        logdir = checked_logdir(os.fspath(logdir))
        destination = checks.destination(logdir, write_to_disk, upload_policy, spool)
        self._core = WriterCore(destination, max_queue, flush_secs, filename_suffix or "", verbose, purge_step, hooks)
        self._system: Optional[SystemMetrics] = None
        if interval is not None:
            self._system = SystemMetrics(self, interval)

    def close(self) -> None:
        """Write everything queued and close the files (system metrics stop). Safe to call twice.
        A later call reopens the writer, with a new event file (as tensorboardX and torch do).

        Raises:
            WriterIOError: a writer-thread error that no earlier call has reported (an OSError and a
                WriterError, its cause chained).
        """
        system, self._system = getattr(self, "_system", None), None
        if system is not None:
            system.stop()
        self._core.close()

    def flush(self) -> None:
        """Return when everything logged before the call is in the event files (or the store).

        Raises:
            WriterError: the writer thread failed.
        """
        self._core.flush()

    def reopen(self) -> None:
        """After `close()`, start logging again, into a new event file (mxboard's reopen; any
        call does it too)."""
        self._core.reopen()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """Whether the writer is closed: by `close()`, or by the process's exit, whose hook closes
        every writer still open (and no call or `reopen()` since). A call made after the exit's
        close (from an exit hook that runs after mxboard's) reopens the writer and is written
        before it returns."""
        return self._core.closed

    @property
    def logdir(self) -> str:
        """Where this writer writes (tensorboardX's attribute; torch's is `log_dir`)."""
        return self._core.logdir

    log_dir = logdir

    def get_logdir(self) -> str:
        """Where this writer writes (torch's method)."""
        return self._core.logdir

    @contextlib.contextmanager
    def use_metadata(self, *, global_step: Optional[int] = None,
                     walltime: Optional[float] = None) -> Iterator[SummaryWriter]:
        """The step and walltime of the enclosed calls that give none (tensorboardX's).

        Args:
            global_step: their step.
            walltime: their time, seconds since the epoch (default: each call's own).

        Example:
            >>> with sw.use_metadata(global_step=10):
            ...     sw.add_scalar("loss", 3.0)
        """
        core = self._core
        saved = core.default_step, core.default_wall
        step, wall = checks.stamp(saved[0] if global_step is None else global_step, walltime)
        core.default_step, core.default_wall = step, None if walltime is None else wall
        try:
            yield self
        finally:
            core.default_step, core.default_wall = saved

    # -- Scalars -------------------------------------------------------------------------------
    def add_scalar(self, tag: str, value: Any = None, global_step: Optional[int] = None,
                   walltime: Optional[float] = None, **tensorboardx_keywords: Any) -> None:
        """Log a number under `tag` (the training loop's hot path: a few microseconds). Its length:
        the float's path is written inline, each call saved there (a call is about a tenth of it).

        Args:
            tag: the chart's name.
            value: a number, numpy scalar, one-element array, torch tensor, MXNet NDArray or GPU
                array (read once its device has computed it: the loop never waits); or a `(name,
                value)` pair, a `[name, value]` list or a mapping of them: each name one line in
                the same chart, from the sub-run `logdir/<tag>/<name>/`. NaN and +-Inf are
                logged as given (TensorBoard marks them), with one warning per tag naming the step.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.
            **tensorboardx_keywords: tensorboardX's and torch's `scalar_value=` (for `value`); tensorboardX's
                `display_name` and `summary_description` (shown by TensorBoard; such a call is a
                summary of its own, not a batched row); torch's `new_style` and
                `double_precision`, accepted and ignored (values are float32 either way).

        Raises:
            TypeError, ValueError: a value that is not a single real number, a bad tag or step.
            WriterError: the writer thread failed earlier (its cause is attached).

        Example:
            >>> sw.add_scalar("loss", loss.mean(), global_step=step)  # an NDArray: no wait
            >>> sw.add_scalar("accuracy", {"train": 0.91, "val": 0.87}, global_step=epoch)
        """
        core = self._core
        scalar = value
        if type(value) is not float or tensorboardx_keywords:
            scalar = _scalar_form(value, tensorboardx_keywords)
            if type(scalar) is not float and type(scalar) is not convert.Deferred:
                # Named values, or a scalar with a display name: each a summary of its own.
                core.queue_scalar(tag, scalar, global_step, walltime)
                return
        # The hot path: a float, or a device scalar read once its device computed it.
        scalars = core.scalars
        try:
            series = scalars.ids[tag]
        except (KeyError, TypeError):
            # A tag seen for the first time, an unhashable one (refused by `series`), or a closed
            # writer, whose scalars know no tag: the writer is reopened first if it needs to be.
            core.reopen_if_needed()
            scalars = core.scalars
            series = scalars.series(tag)
        if global_step is None:
            global_step = core.default_step
        elif type(global_step) is not int or not 0 <= global_step < 0x7FFFFFFFFFFFFFFF:
            global_step = checks.step(global_step)
        if walltime is None:
            walltime = _now() if core.default_wall is None else core.default_wall
        else:
            walltime = checks.walltime(walltime)
        if type(scalar) is float:
            # NaN or infinite (a finite value gives 0.0): logged as given, and warned about once.
            if scalar - scalar:
                scalars.non_finite(tag, scalar, global_step)
            held = scalars.append(series, scalar, global_step, walltime)
        else:
            held = scalars.append_device(series, tag, scalar, global_step, walltime)
        if held and core.deliver_or_reopen():
            # A forked child's first call went to its parent's writer thread, which writes nothing
            # in the child. The child has a writer thread of its own now: the call again, into it.
            self.add_scalar(tag, value, global_step, walltime, **tensorboardx_keywords)

    def add_scalars(self, main_tag: str, tag_scalar_dict: Mapping[str, Any], global_step: Optional[int] = None,
                    walltime: Optional[float] = None, *, runs: str = "tensorboardx") -> None:
        """Lines in one chart (tensorboardX's call), as `add_scalar(main_tag, dict)`.

        Args:
            main_tag: the chart's name.
            tag_scalar_dict: `{name: value}`, each value as `add_scalar` takes it (a device array
                is read once its device computed it); each name's values go to a sub-run of its
                own, under the tag `main_tag`.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.
            runs: how the sub-runs are named: "tensorboardx" (the default, and `add_scalar`'s),
                `logdir/<main_tag>/<name>/`; or "torch", `logdir/<main_tag>_<name>/` with each `/`
                of `main_tag` written `_` (torch's, whose empty dict logs nothing).

        Raises:
            TypeError, ValueError: not a mapping, a value that is not a single number, a bad
                `main_tag`, name, step or `runs`.

        Example:
            >>> sw.add_scalars("loss", {"train": 0.3, "val": 0.4}, global_step=10)
            >>> sw.add_scalars("loss", {"train": 0.3}, 10, runs="torch")  # the run loss_train
        """
        if not isinstance(tag_scalar_dict, Mapping):
            raise TypeError("tag_scalar_dict must be a dict of name -> value; got %s"
                            % type(tag_scalar_dict).__name__)
        if runs != "tensorboardx" and runs != "torch":
            raise ValueError("runs must be 'tensorboardx' or 'torch'; got %r" % (runs,))
        checks.tag(main_tag, "main_tag")
        named = convert.named(tag_scalar_dict, "tag_scalar_dict", runs)
        self._core.queue_scalar(main_tag, named, global_step, walltime)

    def export_scalars(self, path: str) -> None:
        """Write the scalars this writer has written (since `clear_scalar_dict()`) to a JSON file.

        As mxboard did: `{"<logdir>/<tag>[/<name>]": [[wall_time, step, value], ...]}`, read back
        from the event files (no scalar is kept in memory).

        Args:
            path: the JSON file to write.
        """
        self._core.export_scalars(path)

    def export_scalars_to_json(self, path: str) -> None:
        """tensorboardX's name for `export_scalars`."""
        self.export_scalars(path)

    def clear_scalar_dict(self) -> None:
        """Start `export_scalars` afresh from here."""
        self._core.clear_scalars()

    # -- Images, videos, figures, Audio, Text --------------------------------------------------
    @accepts_tensorboardx({"img_tensor": "image"})
    def add_image(self, tag: str, image: Any, global_step: Optional[int] = None, walltime: Optional[float] = None,
                  dataformats: str = "CHW") -> None:
        """An image, for the Images dashboard.

        Args:
            tag: the image's name.
            image: float pixels in [0, 1] (clipped, never wrapped) or integers in [0, 255]; 1, 3
                or 4 channels. NaN and -Inf are drawn black and +Inf white, with one warning per tag.
            dataformats: 'CHW' (a 2-D array is taken as HW and a 4-D one as a batch NCHW shown
                as a grid, as mxboard did), 'HWC', 'HW', 'NCHW' or 'NHWC'.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: a shape that does not fit `dataformats`, pixels out of range.

        Example:
            >>> sw.add_image("digit", np.random.rand(1, 28, 28), global_step=0)
        """
        # mxboard took these.
        if dataformats == "CHW" and getattr(image, "ndim", None) in (2, 4):
            dataformats = "HW" if image.ndim == 2 else "NCHW"
        step, wall = self._core.stamp(global_step, walltime)
        say = self._core.said_once("add_image(%r)" % (tag,), step)
        self._core.queue_summary(image_summary, tag, checks.image(image, dataformats, say=say), step, wall)

    def add_images(self, tag: str, img_tensor: Any, global_step: Optional[int] = None,
                   walltime: Optional[float] = None, dataformats: str = "NCHW") -> None:
        """A batch of images shown as one grid (tensorboardX's add_images), 2 px between the
        images; a batch of one is drawn as it is, with no border, as tensorboardX and torch draw it.

        Args:
            tag: the grid's name.
            img_tensor: (N, C, H, W) or (N, H, W, C) pixels, as `add_image` takes them; or a
                list of images of one shape, stacked (`dataformats` then names each one's, 'CHW'
                or 'HWC', or the stack's).
            dataformats: 'NCHW' or 'NHWC'.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: as `add_image`.

        Example:
            >>> sw.add_images("batch", data.asnumpy()[:16], global_step=step)
        """
        # tensorboardX stacks a list of images.
        if isinstance(img_tensor, (list, tuple)):
            img_tensor, dataformats = checks.image_list(img_tensor, dataformats)
        step, wall = self._core.stamp(global_step, walltime)
        say = self._core.said_once("add_images(%r)" % (tag,), step)
        self._core.queue_summary(image_summary, tag, checks.image(img_tensor, dataformats, "img_tensor", say),
                                 step, wall)

    def add_image_with_boxes(self, tag: str, img_tensor: Any, box_tensor: Any, global_step: Optional[int] = None,
                             walltime: Optional[float] = None, rescale: float = 1, dataformats: str = "CHW",
                             labels: Optional[Sequence[str]] = None) -> None:
        """An image with boxes drawn on it (tensorboardX's and torch's signature).

        Args:
            tag: the image's name.
            img_tensor: one image, as `add_image` takes it.
            box_tensor: (N, 4) boxes [xmin, ymin, xmax, ymax] in pixels, xmin <= xmax, ymin <= ymax.
            rescale: scales the image and its boxes (the result at most 16384 pixels per side).
            dataformats: the image's, as in `add_image`.
            labels: one str per box, drawn above it.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: a bad image, inverted or non-finite boxes, a bad rescale.

        Example:
            >>> sw.add_image_with_boxes("detections", image, [[10, 10, 40, 50]], labels=["cat"])
        """
        step, wall = self._core.stamp(global_step, walltime)
        say = self._core.said_once("add_image_with_boxes(%r)" % (tag,), step)
        pixels, dataformats = checks.image(img_tensor, dataformats, "img_tensor", say)
        boxes, labels, scale = checks.boxes(box_tensor, labels, rescale, dataformats, pixels.shape)
        self._core.queue_summary(boxes_summary, tag, (pixels, dataformats, boxes, labels, scale), step, wall)

    def add_video(self, tag: str, vid_tensor: Any, global_step: Optional[int] = None, fps: float = 4,
                  walltime: Optional[float] = None, dataformats: Optional[str] = None) -> None:
        """A video, shown as an animated GIF in the Images dashboard.

        Args:
            tag: the video's name.
            vid_tensor: (N, T, C, H, W) (a grid of N videos) or (T, C, H, W); float in [0, 1] or uint8.
            fps: frames per second.
            dataformats: the axes' order, a permutation of 'NTCHW' or 'TCHW' (tensorboardX's).
                Default: (N, T, C, H, W) or (T, C, H, W) by the number of dimensions.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: a bad shape, pixels out of range, fps <= 0.

        Example:
            >>> sw.add_video("rollout", np.random.rand(8, 3, 32, 32), fps=4)
        """
        step, wall = self._core.stamp(global_step, walltime)
        say = self._core.said_once("add_video(%r)" % (tag,), step)
        self._core.queue_summary(video_summary, tag, checks.video(vid_tensor, fps, dataformats, say), step, wall)

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
            self._core.queue_summary(image_summary, tag, (rendered[0], "HWC"), global_step, walltime)
        else:
            shape = rendered[0].shape
            if any(i.shape != shape for i in rendered):
                raise ValueError("figures of a list must have one size; got %s"
                                 % sorted({i.shape for i in rendered}))
            self._core.queue_summary(image_summary, tag, (np.stack(rendered), "NHWC"), global_step, walltime)

    @accepts_tensorboardx({"snd_tensor": "audio"}, order=("tag", "audio", "global_step", "sample_rate", "walltime"),
                          in_order=audio_in_tensorboardx_order)
    def add_audio(self, tag: str, audio: Any, sample_rate: int = 44100, global_step: Optional[int] = None,
                  walltime: Optional[float] = None) -> None:
        """Audio, written as 16-bit WAV, for the Audio dashboard.

        Args:
            tag: the clip's name.
            audio: float in [-1, 1] (clipped) or int16: (frames,) mono, or (frames, channels) /
                (channels, frames) with 1 or 2 channels. NaN is written as silence and +-Inf as
                full scale, with one warning per tag.
            sample_rate: Hz. It comes third, as in mxboard 0.1.0, where tensorboardX and torch
                take the step. A third positional value that is not a usual audio rate (8 kHz to
                192 kHz) is taken as the step, in their order (with a warning from 1000 up).
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: a bad shape or rate.

        Example:
            >>> sw.add_audio("tone", np.sin(np.arange(16000) / 10), sample_rate=16000)
        """
        step, wall = self._core.stamp(global_step, walltime)
        say = self._core.said_once("add_audio(%r)" % (tag,), step)
        self._core.queue_summary(audio_summary, tag, checks.audio(audio, sample_rate, say), step, wall)

    @accepts_tensorboardx({"text_string": "text"})
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
        self._core.queue_summary(text_summary, tag, (checks.text(text),), global_step, walltime)

    # -- Histograms, PR curves, tensors --------------------------------------------------------
    def add_histogram(self, tag: str, values: Any, global_step: Optional[int] = None, bins: Any = "default",
                      walltime: Optional[float] = None, max_bins: Optional[int] = None) -> None:
        """A histogram of `values` (any shape), for the Histograms and Distributions dashboards.

        Args:
            tag: the chart's name.
            values: an array of real numbers (numpy, NDArray, torch, CuPy, JAX, list...). NaN
                and +-Inf cannot be binned: they are dropped, with one warning a tag naming the
                step where it first happened.
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
        # Counted on a GPU, or captured for the writer thread.
        values = convert.histogram_input(values, bins)
        step, wall = self._core.stamp(global_step, walltime)
        # A NaN the writer thread finds is shown at this call's line, once for each tag.
        say = self._core.said_once("add_histogram(%r)" % (tag,), step)
        self._core.queue_summary(histogram_of, tag, (values, bins, max_bins, say), step, wall)

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
        self._core.queue_summary(histogram_raw_summary, tag, (fields,), global_step, walltime)

    @accepts_tensorboardx(order=("tag", "labels", "predictions", "global_step", "num_thresholds", "weights",
                                 "walltime"), in_order=pr_curve_in_tensorboardx_order)
    def add_pr_curve(self, tag: str, labels: Any, predictions: Any, num_thresholds: int = 127,
                     global_step: Optional[int] = None, weights: Any = None,
                     walltime: Optional[float] = None) -> None:
        """A precision-recall curve for the PR Curves dashboard.

        Args:
            tag: the curve's name.
            labels: the truth, 0/1 or bool, one per prediction.
            predictions: probabilities in [0, 1], finite.
            num_thresholds: thresholds >= 2. Pass it by keyword: mxboard 0.1.0 took it fourth,
                where tensorboardX and torch take the step. A lone fourth positional argument is
                read as the step, and with a fifth as (num_thresholds, global_step), each with a
                warning.
            weights: one weight per prediction (broadcast to the labels' shape).
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: shapes that differ, labels outside {0, 1}, predictions NaN.

        Example:
            >>> sw.add_pr_curve("pr/cat", labels == 3, probabilities[:, 3], global_step=epoch)
        """
        self._core.queue_summary(pr_curve_summary, tag, checks.pr_curve(labels, predictions, num_thresholds, weights),
                                 global_step, walltime)

    def add_pr_curve_raw(self, tag: str, true_positive_counts: Any, false_positive_counts: Any,
                         true_negative_counts: Any, false_negative_counts: Any, precision: Any, recall: Any,
                         global_step: Optional[int] = None, num_thresholds: Optional[int] = None, weights: Any = None,
                         walltime: Optional[float] = None) -> None:
        """A precision-recall curve counted already (tensorboardX's signature).

        Args:
            tag: the curve's name.
            true_positive_counts, false_positive_counts, true_negative_counts,
                false_negative_counts, precision, recall: one value per threshold each.
            num_thresholds: how many thresholds each column has (None means their length).
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
        self._core.queue_summary(pr_curve_raw_summary, tag, (*columns, num_thresholds), global_step, walltime)

    def add_tensor(self, tag: str, tensor: Any, global_step: Optional[int] = None,
                   walltime: Optional[float] = None) -> None:
        """A tensor as it is (torch's add_tensor): the TensorProto of `tensor` under the plugin
        name 'tensor', which TensorBoard keeps and no dashboard draws (read it back with its
        loaders or `mxboard.reader.read_events`).

        Args:
            tag: the tensor's name.
            tensor: an array of bools, integers, floats or complex numbers (complex64 and
                complex128 are written as DT_COMPLEX64 and DT_COMPLEX128, as torch writes them;
                torch's complex32 as complex64), or of str.
            global_step: the step. Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError: an array of another kind, or of a dtype TensorBoard has none for
                (float128, datetime64, ...), naming it.

        Example:
            >>> sw.add_tensor("confusion", confusion_matrix, global_step=epoch)
        """
        self._core.queue_summary(tensor_summary, tag, (checks.tensor(tensor),), global_step, walltime)

    def add_summary(self, summary: Any, global_step: Optional[int] = None, walltime: Optional[float] = None) -> None:
        """A `Summary` protocol buffer as it is, in an event of its own (the `add_summary` of
        tensorboardX's and torch's FileWriter): for data no `add_*` call makes, such as a
        plugin's own. It is copied at the call, so changing it afterwards changes nothing written.

        Args:
            summary: a `mxboard.proto.Summary`, or a Summary of tensorboardX's, torch's,
                TensorBoard's or TensorFlow's protos (the same fields).
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError: not a Summary message (serialized bytes among them: parse them first,
                with `mxboard.proto.Summary.FromString`).
            ValueError: a value of the summary without a tag.

        Example:
            >>> from mxboard.proto import Summary
            >>> sw.add_summary(Summary(value=[Summary.Value(tag="loss", simple_value=0.25)]), global_step=10)
        """
        serialized = _serialized_summary(summary)
        self._core.reopen_if_needed()
        self._core.queue_record(Summary.FromString, (serialized,), global_step, walltime)

    def add_event(self, event: Any, step: Optional[int] = None, walltime: Optional[float] = None) -> None:
        """An `Event` protocol buffer as it is (the `add_event` of tensorboardX's and torch's
        FileWriter): for what no `add_*` call and no Summary carries, such as a graph made
        elsewhere. It is copied at the call. A file-version event is left out: the file has one.

        Args:
            event: a `mxboard.proto.Event`, or an Event of tensorboardX's, torch's, TensorBoard's
                or TensorFlow's protos (the same fields).
            step: the step (x axis); an int, or a float taken as int(step). Default: the event's own.
            walltime: seconds since the epoch. Default: the time of the call (the event's own is
                replaced, as the peers' FileWriter replaces it).

        Raises:
            TypeError: not an Event message (serialized bytes among them: parse them first, with
                `mxboard.proto.Event.FromString`).

        Example:
            >>> from mxboard.proto import Event
            >>> sw.add_event(Event(step=3, graph_def=graph.SerializeToString()))
        """
        _check_proto(event, "event", "an", "Event", EVENT_TYPES)
        if event.WhichOneof("what") == "file_version":
            return
        serialized = bytes(event.SerializeToString())
        self._core.reopen_if_needed()
        self._core.queue_record(Event.FromString, (serialized,), event.step if step is None else step, walltime)

    # -- Graphs, Projector, Mesh ---------------------------------------------------------------
    @accepts_tensorboardx({"model": "net", "input_to_model": "input_shape"})
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
        from ..frameworks.graph import graph_def, graph_event, is_torch_module, torch_graph_def

        self._core.reopen_if_needed()
        # Traced here: the module is the caller's, and may change.
        if is_torch_module(net):
            serialized = torch_graph_def(net, input_shape, verbose, use_strict_trace)
        else:
            serialized = graph_def(net, input_shape).SerializeToString()
        self._core.queue_record(graph_event, (serialized,))

    # This is torch's name.
    @accepts_tensorboardx({"prototxt": "onnx_model_file"})
    def add_onnx_graph(self, onnx_model_file: Any) -> None:
        """An ONNX model's graph for the Graphs dashboard (needs the `onnx` package).

        Args:
            onnx_model_file: a path, or a loaded `onnx.ModelProto`.

        Raises:
            ImportError: `onnx` is not installed.

        Example:
            >>> sw.add_onnx_graph("model.onnx")
        """
        from ..frameworks.graph import graph_event, onnx_graph_def

        self._core.reopen_if_needed()
        self._core.queue_record(graph_event, (onnx_graph_def(onnx_model_file).SerializeToString(),))

    def add_openvino_graph(self, xmlname: str) -> None:
        """tensorboardX's OpenVINO graph: not drawn by mxboard.

        Raises:
            NotImplementedError: always, saying what to do instead.
        """
        raise NotImplementedError("add_openvino_graph(%r): mxboard does not read OpenVINO IR; export the model "
                                  "to ONNX and log it with add_onnx_graph" % (xmlname,))

    @accepts_tensorboardx({"mat": "embedding", "metadata": "labels", "label_img": "images"},
                          order=("mat", "metadata", "label_img", "global_step", "tag", "metadata_header"),
                          in_order=lambda args: not isinstance(args[0], str))
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
            labels: N labels; or N rows of labels with `metadata_header` naming the columns; or
                N + 1 rows, the first naming the columns (mxboard 0.1.0's 2-D labels). A list of N
                rows without names is N labels, each row written as str(row) (as the peers do).
            images: (N, C, H, W) thumbnails for the sprite.
            global_step: a step, to keep one embedding per step.
            metadata_header: the labels' column names (one column's name is not written: the
                Projector would read it as a point; it names the column "label").

        Raises:
            TypeError, ValueError: shapes or label counts that disagree, an array of N rows of
                several labels without the columns' names.

        Example:
            >>> sw.add_embedding("features", features, labels=list(y), images=x[:, None])
        """
        self._core.reopen_if_needed()
        tag = checks.tag(tag)
        if embedding is None:
            raise TypeError("add_embedding() needs the embedding matrix (`embedding`, or `mat`)")
        step = None if global_step is None else checks.step(global_step)
        say = self._core.said_once("add_embedding(%r)" % (tag,), step)
        matrix, labels, images, header = checks.embedding(embedding, labels, images, metadata_header, say)
        # The projector's files are written in place.
        self._core.call_in_order(projector.write_embedding, tag, step, matrix, labels, header, images)
        self._core.deliver_to_caller()

    def add_mesh(self, tag: str, vertices: Any, colors: Any = None, faces: Any = None,
                 config_dict: Optional[Dict[str, Any]] = None, global_step: Optional[int] = None,
                 walltime: Optional[float] = None) -> None:
        """A mesh or point cloud for the Mesh dashboard.

        Args:
            tag: the mesh's name.
            vertices: (B, N, 3) or (N, 3) floats, finite as float32 (TensorBoard cannot place
                a NaN or infinite vertex: ValueError naming its index).
            colors: (B, N, 3) RGB, integers in [0, 255].
            faces: (B, F, 3) integer vertex indices.
            config_dict: JSON data for the viewer (copied at the call).
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: shapes that disagree, indices out of range, bad colors, NaN or
                infinite vertices.

        Example:
            >>> sw.add_mesh("cloud", np.random.rand(100, 3), colors=np.full((100, 3), 200))
        """
        self._core.queue_summary(mesh_summary, tag, checks.mesh(vertices, colors, faces, config_dict), global_step,
                                 walltime)

    # -- HParams, Custom Scalars ---------------------------------------------------------------
    @accepts_tensorboardx({"name": "run_name"}, order=("hparam_dict", "metric_dict", "name", "global_step"),
                          in_order=lambda args: len(args) > 2 and isinstance(args[2], str))
    def add_hparams(self, hparam_dict: Mapping[str, Any], metric_dict: Mapping[Any, Any],
                    hparam_domain_discrete: Optional[Mapping[str, Any]] = None,
                    run_name: Optional[str] = None, global_step: Optional[int] = None, *,
                    in_run: bool = False) -> None:
        """One run of a hyper-parameter search for the HParams dashboard.

        By default, as tensorboardX and torch do, the hparams and the metrics (as scalars) are
        written to a sub-run `logdir/<run_name>/` of their own. With `in_run=True` they are written
        into this writer's own run instead, so that the dashboard shows the run's own curves on
        the hparams' row; a metric given as None is a tag the run logs itself, and its last value
        is shown. The signature is torch's; tensorboardX's `(hparam_dict, metric_dict, name,
        global_step)` works as well (a str third argument means its order).

        Args:
            hparam_dict: `{name: bool, number or str}`; a name whose value is None is left out
                (with its domain), as torch and tensorboardX leave it out.
            metric_dict: `{metric tag: number}`. With `in_run`, a number or None; a key
                `(tag, name)` with None names the run's own `add_scalar(tag, {name: ...})` line.
                A NaN or infinite metric (or hparam) is logged as given, with one warning per name.
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
        self._core.reopen_if_needed()
        if in_run and run_name is not None:
            raise ValueError("add_hparams: run_name=%r with in_run=True: the hparams go into this writer's run"
                             % (run_name,))
        values, metrics, domains = checks.hparams(hparam_dict, metric_dict, hparam_domain_discrete, in_run)
        if in_run:
            checks.no_points_on_own_curves(metrics, self._core.scalar_tags(), global_step)
        step, now = self._core.stamp(global_step, None)
        for what, at, numbers in (("hparam_dict", None, values), ("metric_dict", step, metrics)):
            # Logged as given, as scalars are; warned about once per name.
            for name, number in numbers.items():
                if isinstance(number, float) and not math.isfinite(number):
                    self._core.said_once("add_hparams(%s[%r])" % (what, name), at)("%r was logged as given" % number)
        # For in_run, the main file is used.
        run_file = None
        if not in_run:
            run_name = checks.tag(run_name, "run_name") if run_name is not None else "%.6f" % now
            run_file = self._core.open_sub_run_file(run_name)
        numbers = {tag: value for tag, value in metrics.items() if value is not None}
        self._core.queue_scalars_to_file(run_file, numbers, step, now)
        names = [(key[0], "/".join(components(*key)), "%s (%s)" % key) if isinstance(key, tuple) else key
                 # (tag, name): "accuracy (validation)", not accuracy/validation.accuracy.
                 for key in metrics]
        self._core.queue_record(hparams_summary, (values, names, now, now, domains), global_step, now, file=run_file)

    def add_custom_scalars(self, layout: Mapping[str, Any]) -> None:
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
        # The layout is checked as given.
        layout_proto(layout)
        self._core.add_layout(layout, custom_scalars_summary, layout_proto)

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


def _check_proto(message: Any, argument: str, article: str, name: str, types: FrozenSet[str]) -> None:
    """A TypeError naming `argument` where `message` is not one of the `name` messages `types`
    lists (serialized bytes told to be parsed first)."""
    kind = message.DESCRIPTOR.full_name if isinstance(message, ProtoMessage) else type(message).__name__
    if kind not in types:
        hint = (": parse serialized bytes first, with mxboard.proto.%s.FromString(data)" % name
                if isinstance(message, (bytes, bytearray, memoryview)) else "")
        raise TypeError("%s must be %s %s protocol buffer (mxboard.proto.%s, or tensorboardX's, torch's, "
                        "TensorBoard's or TensorFlow's); got %s%s" % (argument, article, name, name, kind, hint))


def _serialized_summary(summary: Any) -> bytes:
    """The bytes of `summary`, a Summary message of any of the protos that share TensorBoard's
    fields, once each value is seen to have a tag. Anything else is a TypeError naming it."""
    _check_proto(summary, "summary", "a", "Summary", SUMMARY_TYPES)
    for index, value in enumerate(summary.value):
        if not value.tag:
            raise ValueError("summary.value[%d] has no tag: TensorBoard shows a value under its tag" % index)
    return bytes(summary.SerializeToString())


def _scalar_form(value: Any, keywords: Dict[str, Any]) -> Union[float, convert.Named, convert.Deferred, Described]:
    """What an `add_scalar` value is, decided once: a float, `Named` values, a `Deferred` device
    scalar, or (with tensorboardX's display name or description) a `Described` scalar."""
    described = None
    if keywords:
        value, described = scalar_of_tensorboardx_keywords(value, keywords)
    # A summary of its own, with its metadata.
    if described:
        return Described(convert.scalar_alone(value), *described)
    return convert.scalar_value(value)
