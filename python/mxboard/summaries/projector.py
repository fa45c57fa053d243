"""Embeddings for TensorBoard's Projector: each embedding's files (tensors.tsv, metadata.tsv and
sprite.png), and the logdir's `projector_config.pbtxt`, which stays complete when many writers,
threads or processes add embeddings to one logdir. docs/architecture.md ("The Projector's
config") says how.
"""
import hashlib
import io
import re
from typing import TYPE_CHECKING, Any, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from google.protobuf import text_format
from numpy.typing import NDArray

from ..proto import projector_config
from .image import to_uint8

if TYPE_CHECKING:
    from ..storage import Storage

__all__ = ["CONFIG_NAME", "folder", "write_embedding", "sprite", "metadata_tsv"]

CONFIG_NAME = "projector_config.pbtxt"
ENTRIES = ".mxboard-projector"
# Pixels per side: the largest sprite the Projector's WebGL textures can load.
MAX_SPRITE = 8192


def folder(storage: "Storage", tag: str, step: Optional[int] = None) -> str:
    """The embedding's folder: `logdir/<tag>_<step:06d>`, or `logdir/<tag>` without a step, as
    mxboard has always named them. Without a step, a tag that itself ends like a step
    (`a_000001`) gets a hash suffix, so that no two (tag, step) pairs share a folder."""
    if step is not None:
        return storage.subdir("%s_%06d" % (tag, step))
    if _STEP_LIKE.search(tag):
        # No name holds "\0", so subdir cleans it and adds a hash.
        return storage.subdir(tag + "\0")
    return storage.subdir(tag)


_STEP_LIKE = re.compile(r"_-?\d+$")


def write_embedding(storage: "Storage", tag: str, step: Optional[int], matrix: NDArray[Any], labels: Any = None,
                    header: Optional[Sequence[str]] = None, images: Any = None) -> None:
    """Write one embedding's files to `folder(storage, tag, step)` in `storage`, and register it
    in the config.

    Args:
        labels: N labels (a list or an array), or N rows of labels with `header` (the columns'
            names; a header of one column is not written: see `metadata_tsv`).
        images: NCHW thumbnails, floats in [0, 1] or integers in [0, 255].
    """
    if isinstance(labels, np.ndarray):
        labels = labels.reshape(-1).tolist()
    if images is not None:
        images = to_uint8(np.asarray(images).transpose(0, 2, 3, 1))
    directory = folder(storage, tag, step)
    storage.makedirs(directory)
    relative = storage.run(directory)
    name = tag if step is None else "%s:%d" % (tag, step)
    entry = projector_config.EmbeddingInfo(tensor_name=name, tensor_shape=list(matrix.shape),
                                           tensor_path=relative + "/tensors.tsv")
    buffer = io.StringIO()
    np.savetxt(buffer, matrix, delimiter="\t", fmt="%.9g")
    storage.write_bytes(storage.join(directory, "tensors.tsv"), buffer.getvalue().encode("utf-8"))
    if labels is not None:
        storage.write_bytes(storage.join(directory, "metadata.tsv"), metadata_tsv(labels, header))
        entry.metadata_path = relative + "/metadata.tsv"
    if images is not None:
        png, (width, height) = sprite(images)
        storage.write_bytes(storage.join(directory, "sprite.png"), png)
        entry.sprite.image_path = relative + "/sprite.png"
        entry.sprite.single_image_dim.extend([width, height])
    entries = storage.join(storage.root, ENTRIES)
    storage.makedirs(entries)
    key = hashlib.sha1(name.encode("utf-8")).hexdigest()
    storage.write_bytes(storage.join(entries, key + ".pbtxt"), text_format.MessageToString(entry).encode("utf-8"))
    rebuild_config(storage)


def rebuild_config(storage: "Storage") -> None:
    """Rewrite `projector_config.pbtxt` from every entry, under the logdir's projector lock.

    Whatever else the config held (embeddings that other tools registered, model_checkpoint_path
    and so on) is kept, and an entry of ours replaces one with the same tensor name. The config is
    rewritten until no entry is missing from it: under a lock that happens the first time, and a
    store has no lock."""
    entries = storage.join(storage.root, ENTRIES)
    path = storage.join(storage.root, CONFIG_NAME)
    with storage.lock(storage.join(entries, ".lock")):
        for _ in range(10):
            config = projector_config.ProjectorConfig()
            names = sorted(n for n in storage.listdir(entries) if n.endswith(".pbtxt"))
            ours = [text_format.Parse(storage.read_text(storage.join(entries, n)), projector_config.EmbeddingInfo())
                    for n in names]
            try:
                text_format.Merge(storage.read_text(path), config)
            except FileNotFoundError:
                pass
            except text_format.ParseError as exc:
                raise ValueError("%s: cannot keep its entries, it does not parse: %s" % (path, exc)) from None
            mine = {e.tensor_name for e in ours}
            kept = [e for e in config.embeddings if e.tensor_name not in mine]
            del config.embeddings[:]
            config.embeddings.extend(sorted(kept + ours, key=lambda e: e.tensor_name))
            storage.write_bytes(path, text_format.MessageToString(config).encode("utf-8"))
            if sorted(n for n in storage.listdir(entries) if n.endswith(".pbtxt")) == names:
                return


def metadata_tsv(labels: Iterable[Any], header: Optional[Sequence[str]] = None) -> bytes:
    """The metadata file: one label per line, or with `header`, rows of labels under a header line
    (as the Projector expects several columns). Tabs and newlines inside labels become spaces.

    The Projector takes a first line for the names of the columns only where it holds a tab: a
    header of one column would be read as one more point (which it refuses: "Single column
    metadata should not have a header row"), so it is left out, and the column is the Projector's
    "label"."""
    def clean(value: Any) -> str:
        return str(value).replace("\t", " ").replace("\r", " ").replace("\n", " ")

    lines: List[str] = []
    if header is not None:
        if len(header) > 1:
            lines.append("\t".join(clean(h) for h in header))
        lines.extend("\t".join(clean(v) for v in row) for row in labels)
    else:
        lines.extend(clean(v) for v in labels)
    return ("\n".join(lines) + "\n").encode("utf-8")


def sprite(images: NDArray[np.uint8]) -> Tuple[bytes, Tuple[int, int]]:
    """NHWC uint8 thumbnails as one square sprite PNG, row-major in input order, at most
    MAX_SPRITE pixels per side (thumbnails are shrunk to fit). Returns (png, (width, height)) of
    one thumbnail."""
    from PIL import Image

    count, height, width, channels = images.shape
    side = int(np.ceil(np.sqrt(count)))
    scale = min(1.0, MAX_SPRITE / float(side * max(height, width)))
    thumb_w, thumb_h = max(1, int(width * scale)), max(1, int(height * scale))
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[channels]
    sheet = Image.new(mode, (side * thumb_w, side * thumb_h))
    for i in range(count):
        picture = Image.fromarray(images[i, :, :, 0] if channels == 1 else images[i])
        if (thumb_w, thumb_h) != (width, height):
            picture = picture.resize((thumb_w, thumb_h), Image.Resampling.BILINEAR)
        sheet.paste(picture, ((i % side) * thumb_w, (i // side) * thumb_h))
    out = io.BytesIO()
    sheet.save(out, format="PNG")
    return out.getvalue(), (thumb_w, thumb_h)
