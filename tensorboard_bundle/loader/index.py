"""One run in memory: each tag's metadata (the first the run gave it, as upstream keeps it) and
every point of it.

A scalar tag's points are numpy columns (`Columns`: step int64, wall time and value float64: 24
bytes a point, and up to as much again as room where points come a few at a time). A tensor tag
(histograms, text, pr curves, hparams, mesh, custom scalars) keeps where each point's record lies
(`Refs`, numpy columns too: 28 bytes a point), a blob sequence tag (images, audio, graphs) its
`BlobRef`s: their values are read back on request (blobs.py). A tag's events read before its
metadata wait in `Series.pending`. A small SummaryMetadata is shared by the runs that hold one
alike (`interned`). `RunIndex.add` takes the events upstream's loader yields (data_compat, then
dataclass_compat); `add_first_scalar` a tag's first simple scalar, given its migration;
`add_simple_scalars` a known tag's simple scalars of one Event, `add_known_tensors` its tensors,
unmigrated; `add_scalar_rows` many scalars at once, as the scanner decodes them. All of them
purge as upstream's accumulator purges after a restart.
"""
import threading
from typing import Any, Dict, List, NamedTuple, Optional, Set, Tuple

import numpy as np
from tensorboard.backend.event_processing import event_util
from tensorboard.backend.event_processing.plugin_event_accumulator import TensorEvent
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.util import tensor_util

from tensorboard_bundle.loader.ingest import EventFile

__all__ = ["BlobRef", "Changes", "Columns", "Refs", "RefsView", "RunIndex", "Series", "interned", "scalar_value",
           "tensor_size"]

# TensorProto's DT_FLOAT.
_DT_FLOAT = 1
# The kinds of Summary.Value that upstream's migration makes a tensor of the value's own tag (a
# histogram's only where it has a limit for each bucket).
_TENSOR_VALUES = frozenset(["tensor", "simple_value", "histo"])


# A series' kind, by its metadata's data class ("tensor" for any other).
_KINDS = {summary_pb2.DATA_CLASS_SCALAR: "scalar", summary_pb2.DATA_CLASS_BLOB_SEQUENCE: "blob"}


class BlobRef(NamedTuple):
    """Where a blob sequence's event lies: its record at `offset` of `file`; `length` blobs."""

    step: int
    wall_time: float
    file: EventFile
    offset: int
    length: int


# The columns of a series without points: shared by all of them, and never written to (a point
# finds no room in them).
_EMPTY: Tuple[Any, Any, Any] = (np.zeros(0, np.int64), np.zeros(0, np.float64), np.zeros(0, np.float64))
_EMPTY_REFS: Tuple[Any, Any, Any, Any] = (np.zeros(0, np.int64), np.zeros(0, np.float64), np.zeros(0, np.int64),
                                          np.zeros(0, np.int32))


class Columns:
    """A scalar series: steps, wall times and values, in arrays that grow by doubling (the first
    points read together take just their room). `view()` (under the run's lock) gives arrays that
    later appends never change."""

    __slots__ = ("steps", "walls", "values", "size")

    def __init__(self) -> None:
        self.steps, self.walls, self.values = _EMPTY
        self.size = 0

    def append(self, step: int, wall: float, value: float, room: int = 1) -> None:
        """Append a point; `room`: the points about to come, this one among them (room made for
        them at once where the series has none left)."""
        if not self.size and not len(self.steps):
            # A series' first point: its room made at once (what _grown does, less its copies).
            room = max(1, room)
            self.steps, self.walls, self.values = np.empty(room, np.int64), np.empty(room), np.empty(room)
        elif self.size == len(self.steps):
            self.steps, self.walls, self.values = _grown(self.view(), max(1, room))
        n = self.size
        self.steps[n], self.walls[n], self.values[n] = step, wall, value
        self.size = n + 1

    def extend(self, steps: Any, walls: Any, values: Any) -> None:
        """Append the points of three numpy columns of one length."""
        count = len(steps)
        if self.size + count > len(self.steps):
            self.steps, self.walls, self.values = _grown(self.view(), count)
        n = self.size
        self.steps[n:n + count] = steps
        self.walls[n:n + count] = walls
        self.values[n:n + count] = values
        self.size = n + count

    def view(self) -> Tuple[Any, Any, Any]:
        n = self.size
        return self.steps[:n], self.walls[:n], self.values[:n]

    def keep_before(self, step: int) -> int:
        """Drop the points at `step` or later; returns how many were dropped."""
        kept = _kept_before(self.view(), step)
        if kept is None:
            return 0
        before = self.size
        (self.steps, self.walls, self.values), self.size = kept
        return before - self.size


class RefsView(NamedTuple):
    """A tensor series' points as they stood (`Refs.view`): arrays that later appends never
    change, and the files their ids name."""

    steps: Any
    walls: Any
    offsets: Any
    file_ids: Any
    files: List[EventFile]


class Refs:
    """A tensor series: each point's step and wall time, and where its record lies (the byte
    `offsets` of `files`[file id]), in arrays that grow as `Columns`' grow. The points of one
    record (a tag's values of one Event) lie next to each other, in the record's order."""

    __slots__ = ("steps", "walls", "offsets", "file_ids", "files", "_ids", "size")

    def __init__(self) -> None:
        self.steps, self.walls, self.offsets, self.file_ids = _EMPTY_REFS
        self.files: List[EventFile] = []
        # {file: its id}
        self._ids: Dict[EventFile, int] = {}
        self.size = 0

    def append(self, step: int, wall: float, file: EventFile, offset: int) -> None:
        if self.size == len(self.steps):
            self.steps, self.walls, self.offsets, self.file_ids = _grown(self._columns(), 1)
        n = self.size
        self.steps[n], self.walls[n], self.offsets[n] = step, wall, offset
        self.file_ids[n] = self._file_id(file)
        self.size = n + 1

    def view(self) -> RefsView:
        """The points as they stand (under the run's lock); `files` only ever grows."""
        return RefsView(*self._columns(), self.files)

    def _columns(self) -> Tuple[Any, Any, Any, Any]:
        n = self.size
        return self.steps[:n], self.walls[:n], self.offsets[:n], self.file_ids[:n]

    def keep_before(self, step: int) -> int:
        """Drop the points at `step` or later; returns how many were dropped."""
        kept = _kept_before(self._columns(), step)
        if kept is None:
            return 0
        before = self.size
        (self.steps, self.walls, self.offsets, self.file_ids), self.size = kept
        return before - self.size

    def _file_id(self, file: EventFile) -> int:
        """The id of `file` in `files`, added where new."""
        files = self.files
        if files and files[-1] is file:
            return len(files) - 1
        found = self._ids.get(file)
        if found is None:
            found = self._ids[file] = len(files)
            files.append(file)
        return found


def _grown(columns: Tuple[Any, ...], count: int) -> Tuple[Any, ...]:
    """New arrays holding `columns` (a series' points, of one length) with room for `count` more
    points: just that for the first points, else at least as much again as they hold, 16 at least."""
    n = len(columns[0])
    room = n + count if not n else max(n + count, 2 * n, 16)
    grown: List[Any] = []
    for column in columns:
        new = np.empty(room, column.dtype)
        new[:n] = column
        grown.append(new)
    return tuple(grown)


def _kept_before(columns: Tuple[Any, ...], step: int) -> Optional[Tuple[Tuple[Any, ...], int]]:
    """New arrays holding the points of `columns` (steps first) before `step`, with room for 16
    more, and their count; None where every point is before it. Views given out before still hold
    what they held."""
    kept = columns[0] < step
    if kept.all():
        return None
    return tuple(np.concatenate([column[kept], np.zeros(16, column.dtype)]) for column in columns), int(kept.sum())


class Series:
    """One tag's points: `kind` is "scalar" (`columns`), "tensor" (`refs`) or "blob" (`blobs`)
    once its metadata is known, None before (`pending`)."""

    __slots__ = ("kind", "columns", "refs", "blobs", "pending")

    def __init__(self) -> None:
        self.kind: Optional[str] = None
        self.columns = Columns()
        self.refs = Refs()
        self.blobs: List[BlobRef] = []
        self.pending: List[Tuple[Any, EventFile, int]] = []

    def add(self, event: Any, file: EventFile, offset: int) -> None:
        """Add a TensorEvent, read from the record at `offset` of `file`."""
        if self.kind == "scalar":
            self.columns.append(event.step, event.wall_time, scalar_value(event.tensor_proto))
        elif self.kind == "tensor":
            self.refs.append(event.step, event.wall_time, file, offset)
        elif self.kind == "blob":
            self.blobs.append(BlobRef(event.step, event.wall_time, file, offset, tensor_size(event.tensor_proto)))
        else:
            self.pending.append((event, file, offset))

    def described(self, kind: str) -> None:
        self.kind = kind
        if self.pending:
            pending, self.pending = self.pending, []
            for event, file, offset in pending:
                self.add(event, file, offset)

    def keep_before(self, step: int) -> int:
        """Drop the points at `step` or later; returns how many were dropped."""
        dropped = self.columns.keep_before(step) + self.refs.keep_before(step)
        before = len(self.blobs) + len(self.pending)
        self.blobs = [b for b in self.blobs if b.step < step]
        self.pending = [p for p in self.pending if p[0].step < step]
        return dropped + before - len(self.blobs) - len(self.pending)


class Changes:
    """The reads that changed any run's index in this process (run.py counts each with `add`, after
    it counts the run's own `changes`): an answer made from every run holds while `count` is the
    one it was made at, and the runs are the same. Counted under a lock: two threads' reads that
    ended at once could otherwise leave the count as one of them left it."""

    count = 0
    _lock = threading.Lock()

    @classmethod
    def add(cls) -> None:
        with cls._lock:
            cls.count += 1


class RunIndex:
    """What one run holds: `metadata` {tag: SummaryMetadata}, `series` {tag: Series}, `plugins`
    (the plugins named by its metadata) and `first_wall_time` (its first event's). Read and
    changed under `lock`. `purge_orphaned_data`: purge as upstream (its flag of that name).
    `changes` counts the reads that changed it (run.py adds one after each, under the lock): an
    answer made from it under the lock holds while the count is the one it was made at."""

    __slots__ = ("lock", "_purge", "metadata", "series", "plugins", "first_wall_time", "_file_version",
                 "_seen_session_start", "_most_recent_step", "changes")

    def __init__(self, purge_orphaned_data: bool = True) -> None:
        self.lock = threading.Lock()
        self._purge = purge_orphaned_data
        self.metadata: Dict[str, Any] = {}
        self.series: Dict[str, Series] = {}
        self.plugins: Set[str] = set()
        self.first_wall_time: Optional[float] = None
        self._file_version: Optional[float] = None
        self._seen_session_start = False
        self._most_recent_step = -1
        self.changes = 0

    def add(self, event: Any, file: EventFile, offset: int) -> None:
        """Take one migrated event, read from the record at `offset` of `file` (upstream's
        EventAccumulator._ProcessEvent, less what no data provider call serves)."""
        if self.first_wall_time is None:
            self.first_wall_time = event.wall_time
        if event.HasField("file_version"):
            self._file_version = event_util.ParseFileVersion(event.file_version)
        self._maybe_purge(event, file)
        if not event.HasField("summary"):
            return
        for value in event.summary.value:
            if value.HasField("metadata") and value.tag not in self.metadata:
                self._describe(value.tag, value.metadata)
            if value.HasField("tensor"):
                tag = value.tag or value.node_name
                series = self.series.get(tag)
                if series is None:
                    series = self.series[tag] = Series()
                series.add(TensorEvent(wall_time=event.wall_time, step=event.step, tensor_proto=value.tensor),
                           file, offset)

    def add_simple_scalars(self, event: Any, file: EventFile) -> bool:
        """Take a raw (unmigrated) event whose values are all simple scalars of tags that this run
        holds as scalars and that `file` has migrated before, as `add` would take its migration
        (which changes only the metadata of such a value, and the metadata of a known tag is not
        read again); False, taking nothing, for any other event."""
        if event.WhichOneof("what") != "summary":
            return False
        values = event.summary.value
        for value in values:
            if value.WhichOneof("value") != "simple_value" or value.tag not in file.initial_metadata:
                return False
            series = self.series.get(value.tag)
            if series is None or series.kind != "scalar":
                return False
        self._maybe_purge(event, file)
        for value in values:
            self.series[value.tag].columns.append(event.step, event.wall_time, float(np.float32(value.simple_value)))
        return True

    def add_known_tensors(self, event: Any, file: EventFile, offset: int) -> bool:
        """Take a raw (unmigrated) event, read from the record at `offset` of `file`, whose values
        are all of tags that this run holds as tensor series and that `file` has migrated before,
        each one that upstream's migration makes a tensor of its tag without fail, as `add` would
        take its migration; False, taking nothing, for any other event. (A point's tensor is
        read back, migrated, on request: its migration now would be thrown away.)"""
        if event.WhichOneof("what") != "summary" or not event.summary.value:
            return False
        values = event.summary.value
        for value in values:
            kind = value.WhichOneof("value")
            # A histogram with fewer limits than buckets may fail its migration.
            if kind not in _TENSOR_VALUES or not value.tag or value.tag not in file.initial_metadata or (
                    kind == "histo" and len(value.histo.bucket_limit) < len(value.histo.bucket)):
                return False
            series = self.series.get(value.tag)
            if series is None or series.kind != "tensor":
                return False
        self._maybe_purge(event, file)
        for value in values:
            self.series[value.tag].refs.append(event.step, event.wall_time, file, offset)
        return True

    def add_first_scalar(self, tag: str, metadata: Any, step: int, wall: float, value: float, room: int = 1) -> bool:
        """Take the migration of an event that holds one simple scalar, of `tag` (not empty),
        whose migrated metadata is `metadata` (`interned` already), as `add` would take it; False,
        taking nothing, where the run holds `tag` as other than scalars (`add` then needs its
        tensor). `room`: the points of `tag` about to come, this one among them."""
        series = self.series.get(tag)
        if tag in self.metadata:
            if series is None or series.kind != "scalar":
                return False
        elif metadata.data_class != summary_pb2.DATA_CLASS_SCALAR:
            return False
        if self.first_wall_time is None:
            self.first_wall_time = wall
        if self._purge:
            # `_maybe_purge` for an event of one value that holds no SessionLog.
            if not (self._file_version and self._file_version >= 2) and step < self._most_recent_step \
                    and series is not None:
                series.keep_before(step)
            self._most_recent_step = step
        if tag not in self.metadata:
            self._describe(tag, metadata, shared=True)
            series = self.series[tag]
        assert series is not None
        series.columns.append(step, wall, value, room)
        return True

    def at_once(self) -> bool:
        """Whether points of different tags may be taken in any order, each tag's in its own:
        no step going back purges (file version 2 or later). A SessionLog still purges in place."""
        return bool(self._file_version and self._file_version >= 2)

    def took_up_to(self, step: int) -> None:
        """Points were taken up to one at `step`, last (`_maybe_purge`'s state)."""
        if self._purge:
            self._most_recent_step = step

    def scalar_tag(self, tag: str, file: EventFile) -> bool:
        """Whether the simple scalars of `tag` read from `file` may go straight into its columns
        (`add_simple_scalars`, `add_scalar_rows`): the run holds it as scalars, and `file` has
        migrated it before."""
        series = self.series.get(tag)
        return series is not None and series.kind == "scalar" and tag in file.initial_metadata

    def add_scalar_rows(self, tags: List[str], ids: Any, steps: Any, walls: Any, values: Any) -> None:
        """Take simple scalar Events decoded by the scanner, one value each, in file order (numpy
        columns; `ids` index `tags`), every tag one that `scalar_tag` allows, as
        `add_simple_scalars` would take each: a step going back before file version 2 purges its
        tag's later points (one at a time, then), and none of them purges otherwise."""
        count = len(steps)
        if not count:
            return
        if self._purge:
            if not (self._file_version and self._file_version >= 2) and (
                    int(steps[0]) < self._most_recent_step or (count > 1 and bool((steps[1:] < steps[:-1]).any()))):
                self._add_rows_one_at_a_time(tags, ids, steps, walls, values)
                return
            self._most_recent_step = int(steps[-1])
        first = int(ids[0])
        if count == 1 or not (ids != first).any():
            self.series[tags[first]].columns.extend(steps, walls, values)
            return
        order = np.argsort(ids, kind="stable")
        ids, steps, walls, values = ids[order], steps[order], walls[order], values[order]
        bounds = [0] + (np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist() + [count]
        for a, b in zip(bounds, bounds[1:]):
            self.series[tags[int(ids[a])]].columns.extend(steps[a:b], walls[a:b], values[a:b])

    def _add_rows_one_at_a_time(self, tags: List[str], ids: Any, steps: Any, walls: Any, values: Any) -> None:
        """Rows where a step goes back before file version 2: each purges as `_maybe_purge` would."""
        for tag_id, step, wall, value in zip(ids.tolist(), steps.tolist(), walls.tolist(), values.tolist()):
            series = self.series[tags[tag_id]]
            if step < self._most_recent_step:
                series.keep_before(step)
            series.columns.append(step, wall, value)
            self._most_recent_step = step

    def _describe(self, tag: str, metadata: Any, shared: bool = False) -> None:
        """Note `tag`'s metadata (`shared`: `interned` already) and so its series' kind."""
        self.metadata[tag] = metadata if shared else interned(metadata)
        if metadata.plugin_data.plugin_name:
            self.plugins.add(metadata.plugin_data.plugin_name)
        series = self.series.get(tag)
        if series is None:
            series = self.series[tag] = Series()
        series.described(_KINDS.get(metadata.data_class, "tensor"))

    def _holds_points(self) -> bool:
        return any(series.columns.size or series.refs.size or series.blobs for series in self.series.values())

    def _maybe_purge(self, event: Any, file: EventFile) -> None:
        """Upstream's purge of what a restarted job wrote again: with file version 2, all points
        at or after the step of a second SessionLog START; before it, the points of the event's
        tags at or after a step lower than the last one seen. Upstream's Python loader passes
        over a run's first START; here a first START that heads a file (none of its points read
        before it) where the run holds points already purges too, as the Rust loader and
        mxboard's reader hide a resumed run's old points: torch's and tensorboardX's
        `purge_step` write one START, in the resumed run's new file (the Python loader shows its
        points interleaved with the old ones)."""
        if event.HasField("summary"):
            file.gave_points = True
        if not self._purge:
            return
        if self._file_version and self._file_version >= 2:
            if event.session_log.status == event_pb2.SessionLog.START:
                if self._seen_session_start or (not file.gave_points and self._holds_points()):
                    for series in self.series.values():
                        series.keep_before(event.step)
                self._seen_session_start = True
        elif event.step < self._most_recent_step and event.HasField("summary"):
            for value in event.summary.value:
                if value.tag in self.series:
                    self.series[value.tag].keep_before(event.step)
        if event.HasField("summary"):
            self._most_recent_step = event.step


def interned(metadata: Any) -> Any:
    """A SummaryMetadata equal to `metadata`, shared by every run that holds one so (a proto costs
    about a kilobyte, and the runs of a sweep describe their tags alike); `metadata` itself where
    it is big or where many are shared already. Shared ones are never changed."""
    if len(_INTERNED) >= _INTERNED_MOST:
        return metadata
    key = metadata.SerializeToString(deterministic=True)
    if len(key) > _INTERNED_BYTES:
        return metadata
    shared = _INTERNED.get(key)
    if shared is None:
        shared = _INTERNED[key] = summary_pb2.SummaryMetadata.FromString(key)
    return shared


# The metadata shared (`interned`): at most so many, of at most so many bytes each.
_INTERNED: Dict[bytes, Any] = {}
_INTERNED_MOST = 10_000
_INTERNED_BYTES = 512


def scalar_value(tensor: Any) -> float:
    """A scalar tensor's value, as upstream serves it (`make_ndarray(tensor).item()`)."""
    if tensor.dtype == _DT_FLOAT and len(tensor.float_val) == 1 and not tensor.tensor_shape.dim:
        return float(np.float32(tensor.float_val[0]))
    item: float = tensor_util.make_ndarray(tensor).item()
    return item


def tensor_size(tensor: Any) -> int:
    """The number of elements of a TensorProto, from its shape alone (as upstream counts blobs)."""
    size = 1
    for dim in tensor.tensor_shape.dim:
        size *= dim.size
    return size
