"""A big first pass's small event files scanned before they are asked for, in the scanner's child
(scan_process.py), while the server that will ask still imports TensorBoard (about 0.4 s).

The child plans the batches that the loader's first pass will send (logdir.py, ingest.py): the
runs in its order, files of at most `small` bytes grouped while they hold at most `batch`, a
batch ended by a big file and every `runs` runs, none of one file. It scans them in order on a
thread, holding at most `held` bytes of them not yet asked for. A batch asked for (`answer`: its
paths, the bytes read of each) is answered from its scan ahead where it was planned, each file
read as long and unchanged since (size, mtime, inode): the asker need not send its bytes. One
planned in no batch (the loader's order or listing differs) stops the scans ahead: each batch is
then scanned from the bytes sent, as without them.
"""
from __future__ import annotations

import os
import stat
import threading
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple

from .listing import _sorted_out, is_event_file
from .scan import scan_together
from .small_files import read_whole

__all__ = ["WAIT", "Ahead", "Plan"]


class Plan(NamedTuple):
    """What to scan ahead: below `logdir`, batches bounded as the loader bounds them."""

    logdir: str
    runs: int
    batch: int
    small: int
    held: int


# The most seconds an asker waits for the plan, or for a batch's scan ahead.
WAIT = 10.0
# A batch's files: their paths, in order.
Key = Tuple[str, ...]
# A file's size, mtime (ns), inode and device (`_stamp`).
Stamp = Tuple[int, int, int, int]
# A batch scanned ahead: the bytes read of each file, each file's stamp then, and their scan.
Done = Tuple[List[int], List[Optional[Stamp]], Any]


class Ahead:
    """The scans of `plan`'s batches, made on a thread of its own, each given once (`answer`)."""

    def __init__(self, plan: Plan) -> None:
        self._plan = plan
        self._lock = threading.Condition()
        # {batch: its number}, once every batch is planned (`_planned`).
        self._numbers: Dict[Key, int] = {}
        self._planned = False
        # The batches scanned and not yet asked for, {number: Done, or None where a file could not
        # be read}; the batches scanned so far; the bytes held.
        self._done: Dict[int, Optional[Done]] = {}
        self._scanned = 0
        self._held = 0
        self._stopped = False
        threading.Thread(target=self._run, name="mxboard scan ahead", daemon=True).start()

    def answer(self, paths: Key, lengths: List[int]) -> Tuple[bool, Any]:
        """(True, the scan_together of the files `paths`, `lengths` bytes each) where it was
        made ahead and holds, else (False, None): the asker then sends the bytes."""
        found = self._taken(paths)
        if found is None or found[0] != lengths or any(_stamp(path) != stamp for path, stamp in zip(paths, found[1])):
            return False, None
        return True, found[2]

    def _taken(self, paths: Key) -> Optional[Done]:
        """The planned batch of `paths`, once scanned, taken from those held (with those before
        it, which the asker passed over); None where it is none, or the scans stopped."""
        with self._lock:
            # A listing or a read that hangs (a network share linked below the logdir) stops the
            # scans ahead, not the asker.
            if not self._lock.wait_for(lambda: self._planned or self._stopped, WAIT):
                self._stop()
            number = self._numbers.get(paths)
            if number is None:
                self._stop()
                return None
            for passed in [n for n in self._done if n < number]:
                self._drop(passed)
            self._lock.notify_all()
            if not self._lock.wait_for(lambda: self._scanned > number or self._stopped, WAIT):
                self._stop()
            if self._stopped or number not in self._done:
                return None
            return self._drop(number)

    def _drop(self, number: int) -> Optional[Done]:
        found = self._done.pop(number)
        if found is not None:
            self._held -= sum(found[0])
        return found

    def _stop(self) -> None:
        self._stopped = True
        self._done.clear()
        self._held = 0
        self._lock.notify_all()

    def _run(self) -> None:
        try:
            batches = list(_batches(self._plan))
            with self._lock:
                self._numbers = {tuple(path for path, _ in batch): number for number, batch in enumerate(batches)}
                self._planned = True
                self._lock.notify_all()
            for number, batch in enumerate(batches):
                with self._lock:
                    self._lock.wait_for(lambda: self._held < self._plan.held or self._stopped)
                    if self._stopped:
                        return
                read = _read(batch)
                found = None if read is None else ([len(piece) for piece in read[0]], read[1], scan_together(read[0]))
                with self._lock:
                    if self._stopped:
                        return
                    self._done[number] = found
                    self._held += sum(found[0]) if found is not None else 0
                    self._scanned = number + 1
                    self._lock.notify_all()
        finally:
            # An error here (a directory gone while listed, memory) costs only the scans ahead.
            with self._lock:
                if not self._planned or self._scanned < len(self._numbers):
                    self._stop()


def _read(batch: List[Tuple[str, int]]) -> Optional[Tuple[List[bytes], List[Optional[Stamp]]]]:
    """The bytes of each file of `batch` (path, its size when planned), and its stamp when read;
    None where one cannot be read, or no longer has that size (the asker's bytes then differ)."""
    pieces: List[bytes] = []
    stamps: List[Optional[Stamp]] = []
    for path, size in batch:
        if not size:
            pieces.append(b"")
            stamps.append(_stamp(path))
            continue
        found = read_whole(path)
        if found is None or len(found[0]) != size:
            return None
        pieces.append(found[0])
        stamps.append(_of(found[1]))
    return pieces, stamps


def _stamp(path: str) -> Optional[Stamp]:
    """What tells whether `path` changed: (size, mtime, inode, device); None where it is gone."""
    try:
        return _of(os.stat(path))
    except OSError:
        return None


def _of(found: os.stat_result) -> Stamp:
    return found.st_size, found.st_mtime_ns, found.st_ino, found.st_dev


def _batches(plan: Plan) -> Iterator[List[Tuple[str, int]]]:
    """The batches (of two files or more) of (path, size) that the loader's first pass makes of
    the small event files below `plan.logdir`."""
    batch: List[Tuple[str, int]] = []
    held = 0
    for count, (directory, names) in enumerate(_runs(plan.logdir, (plan.logdir,))):
        if count and not count % plan.runs:
            yield from _sent(batch)
            batch, held = [], 0
        for name in names:
            path = os.path.join(directory, name)
            try:
                found = os.stat(path)
            except OSError:
                continue
            if not stat.S_ISREG(found.st_mode):
                continue
            size = found.st_size
            if size > plan.small or held + size > plan.batch:
                yield from _sent(batch)
                batch, held = [], 0
            if size <= plan.small:
                batch.append((path, size))
                held += size
    yield from _sent(batch)


def _sent(batch: List[Tuple[str, int]]) -> Iterator[List[Tuple[str, int]]]:
    # A batch of one file is scanned where it is read.
    if len(batch) > 1:
        yield batch


def _runs(directory: str, path_here: Tuple[str, ...]) -> Iterator[Tuple[str, List[str]]]:
    """(directory, its event files' names, sorted) of each run at or below `directory`, in the
    loader's order (logdir.py `_list`), links followed and loops left out as it does."""
    try:
        with os.scandir(directory) as found:
            entries = sorted(found, key=lambda entry: entry.name)
    except OSError:
        return
    names, below = _sorted_out(directory, entries, path_here, {}, lambda line: None)
    for sub, sub_path_here in below:
        yield from _runs(sub, sub_path_here)
    files = [name for name in names if is_event_file(name)]
    if files:
        yield directory, files
