"""The checks of every call's arguments, one function per kind of summary, run on the caller's
thread. A bad call raises a TypeError or ValueError that names the argument, before anything is
queued, so it never costs another call its data. Each check returns the arguments that its kind's
builder (summaries/) takes, with the data captured by `convert.capture`: numpy copies, or
snapshots of device arrays (MXNet's, or a GPU's) whose values are checked when the writer thread
resolves them, so that the training thread never waits for MXNet's engine or the device.
"""
import json
import math
from time import time as _now
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .._format.names import is_url
from .._writer.callsite import CallSite, call_site, warn_at, warn_at_call
from ..storage import Destination, SpoolSettings, UploadPolicy
from ..summaries._common import TENSOR_DTYPES, data_type
from ..summaries.audio import frames_layout
from ..summaries.hparams import hparam_value
from . import convert

__all__ = ["stamp", "step", "walltime", "bins", "histogram_raw", "image", "boxes", "video", "audio", "text",
           "pr_curve", "pr_curve_raw", "mesh", "embedding", "hparams", "pixels", "DATAFORMATS"]

DATAFORMATS = ("HW", "CHW", "HWC", "NCHW", "NHWC")
BIN_RULES = ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt")
# More buckets than a histogram chart has pixels.
MAX_BINS = 1 << 16
# The largest image the writer thread draws boxes on, after rescaling.
MAX_SIDE, MAX_PIXELS = 1 << 14, 1 << 26
_CHANNELS = (1, 3, 4)
# A mesh's vertices are sent as float32.
_FLOAT32_MAX = float(np.finfo(np.float32).max)
# Seconds: a GIF frame's delay is 16 bits of centiseconds.
_GIF_LONGEST_FRAME = 655.35
# What `convert.capture` returns: a numpy array, or a snapshot of a device array that the writer
# thread resolves. The user's values before it are Any (numbers, lists, NDArrays, anything with __array__).
Captured = Any
Check = Callable[[Captured], Captured]
# Reports a NaN or Inf found, warned about once per tag (WriterCore.said_once).
Say = Callable[[str], None]


# -- when ------------------------------------------------------------------------------------
def step(global_step: Any, name: str = "global_step") -> int:
    """A step as an int. None is 0, and a float is truncated, as tensorboardX and torch do."""
    return 0 if global_step is None else convert.to_int(global_step, name)


def walltime(value: Any) -> float:
    """Seconds since the epoch as a float. None is now."""
    if value is None:
        return _now()
    wall = convert.to_float(value, "walltime")
    # Any finite time, 0 included, as tensorboardX and torch take it.
    if not math.isfinite(wall):
        raise ValueError("walltime must be finite seconds since the epoch; got %r" % (value,))
    return wall


def stamp(global_step: Any, wall: Any) -> Tuple[int, float]:
    """The (step, walltime) of a call."""
    return step(global_step), walltime(wall)


# -- histograms -----------------------------------------------------------------------------
def bins(value: Any) -> Union[str, int, Captured]:
    """'default', a numpy rule name, a number of equal-width bins, or increasing finite edges."""
    if isinstance(value, str):
        # tensorboardX's and torch's name for TensorBoard's default buckets.
        if value == "tensorflow":
            return "default"
        if value != "default" and value not in BIN_RULES:
            raise ValueError("bins must be 'default' (or 'tensorflow'), %s, an int or bin edges; got %r"
                             % (", ".join(repr(r) for r in BIN_RULES), value))
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if not 1 <= value <= MAX_BINS:
            raise ValueError("bins must be between 1 and %d; got %d" % (MAX_BINS, value))
        return int(value)
    edges = convert.capture(value, "bins", defer=False).astype(np.float64)
    if edges.ndim != 1 or len(edges) < 2 or np.any(np.diff(edges) <= 0) or not np.all(np.isfinite(edges)):
        raise ValueError("bins given as edges must be a 1-D increasing sequence of at least 2 finite numbers")
    if len(edges) > MAX_BINS + 1:
        raise ValueError("bins must be at most %d edges; got %d" % (MAX_BINS + 1, len(edges)))
    return edges


def system_metrics(every: Any) -> Optional[float]:
    """The seconds between samples that `SummaryWriter(system_metrics=...)` asks for: True means
    10 s, a number is seconds, and False or None means no metrics (returned as None)."""
    if every is None or every is False:
        return None
    return 10.0 if every is True else convert.positive(every, "system_metrics",
                                                       "True, False or a number of seconds > 0")


def destination(logdir: str, to_disk: bool, upload: Any, spool: Any) -> Destination:
    """Where a writer's files go. `upload` (an UploadPolicy) and `spool` (SpoolSettings) apply
    only to a logdir URL. The spool's default is read from the environment now, once per writer."""
    for value, name, kind in ((upload, "upload_policy", UploadPolicy), (spool, "spool", SpoolSettings)):
        if value is None:
            continue
        if not isinstance(value, kind):
            raise TypeError("%s must be a mxboard.%s or None; got %s" % (name, kind.__name__, type(value).__name__))
        if not is_url(logdir):
            raise ValueError("%s applies to a logdir in an object store (a URL); %r is a directory" % (name, logdir))
    return Destination.of(logdir, bool(to_disk), upload, spool)


def max_bins(value: Any) -> int:
    return _count(value, "max_bins", 1)


def _count(value: Any, name: str, least: int) -> int:
    """A whole number from `least` to MAX_BINS, such as a count of buckets or thresholds."""
    count = convert.to_int(value, name)
    if not least <= count <= MAX_BINS:
        raise ValueError("%s must be between %d and %d; got %d" % (name, least, MAX_BINS, count))
    return count


def histogram_raw(min: Any, max: Any, num: Any, sum: Any, sum_squares: Any, bucket_limits: Any,
                  bucket_counts: Any) -> Dict[str, Any]:
    """The HistogramProto fields, as a dict, of a histogram the caller counted already."""
    limits = convert.capture(bucket_limits, "bucket_limits", defer=False).astype(np.float64).reshape(-1)
    counts = convert.capture(bucket_counts, "bucket_counts", defer=False).astype(np.float64).reshape(-1)
    if len(limits) != len(counts):
        raise ValueError("bucket_limits and bucket_counts must have the same length; got %d and %d"
                         % (len(limits), len(counts)))
    if np.isnan(limits).any():
        raise ValueError("bucket_limits must be numbers; got NaN at index %d" % np.flatnonzero(np.isnan(limits))[0])
    if np.any(np.diff(limits) < 0):
        raise ValueError("bucket_limits must be increasing")
    bad = ~(np.isfinite(counts) & (counts >= 0))
    if bad.any():
        i = np.flatnonzero(bad)[0]
        raise ValueError("bucket_counts must be finite counts >= 0; got %r at index %d" % (counts[i].item(), i))
    fields = {name: convert.to_float(value, name) for name, value in
              (("min", min), ("max", max), ("num", num), ("sum", sum), ("sum_squares", sum_squares))}
    for name, value in fields.items():
        if math.isnan(value):
            raise ValueError("%s must be a number; got NaN" % name)
    if len(limits) and fields["min"] > limits[0]:
        raise ValueError("min (%r) must not exceed the first bucket limit (%r)" % (fields["min"], limits[0].item()))
    return dict(fields, bucket_limit=limits.tolist(), bucket=counts.tolist())


# -- images, video, audio -------------------------------------------------------------------
def dataformats(shape: Tuple[int, ...], formats: object, name: str = "image") -> str:
    """`formats`, upper-cased, after checking `shape` against it."""
    if not isinstance(formats, str) or formats.upper() not in DATAFORMATS:
        raise ValueError("dataformats must be one of %s; got %r" % (", ".join(DATAFORMATS), formats))
    formats = formats.upper()
    if len(shape) != len(formats):
        raise ValueError("%s with dataformats=%r must have %d dimensions; got shape %s"
                         % (name, formats, len(formats), tuple(shape)))
    if "C" in formats and shape[formats.index("C")] not in _CHANNELS:
        hint = ""
        # Channels last, as in a PIL, OpenCV or matplotlib image.
        if formats.endswith("CHW") and shape[-1] in _CHANNELS:
            hint = "; channels last? pass dataformats=%r" % (formats[:-3] + "HWC")
        raise ValueError("%s must have 1, 3 or 4 channels (dataformats=%r); got %d in shape %s%s"
                         % (name, formats, shape[formats.index("C")], tuple(shape), hint))
    if 0 in shape:
        raise ValueError("%s is empty: shape %s" % (name, tuple(shape)))
    return formats


def all_finite(array: Captured) -> bool:
    """Whether an array holds no NaN and no +-Inf. Integers always do. Floats are judged by their
    least and greatest values: two reductions and no copy, as a NaN spreads through both."""
    return array.dtype.kind != "f" or not array.size or bool(np.isfinite(array.min()) and np.isfinite(array.max()))


def pixels(array: Captured, name: str = "image", site: Optional[CallSite] = None,
           say: Optional[Say] = None) -> Captured:
    """Check an image's pixels, and return them.

    Integer pixels must lie in [0, 255]. Floats are clipped to [0, 1], never wrapped around, and
    float pixels above 1 (surely a 0-255 image) are warned about at `site`, the user's line: an
    NDArray's check runs on the writer thread, so the call passes its line along. NaN and -Inf are
    drawn black and +Inf white (summaries.image.to_uint8), and `say` (WriterCore.said_once)
    reports that."""
    if array.dtype.kind in "iu" and array.dtype != np.uint8 and array.size:
        low, high = array.min(), array.max()
        if low < 0 or high > 255:
            raise ValueError("%s: integer pixels must lie in [0, 255]; got [%d, %d]" % (name, low, high))
    elif array.dtype.kind == "f" and array.size:
        high = array.max()
        if not (np.isfinite(high) and np.isfinite(array.min())):
            if say is not None:
                say("NaN or infinite pixels were drawn black (NaN, -Inf) or white (+Inf)")
            high = np.max(array, where=np.isfinite(array), initial=0)
        if high > 1:
            warn_at(site or call_site(), "%s: float pixels are read in [0, 1], and some are above 1 (shown white): "
                    "a 0-255 image? Divide it by 255, or pass uint8" % name)
    return array


def image(value: Any, formats: Any, name: str = "image", say: Optional[Say] = None) -> Tuple[Captured, str]:
    """The (pixels, dataformats) of an image or a batch of them. For `say`, see `pixels`."""
    site = call_site()
    array = convert.capture(value, name, check=lambda a: pixels(a, name, site, say))
    return array, dataformats(array.shape, formats, name)


def image_list(images: Sequence[Any], formats: str) -> Tuple[Captured, str]:
    """A list of images of one shape as a stack, with its dataformats. Each image is in `formats`,
    or the list is in the stack's formats with a leading N."""
    arrays = [convert.to_numpy(image, "img_tensor[%d]" % i) for i, image in enumerate(images)]
    if not arrays:
        raise ValueError("img_tensor is an empty list")
    shapes = sorted({a.shape for a in arrays})
    if len(shapes) > 1:
        raise ValueError("img_tensor: the images of a list must have one shape; got %s" % shapes)
    return np.stack(arrays), formats if formats.startswith("N") else "N" + formats


def boxes(box_tensor: Any, labels: Any, rescale: Any, formats: str,
          shape: Tuple[int, ...]) -> Tuple[Captured, Optional[List[str]], float]:
    """The (boxes, labels, rescale) of add_image_with_boxes, on one image (not a batch) of
    `shape` in `formats`.

    The boxes are (N, 4) finite [xmin, ymin, xmax, ymax], each with xmin <= xmax and ymin <= ymax.
    The labels are N str, or None. The scale is above 0 and keeps the image within MAX_SIDE
    pixels per side and MAX_PIXELS in all."""
    if formats.startswith("N"):
        raise ValueError("add_image_with_boxes takes one image; got dataformats=%r" % formats)
    array = convert.capture(box_tensor, "box_tensor", defer=False).astype(np.float64)
    if array.ndim == 1 and array.shape[0] == 4:
        array = array[None]
    if array.ndim != 2 or array.shape[1] != 4:
        raise ValueError("box_tensor must have shape (N, 4): [xmin, ymin, xmax, ymax] per box; got %s"
                         % (array.shape,))
    if not np.all(np.isfinite(array)):
        raise ValueError("box_tensor must be finite")
    inverted = (array[:, 2] < array[:, 0]) | (array[:, 3] < array[:, 1])
    if inverted.any():
        i = np.flatnonzero(inverted)[0]
        raise ValueError("box_tensor[%d] is %s: boxes are [xmin, ymin, xmax, ymax] with xmin <= xmax and "
                         "ymin <= ymax" % (i, array[i].tolist()))
    if labels is not None:
        if isinstance(labels, str) or len(labels) != len(array):
            raise ValueError("labels must be a list of %d str, one per box; got %r" % (len(array), labels))
        labels = [_utf8(label, "labels[%d]" % i) if isinstance(label, str) else str(label)
                  for i, label in enumerate(labels)]
    scale = convert.positive(rescale, "rescale")
    height, width = (shape[0], shape[1]) if formats in ("HW", "HWC") else (shape[1], shape[2])
    high, wide = round(height * scale), round(width * scale)
    if max(high, wide) > MAX_SIDE or high * wide > MAX_PIXELS:
        raise ValueError("rescale=%r makes the %dx%d image %dx%d; at most %d pixels per side and %d in all"
                         % (rescale, width, height, wide, high, MAX_SIDE, MAX_PIXELS))
    return array, labels, scale


def video(vid_tensor: Any, fps: Any, formats: Optional[str] = None,
          say: Optional[Say] = None) -> Tuple[Captured, float, Optional[Tuple[int, ...]]]:
    """The (frames, fps, order) of a video.

    The frames are (N, T, C, H, W) or (T, C, H, W), or in the order of the axes that `formats`
    names (a permutation of NTCHW or TCHW), which `order` transposes back. For `say`, see
    `pixels`."""
    site = call_site()
    frames = convert.capture(vid_tensor, "vid_tensor", check=lambda a: pixels(a, "vid_tensor", site, say))
    order = None
    if formats is not None:
        if not isinstance(formats, str) or sorted(formats) not in (sorted("NTCHW"), sorted("TCHW")):
            raise ValueError("dataformats must order the axes N, T, C, H, W (or T, C, H, W); got %r" % (formats,))
        if len(formats) != frames.ndim:
            raise ValueError("vid_tensor has %d dimensions; dataformats %r names %d"
                             % (frames.ndim, formats, len(formats)))
        order = tuple(formats.index(axis) for axis in ("NTCHW" if len(formats) == 5 else "TCHW"))
    shape = tuple(frames.shape[i] for i in order) if order else tuple(frames.shape)
    if len(shape) not in (4, 5) or shape[-3] not in _CHANNELS or 0 in shape:
        raise ValueError("vid_tensor must be (N, T, C, H, W) or (T, C, H, W) with 1, 3 or 4 "
                         "channels; got shape %s" % (shape,))
    rate = convert.to_float(fps, "fps")
    if not (math.isfinite(rate) and rate >= 1.0 / _GIF_LONGEST_FRAME):
        raise ValueError("fps must be a finite number >= %.6f (a GIF frame lasts at most %.2f s); got %r"
                         % (1.0 / _GIF_LONGEST_FRAME, _GIF_LONGEST_FRAME, fps))
    return frames, rate, order


def audio(value: Any, sample_rate: Any, say: Optional[Say] = None) -> Tuple[Captured, int]:
    """The (samples, sample rate) of a clip. NaN is written as silence and +-Inf as full scale
    (summaries.audio.encode_wav), and `say` (WriterCore.said_once) reports that."""
    samples = convert.capture(value, "audio", check=lambda a: _samples(a, say))
    layout = frames_layout(samples.shape)
    dims = [n for n in samples.shape if n != 1] if samples.ndim > 2 else list(samples.shape)
    channels = {"mono": 1, "frames-channels": dims[-1], "channels-frames": dims[0]}[layout]
    rate = convert.to_float(sample_rate, "sample_rate")
    if not (rate > 0 and math.isfinite(rate) and rate == int(rate)):
        raise ValueError("sample_rate must be a positive whole number of Hz; got %r" % (sample_rate,))
    # A WAV header's byte rate is 32 bits.
    if int(rate) * channels * 2 >= 1 << 32:
        raise ValueError("sample_rate is too large for a WAV file: %d Hz" % int(rate))
    if isinstance(samples, np.ndarray) and samples.dtype.kind == "f" and _peak(samples) > 1:
        warn_at_call("audio: samples are read in [-1, 1], and some are beyond (clipped): scale them into it")
    return samples, int(rate)


def _peak(samples: Captured) -> float:
    """The greatest finite magnitude of float samples, or 0 if there is none."""
    magnitude = np.abs(samples)
    peak = magnitude.max()
    return float(peak if np.isfinite(peak) else np.max(magnitude, where=np.isfinite(magnitude), initial=0))


def _samples(samples: Captured, say: Optional[Say]) -> Captured:
    if say is not None and not all_finite(samples):
        say("NaN or infinite samples were written as silence (NaN) or full scale (+-Inf)")
    return samples


# -- text -----------------------------------------------------------------------------------
def text(value: Any) -> Union[str, Captured]:
    """A str, or a numpy array of str: 1-D for a column, 2-D for a table."""
    if isinstance(value, str):
        _utf8(value, "text")
        return value
    if isinstance(value, bytes):
        raise TypeError("text must be str (decode bytes first); got bytes")
    if isinstance(value, (list, tuple)) and value and all(isinstance(r, (list, tuple)) for r in value):
        lengths = sorted({len(row) for row in value})
        if len(lengths) > 1:
            raise ValueError("text: rows of a table must have equal lengths; got %s" % lengths)
    array = np.array(value, dtype=object)
    if array.ndim not in (1, 2) or array.size == 0 or not all(isinstance(t, str) for t in array.flat):
        raise TypeError("text must be a str, or a non-empty 1-D or 2-D list/array of str; "
                        "got %s of shape %s" % (type(value).__name__, array.shape))
    for cell in array.flat:
        _utf8(cell, "text")
    return array


def tensor(value: Any, name: str = "tensor") -> Captured:
    """The array of add_tensor, captured at the call. Its dtype must be one that TensorBoard has
    (a number's, complex included, or str): any other is refused here, naming `name` and the
    dtype, as the writer thread could only fail on it at a later call. A torch complex32 tensor,
    whose dtype numpy lacks, is taken as complex64 (as bfloat16 is taken as float32)."""
    is_torch = convert.kind_of(value) in (convert.Kind.TORCH, convert.Kind.TORCH_CUDA)
    if is_torch and str(value.dtype) == "torch.complex32":
        value = value.cfloat()
    array = convert.capture(value, name, numeric=False)
    if array.dtype.kind not in "USO" and data_type(array.dtype) is None:
        raise TypeError("%s has dtype %s, which TensorBoard has no dtype for: a tensor holds %s (convert it "
                        "first, e.g. with .astype(np.float64))" % (name, array.dtype, TENSOR_DTYPES))
    return tensor_text(array, name)


def tensor_text(array: Captured, name: str = "tensor") -> Captured:
    """An array for add_tensor, whose str elements, if any, must be valid Unicode (they are written
    as UTF-8)."""
    if array.dtype.kind in "UO":
        for cell in array.flat:
            if isinstance(cell, str):
                _utf8(cell, "%s's text" % name)
    return array


def tag(value: Any, name: str = "tag") -> str:
    """A tag (or a run or scalar name) must be a non-empty str of valid Unicode. It is returned as
    given, and the event keeps its text."""
    if not isinstance(value, str):
        raise TypeError("%s must be a str; got %s" % (name, convert.describe(value)))
    if not value:
        raise ValueError("%s must not be empty" % name)
    return _utf8(value, name)


def _utf8(value: str, name: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("%s must be valid Unicode text (it is written as UTF-8); %s at position %d"
                         % (name, exc.reason, exc.start)) from None
    return value


# -- PR curves ------------------------------------------------------------------------------
def thresholds(num_thresholds: Any) -> int:
    return _count(num_thresholds, "num_thresholds", 2)


def _finite(name: str) -> Check:
    def check(array: Captured) -> Captured:
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise ValueError("%s must be finite numbers; got NaN or infinity" % name)
        return array
    return check


def _probabilities(name: str) -> Check:
    def check(array: Captured) -> Captured:
        _finite(name)(array)
        inside = (array >= 0) & (array <= 1)
        if not inside.all():
            wrong = array[~inside].reshape(-1)[0]
            raise ValueError("%s must be probabilities in [0, 1]; got %r (scores? apply a sigmoid or softmax first)"
                             % (name, wrong.item()))
        return array
    return check


def _binary(name: str) -> Check:
    def check(array: Captured) -> Captured:
        if array.dtype != bool and array.size and not np.isin(array, (0, 1)).all():
            wrong = array.reshape(-1)[~np.isin(array.reshape(-1), (0, 1))][0]
            raise ValueError("%s must be 0 or 1 (or bool); got %r" % (name, wrong.item()))
        return array
    return check


def pr_curve(labels: Any, predictions: Any, num_thresholds: Any,
             weights: Any) -> Tuple[Captured, Captured, int, Optional[Captured]]:
    """The (labels, predictions, num_thresholds, weights) of a PR curve."""
    labels = convert.capture(labels, "labels", check=_binary("labels"))
    predictions = convert.capture(predictions, "predictions", check=_probabilities("predictions"))
    if labels.shape != predictions.shape:
        raise ValueError("labels and predictions must have one shape; got %s and %s"
                         % (labels.shape, predictions.shape))
    if weights is not None:
        weights = convert.capture(weights, "weights", check=_finite("weights"))
        try:
            np.broadcast_shapes(weights.shape, labels.shape)
        except ValueError:
            raise ValueError("weights of shape %s do not broadcast to labels' %s"
                             % (weights.shape, labels.shape)) from None
    return labels, predictions, thresholds(num_thresholds), weights


def pr_curve_raw(columns: Mapping[str, Any], num_thresholds: Any) -> Tuple[List[Captured], int]:
    """The six columns (TP, FP, TN, FN, precision, recall) and num_thresholds. A num_thresholds of
    None means the columns' length, which all six must share."""
    checked = [convert.capture(column, name, defer=False).reshape(-1) for name, column in columns.items()]
    num_thresholds = thresholds(len(checked[0]) if num_thresholds is None else num_thresholds)
    for name, column in zip(columns, checked):
        if len(column) != num_thresholds:
            raise ValueError("%s must have num_thresholds (%d) values; got %d"
                             % (name, num_thresholds, len(column)))
    return checked, num_thresholds


# -- meshes ---------------------------------------------------------------------------------
def mesh(vertices: Any, colors: Any, faces: Any,
         config_dict: Any) -> Tuple[Captured, Optional[Captured], Optional[Captured], str]:
    """The (vertices, colors, faces, config JSON) of a mesh or point cloud."""
    parts = {"vertices": convert.capture(vertices, "vertices", check=_vertices)}
    if colors is not None:
        parts["colors"] = convert.capture(colors, "colors", check=_rgb)
    shapes = {name: _batched_shape(name, array) for name, array in parts.items()}
    if faces is not None:
        count = shapes["vertices"][1]
        parts["faces"] = convert.capture(faces, "faces", check=lambda a: _faces(a, count))
        # An MXNet array's too, before its values are computed.
        _faces_dtype(parts["faces"].dtype)
        _batched_shape("faces", parts["faces"])
    if "colors" in parts and shapes["colors"][:2] != shapes["vertices"][:2]:
        raise ValueError("colors must have one (B, N) with vertices; got %s and %s"
                         % (shapes["colors"], shapes["vertices"]))
    if config_dict is None or (isinstance(config_dict, dict) and not config_dict):
        config = ""
    else:
        try:
            config = json.dumps(config_dict, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError("config_dict must be JSON data (dicts, lists, str, finite numbers); %s" % exc) from None
    return parts["vertices"], parts.get("colors"), parts.get("faces"), config


def _vertices(vertices: Captured) -> Captured:
    """Vertices must be finite as the float32 they are sent as, so that TensorBoard's mesh viewer
    can place them."""
    if vertices.dtype.kind == "f" and vertices.size and not (
            all_finite(vertices) and (vertices.dtype.itemsize <= 4 or np.abs(vertices).max() <= _FLOAT32_MAX)):
        where = np.unravel_index(int(np.argmax(~(np.abs(vertices) <= _FLOAT32_MAX))), vertices.shape)
        raise ValueError("vertices must be finite float32 numbers (TensorBoard's mesh viewer cannot place a NaN or "
                         "infinite vertex); vertices[%s] is %r" % (", ".join(map(str, where)), vertices[where].item()))
    return vertices


def _rgb(colors: Captured) -> Captured:
    """Mesh colors are RGB bytes: integers (or whole floats) in [0, 255], never wrapped around."""
    if colors.dtype == np.uint8 or not colors.size:
        return colors
    if colors.dtype.kind not in "iuf":
        raise TypeError("colors must be integers in [0, 255]; got dtype %s" % colors.dtype)
    flat = colors.reshape(-1)
    if colors.dtype.kind == "f":
        fractional = ~np.isfinite(flat) | (flat != np.round(flat))
        if fractional.any():
            where = np.unravel_index(int(np.argmax(fractional)), colors.shape)
            raise ValueError("colors must be integers in [0, 255] (RGB bytes); got %r at colors[%s] (colors in "
                             "[0, 1]: multiply by 255)" % (flat[fractional][0].item(), ", ".join(map(str, where))))
    if flat.min() < 0 or flat.max() > 255:
        raise ValueError("colors must be in [0, 255]; got values from %r to %r"
                         % (flat.min().item(), flat.max().item()))
    return colors


def _batched_shape(name: str, array: Captured) -> Tuple[int, ...]:
    """The (B, N, 3) shape of a (B, N, 3) or (N, 3) array."""
    shape = (1,) + tuple(array.shape) if array.ndim == 2 else tuple(array.shape)
    if len(shape) != 3 or shape[-1] != 3:
        raise ValueError("%s must be (B, N, 3) or (N, 3); got shape %s" % (name, tuple(array.shape)))
    return shape


def _faces_dtype(dtype: np.dtype[Any]) -> None:
    if dtype.kind not in "iu":
        raise TypeError("faces must be integer vertex indices; got dtype %s" % dtype)


def _faces(faces: Captured, count: int) -> Captured:
    _faces_dtype(faces.dtype)
    if faces.size and (faces.min() < 0 or faces.max() >= count):
        raise ValueError("faces must index vertices (0 to %d); got [%d, %d]" % (count - 1, faces.min(), faces.max()))
    return faces


# -- embeddings and hparams -----------------------------------------------------------------
def embedding(matrix: Any, labels: Any, images: Any, header: Any,
              say: Optional[Say] = None) -> Tuple[Captured, Any, Optional[Captured], Optional[List[str]]]:
    """The (matrix, labels, images, header) of a Projector embedding. `say` is for the images; see
    `pixels`. The labels' forms are `_labels`'s."""
    matrix = convert.capture(matrix, "embedding", check=_finite("embedding"))
    if matrix.ndim != 2:
        raise ValueError("embedding must be 2-D (points, dimensions); got shape %s" % (matrix.shape,))
    count = matrix.shape[0]
    if header is not None:
        if isinstance(header, (str, bytes)) or not hasattr(header, "__iter__"):
            raise TypeError("metadata_header must be a list of the labels' column names; got %s"
                            % convert.describe(header))
        header = [_utf8(str(h), "metadata_header") for h in header]
    if labels is not None:
        labels, header = _labels(labels, count, header)
    if images is not None:
        site = call_site()
        images = convert.capture(images, "images", check=lambda a: pixels(a, "images", site, say))
        dataformats(images.shape, "NCHW", "images")
        if images.shape[0] != count:
            raise ValueError("images must have one per point: %d; got %d" % (count, images.shape[0]))
    return matrix, labels, images, header


def _labels(labels: Any, count: int, header: Optional[List[str]]) -> Tuple[Any, Optional[List[str]]]:
    """The labels of `count` points, and the names of their columns (None for one column).

    The forms are the peers':
    - one label per point (a list, or an array of N or (N, 1) elements), each written as str();
    - with `header` (tensorboardX's and torch's `metadata_header`), N rows of len(header) labels;
    - N + 1 rows of labels, the first naming the columns: mxboard 0.1.0's 2-D labels ("If the
      labels are 2D the first row is considered the column names", awslabs/mxboard d89b2f6,
      which took a list of lists so); an array of N + 1 rows is taken so too.
    A list of N rows without names is N labels, each row written as str(row), as tensorboardX and
    torch write it; an array of N rows of several columns is refused, asking for their names: the
    Projector reads a file of several columns only under a line of names."""
    # An NDArray of one label per point is converted on the writer thread.
    if convert.is_ndarray(labels) and header is None and labels.size == count:
        return convert.capture(labels, "labels", numeric=False), None
    array = not isinstance(labels, (list, tuple))
    if array:
        labels = convert.to_numpy(labels, "labels")
        if labels.ndim not in (1, 2) or (labels.ndim == 2 and labels.shape[0] not in (count, count + 1)):
            raise ValueError("labels must be 1-D (a label per point) or 2-D (a row of labels per point, or %d rows "
                             "with a first row of column names); got shape %s for %d points"
                             % (count + 1, labels.shape, count))
        if labels.ndim == 2 and labels.shape == (count, 1) and header is None:
            labels = labels.reshape(-1)
        labels = labels.tolist()
    rows = len(labels) > 0 and all(isinstance(r, (list, tuple)) for r in labels)
    if header is None and rows and len(labels) == count + 1:
        header = [_utf8(str(h), "labels' first row (the column names)") for h in labels[0]]
        labels = labels[1:]
        if any(len(row) != len(header) for row in labels):
            raise ValueError("labels: every row must have as many values as the first row, which names the "
                             "columns: %d" % len(header))
    elif header is None and rows and array:
        raise ValueError("labels: %d rows of %d labels need their columns' names, as the Projector reads several "
                         "columns only under a line of names: pass metadata_header=[...] (tensorboardX's and "
                         "torch's) or a first row of names, %d rows in all (mxboard 0.1.0's)"
                         % (len(labels), len(labels[0]), count + 1))
    elif header is not None:
        for row in labels:
            if not hasattr(row, "__iter__"):
                raise TypeError("labels: with metadata_header, each label is a row of len(metadata_header) = %d "
                                "values; got %s" % (len(header), convert.describe(row)))
        labels = [list(row) for row in labels]
        if any(len(row) != len(header) for row in labels):
            raise ValueError("labels: every row must have len(metadata_header) = %d values" % len(header))
    if len(labels) != count:
        raise ValueError("labels must have one per point: %d; got %d%s" % (
            count, len(labels), " (or, mxboard 0.1.0's form, %d rows: the first names the columns)" % (count + 1)
            if rows and header is None else ""))
    if header is not None:
        return [[_utf8(str(v), "labels") for v in row] for row in labels], header
    return [_utf8(str(v), "labels") for v in labels], None


def hparams(hparam_dict: Any, metric_dict: Any, domains: Any,
            declared: bool = False) -> Tuple[Dict[str, Any], Dict[Any, Optional[float]], Dict[str, List[Any]]]:
    """The (values, metrics, domains) of one hyper-parameter run. With `declared`, a metric may be
    None: a tag that the run logs itself.

    An hparam whose value is None is left out, with its domain if it has one, as torch's and
    tensorboardX's `hparams()` skip it (`if v is None: continue`): Accelerate's `init_trackers`
    passes a config's unset options so."""
    if not isinstance(hparam_dict, dict) or not hparam_dict:
        raise TypeError("hparam_dict must be a non-empty dict of name -> bool, number or str")
    if not isinstance(metric_dict, dict):
        raise TypeError("metric_dict must be a dict of metric tag -> number")
    unset = {k for k, v in hparam_dict.items() if v is None}
    values = {tag(k, "hparam name"): _hparam(v, k) for k, v in hparam_dict.items() if k not in unset}
    metrics = {_metric_key(k, v, declared): None if v is None and declared
               else convert.to_float(v, "metric_dict[%r]" % (k,)) for k, v in metric_dict.items()}
    checked: Dict[str, List[Any]] = {}
    for name, domain in (domains or {}).items():
        if name in unset:
            continue
        if name not in values or not isinstance(domain, (list, tuple)) or not domain:
            raise ValueError("hparam_domain_discrete[%r] must be a non-empty list for a hparam in "
                             "hparam_dict" % (name,))
        checked[name] = [_hparam(v, name) for v in domain]
    return values, metrics, checked


def _metric_key(key: Any, value: Any, declared: bool) -> Union[str, Tuple[str, str]]:
    """A metric's tag, or (tag, name) for the run's own `add_scalar(tag, {name: ...})` line (with
    `in_run`, whose value is None)."""
    if isinstance(key, tuple):
        if len(key) != 2 or not declared or value is not None:
            raise ValueError("metric_dict key %r: a (tag, name) pair names the run's own add_scalar(tag, "
                             "{name: ...}) line, so only with in_run=True and the value None" % (key,))
        return tag(key[0], "metric tag"), tag(key[1], "metric name")
    return tag(key, "metric tag")


def _hparam(value: Any, name: str) -> Union[bool, float, str]:
    value = hparam_value(value, name)
    return _utf8(value, "hparam %r" % (name,)) if isinstance(value, str) else value


def no_points_on_own_curves(metrics: Mapping[Any, Any], logged: Mapping[str, int], global_step: Optional[int]) -> None:
    """`add_hparams(in_run=True)` never adds a point to a curve that the run logs. A number for
    such a tag would be one more point at `global_step` (0 by default): a step going back, which
    TensorBoard reads as a restart (100 points logged, 1 shown). None names the curve itself."""
    for tag, value in metrics.items():
        if value is not None and isinstance(tag, str) and tag in logged:
            raise ValueError(
                "add_hparams: metric_dict[%r] is a number, but this run logs %r with add_scalar: it would add a point "
                "at step %d to that curve, and TensorBoard would show only the points from it on (a step going back "
                "reads as a restart). Give {%r: None}: the dashboard shows the curve's last value."
                % (tag, tag, 0 if global_step is None else global_step, tag))
