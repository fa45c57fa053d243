"""One run of a logdir: its event files, each read from where it stopped, and each record made
into upstream's migrated events (data_compat, then dataclass_compat, as upstream's EventFileLoader
yields them) in the run's index. A record that is no Event, or that upstream's migration refuses,
is skipped and said once.
"""
import logging
from typing import Dict, List, Mapping, Optional

from tensorboard import data_compat, dataclass_compat
from tensorboard.compat.proto import event_pb2

from tensorboard_bundle.loader.index import RunIndex
from tensorboard_bundle.loader.ingest import EventFile, new_records

__all__ = ["Run"]

logger = logging.getLogger(__name__)


class Run:
    """One run: its index and its event files (`files`, {path: EventFile})."""

    def __init__(self, purge_orphaned_data: bool = True) -> None:
        self.index = RunIndex(purge_orphaned_data)
        self.files: Dict[str, EventFile] = {}

    def read(self, paths: List[str], sizes: Optional[Mapping[str, int]] = None) -> None:
        """Read what `paths` (the run's event files, sorted) added since the last read; `sizes`
        {path: size}, where the caller knows them (a listing's), spares a stat of each file."""
        for path in paths:
            file = self.files.get(path)
            if file is None:
                file = self.files[path] = EventFile(path)
            for offset, payload in new_records(file, None if sizes is None else sizes.get(path)):
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
