"""Embeddings for TensorBoard's projector: assets (tensors.tsv, metadata.tsv, sprite.png) and a
`projector_config.pbtxt` that stays complete when many writers, threads or processes add
embeddings to one logdir.

Each embedding writes its own entry (`.mxboard-projector/<hash>.pbtxt`, atomically); the config
is then rebuilt from all entries under an exclusive lock and swapped in with an atomic rename.
So every entry appears (whoever rebuilds last, under the lock, sees all entries written before),
none overwrites another, and a reader never sees a half-written config.
"""
import contextlib
import hashlib
import io
import os
import tempfile

import numpy as np
from google.protobuf import text_format

from ._paths import subdir
from .proto import projector

__all__ = ["CONFIG_NAME", "write_embedding", "sprite", "metadata_tsv"]

CONFIG_NAME = "projector_config.pbtxt"
ENTRIES = ".mxboard-projector"
MAX_SPRITE = 8192  # px a side: what the projector (WebGL textures) can load


def write_embedding(logdir, tag, step, matrix, labels=None, header=None, images=None):
    """Write one embedding's assets to `logdir/<tag>[_<step>]` (mxboard's folder names) and
    register it in the config. `labels`: a list of N labels or of N rows of labels (with
    `header`); `images`: NHWC uint8."""
    directory = subdir(logdir, tag if step is None else "%s_%06d" % (tag, step))
    os.makedirs(directory, exist_ok=True)
    relative = os.path.relpath(directory, logdir)
    name = tag if step is None else "%s:%d" % (tag, step)
    entry = projector.EmbeddingInfo(tensor_name=name, tensor_shape=list(matrix.shape),
                                    tensor_path=os.path.join(relative, "tensors.tsv"))
    buffer = io.StringIO()
    np.savetxt(buffer, matrix, delimiter="\t", fmt="%.9g")
    _atomic_write(os.path.join(directory, "tensors.tsv"), buffer.getvalue().encode("utf-8"))
    if labels is not None:
        _atomic_write(os.path.join(directory, "metadata.tsv"), metadata_tsv(labels, header))
        entry.metadata_path = os.path.join(relative, "metadata.tsv")
    if images is not None:
        png, (width, height) = sprite(images)
        _atomic_write(os.path.join(directory, "sprite.png"), png)
        entry.sprite.image_path = os.path.join(relative, "sprite.png")
        entry.sprite.single_image_dim.extend([width, height])
    entries = os.path.join(logdir, ENTRIES)
    os.makedirs(entries, exist_ok=True)
    key = hashlib.sha1(name.encode("utf-8")).hexdigest()
    _atomic_write(os.path.join(entries, key + ".pbtxt"), text_format.MessageToString(entry).encode("utf-8"))
    rebuild_config(logdir)


def rebuild_config(logdir):
    """Rewrite `projector_config.pbtxt` from every entry, under the logdir's projector lock."""
    entries = os.path.join(logdir, ENTRIES)
    with _locked(os.path.join(entries, ".lock")):
        config = projector.ProjectorConfig()
        for name in sorted(os.listdir(entries)):
            if name.endswith(".pbtxt"):
                with open(os.path.join(entries, name), encoding="utf-8") as f:
                    text_format.Merge(f.read(), config.embeddings.add())
        config.embeddings.sort(key=lambda e: e.tensor_name)
        _atomic_write(os.path.join(logdir, CONFIG_NAME), text_format.MessageToString(config).encode("utf-8"))


def metadata_tsv(labels, header=None):
    """One label a line; with `header`, rows of labels under a header line (what the projector
    expects for several columns). Tabs and newlines inside labels become spaces."""
    def clean(value):
        return str(value).replace("\t", " ").replace("\r", " ").replace("\n", " ")

    lines = []
    if header is not None:
        lines.append("\t".join(clean(h) for h in header))
        lines.extend("\t".join(clean(v) for v in row) for row in labels)
    else:
        lines.extend(clean(v) for v in labels)
    return ("\n".join(lines) + "\n").encode("utf-8")


def sprite(images):
    """NHWC uint8 thumbnails as one square sprite PNG, row-major in input order, at most
    MAX_SPRITE px a side (thumbnails are shrunk to fit). Returns (png, (width, height))."""
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
            picture = picture.resize((thumb_w, thumb_h), Image.BILINEAR)
        sheet.paste(picture, ((i % side) * thumb_w, (i // side) * thumb_h))
    out = io.BytesIO()
    sheet.save(out, format="PNG")
    return out.getvalue(), (thumb_w, thumb_h)


def _atomic_write(path, data):
    """Write a file whole or not at all: a temporary file beside it, renamed over it."""
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def _locked(path):
    """An exclusive lock between threads and processes (flock on POSIX)."""
    with open(path, "a") as handle:
        try:
            import fcntl
        except ImportError:  # not POSIX: entries are still atomic; a racing rebuild may lag one
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
