"""A writer thread's output: its event files, the scalar series in them, and each batch built,
encoded and written with one `write` per file.

Scalar rows are encoded by series, then by call order; other records follow in call order, so
TensorBoard (which treats a step going backwards as a restart) shows every point, whatever thread
logged it and whatever its type. A bad item is reported to the writer's faults (faults.py) and the
rest written; after an I/O error (`Faults.stop`) nothing more is written.
"""
from __future__ import annotations

import collections
import itertools
import logging
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._format.events import FILE_VERSION
from ..errors import FileDeletedError
from ..frameworks.pending import resolve
from ..proto import Event, SessionLog
from ..storage import Destination, EventFile, Storage
from .encoding import ScalarSeries, encode_event, encode_scalar_rows
from .faults import Faults, face
from .intake import Batch, Columns, PendingScalar, Record, Task

__all__ = ["EventFiles"]

log = logging.getLogger("mxboard")


class EventFiles:
    """`destination`: where event files go (storage.Destination: a directory or an object-store
    URL, or nowhere). `read_scalars(values)`: the floats of PendingScalars' captured
    values, in order. `faults`: where errors are kept for the caller. `main_file`: the (suffix,
    restart_at) of the main event file, which the writer thread opens first (`open_main`); records
    and series whose file is None go there. `verbose`: log each file opened."""

    def __init__(self, destination: Destination, read_scalars: Optional[Callable[[List[Any]], List[float]]],
                 faults: Faults, main_file: Tuple[str, Optional[int]] = ("", None), verbose: bool = False) -> None:
        self._read_scalars = read_scalars or _no_scalars
        self._faults = faults
        self._main = main_file
        self._verbose = verbose
        self.main_file: Optional[EventFile] = None
        # Every EventFile opened, closed with the writer thread.
        self.files: List[EventFile] = []
        # A sub-run's file by its id (`new_file_id`).
        self._sub_run_files: Dict[int, EventFile] = {}
        # id(EventFile) -> its sub-run's names.
        self._names: Dict[int, Tuple[str, ...]] = {}
        self._next_file = itertools.count(1)
        # The series, by id.
        self._series: List[ScalarSeries] = []
        # The lock is there because callers' threads add series.
        self._lock = threading.Lock()
        # This says that close() has begun (interrupt).
        self._closing = False
        # The storage is checked here, on the caller's thread.
        self.storage: Storage = destination.open()
        # close()'s default wait for a store's uploads.
        self.close_secs = destination.upload.flush_secs

    def open_main(self) -> None:
        """On the writer thread, first: the main event file (an error is held for the caller)."""
        try:
            self.main_file = self.open_file(None, *self._main)
        # Whatever it is, the caller hears it (and nothing is written).
        except Exception as exc:  # noqa: BLE001
            self._failed(exc)

    def new_file_id(self) -> int:
        """An id for a sub-run's file, on the caller's thread; `open_sub_run_file` opens it."""
        with self._lock:
            return next(self._next_file)

    def open_sub_run_file(self, storage: Storage, file: int, names: Tuple[str, ...], suffix: str) -> None:
        """On the writer thread, in call order (a Task, before any record of it): the event file
        `file` (its id) in the sub-run `logdir/<names...>/` (storage.subdir: safe names, never outside)."""
        event_file = self.open_file(storage.subdir(*names), suffix)
        self._sub_run_files[file], self._names[id(event_file)] = event_file, names

    def written(self) -> List[Tuple[Optional[Tuple[str, ...]], str, List[Tuple[str, int]]]]:
        """(names, run, pieces) of each file that holds records (not write_to_disk=False's), the
        main file (names None) first: what reads them back needs (the scalars' export)."""
        return [(self._names.get(id(f)), self.storage.run(f.directory), f.pieces())
                for f in list(self.files) if f.path is not None and f.directory is not None]

    def open_file(self, directory: Optional[str] = None, suffix: str = "",
                  restart_at: Optional[int] = None) -> EventFile:
        """A new event file in `directory` (the logdir if None; created if need be), its first
        record written. With
        `restart_at` (a step), it begins as a restarted run: TensorBoard's Python loader then
        hides the steps >= `restart_at` logged before (SessionLog.START: the first START of a
        run is its beginning, a later one a restart, so two are written)."""
        event_file = self.storage.open_event_file(self.storage.root if directory is None else directory, suffix)
        now = time.time()
        head = encode_event(Event(file_version=FILE_VERSION), 0, now)
        if restart_at is not None:
            head += 2 * encode_event(Event(session_log=SessionLog(status=SessionLog.START)), restart_at, now)
        event_file.write(head)
        self.files.append(event_file)
        if self._verbose:
            log.info("mxboard: writing events to %s", event_file.path or "nowhere (write_to_disk=False)")
        return event_file

    def add_series(self, file: Optional[int], tag: str) -> int:
        """An id for the scalar rows of `tag` in the file `file` (a sub-run's id; None: the main file)."""
        with self._lock:
            self._series.append(ScalarSeries(file, tag))
            # Appended before any row names it.
            return len(self._series) - 1

    def write_batch(self, batch: Batch) -> None:
        """Build, encode and write one batch (intake.py); sync files that keep data back (now, if
        a flush waits for the batch)."""
        if self._faults.stopped is not None:
            # Nothing more is written: a task's caller hears why.
            for _, item, _ in batch.items:
                if type(item) is Task and item.outcome is not None:
                    item.outcome.end(self._faults.stopped_error())
            self._keep_after_error(batch)
            return
        chunks = batch.chunks + self._resolve(batch.pending)
        for event_file, data in self._encode(batch.items, chunks).items():
            try:
                event_file.write(data)
            except FileDeletedError as exc:
                # Deleted by a tear-down before close(): nothing to keep, nothing to say.
                if self._closing:
                    continue
                self._failed(exc)
                return
            except OSError as exc:
                self._failed(exc, event_file)
                return
        # An object store's files upload when it is time (storage/remote/).
        for event_file in self.files:
            try:
                event_file.sync(any(barrier.sync for barrier in batch.barriers))
            except OSError as exc:
                self._failed(exc, event_file)
                return

    def _keep_after_error(self, batch: Batch) -> None:
        """After a store's uploader gave up, what calls that returned queued is still handed to
        the files that keep it, and a flush tries the store again (a store that is back takes
        it; else close() keeps it on disk); a local file's error stops its writes (a full disk
        would tear records)."""
        keeping = [f for f in self.files if f.holds_writes_after_error]
        if not keeping:
            return
        records = [entry for entry in batch.items if type(entry[1]) is Record]
        chunks = batch.chunks + self._resolve(batch.pending)
        for event_file, data in self._encode(records, chunks).items():
            if event_file in keeping:
                try:
                    event_file.write(data)
                # The error already held: the data is kept all the same.
                except OSError:
                    pass
        if any(barrier.sync for barrier in batch.barriers):
            for event_file in keeping:
                try:
                    event_file.sync(True)
                # Still down: kept, the error already held.
                except OSError:
                    pass

    def _failed(self, exc: BaseException, event_file: Optional[EventFile] = None) -> None:
        """Nothing more is written after `exc`. A store's file that gave up keeps what comes after
        it, and close() tries the store once more."""
        if event_file is None:
            self._faults.stop(exc)
        else:
            self._faults.stop(exc, event_file.holds_writes_after_error, event_file.path)

    def _encode(self, items: Sequence[Tuple[int, Any, int]], chunks: List[Columns]) -> Dict[EventFile, bytes]:
        """{file: bytes} of one batch, each file's records in call order: scalar rows merged with
        the other records by their call numbers (encoding.encode_scalar_rows' segments)."""
        records: Dict[Optional[int], List[Tuple[int, bytes]]] = collections.defaultdict(list)
        for seq, item, _ in items:
            kind = type(item)
            try:
                if kind is Record:
                    message = item.build(*[resolve(a) for a in item.args])
                    records[item.file].append((seq, encode_event(message, item.step, item.wall)))
                elif kind is Task:
                    self._perform(item)
            # A bad item: report it, write the others.
            except Exception as exc:  # noqa: BLE001
                self._faults.hold(exc)
        rows: Dict[Tuple[Optional[int], int], bytes] = {}
        if chunks:
            series, values, steps, walls, seqs = (np.concatenate(c) for c in zip(*chunks)) \
                if len(chunks) > 1 else chunks[0]
            cuts = {f: np.array([seq for seq, _ in pieces], dtype=np.int64) for f, pieces in records.items()}
            for event_file, segment, data in encode_scalar_rows(self._series, series, values, steps, walls, seqs,
                                                                cuts):
                rows[event_file, segment] = data
        files: Dict[EventFile, bytes] = {}
        for file in set(records) | {f for f, _ in rows}:
            target = self.main_file if file is None else self._sub_run_files.get(file)
            # The file could not be opened (the caller heard why).
            if target is None:
                continue
            own = records.get(file, [])
            pieces = []
            # Rows before the first record, between two, after the last.
            for segment in range(len(own) + 1):
                if (file, segment) in rows:
                    pieces.append(rows[file, segment])
                if segment < len(own):
                    pieces.append(own[segment][1])
            files[target] = files.get(target, b"") + b"".join(pieces)
        return files

    def _perform(self, task: Task) -> None:
        """A task, whose caller waits for it and hears what it raised."""
        try:
            task.fn(self.storage, *[resolve(a) for a in task.args])
        # The caller raises it.
        except Exception as exc:  # noqa: BLE001
            if task.outcome is None:
                self._faults.hold(exc)
            else:
                task.outcome.end(face(exc))
        else:
            if task.outcome is not None:
                task.outcome.end()

    def _resolve(self, pending: Sequence[Tuple[int, PendingScalar]]) -> List[Columns]:
        """Scalar rows (numpy columns) of the PendingScalars: their values, once MXNet has them.
        A value that cannot be had is reported, the others kept."""
        if not pending:
            return []
        try:
            values = self._read_scalars([item.value for _, item in pending])
        # Reported to the caller.
        except Exception as exc:  # noqa: BLE001
            self._faults.hold(exc)
            return []
        for (_, item), value in zip(pending, values):
            # NaN or infinite: logged as given, and said.
            if value - value and item.warn is not None:
                item.warn(value, item.step)
        series, steps, walls, seqs = zip(*[(item.series, item.step, item.wall, seq) for seq, item in pending])
        return [[np.array(series, np.int64), np.array(values, np.float64), np.array(steps, np.int64),
                 np.array(walls, np.float64), np.array(seqs, np.int64)]]

    def interrupt(self) -> None:
        """close() is coming: no write waits for room in a store's spool any more, and a file
        deleted meanwhile is the user's tear-down (FileDeletedError)."""
        self._closing = True
        for event_file in self.files:
            event_file.interrupt()

    def close(self, deadline: Optional[float] = None) -> bool:
        """Close every file (a store's wait for their uploads, all until `deadline`, a
        time.monotonic()); an error is held, the other files still closed. Returns whether every
        file closed without an error (a store that gave up then took everything after all).
        Nothing of a tag is kept: a closed writer holds no memory for the tags it wrote."""
        with self._lock:
            self._series = []
        interrupted: Optional[KeyboardInterrupt] = None
        clean = True
        for event_file in self.files:
            # After a Ctrl-C, no more waiting: the other files keep what waits at once.
            try:
                event_file.close(deadline if interrupted is None else time.monotonic())
            except OSError as exc:
                clean = False
                self._faults.hold(exc)
            # Every file is still closed (keeping at once), then it goes on.
            except KeyboardInterrupt as exc:
                interrupted = interrupted or exc
        if interrupted is not None:
            raise interrupted
        return clean

    def save_what_waits(self, deadline: float) -> None:
        """A signal ends the process: a store's files wait for their uploads until `deadline`,
        then keep what the store has not taken on disk (storage/remote/)."""
        for event_file in self.files:
            event_file.save_what_waits(deadline)

    def abandon(self) -> None:
        """In a forked child: let go of the parent's descriptors, write nothing."""
        for event_file in self.files:
            event_file.abandon()


def _no_scalars(values: List[Any]) -> List[float]:
    raise TypeError("this output was given no reader of MXNet scalars")
