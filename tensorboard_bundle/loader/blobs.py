"""Records read back from their event files on request: a blob's bytes, and a tensor series'
points that a read chose; and a blob's key.

Keys are upstream's (MultiplexerDataProvider's): the URL-safe base64, unpadded, of the JSON of
(experiment id, plugin, run, tag, step, index). A record is read again where the index noted it
(`BlobRef`, `RefsView`), its CRCs checked again, and migrated as the file's first read migrated it
(data_compat, then dataclass_compat with the file's initial metadata; an old-style histogram's
straight to the array it gives), the values of the tag taken as numpy arrays. A tensor read
opens each file once and reads its records in the order of their offsets, each once. A record
that no longer reads as it was read (its file changed under the server: a checksum, a step or a
value that differs) leaves its points out of the answer, said once.
"""
import base64
import json
import logging
import struct
from typing import Any, Dict, List, Optional, Set, Tuple

import numpy as np
from tensorboard import data_compat, dataclass_compat, errors
from tensorboard.compat.proto import event_pb2
from tensorboard.plugins.histogram import metadata as histogram_metadata
from tensorboard.util import tensor_util

from mxboard._format._crc32c import masked_crc32c
from mxboard._format.events import RECORD_HEADER, RECORD_TRAILER
from tensorboard_bundle.loader.index import BlobRef, RefsView
from tensorboard_bundle.loader.ingest import EventFile

__all__ = ["decode_key", "encode_key", "read_blob", "read_tensors"]

logger = logging.getLogger(__name__)


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
    try:
        with open(ref.file.path, "rb") as f:
            payload = _payload_at(f, ref.offset)
    # struct.error: the file ends inside the record.
    except (OSError, ValueError, struct.error) as exc:
        raise errors.NotFoundError("%s: the record at byte %d of %s cannot be read: %s"
                                   % (key, ref.offset, ref.file.path, exc)) from None
    arrays = _values(event_pb2.Event.FromString(payload), ref.file, tag)
    if not arrays:
        raise errors.NotFoundError("%s: %s holds no %r at byte %d any more" % (key, ref.file.path, tag, ref.offset))
    try:
        blob: bytes = arrays[0][index]
    except IndexError:
        raise errors.NotFoundError("%s: no blob %d" % (key, index)) from None
    return blob


def read_tensors(points: RefsView, chosen: Any, tag: str) -> List[Tuple[int, float, Any]]:
    """(step, wall time, value as a numpy array) of the points of `tag` at the indices `chosen`
    (sorted, of a numpy array), in their order, read back from their records; a point whose
    record no longer reads as it was read is left out."""
    steps, walls = points.steps[chosen].tolist(), points.walls[chosen].tolist()
    offsets, file_ids = points.offsets[chosen].tolist(), points.file_ids[chosen].tolist()
    nths = _nths(points, chosen)
    # The chosen points of each file (by their places in `chosen`), in the order of their offsets.
    by_file: Dict[int, List[int]] = {}
    for at, file_id in enumerate(file_ids):
        by_file.setdefault(file_id, []).append(at)
    tensors: List[Any] = [None] * len(steps)
    for file_id, places in by_file.items():
        file = points.files[file_id]
        places.sort(key=offsets.__getitem__)
        try:
            f = open(file.path, "rb")
        except OSError as exc:
            _say(file, None, str(exc))
            continue
        with f:
            read_at, values = -1, None
            for at in places:
                if offsets[at] != read_at:
                    read_at = offsets[at]
                    values = _record_values(f, file, read_at, tag, steps[at], walls[at])
                if values is not None and nths[at] < len(values):
                    tensors[at] = values[nths[at]]
                elif values is not None:
                    _say(file, read_at, "it holds %d values of %r, not %d" % (len(values), tag, nths[at] + 1))
    return [(steps[at], walls[at], tensor) for at, tensor in enumerate(tensors) if tensor is not None]


def _nths(points: RefsView, chosen: Any) -> List[int]:
    """For each chosen point, how many points of its record come before it in the series (one
    record's points lie next to each other)."""
    nths = [0] * len(chosen)
    if not len(chosen):
        return nths
    offsets, file_ids = points.offsets, points.file_ids
    before = chosen[chosen > 0]
    first = len(chosen) - len(before)
    same = (offsets[before - 1] == offsets[before]) & (file_ids[before - 1] == file_ids[before])
    for at in (first + same.nonzero()[0]).tolist():
        point = start = int(chosen[at])
        while start > 0 and offsets[start - 1] == offsets[point] and file_ids[start - 1] == file_ids[point]:
            start -= 1
        nths[at] = point - start
    return nths


def _record_values(f: Any, file: EventFile, offset: int, tag: str, step: int, wall: float) -> Optional[List[Any]]:
    """The values of `tag` in the record at `offset` of `f` (`file`), migrated, as numpy arrays;
    the record was read first as an Event at `step` and `wall`: None where it no longer reads so
    (said)."""
    try:
        event = event_pb2.Event.FromString(_payload_at(f, offset))
        if event.step != step or event.wall_time != wall:
            raise ValueError("it holds step %d at %r now" % (event.step, event.wall_time))
        return _values(event, file, tag)
    # A record that no longer reads as it was read: any error of its reading, parsing or migration.
    except Exception as exc:  # noqa: BLE001
        _say(file, offset, str(exc) or type(exc).__name__)
        return None


def _values(event: Any, file: EventFile, tag: str) -> List[Any]:
    """The values of `tag` in `event` (a record's Event, read again), migrated as the first read of
    `file` migrated them, as numpy arrays (make_ndarray's; index.RunIndex.add names a value by its
    tag, else its node name)."""
    values = event.summary.value
    if len(values) == 1 and values[0].tag == tag and values[0].WhichOneof("value") == "histo":
        metadata = file.initial_metadata.get(tag)
        # dataclass_compat leaves the tensor of a histograms plugin's value as data_compat made it.
        if metadata is not None and metadata.plugin_data.plugin_name == histogram_metadata.PLUGIN_NAME:
            return [_histogram(values[0].histo)]
    if len(values) > 1 and any((value.tag or value.node_name) != tag for value in values):
        # The tag's values alone: upstream migrates each value on its own.
        kept = [value for value in values if (value.tag or value.node_name) == tag]
        event = event_pb2.Event(wall_time=event.wall_time, step=event.step)
        event.summary.value.extend(kept)
    migrated = dataclass_compat.migrate_event(data_compat.migrate_event(event), file.initial_metadata)
    return [tensor_util.make_ndarray(value.tensor) for each in migrated for value in each.summary.value
            if (value.tag or value.node_name) == tag and value.HasField("tensor")]


def _histogram(histo: Any) -> Any:
    """An old-style histogram (HistogramProto) as upstream serves it: data_compat's migration to a
    (buckets, 3) float32 tensor of left edge, right edge and count, empty buckets at either end
    left out and the outer edges the minimum and the maximum, read back by make_ndarray (a
    C-ordered copy), without the tensor between them (a third of the time)."""
    counts = histo.bucket
    filled = np.flatnonzero(np.asarray(counts, np.float64) > 0)
    if not len(filled):
        return np.zeros([0, 3], np.float32)
    start, end = int(filled[0]), int(filled[-1])
    inner = histo.bucket_limit[start:end]
    return np.array([[histo.min] + inner, inner + [histo.max], counts[start:end + 1]], dtype=np.float32).T.copy()


def _payload_at(f: Any, offset: int) -> bytes:
    """The payload of the record at `offset` of `f`, its CRCs checked: ValueError where one fails,
    struct.error where the file ends inside the record."""
    f.seek(offset)
    header = f.read(RECORD_HEADER.size)
    length, length_crc = RECORD_HEADER.unpack(header)
    if masked_crc32c(header[:8]) != length_crc:
        raise ValueError("its length fails its checksum")
    payload: bytes = f.read(length)
    (crc,) = RECORD_TRAILER.unpack(f.read(RECORD_TRAILER.size))
    if masked_crc32c(payload) != crc:
        raise ValueError("it fails its checksum")
    return payload


def _say(file: EventFile, offset: Optional[int], why: str) -> None:
    """Say once that the record at `offset` of `file` (None: the file) no longer reads as it was
    read."""
    key = (file.path, -1 if offset is None else offset)
    if key in _SAID or len(_SAID) >= _SAID_MOST:
        return
    _SAID.add(key)
    if offset is None:
        logger.warning("%s: cannot be read again (%s): its tensor points are not served", file.path, why)
    else:
        logger.warning("%s: the record at byte %d no longer reads as it was read (%s): its points are not served",
                       file.path, offset, why)


# The records said not to read as they were read (path, offset; -1: the whole file): at most so
# many, then no more.
_SAID: Set[Tuple[str, int]] = set()
_SAID_MOST = 10_000
