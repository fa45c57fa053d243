"""The calls of the Images, Audio and Text dashboards: images, batches, boxes, videos, figures,
audio and text. Parts of `SummaryWriter` (writer.py); `WriterCore` (writer_core.py) gives them `_log`: each call checks
and captures its arguments (checks.py) and queues a summary builder (summaries/)."""
from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence

import numpy as np

from . import checks
from .compat import peer_names
from .summaries.audio import audio_summary
from .summaries.image import boxes_summary, figure_pixels, image_summary, video_summary
from .summaries.text import text_summary
from .writer_core import WriterCore

__all__ = ["AudioTextCalls", "ImageCalls"]


AUDIO_RATES = {8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000, 176400, 192000}


def _audio_peer_order(args):
    """add_audio(tag, audio, N[, M]): mxboard 0.1.0 took (sample_rate, global_step) there,
    tensorboardX and torch take (global_step, sample_rate). N is a sample rate if it is one of
    the audio rates (8 kHz ... 192 kHz); else it is the peers' step (tensorboardX's demo passes
    the step third), with a warning where it could be a rate (1 kHz or more)."""
    if len(args) < 3 or isinstance(args[2], bool) or not isinstance(args[2], (int, float, np.number)):
        return False
    if args[2] in AUDIO_RATES:
        return False
    if args[2] >= 1000:
        warnings.warn("add_audio: a third positional argument that is no usual audio rate is read as "
                      "global_step (tensorboardX's and torch's order); pass sample_rate= and global_step= by keyword",
                      UserWarning, stacklevel=3)
    return True


class ImageCalls(WriterCore):
    """`SummaryWriter`'s image, video and figure calls."""

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
        if isinstance(img_tensor, (list, tuple)):  # tensorboardX stacks a list of images
            img_tensor, dataformats = checks.image_list(img_tensor, dataformats)
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
                  walltime: Optional[float] = None, dataformats: Optional[str] = None) -> None:
        """A video, shown as an animated GIF in the Images dashboard.

        Args:
            tag: the video's name.
            vid_tensor: (N, T, C, H, W) (a grid of N videos) or (T, C, H, W); float in [0, 1] or uint8.
            fps: frames a second.
            dataformats: the axes' order, a permutation of 'NTCHW' or 'TCHW' (tensorboardX's).
                Default: (N, T, C, H, W) or (T, C, H, W) by the number of dimensions.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: a bad shape, pixels out of range, fps <= 0.

        Example:
            >>> sw.add_video("rollout", np.random.rand(8, 3, 32, 32), fps=4)
        """
        self._log(video_summary, tag, checks.video(vid_tensor, fps, dataformats), global_step, walltime)

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


class AudioTextCalls(WriterCore):
    """`SummaryWriter`'s audio and text calls."""

    @peer_names({"snd_tensor": "audio"}, peer_order=("tag", "audio", "global_step", "sample_rate", "walltime"),
                is_peer_order=_audio_peer_order)
    def add_audio(self, tag: str, audio: Any, sample_rate: int = 44100, global_step: Optional[int] = None,
                  walltime: Optional[float] = None) -> None:
        """Audio, written as 16-bit WAV, for the Audio dashboard.

        Args:
            tag: the clip's name.
            audio: float in [-1, 1] (clipped) or int16: (frames,) mono, or (frames, channels) /
                (channels, frames) with 1 or 2 channels.
            sample_rate: Hz. Third, as in mxboard 0.1.0 (the peers take the step there): a third
                positional value that is no usual audio rate (8 kHz ... 192 kHz) is the step, in
                the peers' order (with a warning from 1000 up).
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
