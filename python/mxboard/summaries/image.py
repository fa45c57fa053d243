"""Images (as PNG), image grids and videos (as animated GIFs) in `Summary.Image` values, which
TensorBoard's Images dashboard shows."""
import io
import struct
import zlib
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from ..proto import Message, Summary
from ._common import summary

__all__ = ["figure_pixels", "to_hwc", "make_image_grid", "to_uint8", "image_summary", "boxes_summary",
           "video_summary"]


def to_uint8(array: NDArray[Any]) -> NDArray[np.uint8]:
    """Pixels as uint8. Floats are taken as [0, 1] and clipped (never wrapped around), bools become
    0 or 255, and integers stay as they are (the call checked they lie in [0, 255]: checks.pixels)."""
    if array.dtype == np.uint8:
        return array
    if array.dtype == np.bool_:
        return array.astype(np.uint8) * np.uint8(255)
    if array.dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = np.multiply(array, np.float32(255.0), dtype=np.float32)
            np.clip(scaled, 0.0, 255.0, out=scaled)
        np.add(scaled, np.float32(0.5), out=scaled)
        np.nan_to_num(scaled, copy=False, nan=0.0)
        as_bytes: NDArray[np.uint8] = scaled.astype(np.uint8)
        return as_bytes
    if array.dtype.kind in "iu":
        return array.astype(np.uint8)
    raise TypeError("pixels must be float, uint8, bool or integer; got dtype %s" % array.dtype)


def make_image_grid(images: Any, nrow: int = 8, padding: int = 2, pad_value: float = 0) -> NDArray[Any]:
    """NCHW images as one CHW grid, `nrow` images per row (mxboard's and torchvision's layout).
    A batch of one is that image as it is, without the border of `padding`, as mxboard 0.1.0's
    make_image_grid ("if single image, just return"), tensorboardX's and torch's draw it."""
    images = np.asarray(images)
    count, channels, height, width = images.shape
    if count == 1:
        alone: NDArray[Any] = images[0]
        return alone
    ncol = min(nrow, count)
    nrows = -(-count // ncol)
    grid = np.full((channels, nrows * (height + padding) + padding,
                    ncol * (width + padding) + padding), pad_value, dtype=images.dtype)
    for i in range(count):
        top = (i // ncol) * (height + padding) + padding
        left = (i % ncol) * (width + padding) + padding
        grid[:, top:top + height, left:left + width] = images[i]
    return grid


def to_hwc(array: NDArray[Any], dataformats: str) -> NDArray[Any]:
    """An image array in `dataformats` (checked by `checks.dataformats`) as HWC. The N* formats
    become a grid."""
    if dataformats == "HW":
        return array[:, :, None]
    if dataformats == "HWC":
        return array
    if dataformats == "CHW":
        return array.transpose(1, 2, 0)
    if dataformats == "NHWC":
        array = array.transpose(0, 3, 1, 2)
    return make_image_grid(array).transpose(1, 2, 0)


def figure_pixels(figure: Any, close: bool = True) -> NDArray[np.uint8]:
    """A matplotlib figure rendered as an HWC uint8 RGBA array. This runs on the caller's thread,
    as matplotlib is not thread-safe."""
    if not hasattr(figure, "canvas"):
        raise TypeError("figure must be a matplotlib Figure; got %s" % type(figure).__name__)
    figure.canvas.draw()
    pixels = np.array(figure.canvas.buffer_rgba(), dtype=np.uint8)
    if close:
        import matplotlib.pyplot as plt

        plt.close(figure)
    return pixels


def encode_png(hwc: NDArray[np.uint8]) -> bytes:
    """An HWC uint8 image (1, 3 or 4 channels) as PNG.

    It is encoded here rather than by Pillow. Each row minus the row above (PNG's "Up" filter, one
    vectorized subtraction) and zlib's RLE strategy at level 1 encode a photo faster than Pillow's
    fastest setting, which tries five filters on every row, at about the same size
    (docs/performance.md, "Where the time went")."""
    height, width, channels = hwc.shape
    flat = hwc.reshape(height, width * channels)
    rows = np.empty((height, width * channels + 1), dtype=np.uint8)
    # Each row's filter is Up.
    rows[:, 0] = 2
    rows[0, 1:] = flat[0]
    # Modulo 256, as PNG wants.
    np.subtract(flat[1:], flat[:-1], out=rows[1:, 1:])
    deflate = zlib.compressobj(1, zlib.DEFLATED, 15, 9, zlib.Z_RLE)
    # An ndarray is a buffer (numpy 1.23's stubs do not say so; numpy 2's do).
    data = deflate.compress(rows) + deflate.flush()  # type: ignore[arg-type,unused-ignore]
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPE[channels], 0, 0, 0)
    return b"".join((b"\x89PNG\r\n\x1a\n", _chunk(b"IHDR", header), _chunk(b"IDAT", data), _chunk(b"IEND", b"")))


# PNG's colour types of grey, RGB and RGBA.
_COLOR_TYPE = {1: 0, 3: 2, 4: 6}


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def image_summary(tag: str, array: NDArray[Any], dataformats: str = "CHW") -> Message:
    """A Summary of one image, or of a grid of N images, as PNG."""
    hwc = np.ascontiguousarray(to_uint8(to_hwc(array, dataformats)))
    height, width, channels = hwc.shape
    return summary(tag, image=Summary.Image(height=height, width=width, colorspace=channels,
                                            encoded_image_string=encode_png(hwc)))


def boxes_summary(tag: str, array: NDArray[Any], dataformats: str, boxes: Any, labels: Optional[Sequence[str]] = None,
                  rescale: float = 1.0) -> Message:
    """A Summary of one image with boxes drawn on it, as tensorboardX's add_image_with_boxes
    draws them. `boxes` is (N, 4) of [xmin, ymin, xmax, ymax] in pixels; each is outlined in red,
    with its label (if any) above it. The image and the boxes are first scaled by `rescale`."""
    from PIL import Image, ImageDraw

    hwc = np.ascontiguousarray(to_uint8(to_hwc(array, dataformats)))
    picture = Image.fromarray(hwc[:, :, 0] if hwc.shape[2] == 1 else hwc).convert("RGB")
    if rescale != 1.0:
        picture = picture.resize((max(1, round(picture.width * rescale)), max(1, round(picture.height * rescale))))
    draw = ImageDraw.Draw(picture)
    for i, (xmin, ymin, xmax, ymax) in enumerate(np.asarray(boxes, dtype=np.float64) * rescale):
        draw.rectangle([xmin, ymin, xmax, ymax], outline=(255, 0, 0), width=2)
        if labels is not None:
            left, top, right, bottom = draw.textbbox((xmin, ymin), labels[i])
            height = bottom - top
            draw.rectangle([xmin, ymin - height - 4, xmin + right - left + 4, ymin], fill=(255, 0, 0))
            draw.text((xmin + 2, ymin - height - 2 - (top - ymin)), labels[i], fill=(0, 0, 0))
    return image_summary(tag, np.asarray(picture), "HWC")


def video_summary(tag: str, frames: Any, fps: float = 4, order: Optional[Tuple[int, ...]] = None) -> Message:
    """A Summary of a video as an animated GIF. `frames` is NTCHW (a grid of N videos) or TCHW,
    after transposing by `order`."""
    from PIL import Image

    frames = np.asarray(frames) if order is None else np.asarray(frames).transpose(order)
    if frames.ndim == 4:
        frames = frames[None]
    frames = to_uint8(frames)
    pictures: List[Any] = []
    for t in range(frames.shape[1]):
        hwc = np.ascontiguousarray(make_image_grid(frames[:, t]).transpose(1, 2, 0))
        channels = hwc.shape[2]
        if channels == 1:
            picture = Image.fromarray(hwc[:, :, 0])
        else:
            picture = Image.fromarray(hwc[:, :, :3])
        pictures.append(picture.convert("P", palette=Image.Palette.ADAPTIVE) if channels != 1 else picture)
    out = io.BytesIO()
    pictures[0].save(out, format="GIF", save_all=True, append_images=pictures[1:],
                     duration=max(int(round(1000.0 / fps)), 10), loop=0)
    height, width = pictures[0].size[1], pictures[0].size[0]
    return summary(tag, image=Summary.Image(height=height, width=width, colorspace=3,
                                            encoded_image_string=out.getvalue()))
