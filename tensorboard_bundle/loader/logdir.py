"""A logdir's runs, loaded, then read again where they change.

`reload()` does one whole pass: every directory listed (walk.py's rules), every run (a directory
holding event files) read from where its files were last read (run.py). `start(interval)` does one
and then, on a daemon thread, reads what changes: on a local disk on Linux as the kernel tells it
(inotify, watch.py), nothing stat'ed while nothing changes; on a network filesystem (NFS, SMB,
Lustre, GPFS, FUSE...), and elsewhere than Linux, by polling each directory on schedule.py's plan,
within a budget of calls a second that does not grow with the runs. `Logdir` says how.

A run whose directory is gone, or that holds no event file any more, is dropped. A directory loop,
a directory that cannot be listed, a file that is no event file cost only themselves, and are said
once in the server's log; a check that fails is said once, and tried again at its next turn.
`runs` is replaced whole where runs come or go: a request reads one dict or the other.
"""
import concurrent.futures
import contextlib
import gc
import logging
import os
import select
import stat
import threading
import time
from typing import Dict, Generator, Iterable, List, Optional, Set, Tuple

from mxboard._reading.scan_process import ScanProcess
from tensorboard_bundle.loader import ahead
from tensorboard_bundle.loader.ingest import SMALL, Whole, read_whole
from tensorboard_bundle.loader.run import Run, read_runs
from tensorboard_bundle.loader.schedule import Schedule
from tensorboard_bundle.loader.walk import Listing, Signature, Walker, is_event_file
from tensorboard_bundle.loader.watch import Change, Watcher, WatchLimitError, is_local

__all__ = ["Logdir", "BUDGET", "CAP", "LOCAL_BUDGET", "SPREAD_BYTES"]

logger = logging.getLogger(__name__)

# The filesystem calls a second that polling may spend (stats and listings; behind NFS each costs
# the server a call or two more: a lookup of a path's parts, where the client caches none): two
# thirds on the runs, a third on the directories that hold no event file (where new runs appear).
BUDGET = 6.0
# The budget where the logdir is on a local disk and the kernel cannot watch it all (the user's
# inotify watches used up): a stat costs about 2 us there, 1,000 a second 0.2% of a core.
LOCAL_BUDGET = 1000.0
# The longest a polled run waits between two checks, where the budget allows it. A directory that
# holds no event file is checked every reload interval, where the budget allows it.
CAP = 60.0
# A directory whose mtime is this recent is listed again at each check: an entry added within the
# same tick of its clock as the last listing leaves the mtime as it was.
_RACY_SECONDS = 2.0
# The runs stated, listed and read at once in a whole pass behind a network filesystem (each call
# waits on its server). 2,000 runs behind a FUSE passthrough that waits 1 ms a call: 8 took 5.3
# to 7.0 s, 16 took 3.4 to 4.7 s, 32 took 3.9 to 4.1 s and made 15% more calls.
_READERS = 16
# The runs whose files a batch reads together (their small files scanned at once).
_BATCH_RUNS = 500
# Behind a network filesystem, a new run's small event files are read whole as its directory is
# listed, by their names in it (walk.py): 10 calls a run of one file, not 14, where each of a
# path's parts is looked up again. So many bytes at most are held so until the pass reads them
# (the room is checked before a file is read: each lister may read one file past it).
_WHOLE_BYTES = 64 << 20
# A whole pass on a local disk that reads at least this many bytes is scanned by a second process
# (mxboard._reading.scan_process: about 0.15 s to start) while this one takes what it scanned; the
# runs are then read ahead.SPREAD_RUNS at a time (a batch's first scan is waited for).
SPREAD_BYTES = 32 << 20
# `runs` is copied for requests at most this often while a turn finds runs.
_PUBLISH_SECONDS = 0.5


# A directory's signature (None: not stated), listing (None: gone, or unreadable), and its event
# files read whole with it, by path.
_Looked = Tuple[Optional[Signature], Optional[Listing], Dict[str, Whole]]
# A run, its event files' sizes, whether any grew since its last read.
_Stated = Tuple[Run, Dict[str, int], bool]


class _Directory:
    """What is known of one directory of the logdir."""

    __slots__ = ("path_here", "files", "below", "signature", "changed_at")

    def __init__(self, path_here: Tuple[str, ...]) -> None:
        # The directories on its path from the logdir, itself included (for the walk's loops).
        self.path_here = path_here
        # Its event files' names, sorted; its subdirectories' paths.
        self.files: List[str] = []
        self.below: Set[str] = set()
        # (inode, mtime, ctime) at its last listing: None before one.
        self.signature: Optional[Tuple[int, int, int]] = None
        # When its files last changed (time.monotonic()'s clock), as far as is known.
        self.changed_at = 0.0


class Logdir:
    """The runs below `path`, by name; `purge_orphaned_data` as upstream's flag of that name;
    `budget`: the calls a second polling may spend.

    - On a local filesystem on Linux, the kernel says what changed (inotify): each directory of
      the logdir is watched (a new one as it appears); a written event file is read at once, a
      directory created or removed is listed again, and nothing is stat'ed while nothing changes.
      Where the kernel's queue overflowed, one whole pass finds what was missed; where the user's
      watches are all used (fs.inotify.max_user_watches), the logdir is polled instead, said once.
    - On a network filesystem (watch.is_local), where inotify does not see other machines' writes,
      and elsewhere than Linux (macOS, Windows: no inotify), each directory is polled: a stat of it
      (listed again only where it changed: its mtime, ctime or inode moved) and of each of its event
      files (read where its size moved), a run being written every `interval` seconds, a quiet one
      less and less often (schedule.Schedule), two thirds of the budget on the runs, a third on the
      directories above them (where new runs appear: each checked every `interval` seconds, where
      the budget allows). A directory of a local logdir that lies on a network filesystem (a link
      to a share) is polled so too.
    """

    def __init__(self, path: str, purge_orphaned_data: bool = True, budget: float = BUDGET) -> None:
        self.path = path
        self._purge = purge_orphaned_data
        self._budget = budget
        self.runs: Dict[str, Run] = {}
        # The runs as the loader's thread changes them; `runs` is a copy published whole
        # (`_publish`), when it was last, and whether it is behind.
        self._runs: Dict[str, Run] = {}
        self._published_at = 0.0
        self._stale = False
        self._walker = Walker(path)
        self._prefix = path if path.endswith(os.sep) else path + os.sep
        self._dirs: Dict[str, _Directory] = {}
        # Run directories found and not yet read; event files read whole with their listing, and
        # their bytes, until they are read.
        self._unread: List[str] = []
        self._whole: Dict[str, Whole] = {}
        self._whole_bytes = 0
        self._whole_lock = threading.Lock()
        # The scanner's process, started while a big first pass lists its runs (`_list`).
        self._scanner: Optional[ScanProcess] = None
        # The filesystem calls made, as the schedule pays for them.
        self._calls = 0
        self._watcher: Optional[Watcher] = None
        # The plans of polled directories: runs, and the directories above them.
        self._runs_plan: Optional[Schedule] = None
        self._dirs_plan: Optional[Schedule] = None
        self._thread: Optional[threading.Thread] = None
        # Set once a page may be shown: the first pass (`start`'s) ended, or it is a long one
        # (2,000 runs or more in one directory: shown a batch of runs at a time as they are read).
        self.shown = threading.Event()
        # Whether the logdir is on a local disk (watch.py), where its files are read on this
        # thread; elsewhere each call waits on the server, several at once. A logdir not made yet
        # is on the filesystem of the nearest directory above it.
        existing = os.path.abspath(path)
        while not os.path.isdir(existing) and os.path.dirname(existing) != existing:
            existing = os.path.dirname(existing)
        self._local = is_local(existing)

    def reload(self) -> None:
        """One whole pass: list every directory, drop the runs gone, read what each file added."""
        if self.path not in self._dirs:
            self._dirs[self.path] = _Directory((self.path,))
        try:
            self._list(self.path, whole=True)
            self._read_unread(every=True)
        finally:
            # One started for this logdir and not taken (it holds no directories, say) ends too.
            for started in (ahead.taken(self.path), self._scanner):
                if started is not None:
                    started.close()
            self._scanner = None

    def start(self, interval: float) -> None:
        """Load now and then read what changes (`interval`: a polled run being written is read
        every `interval` seconds), on a daemon thread; 0: one pass."""
        def loop() -> None:
            try:
                self.reload()
            except Exception:
                logger.exception("%s: the first load failed; what changes is read from now on", self.path)
            finally:
                self.shown.set()
            if interval <= 0:
                return
            self._follow(interval)
            while True:
                try:
                    self._step(interval)
                except Exception:
                    logger.exception("%s: reading what changed failed; the next turn tries again", self.path)
                    time.sleep(interval)

        self._thread = threading.Thread(target=loop, name="mxboard loader", daemon=True)
        self._thread.start()

    def _follow(self, interval: float) -> None:
        """Choose how changes are found, and watch or plan every directory known."""
        # A local disk is polled only where the kernel will watch no more of it (its stats cost
        # microseconds, not a server's round trip).
        if self._local:
            self._budget = max(self._budget, LOCAL_BUDGET)
        self._runs_plan = Schedule(interval, self._budget * 2 / 3, CAP)
        self._dirs_plan = Schedule(interval, self._budget / 3, interval)
        if self._local:
            self._watcher = Watcher.open()
        now = time.monotonic()
        for path in list(self._dirs):
            self._attach(path, now)
        if self._watcher is not None:
            # What was made between the first pass and the watches (a local listing is cheap).
            self._list(self.path, whole=True)
            self._read_unread()

    def _step(self, interval: float) -> None:
        """One turn: a due check, or the changes the kernel said, or a wait for either."""
        if self._runs_plan is None or self._dirs_plan is None:
            return
        self._calls = 0
        now = time.monotonic()
        plan = self._dirs_plan
        key, wait = plan.next(now)
        if key is None:
            plan = self._runs_plan
            key, wait_runs = plan.next(now)
            wait = min(wait, wait_runs)
        if key is not None:
            self._check(str(key), plan)
        elif self._watcher is not None:
            # poll, not select: the descriptor may be above select's 1,024 in a busy server.
            waiting = select.poll()
            waiting.register(self._watcher.fileno(), select.POLLIN)
            if waiting.poll(min(wait, interval) * 1000):
                self._apply(self._watcher.read())
        else:
            time.sleep(min(wait, interval))
        self._read_unread()
        # What polling cost is paid from its budget (what the kernel's changes cost is not).
        if key is not None:
            plan.spend(self._calls, time.monotonic())

    # What is done with a directory: attached to the watcher or the plan, listed, forgotten.

    def _attach(self, path: str, now: float) -> None:
        """Watch `path` where the kernel can say its changes, else plan its checks."""
        if self._runs_plan is None:
            return
        if self._watcher is not None and is_local(path):
            try:
                if self._watcher.add(path):
                    return
            except WatchLimitError as exc:
                self._walker.say("%s: %s; the logdir is polled instead (at most %g calls a second)"
                                 % (path, exc.strerror, self._budget))
                self._watcher.close()
                self._watcher = None
                for known in self._dirs:
                    self._replan(known, now)
                return
        self._replan(path, now)

    def _replan(self, path: str, now: float) -> None:
        """Plan the checks of `path` in the plan of what it is now (a run or not), if not yet."""
        if self._runs_plan is None or self._dirs_plan is None:
            return
        directory = self._dirs.get(path)
        if directory is None:
            return
        plan, other = (self._runs_plan, self._dirs_plan) if directory.files else (self._dirs_plan, self._runs_plan)
        if path in other:
            other.remove(path)
        elif path not in plan and self._watcher is not None and path in self._watcher:
            return
        if path not in plan:
            plan.add(path, directory.changed_at, now)

    def _list(self, path: str, signature: Optional[Tuple[int, int, int]] = None, whole: bool = False,
              looked: Optional[_Looked] = None) -> bool:
        """List `path` again: new subdirectories found (and listed), those gone forgotten, its run
        made or dropped; `whole`: its known subdirectories listed again too; `looked`: its
        listing, where it was made already. Whether it changed."""
        directory = self._dirs[path]
        signature, listing, read = looked or self._look(path, directory.path_here, signature)
        self._whole.update(read)
        if listing is None:
            if path != self.path:
                self._forget(path)
                return True
            files, below = [], []
        else:
            files, below = listing.files, listing.below
        directory.signature = signature
        changed = files != directory.files or {sub for sub, _ in below} != directory.below
        for sub in directory.below - {sub for sub, _ in below}:
            self._forget(sub)
        directory.below = {sub for sub, _ in below}
        # Many directories to list, polled (behind a network filesystem): listed at once, each
        # waiting on the server, and the runs found read meanwhile, a batch at a time. A watched
        # one is watched before it is listed (else what is made in between would be missed), one
        # at a time.
        subs = [(sub, path_here) for sub, path_here in below if whole or sub not in self._dirs]
        looks = self._look_all(subs) if not self._local and len(subs) > _READERS else None
        looked_for = {sub for sub, _ in subs} if looks is not None else set()
        if len(subs) >= ahead.SPREAD_RUNS:
            self.shown.set()
        if self._local and not self._runs and len(subs) >= ahead.SPREAD_RUNS and self._scanner is None:
            # A first pass of this many runs likely reads enough to be scanned by a second process
            # (`_read_unread`): started by the launcher (ahead.py), or now (0.2-0.3 s) while they
            # are listed.
            self._scanner = ahead.taken(self.path) or ScanProcess()
        for sub, path_here in below:
            looked = next(looks) if looks is not None and sub in looked_for else None
            if sub not in self._dirs:
                self._dirs[sub] = _Directory(path_here)
                self._dirs[sub].changed_at = time.monotonic()
                self._attach(sub, time.monotonic())
                self._list(sub, whole=whole, looked=looked)
            elif whole:
                self._list(sub, whole=True, looked=looked)
            if looks is not None and len(self._unread) >= _BATCH_RUNS:
                self._read_unread(every=True)
        if looks is not None:
            looks.close()
        had_files, directory.files = bool(directory.files), files
        if had_files != bool(files):
            self._replan(path, time.monotonic())
        name = self._name(path)
        if files and name not in self._runs:
            self._runs[name] = Run(self._purge)
            self._publish()
        elif not files and name in self._runs:
            del self._runs[name]
            self._publish()
        if files and (changed or whole):
            self._unread.append(path)
        return changed

    def _forget(self, path: str) -> None:
        """Forget `path` and every directory below it, and their runs."""
        directory = self._dirs.pop(path, None)
        if directory is None:
            return
        for sub in directory.below:
            self._forget(sub)
        if self._watcher is not None:
            self._watcher.remove(path)
        self._unplan(path)
        if self._runs.pop(self._name(path), None) is not None:
            self._publish()

    def _look(self, path: str, path_here: Tuple[str, ...], signature: Optional[Signature] = None,
              new: bool = False) -> _Looked:
        """`path`'s signature, listing, and files read with it (where it is `new`, a run never
        read: `_read_whole`): the signature stated first where polling needs it (a change made
        between the two is seen at the next check)."""
        stated = signature is None and self._watcher is None
        self._calls += 1 + stated
        found, listing, whole = self._walker.look(path, path_here, stated, self._read_whole if new else None)
        return (signature if signature is not None else found), listing, whole

    def _look_all(self, subs: List[Tuple[str, Tuple[str, ...]]]) -> Generator[_Looked, None, None]:
        """`_look` of each of `subs` (paths and their path_here), in their order, several at once,
        the new ones' small event files read whole with them."""
        new = [sub not in self._dirs for sub, _ in subs]
        with concurrent.futures.ThreadPoolExecutor(_READERS, thread_name_prefix="mxboard lister") as pool:
            yield from pool.map(lambda sub, is_new: self._look(sub[0], sub[1], new=is_new), subs, new)

    def _read_whole(self, directory: Optional[int], name: str) -> Optional[Whole]:
        """A new run's event file `name` read whole (ingest.read_whole) as its directory (open as
        `directory`) is listed, while the bytes so held leave room; else None."""
        with self._whole_lock:
            if self._whole_bytes >= _WHOLE_BYTES:
                return None
        self._calls += 2
        whole = read_whole(directory, name)
        if whole is not None:
            with self._whole_lock:
                self._whole_bytes += len(whole.data)
        return whole

    def _given(self, files: Iterable[str]) -> Dict[str, bytes]:
        """The bytes of those of `files` read whole with their listing, no longer held here."""
        given = {file: whole.data for file in files for whole in [self._whole.pop(file, None)] if whole is not None}
        with self._whole_lock:
            self._whole_bytes -= sum(len(data) for data in given.values())
        return given

    def _name(self, path: str) -> str:
        """The run name of `path` (the logdir or a directory below it): its path from the logdir."""
        if path == self.path:
            return "."
        # The walk joins each name to its directory's path: a prefix (relpath costs 30 us).
        if path.startswith(self._prefix):
            return path[len(self._prefix):]
        return os.path.relpath(path, self.path)

    def _publish(self, now: bool = False) -> None:
        """`runs` replaced whole by a copy of the loader's (a request reads one dict or the other,
        never one being changed): `now`, or where the last copy is older than _PUBLISH_SECONDS
        (a first pass over 100,000 runs copies a few times, not once a run); else at the end of
        the turn (`_publish_stale`)."""
        self._stale = True
        if now or time.monotonic() - self._published_at >= _PUBLISH_SECONDS:
            self.runs = dict(self._runs)
            self._stale, self._published_at = False, time.monotonic()

    def _publish_stale(self) -> None:
        if self._stale:
            self._publish(now=True)

    def _publish_due(self) -> None:
        """`runs` copied where it is behind and its last copy older than _PUBLISH_SECONDS: a long
        first pass shows the runs it found as it reads them (their runs are read in place)."""
        if self._stale:
            self._publish()

    # Reading.

    def _read_unread(self, every: bool = False) -> None:
        """Read the runs found since the last time: where there are many, their files stated
        several at once (each stat waits on the filesystem) and read in batches, many runs' small
        files scanned together (run.read_runs)."""
        paths, self._unread = list(dict.fromkeys(self._unread)), []
        if len(paths) > 1 and self._local:
            # On a local disk a thread would only wait for the others' turn; a second core scans
            # while this one takes, where there is much to read, or where its process was started
            # already (while the runs were listed, or ahead of the server's imports).
            stated = [(path, self._stat_run(path)) for path in paths]
            started, self._scanner = self._scanner, None
            spread = started is not None or _unread_bytes(stated) >= SPREAD_BYTES
            with (started or ScanProcess()) if spread else contextlib.nullcontext() as scanner:
                chunk = ahead.SPREAD_RUNS if spread else _BATCH_RUNS
                for i in range(0, len(stated), chunk):
                    try:
                        self._read_batch(stated[i:i + chunk], scanner=scanner)
                    except Exception as exc:  # noqa: BLE001
                        self._walker.say("%s...: cannot be read (%s); tried again at their next change"
                                         % (stated[i][0], exc))
                    # What the runs hold lives as long as they do: the cyclic collector need not
                    # walk it again at each collection (100,000 runs: a fifth of their first read).
                    gc.freeze()
                    self._publish_due()
        elif len(paths) > 1 and (every or len(paths) > _READERS):
            with concurrent.futures.ThreadPoolExecutor(_READERS, thread_name_prefix="mxboard reader") as pool, \
                    concurrent.futures.ThreadPoolExecutor(_READERS, thread_name_prefix="mxboard fetch") as fetch:
                stated = list(zip(paths, pool.map(self._stat_run, paths)))
                batches = [stated[i:i + _BATCH_RUNS] for i in range(0, len(stated), _BATCH_RUNS)]
                for batch, future in [(batch, pool.submit(self._read_batch, batch, fetch)) for batch in batches]:
                    self._said_if_failed(", ".join(path for path, _ in batch[:3]), future)
                    self._publish_due()
            gc.freeze()
        else:
            for path in paths:
                self._read(path)
        # What was read whole of runs no longer there.
        self._given(list(self._whole))
        self._publish_stale()

    def _read_batch(self, batch: List[Tuple[str, Optional[_Stated]]],
                    fetch: Optional[concurrent.futures.Executor] = None, scanner: Optional[ScanProcess] = None) -> bool:
        """Read the runs of `batch` whose files grew (`_stat_run`'s), together (`fetch`: threads
        that read their files ahead; `scanner`: a process that scans them)."""
        work = [(run, list(sizes), sizes) for _, stated in batch if stated is not None
                for run, sizes, grew in [stated] if grew]
        if work:
            read_runs(work, fetch, scanner, self._given([file for _, files, _ in work for file in files]))
        return bool(work)

    def _said_if_failed(self, path: str, future: "concurrent.futures.Future[bool]") -> None:
        exc = future.exception()
        if exc is not None:
            self._walker.say("%s: cannot be read (%s); tried again at its next change" % (path, exc))

    def _read(self, path: str) -> bool:
        """Read what `path`'s event files added: whether any did (its size moved)."""
        stated = self._stat_run(path)
        if stated is None or not stated[2]:
            return False
        run, sizes, _ = stated
        read_runs([(run, list(sizes), sizes)], given=self._given(list(sizes)))
        return True

    def _stat_run(self, path: str) -> Optional[_Stated]:
        """(`path`'s run, its event files' sizes, whether any grew since its last read); None
        where it is no run (any more)."""
        directory = self._dirs.get(path)
        run = self._runs.get(self._name(path))
        if directory is None or run is None:
            return None
        sizes: Dict[str, int] = {}
        newest = None
        for name in directory.files:
            file = os.path.join(path, name)
            whole = self._whole.get(file)
            if whole is not None:
                sizes[file] = len(whole.data)
                newest = max(newest or whole.mtime, whole.mtime)
                continue
            self._calls += 1
            try:
                found = os.stat(file)
            except OSError:
                continue
            # A FIFO or a device where an event file was would block a reader for ever.
            if stat.S_ISREG(found.st_mode):
                sizes[file] = found.st_size
                newest = max(newest or found.st_mtime, found.st_mtime)
        grew = [file for file, size in sizes.items()
                if file not in run.files or (run.files[file].size != size and not run.files[file].ended)]
        if newest is not None:
            # The newest write's age, on the loader's clock (a server's clock ahead counts as now).
            directory.changed_at = time.monotonic() - max(0.0, time.time() - newest)
        # Its open and its read, at least (paid already for a file read whole).
        self._calls += 2 * sum(file not in self._whole for file in grew)
        return run, sizes, bool(grew)

    # Polling.

    def _check(self, path: str, plan: Schedule) -> None:
        """Poll `path`: list it again where it changed, read its files where they grew."""
        now = time.monotonic()
        changed = False
        try:
            changed = self._check_directory(path)
        except Exception as exc:  # noqa: BLE001
            self._walker.say("%s: cannot be checked (%s); tried again at its next turn" % (path, exc))
        # Its calls are paid at the turn's end, with those of the runs it found.
        if path in plan:
            plan.checked(path, changed, 0, now)

    def _check_directory(self, path: str) -> bool:
        directory = self._dirs.get(path)
        if directory is None:
            self._unplan(path)
            return False
        self._calls += 1
        try:
            found = os.stat(path)
        except OSError:
            found = None
        if found is None or not stat.S_ISDIR(found.st_mode):
            if path == self.path:
                changed = bool(directory.files or directory.below)
                for sub in list(directory.below):
                    self._forget(sub)
                directory.files, directory.below, directory.signature = [], set(), None
                self._runs.pop(".", None)
                self._publish()
                return changed
            self._forget(path)
            return True
        signature = (found.st_ino, found.st_mtime_ns, found.st_ctime_ns)
        changed = False
        if signature != directory.signature or time.time() - found.st_mtime < _RACY_SECONDS:
            changed = self._list(path, signature)
        if directory.files and path in self._dirs:
            changed = self._read(path) or changed
        if path in self._unread:
            self._unread.remove(path)
        return changed

    def _unplan(self, path: str) -> None:
        for plan in (self._runs_plan, self._dirs_plan):
            if plan is not None:
                plan.remove(path)

    # Watching.

    def _apply(self, changes: List[Change]) -> None:
        """Act on what the kernel said: read the runs written, list again the directories whose
        entries changed, or everything where events were lost."""
        to_list: Dict[str, None] = {}
        to_read: Dict[str, None] = {}
        for change in changes:
            if change.kind == "overflow":
                self._walker.say("%s: the kernel's queue of changes overflowed; the logdir is listed again whole"
                                 % self.path)
                self.reload()
                return
            if change.directory not in self._dirs:
                continue
            if change.kind == "gone" and change.directory == self.path:
                # The logdir itself: polled until it is made again.
                self._attach(self.path, time.monotonic())
            if change.kind == "gone":
                to_list[os.path.dirname(change.directory) if change.directory != self.path else self.path] = None
            elif change.kind == "entries" or (is_event_file(change.name)
                                              and change.name not in self._dirs[change.directory].files):
                # A file, a directory or a link made, moved or removed (a local listing is cheap).
                to_list[change.directory] = None
            elif is_event_file(change.name):
                to_read[change.directory] = None
        for path in to_list:
            if path in self._dirs:
                self._list(path)
        for path in to_read:
            if path in self._dirs and path not in self._unread:
                try:
                    self._read(path)
                except Exception as exc:  # noqa: BLE001
                    self._walker.say("%s: cannot be read (%s); tried again at its next change" % (path, exc))


def _unread_bytes(stated: List[Tuple[str, Optional[_Stated]]]) -> int:
    """The bytes that the runs' small files added since their last read (those scanned together,
    ingest.SMALL), as `_stat_run` found them."""
    total = 0
    for _, found in stated:
        if found is not None and found[2]:
            run, sizes, _ = found
            for path, size in sizes.items():
                file = run.files.get(path)
                added = size - file.offset if file is not None else size
                if 0 < added <= SMALL:
                    total += added
    return total
