"""One run of a logdir: its event files, each read from where it stopped, and each record made
into upstream's migrated events (data_compat, then dataclass_compat, as upstream's EventFileLoader
yields them) in the run's index. A record that is no Event, or that upstream's migration refuses,
is skipped and said once.

`read_runs` reads many runs' files at once, so that their small files are scanned together
(ingest.py). The simple scalars that the scanner decodes, of a tag that the run holds as scalars
and that their file migrated before, go straight into the tag's columns, many at once
(`RunIndex.add_scalar_rows`); every other record is parsed (and migrated as upstream does, but
where its values are all of known tensor tags: the index keeps only where it lies), in file order
with them: each record that needs upstream's migration is taken after the rows before it and
before the rows after it, so that metadata comes first and a restart purges as upstream purges.
"""
import logging
from concurrent.futures import Executor
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import numpy as np
from tensorboard import data_compat, dataclass_compat
from tensorboard.compat.proto import event_pb2

from mxboard._reading.scan_process import ScanProcess
from tensorboard_bundle.loader.index import Changes, RunIndex, interned
from tensorboard_bundle.loader.ingest import EventFile, Records, Scanned, read

__all__ = ["Run", "read_runs"]

logger = logging.getLogger(__name__)


class Run:
    """One run: its index and its event files (`files`, {path: EventFile})."""

    __slots__ = ("index", "files")

    def __init__(self, purge_orphaned_data: bool = True) -> None:
        self.index = RunIndex(purge_orphaned_data)
        self.files: Dict[str, EventFile] = {}

    def read(self, paths: List[str], sizes: Optional[Mapping[str, int]] = None) -> None:
        """Read what `paths` (the run's event files, sorted) added since the last read; `sizes`
        {path: size}, where the caller knows them (a listing's), spares a stat of each file."""
        read_runs([(self, paths, sizes)])

    @property
    def bytes_read(self) -> int:
        return sum(file.bytes_read for file in self.files.values())


def read_runs(work: Iterable[Tuple[Run, List[str], Optional[Mapping[str, int]]]],
              fetch: Optional[Executor] = None, scanner: Optional[ScanProcess] = None,
              given: Optional[Mapping[str, bytes]] = None) -> None:
    """Read what each run's files added since the last read: (run, its event files' paths,
    sorted, their sizes where the caller knows them, else None), many runs' small files scanned
    together; `fetch`: threads that read the small files ahead; `scanner`: a child process that
    scans them while their records are taken here; `given`: files read whole already, by path
    (ingest.read)."""
    files: List[Tuple[EventFile, Optional[int]]] = []
    runs: Dict[int, Run] = {}
    for run, paths, sizes in work:
        for path in paths:
            file = run.files.get(path)
            if file is None:
                file = run.files[path] = EventFile(path)
            files.append((file, None if sizes is None else sizes.get(path)))
            runs[id(file)] = run
    for found in read(files, fetch, scanner, given):
        index = runs[id(found.file)].index
        try:
            if isinstance(found, Records):
                for offset, payload in found.records:
                    _take(index, found.file, offset, payload)
            else:
                _take_scanned(index, found)
        finally:
            with index.lock:
                index.changes += 1
            Changes.add()


def _take(index: RunIndex, file: EventFile, offset: int, payload: bytes) -> None:
    """One record, at `offset` of `file`, as upstream's loader reads it."""
    try:
        event = event_pb2.Event.FromString(payload)
        with index.lock:
            if index.add_simple_scalars(event, file) or index.add_known_tensors(event, file, offset):
                return
        events = dataclass_compat.migrate_event(data_compat.migrate_event(event), file.initial_metadata)
        with index.lock:
            for each in events:
                index.add(each, file, offset)
    # A record whose CRCs match but that is no Event TensorBoard can read.
    except Exception as exc:  # noqa: BLE001
        logger.warning("%s: the record at byte %d is skipped: %s", file.path, offset, exc)


def _take_first(index: RunIndex, file: EventFile, offset: int, payload: bytes, room: int = 1) -> None:
    """A record that the scanner decoded as a simple scalar, of a tag that `file` did not migrate
    before (its first), as `_take` takes it.

    Upstream's migration of an event of one simple_value depends on the value's tag and metadata
    alone, but for the value itself, which becomes a float32 scalar tensor (data_compat), and
    what it leaves `file.initial_metadata` holding (dataclass_compat): once a tag and metadata
    were migrated, the next file's alike are taken from what that migration gave (about 13 us
    a tag a file, not 52). `room`: the points of its tag about to come, this one among them."""
    try:
        event = event_pb2.Event.FromString(payload)
    except Exception:  # noqa: BLE001
        _take(index, file, offset, payload)
        return
    values = event.summary.value
    if event.WhichOneof("what") != "summary" or len(values) != 1 or values[0].WhichOneof("value") != "simple_value" \
            or not values[0].tag or values[0].tag in file.initial_metadata:
        _take(index, file, offset, payload)
        return
    value = values[0]
    key = (value.tag, value.metadata.SerializeToString(deterministic=True) if value.HasField("metadata") else None)
    migrated = _MIGRATED.get(key)
    if migrated is not None:
        metadata, initial = migrated
        with index.lock:
            if index.add_first_scalar(value.tag, metadata, event.step, event.wall_time,
                                      float(np.float32(value.simple_value)), room):
                file.initial_metadata[value.tag] = initial
                file.gave_points = True
                return
        _take(index, file, offset, payload)
        return
    try:
        (each,) = dataclass_compat.migrate_event(data_compat.migrate_event(event), file.initial_metadata)
        if len(_MIGRATED) < _MIGRATED_MOST:
            # Shared: never changed, by the run or by the migration of the file's later events.
            initial = file.initial_metadata[value.tag] = interned(file.initial_metadata[value.tag])
            _MIGRATED[key] = (interned(each.summary.value[0].metadata), initial)
        with index.lock:
            index.add(each, file, offset)
    # A record that upstream's migration refuses.
    except Exception as exc:  # noqa: BLE001
        logger.warning("%s: the record at byte %d is skipped: %s", file.path, offset, exc)


# Upstream's migration of a tag's first simple scalar in a file, by (tag, its metadata's bytes):
# (the migrated value's metadata, the file's initial metadata of the tag); at most so many.
_MIGRATED: Dict[Tuple[str, Optional[bytes]], Tuple[Any, Any]] = {}
_MIGRATED_MOST = 10_000


def _take_scanned(index: RunIndex, scanned: Scanned) -> None:
    """A file's scanned records: a record ahead of every row (the file's version, typically)
    first; then, where points of different tags may be taken in any order (`at_once`) and no
    other record lies among the rows, each tag's rows at once (`_take_at_once`); else in their
    order (`_take_in_order`)."""
    others, numbers = scanned.others, scanned.rows[1]
    if others and (not len(numbers) or others[0][0] < int(numbers[0])):
        number, payload = others[0]
        _take(index, scanned.file, scanned.offset(number), payload)
        others = others[1:]
    if not others and len(numbers) and index.at_once():
        _take_at_once(index, scanned)
    else:
        _take_in_order(index, scanned, others)


def _take_at_once(index: RunIndex, scanned: Scanned) -> None:
    """A file's rows, each tag's at once, in the order of the tags' first rows: a tag that the
    file did not migrate before has its first row migrated (`_take_first`, room made for the
    rest), then its other rows go straight into its columns (one by one through `_take` where
    the migration made it no scalar). As `_take_in_order` leaves the run, where order between
    tags does not matter (RunIndex.at_once)."""
    file, names = scanned.file, scanned.tags
    ids, numbers, steps, walls, values = scanned.rows
    for rows in _groups(ids):
        first, rest = _first(rows)
        tag = names[int(ids[first])]
        if not index.scalar_tag(tag, file):
            number = int(numbers[first])
            _take_first(index, file, scanned.offset(number), scanned.payload(number), len(ids[rows]))
            rows = rest
        if not len(ids[rows]):
            continue
        if index.scalar_tag(tag, file):
            with index.lock:
                index.series[tag].columns.extend(steps[rows], walls[rows], values[rows])
        else:
            for number in numbers[rows].tolist():
                _take(index, file, scanned.offset(number), scanned.payload(number))
    with index.lock:
        index.took_up_to(int(steps[-1]))
    file.gave_points = True


def _groups(ids: Any) -> List[Any]:
    """The rows of each tag (`ids`: the rows' tag ids), in the order of the tags' first rows: a
    slice where each tag's rows lie together, or where the tags come in turn (as writers write
    a file: tag after tag, or step after step), else an index array."""
    count = len(ids)
    cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    if len(cuts) < 64:
        starts = [0] + cuts.tolist()
        if len(set(ids[starts].tolist())) == len(starts):
            return [slice(a, b) for a, b in zip(starts, starts[1:] + [count])]
    elif len(cuts) == count - 1:
        repeats = np.flatnonzero(ids == ids[0])
        period = int(repeats[1]) if len(repeats) > 1 else count
        if not count % period and np.array_equal(ids[period:], ids[:-period]) \
                and len(set(ids[:period].tolist())) == period:
            return [slice(j, count, period) for j in range(period)]
    order = np.argsort(ids, kind="stable")
    ranked = ids[order]
    bounds = [0] + (np.flatnonzero(ranked[1:] != ranked[:-1]) + 1).tolist() + [count]
    return [order[a:b] for _, a, b in sorted(zip(order[bounds[:-1]].tolist(), bounds, bounds[1:]))]


def _first(rows: Any) -> Tuple[int, Any]:
    """A group's first row, and its other rows (`_groups`')."""
    if isinstance(rows, slice):
        return rows.start, slice(rows.start + (rows.step or 1), rows.stop, rows.step)
    return int(rows[0]), rows[1:]


def _take_in_order(index: RunIndex, scanned: Scanned, others: List[Tuple[int, bytes]]) -> None:
    """A file's rows and `others` (its other records), in their order: runs of rows that may go
    straight into their columns, and between them each record that needs upstream's migration."""
    file, names = scanned.file, scanned.tags
    ids, numbers, steps, walls, values = scanned.rows
    end = len(numbers)
    # The rows whose tag may not go straight into its columns yet (`waiting`: those tags).
    slow = np.zeros(len(names), bool)
    waiting: List[int] = []
    # Each tag's rows: room for them is made at its first point.
    counts = np.bincount(ids, minlength=len(names)) if end else ids[:0]
    if end:
        for tag_id in counts.nonzero()[0].tolist():
            if not index.scalar_tag(names[tag_id], file):
                slow[tag_id] = True
                waiting.append(tag_id)
    slow_rows = np.flatnonzero(slow[ids]) if waiting else ids[:0]
    row = other = slow_at = 0
    while True:
        # The next record to migrate: the next other record, or the next row of a waiting tag.
        other_number = others[other][0] if other < len(others) else -1
        slow_row = int(slow_rows[slow_at]) if slow_at < len(slow_rows) else -1
        room = 0
        if slow_row >= 0 and (other_number < 0 or int(numbers[slow_row]) < other_number):
            stop, number, room = slow_row, int(numbers[slow_row]), int(counts[ids[slow_row]])
            payload = scanned.payload(number)
        elif other_number >= 0:
            stop, (number, payload) = int(np.searchsorted(numbers, other_number)), others[other]
        else:
            stop, number = end, -1
        if stop > row:
            with index.lock:
                index.add_scalar_rows(names, ids[row:stop], steps[row:stop], walls[row:stop], values[row:stop])
            file.gave_points = True
        if number < 0:
            return
        if room:
            _take_first(index, file, scanned.offset(number), payload, room)
        else:
            _take(index, file, scanned.offset(number), payload)
        if number == other_number:
            other += 1
            row = stop
        else:
            slow_at += 1
            row = stop + 1
        # A migrated record may have made a waiting tag known: its later rows go straight in.
        known = [tag_id for tag_id in waiting if index.scalar_tag(names[tag_id], file)]
        if known:
            for tag_id in known:
                waiting.remove(tag_id)
                slow[tag_id] = False
            rest = slow_rows[slow_at:]
            slow_rows, slow_at = rest[slow[ids[rest]]], 0
