"""The mirror's passes (see the package's docstring): `Mirror(url, directory, ...)`, then
`start()` (a thread of passes, paced), or `sync()` (one pass)."""
import logging
import posixpath
import threading
import time
from typing import Any, Dict, Iterator, List, Literal, Optional, Sequence, Set, Tuple, Union

from mxboard._format.events import whole_records
from mxboard._format.names import local_names
from mxboard._format.sizes import readable
from mxboard.storage.remote.profiles import profile_of

from .directory import STAGING, ChangedError, CutShortError, Directory, remove
from .manifest import LOCK, MANIFEST, Entry, Manifest
from .plan import Job, Piece, extends, is_event_file, plan
from .stores import open_reader

__all__ = ["Mirror", "MAX_RECORD_BYTES"]

log = logging.getLogger("tensorboard_bundle")

# The share of a core that the passes may take.
MAX_CPU_SHARE = 0.02
# Seconds between passes at most, however costly their listings are.
MAX_INTERVAL = 60
# The manifest is written at most this often (and at stop).
SAVE_SECS = 10
# The bytes fetched in one batch of concurrent requests at most (for memory).
BATCH_BYTES = 64 << 20
# A record claiming more ends its file's copy.
MAX_RECORD_BYTES = 1 << 30
# The longest wait before a file that failed locally is tried again.
RETRY_SECS = 300
# The bytes of a copy's end read again where its object grew: is it the same object, grown?
VERIFY_BYTES = 64
# The directory's own names: never a run's.
OWN = (MANIFEST, LOCK, STAGING)


class Mirror:
    """The mirror of `url` (an fsspec URL) in the local `directory`, never below the relative
    paths `exclude`."""

    def __init__(self, url: str, directory: str, max_bytes: int, interval: float = 2.0,
                 exclude: Sequence[str] = (), max_record_bytes: int = MAX_RECORD_BYTES) -> None:
        self.url, self.directory, self.max_bytes, self.interval = url, directory, max_bytes, interval
        self.max_record_bytes = max_record_bytes
        self._exclude = tuple(e.strip("/") + "/" for e in exclude)
        self._store = open_reader(url)
        self._root: str = self._store.root
        self._dir = Directory(directory)
        # The directory is this server's from now on.
        self._manifest = Manifest(self._dir, url)
        # It maps a name in the store -> what is copied.
        self._files: Dict[str, Entry] = self._manifest.files
        # Bytes on disk, counted at the start of a pass that fetches, plus what it took.
        self._used = 0
        # When max_bytes is reached, it is "to say" at the pass's end, then True.
        self._full: Union[bool, str] = False
        # Excluded paths and ended files, each said once.
        self._said: Set[str] = set()
        # It maps a name -> (local failures in a row, time of the next try).
        self._retry: Dict[str, Tuple[int, float]] = {}
        self._failing_since: Optional[float] = None
        # The listing of the last pass, if it copied all it wanted.
        self._settled: Optional[Dict[str, Any]] = None
        # The CPU seconds the last listing took.
        self._poll_cpu = 0.0
        # What each key of the store is to the plan (plan.plan's memo), and the local names of
        # the files of the last plan (their names, and {name: local path}).
        self._placed: Dict[str, Tuple[str, str]] = {}
        self._names: Optional[Tuple[Set[str], Dict[str, str]]] = None
        self._unsaved, self._saved_at = False, 0.0
        self._stop = threading.Event()
        # Set when the first pass ended (done or failed).
        self.first_pass = threading.Event()
        self._thread: Optional[threading.Thread] = None
        for name in self._manifest.stale():
            self._drop(name)
        self._save()

    @property
    def bytes_read(self) -> int:
        return self._manifest.bytes_read

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="mirror %s" % self.url, daemon=True)
        self._thread.start()

    def stop(self, wait: float = 30) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(wait)
        if self._thread is None or not self._thread.is_alive():
            self._manifest.release()

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.sync()
            # A store's errors vary by library: all are an outage.
            except Exception as exc:  # noqa: BLE001
                if self._failing_since is None:
                    self._failing_since = time.time()
                    log.warning("mirror: %s cannot be listed (%s: %s); serving what was mirrored, retrying",
                                self.url, type(exc).__name__, exc)
            else:
                if self._failing_since is not None:
                    log.warning("mirror: %s answers again after %.0f s", self.url, time.time() - self._failing_since)
                    self._failing_since = None
            self.first_pass.set()
            # A pass starts every `interval` seconds, from one start to the next (what was written
            # just after a listing waits for the next, not for the rest of this pass as well), or
            # less often where listing costs more than MAX_CPU_SHARE of a core; a pass longer than
            # that is followed by a quarter of the interval at least (the store is not listed
            # back to back).
            period = min(MAX_INTERVAL, max(self.interval, self._poll_cpu / MAX_CPU_SHARE))
            self._stop.wait(max(self.interval / 4, started + period - time.monotonic()))
        if self._unsaved:
            self._save()

    def _cpu(self) -> float:
        """CPU seconds of this thread (S3Reader's reads run in it), S3Reader's listing threads and
        fsspec's I/O thread (other stores' requests): a pass's own cost, whatever the server's
        other threads do."""
        import fsspec.asyn

        spent = time.thread_time() + getattr(self._store, "cpu_elsewhere", 0.0)
        io_thread = fsspec.asyn.iothread[0]
        if io_thread is not None and io_thread.ident is not None:
            try:
                spent += time.clock_gettime(time.pthread_getcpuclockid(io_thread.ident))
            # Not on this platform, or the thread is gone.
            except (AttributeError, OSError):
                pass
        return spent

    def sync(self) -> None:
        """One pass: list the store, copy what is new, remove what it no longer holds. Raises
        when the store cannot be listed (nothing changed then)."""
        cpu = self._cpu()
        listing: Dict[str, Any] = self._store.listing()
        settled_before = listing == self._settled
        # What watching costs, whether or not anything is new.
        self._poll_cpu = self._cpu() - cpu
        now = time.monotonic()
        if settled_before and not any(at <= now for _, at in self._retry.values()):
            # Nothing changed since a pass that left nothing to do.
            return
        self._dir.new_pass()
        wanted = self._plan(listing)
        # The local names of the files, made again only where the files are others.
        if self._names is None or self._names[0] != wanted.keys():
            self._names = (set(wanted), local_names(wanted))
        places = self._names[1]
        gone = [name for name in self._files if name not in wanted]
        for name in gone:
            self._drop(name)
        jobs, waiting = [], False
        for name in sorted(wanted, key=lambda n: (not is_event_file(n), n)):
            job = self._job(name, wanted[name], places[name])
            waiting = waiting or job is False
            if job:
                jobs.append(job)
        settled = self._run(jobs) and not waiting
        self._check_open_files()
        self._settled = listing if settled else None
        self._unsaved = self._unsaved or bool(jobs or gone)
        if self._unsaved and time.monotonic() - self._saved_at > SAVE_SECS:
            self._save()

    def _check_open_files(self) -> None:
        """The data server keeps every event file open: say once where it cannot open them all."""
        try:
            import resource

            limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        except (ImportError, OSError):
            return
        events = sum(1 for name in self._files if is_event_file(name))
        if limit != resource.RLIM_INFINITY and events + 64 > limit and "open files" not in self._said:
            self._said.add("open files")
            log.warning("mirror: %s holds %d event files, and a process may open %d files: the data server keeps "
                        "each open, and cannot serve them all; raise the limit (ulimit -n)", self.url, events, limit)

    def _plan(self, listing: Dict[str, Any]) -> Dict[str, List[Piece]]:
        """plan.plan's files of the listing; what it leaves out said (an excluded path once)."""
        found = plan(listing, self._root, self._exclude, OWN, profile_of(self.url).versions, self._placed)
        for key in found.refused:
            log.warning("mirror: %r is not a path below the logdir; skipped", key)
        for excluded in sorted(found.excluded - self._said):
            self._said.add(excluded)
            log.warning("mirror: what %s holds at %s is not mirrored: another logdir of the --logdir_spec is "
                        "served there", self.url, excluded.rstrip("/"))
        return found.wanted

    def _job(self, name: str, pieces: List[Piece], local: str) -> Union[Job, None, Literal[False]]:
        """The Job of what `name` lacks; None if nothing, False if it waits to be tried again."""
        retry = self._retry.get(name)
        if retry and time.monotonic() < retry[1]:
            return False
        entry = self._files.get(name)
        event = is_event_file(name)
        if entry and entry.base == local:
            if entry.pieces == pieces and entry.done:
                return None
            if event and extends(entry.pieces, pieces):
                if entry.ended:
                    entry.pieces = pieces
                    return None
                try:
                    with open(self._dir.place(entry.local, create=False), "rb") as f:
                        f.seek(max(0, entry.copied - VERIFY_BYTES))
                        verify = f.read(VERIFY_BYTES)
                except OSError:
                    # The object is gone: append says so.
                    verify = b""
                return Job(name, pieces, entry.local, entry.copied, verify)
        if not event:
            return Job(name, pieces, local, 0)
        # A new name: nothing rewritten under the loader.
        generation = entry.generation + 1 if entry else 0
        path = local if not generation else "%s.~%d" % (local, generation)
        try:
            if entry:
                self._dir.unlink(entry.local)
            # What an earlier server wrote and never recorded.
            self._dir.unlink(path)
        except OSError as exc:
            return self._failed(Job(name, pieces, path, 0), pieces[0][0], exc)
        self._files[name] = Entry(local, path, generation, pieces, 0, False)
        self._unsaved = True
        return Job(name, pieces, path, 0)

    def _run(self, jobs: List[Job]) -> bool:
        """Fetch the jobs' bytes in batches of concurrent range reads, and copy each job's in
        order. Whether every job was done."""
        if not jobs:
            return True
        self._used = sum(entry.copied for entry in self._files.values())
        fetches = [fetch for job in jobs for fetch in job.ranges()]
        for batch in self._batches(fetches):
            # The server is exiting (and may remove the directory).
            if self._stop.is_set():
                return False
            results = self._store.read_ranges([f[1] for f in batch], [f[2] for f in batch], [f[3] for f in batch])
            for (job, key, start, end), data in zip(batch, results):
                if job.failed or job.ended:
                    continue
                # A read refused (403: archived, a key it may not use), gone or late is said once and tried again
                # backing off; the run shows the rest.
                if isinstance(data, BaseException):
                    self._failed(job, key, data)
                    continue
                if len(data) != end - start:
                    # Changed under the read: copied anew at the next pass.
                    job.failed = True
                    continue
                self._manifest.bytes_read += len(data)
                try:
                    self._take(job, key, data)
                # Copied anew, under a new name, at the next pass.
                except ChangedError:
                    job.failed = True
                    self._files[job.name].pieces, self._files[job.name].done = [], False
                except OSError as exc:
                    self._failed(job, key, exc)
        done = True
        for job in jobs:
            try:
                if not job.failed:
                    self._finish(job)
            except OSError as exc:
                self._failed(job, job.pieces[0][0], exc)
            if job.failed and not is_event_file(job.name):
                remove(self._dir.staging(job.name))
            done = done and not job.failed
        self._dir.end_staging()
        if self._full == "to say":
            self._full = True
            on_disk = sum(entry.copied for entry in self._files.values())
            log.warning("mirror: %s holds %s, the most it may is %s (--mirror_max_bytes): newer data of %s is not "
                        "fetched", self.directory, readable(on_disk), readable(self.max_bytes), self.url)
        return done

    def _batches(self, fetches: List[Tuple[Job, str, int, int]]) -> Iterator[List[Tuple[Job, str, int, int]]]:
        batch: List[Tuple[Job, str, int, int]] = []
        size = 0
        for fetch in fetches:
            job, _, start, end = fetch
            if job.failed or not self._room_for(end - start):
                job.failed = True
                continue
            if batch and size + end - start > BATCH_BYTES:
                yield batch
                batch, size = [], 0
            batch.append(fetch)
            size += end - start
        if batch:
            yield batch

    def _room_for(self, size: int) -> bool:
        if self._used + size <= self.max_bytes:
            self._used += size
            return True
        self._full = self._full or "to say"
        return False

    def _take(self, job: Job, key: str, data: bytes) -> None:
        """Copy a job's next bytes: an event file's whole records (appended), another file's
        bytes (to its staging file)."""
        if not is_event_file(job.name):
            self._dir.append(self._dir.staging(job.name), job.copied, data)
            job.copied += len(data)
            return
        if job.verify:
            n = min(len(job.verify), len(data))
            if data[:n] != job.verify[:n]:
                raise ChangedError(key)
            del job.verify[:n]
            data = data[n:]
        job.carry += data
        end, problem = whole_records(job.carry, self.max_record_bytes)
        if end:
            records = bytes(job.carry[:end])
            try:
                # A short write keeps its whole records (the loader may have read them).
                self._dir.append(self._dir.place(job.local), job.copied, records,
                                 lambda written: whole_records(records, self.max_record_bytes, room=written)[0])
            except CutShortError as exc:
                self._copied(job, exc.kept)
                raise
            self._copied(job, end)
        if problem:
            job.ended = "%s in %s" % (problem, key)
            log.warning("mirror: %s is served up to its last good record: %s (--mirror_max_record_bytes)",
                        posixpath.join(self.url, job.name), job.ended)

    def _copied(self, job: Job, size: int) -> None:
        """The first `size` bytes of an event file's job's whole records are in its file."""
        job.copied += size
        self._files[job.name].copied = job.copied
        del job.carry[:size]

    def _finish(self, job: Job) -> None:
        if is_event_file(job.name):
            # An empty object: the file is there all the same.
            if not job.copied:
                self._dir.append(self._dir.place(job.local), 0, b"")
            entry = self._files[job.name]
            entry.pieces, entry.done, entry.ended = job.pieces, True, job.ended
        else:
            old = self._files.get(job.name)
            self._dir.put_in_place(self._dir.staging(job.name), job.local)
            if old and old.local != job.local:
                self._dir.unlink(old.local)
            self._files[job.name] = Entry(job.local, job.local, 0, job.pieces, job.copied, True)
        if self._retry.pop(job.name, None):
            log.warning("mirror: %s is copied now", posixpath.join(self.url, job.name))

    def _failed(self, job: Job, key: str, exc: BaseException) -> Literal[False]:
        """An error on one file (local, or the store's refusal to return it): logged, that file
        tried again later (backing off), the others going on."""
        job.failed = True
        count = self._retry.get(job.name, (0, 0.0))[0] + 1
        wait = min(RETRY_SECS, self.interval * 2 ** count)
        self._retry[job.name] = (count, time.monotonic() + wait)
        if count == 1 or wait == RETRY_SECS:
            log.warning("mirror: %s is not copied (%s: %s); the rest goes on, and it is tried again in %.0f s",
                        key, type(exc).__name__, exc, wait)
        return False

    def _drop(self, name: str) -> None:
        entry = self._files.pop(name)
        self._retry.pop(name, None)
        self._unsaved = True
        try:
            self._dir.unlink(entry.local)
        except OSError as exc:
            log.warning("mirror: %s is not removed (%s: %s)", entry.local, type(exc).__name__, exc)

    def _save(self) -> None:
        self._unsaved, self._saved_at = False, time.monotonic()
        self._manifest.save()
