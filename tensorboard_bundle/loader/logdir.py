"""A logdir's runs, loaded and reloaded: the walk finds the runs and their event files, and each
run (run.py) reads what its files added.

`reload()` does one pass; `start(interval)` runs passes on a daemon thread, every `interval`
seconds (0: one pass). A run whose directory is gone is dropped.
"""
import logging
import threading
import time
from typing import Dict, Optional

from tensorboard_bundle.loader.run import Run
from tensorboard_bundle.loader.walk import Walker

__all__ = ["Logdir"]

logger = logging.getLogger(__name__)


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
