"""A blob's key, and its bytes read back from its event file on request.

Keys are upstream's (MultiplexerDataProvider's): the URL-safe base64, unpadded, of the JSON of
(experiment id, plugin, run, tag, step, index). A blob is read from its record (`BlobRef`), its
CRCs checked again, and migrated as the file's first read migrated it.
"""
import base64
import json
import struct
from typing import Any, Tuple

from tensorboard import data_compat, dataclass_compat, errors
from tensorboard.compat.proto import event_pb2
from tensorboard.util import tensor_util

from mxboard._format._crc32c import masked_crc32c
from mxboard._format.events import RECORD_HEADER, RECORD_TRAILER
from tensorboard_bundle.loader.index import BlobRef

__all__ = ["decode_key", "encode_key", "read_blob"]


def encode_key(experiment_id: str, plugin_name: str, run: str, tag: str, step: int, index: int) -> str:
    text = json.dumps((experiment_id, plugin_name, run, tag, step, index), separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode("ascii")).decode("ascii").rstrip("=")


def decode_key(key: str) -> Tuple[str, str, str, str, int, int]:
    """The fields of a key `encode_key` made; errors.NotFoundError for anything else."""
    try:
        experiment_id, plugin_name, run, tag, step, index = json.loads(base64.urlsafe_b64decode(key + "=="))
    except ValueError as exc:
        raise errors.NotFoundError("blob key %r: %s" % (key, exc)) from None
    return experiment_id, plugin_name, run, tag, step, index


def read_blob(ref: BlobRef, tag: str, index: int, key: str) -> bytes:
    """Blob `index` of the value of `tag` in the record `ref` names."""
    event = event_pb2.Event.FromString(_payload(ref, key))
    migrated = dataclass_compat.migrate_event(data_compat.migrate_event(event), ref.file.initial_metadata)
    for each in migrated:
        for value in each.summary.value:
            if (value.tag or value.node_name) == tag and value.HasField("tensor"):
                try:
                    blob: bytes = tensor_util.make_ndarray(value.tensor)[index]
                except IndexError:
                    raise errors.NotFoundError("%s: no blob %d" % (key, index)) from None
                return blob
    raise errors.NotFoundError("%s: %s holds no %r at byte %d any more" % (key, ref.file.path, tag, ref.offset))


def _payload(ref: BlobRef, key: str) -> Any:
    """The payload of the record at `ref.offset`, its CRCs checked."""
    try:
        with open(ref.file.path, "rb") as f:
            f.seek(ref.offset)
            header = f.read(RECORD_HEADER.size)
            length, length_crc = RECORD_HEADER.unpack(header)
            if masked_crc32c(header[:8]) != length_crc:
                raise ValueError("its length fails its checksum")
            payload = f.read(length)
            (crc,) = RECORD_TRAILER.unpack(f.read(RECORD_TRAILER.size))
            if masked_crc32c(payload) != crc:
                raise ValueError("it fails its checksum")
    # struct.error: the file ends inside the record.
    except (OSError, ValueError, struct.error) as exc:
        raise errors.NotFoundError("%s: the record at byte %d of %s cannot be read: %s"
                                   % (key, ref.offset, ref.file.path, exc)) from None
    return payload
