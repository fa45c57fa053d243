"""A writer thread's output: its event files, the scalar series in them, and each batch built,
encoded and written with one `write` per file.

Scalar rows are encoded by series, then by call order; other records follow in call order, so
TensorBoard (which treats a step going backwards as a restart) shows every point, whatever thread
logged it and whatever its type. A bad item is reported through `hold(exc)` and the rest written;
after an I/O error (`write_error`) nothing more is written.
"""
import collections
import logging
import threading
import time

import numpy as np

from .encoding import ScalarSeries, encode_event, encode_scalar_rows
from .events import FILE_VERSION
from .intake import Batch, Record, Task
from .mxnet_capture import resolve
from .proto import Event, SessionLog
from .storage import open_storage

__all__ = ["Output"]

log = logging.getLogger("mxboard")


class Output:
    """`logdir`: where event files go, a directory or an object-store URL (storage/; False
    `write_to_disk`: nowhere). `read_scalars(values)`: the floats of PendingScalars' captured
    values, in order. `hold(exc)`: keep an error for the caller. `main_file`: the (suffix,
    restart_at) of the main event file, which the writer thread opens first (`open_main`); records
    and series whose file is None go there. `verbose`: log each file opened."""

    def __init__(self, logdir, write_to_disk, read_scalars, hold, main_file=("", None), verbose=False):
        self._read_scalars = read_scalars
        self._hold = hold
        self._main = main_file
        self._verbose = verbose
        self.main_file = None
        self.files = []  # every EventFile opened, closed with the worker
        self._series = []  # ScalarSeries by id
        self._lock = threading.Lock()  # callers' threads add series
        self.write_error = None  # the I/O error after which nothing more is written
        self.storage = open_storage(logdir, write_to_disk)  # checked here, on the caller's thread

    def open_main(self):
        """On the writer thread, first: the main event file (an error is held for the caller)."""
        try:
            self.main_file = self.open_file(None, *self._main)
        except Exception as exc:  # noqa: BLE001 - whatever it is, the caller hears it (and nothing is written)
            self._failed(exc)

    def open_file(self, directory=None, suffix="", restart_at=None):
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

    def add_series(self, event_file, tag):
        """An id for the scalar rows of `tag` in `event_file` (None: the main file)."""
        with self._lock:
            self._series.append(ScalarSeries(event_file, tag))
            return len(self._series) - 1  # appended before any row names it

    def write_batch(self, batch: Batch):
        """Build, encode and write one batch (intake.py); sync files that keep data back (now, if
        a flush waits for the batch)."""
        if self.write_error is not None:
            return
        chunks = batch.chunks + self._resolve(batch.pending)
        for event_file, data in self._encode(batch.items, chunks).items():
            try:
                event_file.write(data)
            except OSError as exc:
                return self._failed(exc)
        for event_file in self.files:  # an object store's files upload when it is time (storage/remote.py)
            try:
                event_file.sync(bool(batch.barriers))
            except OSError as exc:
                return self._failed(exc)

    def _failed(self, exc):
        self.write_error = exc
        self._hold(exc)

    def _encode(self, items, chunks):
        """{file: bytes} of one batch."""
        out = collections.defaultdict(list)
        for _, item, _ in items:
            kind = type(item)
            try:
                if kind is Record:
                    message = item.build(*[resolve(a) for a in item.args])
                    out[item.file].append(encode_event(message, item.step, item.wall))
                elif kind is Task:
                    item.fn(*[resolve(a) for a in item.args])
            except Exception as exc:  # noqa: BLE001 - a bad item: report it, write the others
                self._hold(exc)
        if chunks:
            series, values, steps, walls, seqs = (np.concatenate(c) for c in zip(*chunks)) \
                if len(chunks) > 1 else chunks[0]
            for event_file, records in encode_scalar_rows(self._series, series, values, steps, walls, seqs):
                out[event_file].insert(0, records)
        return {self.main_file if event_file is None else event_file: b"".join(pieces)
                for event_file, pieces in out.items()}

    def _resolve(self, pending):
        """Scalar rows (numpy columns) of the PendingScalars: their values, once MXNet has them.
        A value that cannot be had is reported, the others kept."""
        if not pending:
            return []
        try:
            values = self._read_scalars([item.value for _, item in pending])
        except Exception as exc:  # noqa: BLE001 - reported to the caller
            self._hold(exc)
            return []
        series, steps, walls, seqs = zip(*[(item.series, item.step, item.wall, seq) for seq, item in pending])
        return [[np.array(series, np.int64), np.array(values, np.float64), np.array(steps, np.int64),
                 np.array(walls, np.float64), np.array(seqs, np.int64)]]

    def close(self):
        """Close every file; an error is held, the other files still closed."""
        for event_file in self.files:
            try:
                event_file.close()
            except OSError as exc:
                self._hold(exc)

    def abandon(self):
        """In a forked child: let go of the parent's descriptors, write nothing."""
        for event_file in self.files:
            event_file.abandon()
