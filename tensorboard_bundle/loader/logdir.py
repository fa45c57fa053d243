"""A logdir's runs, loaded and reloaded: the walk finds the runs and their event files, each file
is read from where it stopped, and each record becomes upstream's migrated events (data_compat,
then dataclass_compat, as upstream's EventFileLoader yields them) in the run's index.

`reload()` does one pass; `start(interval)` runs passes on a daemon thread, every `interval`
seconds (0: one pass). A run whose directory is gone is dropped; a record that is no Event, or
that upstream's migration refuses, is skipped and said once.
"""
import logging
import threading
import time
from typing import Dict, List, Optional

from tensorboard import data_compat, dataclass_compat
from tensorboard.compat.proto import event_pb2

from tensorboard_bundle.loader.index import RunIndex
from tensorboard_bundle.loader.ingest import EventFile, new_records
from tensorboard_bundle.loader.walk import Walker

__all__ = ["Logdir", "Run"]

logger = logging.getLogger(__name__)


class Run:
    """One run: its index and its event files (`files`, {path: EventFile})."""

    def __init__(self, purge_orphaned_data: bool = True) -> None:
        self.index = RunIndex(purge_orphaned_data)
        self.files: Dict[str, EventFile] = {}

    def read(self, paths: List[str]) -> None:
        """Read what `paths` (the run's event files, sorted) added since the last read."""
        for path in paths:
            file = self.files.get(path)
            if file is None:
                file = self.files[path] = EventFile(path)
            for offset, payload in new_records(file):
                try:
                    event = event_pb2.Event.FromString(payload)
                    with self.index.lock:
                        if self.index.add_simple_scalars(event, file):
                            continue
                    events = dataclass_compat.migrate_event(data_compat.migrate_event(event), file.initial_metadata)
                    with self.index.lock:
                        for each in events:
                            self.index.add(each, file, offset)
                # A record whose CRCs match but that is no Event TensorBoard can read.
                except Exception as exc:  # noqa: BLE001
                    logger.warning("%s: the record at byte %d is skipped: %s", path, offset, exc)

    @property
    def bytes_read(self) -> int:
        return sum(file.bytes_read for file in self.files.values())


class Logdir:
    """The runs below `path`, by name; `purge_orphaned_data` as upstream's flag of that name."""

    def __init__(self, path: str, purge_orphaned_data: bool = True) -> None:
        self.path = path
        self._purge = purge_orphaned_data
        self.runs: Dict[str, Run] = {}
        self._walker = Walker(path)
        self._thread: Optional[threading.Thread] = None

    def reload(self) -> None:
        """One pass: find the runs, drop those gone, read what each file added."""
        found = self._walker.runs()
        runs = dict(self.runs)
        for name in set(runs) - set(found):
            del runs[name]
        for name in found:
            runs.setdefault(name, Run(self._purge))
        # Replaced whole: a request reads one dict or the other, never one being changed.
        self.runs = runs
        for name, paths in sorted(found.items()):
            runs[name].read(paths)

    def start(self, interval: float) -> None:
        """Reload now and then every `interval` seconds (0: once), on a daemon thread."""
        def loop() -> None:
            while True:
                started = time.monotonic()
                try:
                    self.reload()
                except Exception:
                    logger.exception("%s: a reload failed; the next one tries again", self.path)
                if interval <= 0:
                    return
                time.sleep(max(0.0, interval - (time.monotonic() - started)))

        self._thread = threading.Thread(target=loop, name="mxboard loader", daemon=True)
        self._thread.start()
