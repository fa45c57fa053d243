"""An incremental local copy of a logdir in an object store, which the fast (Rust) loader serves:
that loader reads local paths only, and the Python one reads a store ten times slower.

- Every pass lists the store once and fetches only what is new: new objects, and the new bytes
  of the objects that grew (range reads from where the copy ends), many requests at once
  (stores.py: on S3, presigned requests, a quarter of s3fs's CPU). Event files come first.
- Names are data: a name in the store has one local path (names.local_names), the name itself
  wherever the disk can hold it, so that runs are served as the store names them.
- mxboard's objects of one event file (`<file>`, `<file>.part0001`, ...: storage/names.py) are
  stitched into one local file, in name order; other writers' event files are copied as they
  are; other files (the projector's) are fetched whole and replace theirs at once.
- An event file only grows under the loader. Where its last object is larger, the copy's last
  VERIFY_BYTES are read again with the new bytes: another object of the same name differs
  there (its records' times and checksums), and is a changed file. Records are copied whole, their headers checked as
  they pass (events.whole_records): a record still incomplete waits for its rest, and a header
  that no record can follow (a length failing its checksum, or over `max_record_bytes`) ends
  that file's copy, said once: no file in the store can make the loader allocate what it
  claims. An event file changed other than by growing is copied anew under a new name
  (`<name>.~<n>`, which sorts after it: its steps replace the old ones as a restarted run's do)
  and the old one is removed, so no file the loader has open is ever rewritten.
- One failure is one file's: a local error (a full disk, a name the OS refuses) leaves the file
  as it was, is logged with the object's key, and that file is tried again later (backing off
  to RETRY_SECS); a read that failed is tried again at the next pass. Only a listing that fails
  is an outage: the mirror then keeps what it has, which the server goes on serving, and catches
  up at the first pass that succeeds (the outage and its end are logged).
- Disk: at most `max_bytes`; what would pass it is not fetched (said once, and the mirror goes
  on with what fits).
- CPU: a pass runs every `interval` seconds, or less often when listing the store is costly:
  watching an idle store costs at most MAX_CPU_SHARE of a core. A listing like the last one is
  not parsed again, and a pass over a listing that was all copied does nothing more.
- The directory holds MANIFEST (what was copied, and the bytes read from the store), which marks
  it as a mirror, and LOCK, an advisory lock held by the one server using it (a second one is
  refused). A directory named by the user is reused only when empty or a mirror already; then
  each file is checked against the manifest (bytes written after its last save are cut and
  fetched again, a file lost or shortened is fetched anew), and everything the store no longer
  holds is removed. Nothing is written, replaced or removed through a symlink (the manifest
  goes to a new file of its own, O_EXCL, then renamed; a link or a file planted at the staging
  directory's name is removed; files are opened O_NOFOLLOW, directories checked with lstat),
  nor below an `exclude`d path (where a --logdir_spec serves another logdir: logdirs.py). A
  directory of another user is refused.
- An object the store lists but will not return (403: archived, a key the server may not use;
  a timeout) is said once, naming it and why, and tried again backing off, as a local error on
  one file is; the rest of its run and the other runs are served.
"""
import errno
import json
import logging
import os
import posixpath
import shutil
import stat
import tempfile
import threading
import time
import weakref
from typing import Any, Dict, List, Optional, Set, Tuple

from mxboard.events import whole_records
from mxboard.storage.names import local_names, stitched_name
from mxboard.storage.sizes import readable
from tensorboard_bundle.stores import open_reader

__all__ = ["Mirror", "MANIFEST", "LOCK"]

log = logging.getLogger("tensorboard_bundle")

MANIFEST = ".mxboard-mirror.json"
LOCK = ".mxboard-mirror.lock"
STAGING = ".mxboard-mirror-new"  # other files being fetched whole, before they replace theirs
MAX_CPU_SHARE = 0.02  # of a core, for the passes
MAX_INTERVAL = 60  # seconds between passes at most, however costly their listings are
SAVE_SECS = 10  # the manifest is written at most this often (and at stop)
BATCH_BYTES = 64 << 20  # fetched in one batch of concurrent requests at most (memory)
RANGE_BYTES = 16 << 20  # one request reads at most this much
MAX_RECORD_BYTES = 1 << 30  # a record claiming more ends its file's copy
RETRY_SECS = 300  # the longest wait before a file that failed locally is tried again
VERIFY_BYTES = 64  # of a copy's end, read again where its object grew: the same object, grown?
# what tells an object's versions apart, by store: s3fs's ETag, gcsfs' and adlfs' etag, then times
_TAGS = ("ETag", "etag", "generation", "LastModified", "last_modified", "mtime", "created")
_OWN = (MANIFEST, LOCK, STAGING)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def is_event_file(name: str) -> bool:
    return "tfevents" in posixpath.basename(name)


class _ChangedError(Exception):
    """A local file is not as the mirror left it (deleted or changed by someone): copied anew."""


class _Job:
    """What one file lacks: its bytes from `start` (stitched over its objects) to the end; and
    before them, where the file grew, the bytes `verify` (the copy's last), which the store
    must still hold (an object of the same name and a larger size may be another one)."""

    def __init__(self, name: str, pieces: List[List[Any]], local: str, start: int, verify: bytes = b"") -> None:
        self.name, self.pieces, self.local, self.start = name, pieces, local, start - len(verify)
        self.verify = bytearray(verify)
        self.copied = start  # bytes in the local (or staging) file
        self.carry = bytearray()  # an event file's record still incomplete
        self.failed = False
        self.ended: Optional[str] = None  # why an event file's copy ended

    def ranges(self) -> List[Tuple["_Job", str, int, int]]:
        found, offset = [], 0
        for key, size, _ in self.pieces:
            begin = max(offset, self.start)
            while begin < offset + size:
                end = min(offset + size, begin + RANGE_BYTES)
                found.append((self, key, begin - offset, end - offset))
                begin = end
            offset += size
        return found


class Mirror:
    """The mirror of `url` (an fsspec URL) in the local `directory`, never below the relative
    paths `exclude`."""

    def __init__(self, url, directory, max_bytes, interval=2.0, exclude=(), max_record_bytes=MAX_RECORD_BYTES):
        self.url, self.directory, self.max_bytes, self.interval = url, directory, max_bytes, interval
        self.max_record_bytes = max_record_bytes
        self._exclude = tuple(e.strip("/") + "/" for e in exclude)
        self._store = open_reader(url)
        self._root = self._store.root
        self._dirs: Set[str] = set()  # directories of the mirror checked this pass
        self._manifest = self._claim(directory)
        self._files: Dict[str, Dict[str, Any]] = self._manifest["files"]  # store name -> what is copied
        self.bytes_read = self._manifest.setdefault("bytes_read", 0)
        self._used = 0  # bytes on disk, counted at the start of a pass that fetches, plus what it took
        self._full: Any = False  # max_bytes was reached: "to say" at the pass's end, then True
        self._said: Set[str] = set()  # excluded paths and ended files, said once
        self._retry: Dict[str, List[float]] = {}  # name -> [local failures in a row, time of the next try]
        self._failing_since = None
        self._settled = None  # the listing of the last pass, if it copied all it wanted
        self._poll_cpu = 0.0  # CPU seconds the last listing took
        self._unsaved, self._saved_at = False, 0.0
        self._stop = threading.Event()
        self.first_pass = threading.Event()  # set when the first pass ended (done or failed)
        self._thread = None
        self._verify()
        self._save()  # the directory is a mirror of url's from now on

    def _claim(self, directory):
        os.makedirs(directory, exist_ok=True)
        owner = os.stat(directory).st_uid
        if hasattr(os, "getuid") and owner != os.getuid():
            raise ValueError("%s belongs to another user (uid %d), who could make this server write where they "
                             "choose: name a directory of your own" % (directory, owner))
        path = os.path.join(directory, MANIFEST)
        manifest = None
        if os.path.lexists(path):
            with os.fdopen(os.open(path, os.O_RDONLY | _NOFOLLOW)) as f:  # a symlink there: ELOOP, never read
                manifest = json.load(f)
            if manifest.get("url") != self.url:
                raise ValueError("%s mirrors %s, not %s: name another directory" % (directory, manifest.get("url"),
                                                                                    self.url))
        elif set(os.listdir(directory)) - {LOCK}:
            raise ValueError("%s is not empty and not a mirror (no %s): name an empty directory"
                             % (directory, MANIFEST))
        fd = _lock(os.path.join(directory, LOCK))
        self._release = weakref.finalize(self, os.close, fd)  # the lock is held until stop(), or the mirror is gone
        manifest = manifest or {"url": self.url}
        if not isinstance(manifest.get("files"), dict) or any(
                not isinstance(entry, dict) for entry in manifest["files"].values()):  # an older mirror's
            for name in manifest.get("files") or ():
                self._unlink(name)
            manifest["files"] = {}
        return manifest

    def _verify(self):
        """A reused directory's files against the manifest: what was written after its last save
        is cut (an event file then continues from there), a file lost or shortened is dropped
        (fetched anew)."""
        shutil.rmtree(os.path.join(self.directory, STAGING), ignore_errors=True)
        for name, entry in list(self._files.items()):
            try:
                path = self._place(entry["local"], create=False)
                size = os.lstat(path).st_size if stat.S_ISREG(os.lstat(path).st_mode) else -1
                if size > entry["copied"] and is_event_file(name):
                    with open(path, "r+b") as f:
                        f.truncate(entry["copied"])
                    size = entry["copied"]
            except OSError:
                size = -1
            if size != entry["copied"]:
                self._drop(name)

    def start(self):
        self._thread = threading.Thread(target=self._loop, name="mirror %s" % self.url, daemon=True)
        self._thread.start()

    def stop(self, wait=30):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(wait)
        if self._thread is None or not self._thread.is_alive():
            self._release()

    def _loop(self):
        while not self._stop.is_set():
            try:
                self.sync()
            except Exception as exc:  # noqa: BLE001 - a store's errors vary by library: all are an outage
                if self._failing_since is None:
                    self._failing_since = time.time()
                    log.warning("mirror: %s cannot be listed (%s: %s); serving what was mirrored, retrying",
                                self.url, type(exc).__name__, exc)
            else:
                if self._failing_since is not None:
                    log.warning("mirror: %s answers again after %.0f s", self.url, time.time() - self._failing_since)
                    self._failing_since = None
            self.first_pass.set()
            self._stop.wait(min(MAX_INTERVAL, max(self.interval, self._poll_cpu / MAX_CPU_SHARE)))
        if self._unsaved:
            self._save()

    @staticmethod
    def _cpu():
        """CPU seconds of this thread (S3Reader's requests run in it) and fsspec's I/O thread (other
        stores' requests): a pass's own cost, whatever the server's other threads do."""
        import fsspec.asyn

        spent = time.thread_time()
        io_thread = fsspec.asyn.iothread[0]
        if io_thread is not None and io_thread.ident is not None:
            try:
                spent += time.clock_gettime(time.pthread_getcpuclockid(io_thread.ident))
            except (AttributeError, OSError):  # not on this platform, or the thread is gone
                pass
        return spent

    def sync(self):
        """One pass: list the store, copy what is new, remove what it no longer holds. Raises
        when the store cannot be listed (nothing changed then)."""
        cpu = self._cpu()
        listing = self._store.listing()
        settled_before = listing == self._settled
        self._poll_cpu = self._cpu() - cpu  # what watching costs, whether or not anything is new
        now = time.monotonic()
        if settled_before and not any(at <= now for _, at in self._retry.values()):
            return  # nothing changed since a pass that left nothing to do
        self._dirs = set()
        wanted = self._plan(listing)
        places = local_names(wanted)
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

    def _check_open_files(self):
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

    def _plan(self, listing):
        """{name: [[key, bytes, tag], ...] in reading order} of what the store holds."""
        wanted: Dict[str, List[List[Any]]] = {}
        for key in sorted(listing):
            info = listing[key]
            if info.get("type") != "file" or (self._root and not key.startswith(self._root + "/")):
                continue
            name = key[len(self._root) + 1:] if self._root else key
            parts = name.split("/")
            if not name or any(p in ("", ".", "..") for p in parts) or parts[0] in _OWN:
                log.warning("mirror: %r is not a path below the logdir; skipped", key)
                continue
            excluded = next((e for e in self._exclude if (name + "/").startswith(e)), None)
            if excluded:
                if excluded not in self._said:
                    self._said.add(excluded)
                    log.warning("mirror: what %s holds at %s is not mirrored: another logdir of the --logdir_spec is "
                                "served there", self.url, excluded.rstrip("/"))
                continue
            if is_event_file(name):
                name = stitched_name(name)
            tag = str(next((info[k] for k in _TAGS if info.get(k)), ""))
            wanted.setdefault(name, []).append([key, int(info["size"]), tag])
        return {name: pieces for name, pieces in wanted.items() if pieces[0][0] == self._key(name)}

    def _key(self, name):
        return posixpath.join(self._root, name) if self._root else name

    def _job(self, name, pieces, local):
        """The _Job of what `name` lacks; None if nothing, False if it waits to be tried again."""
        retry = self._retry.get(name)
        if retry and time.monotonic() < retry[1]:
            return False
        entry = self._files.get(name)
        event = is_event_file(name)
        if entry and entry["base"] == local:
            if entry["pieces"] == pieces and entry["done"]:
                return None
            if event and _extends(entry["pieces"], pieces):
                if entry["ended"]:
                    entry["pieces"] = pieces
                    return None
                try:
                    with open(self._place(entry["local"], create=False), "rb") as f:
                        f.seek(max(0, entry["copied"] - VERIFY_BYTES))
                        verify = f.read(VERIFY_BYTES)
                except OSError:
                    verify = b""  # gone: _append says so
                return _Job(name, pieces, entry["local"], entry["copied"], verify)
        if not event:
            return _Job(name, pieces, local, 0)
        generation = entry["generation"] + 1 if entry else 0  # a new name: nothing rewritten under the loader
        path = local if not generation else "%s.~%d" % (local, generation)
        try:
            if entry:
                self._unlink(entry["local"])
            self._unlink(path)  # what an earlier server wrote and never recorded
        except OSError as exc:
            return self._failed(_Job(name, pieces, path, 0), pieces[0][0], exc)
        self._files[name] = {"base": local, "local": path, "generation": generation, "pieces": pieces, "copied": 0,
                             "done": False, "ended": None}
        self._unsaved = True
        return _Job(name, pieces, path, 0)

    def _run(self, jobs):
        """Fetch the jobs' bytes in batches of concurrent range reads, and copy each job's in
        order. Whether every job was done."""
        if not jobs:
            return True
        self._used = sum(entry["copied"] for entry in self._files.values())
        fetches = [fetch for job in jobs for fetch in job.ranges()]
        for batch in self._batches(fetches):
            if self._stop.is_set():  # the server is exiting (and may remove the directory)
                return False
            results = self._store.read_ranges([f[1] for f in batch], [f[2] for f in batch], [f[3] for f in batch])
            for (job, key, start, end), data in zip(batch, results):
                if job.failed or job.ended:
                    continue
                if isinstance(data, BaseException):  # refused (403: archived, a key it may not use), gone, late
                    self._failed(job, key, data)  # said once, tried again backing off, the run shows the rest
                    continue
                if len(data) != end - start:
                    job.failed = True  # changed under the read: copied anew at the next pass
                    continue
                self.bytes_read += len(data)
                try:
                    self._take(job, key, data)
                except _ChangedError:  # copied anew, under a new name, at the next pass
                    job.failed = True
                    self._files[job.name].update(pieces=[], done=False)
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
                _remove(self._staging(job))
            done = done and not job.failed
        _remove(os.path.join(self.directory, STAGING), os.rmdir)  # where it is empty
        if self._full == "to say":
            self._full = True
            on_disk = sum(entry["copied"] for entry in self._files.values())
            log.warning("mirror: %s holds %s, the most it may is %s (--mirror_max_bytes): newer data of %s is not "
                        "fetched", self.directory, readable(on_disk), readable(self.max_bytes), self.url)
        return done

    def _batches(self, fetches):
        batch: List[Any] = []
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

    def _room_for(self, size):
        if self._used + size <= self.max_bytes:
            self._used += size
            return True
        self._full = self._full or "to say"
        return False

    def _take(self, job, key, data):
        """Copy a job's next bytes: an event file's whole records (appended), another file's
        bytes (to its staging file)."""
        if not is_event_file(job.name):
            self._append(self._staging(job), job.copied, data)
            job.copied += len(data)
            return
        if job.verify:
            n = min(len(job.verify), len(data))
            if data[:n] != job.verify[:n]:
                raise _ChangedError(key)
            del job.verify[:n]
            data = data[n:]
        job.carry += data
        end, problem = whole_records(job.carry, self.max_record_bytes)
        if end:
            self._append(self._place(job.local), job.copied, job.carry[:end])
            job.copied += end
            self._files[job.name]["copied"] = job.copied
            del job.carry[:end]
        if problem:
            job.ended = "%s in %s" % (problem, key)
            log.warning("mirror: %s is served up to its last good record: %s (--mirror_max_record_bytes)",
                        posixpath.join(self.url, job.name), job.ended)

    def _finish(self, job):
        if is_event_file(job.name):
            if not job.copied:  # an empty object: the file is there all the same
                self._append(self._place(job.local), 0, b"")
            self._files[job.name].update(pieces=job.pieces, done=True, ended=job.ended)
        else:
            staging = self._staging(job)
            if not os.path.lexists(staging):  # an empty object
                self._append(staging, 0, b"")
            if not stat.S_ISREG(os.lstat(staging).st_mode):  # planted since: never put in place
                raise OSError(errno.ELOOP, "not a file the mirror wrote (a symlink?)", staging)
            old = self._files.get(job.name)
            os.replace(staging, self._place(job.local))
            if old and old["local"] != job.local:
                self._unlink(old["local"])
            self._files[job.name] = {"base": job.local, "local": job.local, "generation": 0, "pieces": job.pieces,
                                     "copied": job.copied, "done": True, "ended": None}
        if self._retry.pop(job.name, None):
            log.warning("mirror: %s is copied now", posixpath.join(self.url, job.name))

    def _failed(self, job, key, exc):
        """An error on one file (local, or the store's refusal to return it): logged, that file
        tried again later (backing off), the others going on."""
        job.failed = True
        count = self._retry.get(job.name, [0, 0.0])[0] + 1
        wait = min(RETRY_SECS, self.interval * 2 ** count)
        self._retry[job.name] = [count, time.monotonic() + wait]
        if count == 1 or wait == RETRY_SECS:
            log.warning("mirror: %s is not copied (%s: %s); the rest goes on, and it is tried again in %.0f s",
                        key, type(exc).__name__, exc, wait)
        return False

    def _staging(self, job):
        """The file a non-event object is fetched into before it replaces its own: in the mirror's
        own staging directory (a symlink or a file planted at its name is removed, never
        followed)."""
        path = os.path.join(self.directory, STAGING)
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                os.unlink(path)  # removes a link itself, never what it points to
                raise FileNotFoundError(path)
        except FileNotFoundError:
            os.mkdir(path, 0o700)
        return os.path.join(path, "%x" % (hash(job.name) & 0xFFFFFFFFFFFF))

    def _append(self, path, offset, data):
        """Append `data` to the file `path` (never through a symlink), which must hold `offset`
        bytes (_ChangedError if not); on an error, the file is left as it was."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW, 0o644)
        try:
            if os.fstat(fd).st_size != offset:
                raise _ChangedError(path)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            except OSError:
                os.ftruncate(fd, offset)
                raise
        finally:
            os.close(fd)

    def _place(self, local, create=True):
        """The path of `local` (relative, `/` between components) in the mirror, its directories
        made where `create`; OSError where one of them is not a directory of the mirror (a
        symlink, which is never written through, or a file)."""
        parts = local.split("/")
        path = self.directory
        for part in parts[:-1]:
            path = os.path.join(path, part)
            if path in self._dirs:
                continue
            try:
                if not stat.S_ISDIR(os.lstat(path).st_mode):
                    raise OSError(errno.ENOTDIR, "not a directory of the mirror (a symlink or a file)", path)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(path)
            self._dirs.add(path)
        return os.path.join(path, parts[-1])

    def _unlink(self, local):
        """Remove the file `local`, and the directories it leaves empty."""
        try:
            os.unlink(self._place(local, create=False))
        except FileNotFoundError:
            return
        parts = local.split("/")[:-1]
        while parts:
            path = os.path.join(self.directory, *parts)
            try:
                os.rmdir(path)
            except OSError:
                return
            self._dirs.discard(path)
            parts.pop()

    def _drop(self, name):
        entry = self._files.pop(name)
        self._retry.pop(name, None)
        self._unsaved = True
        try:
            self._unlink(entry["local"])
        except OSError as exc:
            log.warning("mirror: %s is not removed (%s: %s)", entry["local"], type(exc).__name__, exc)

    def _save(self):
        """Write the manifest: to a new file of a name no one can have planted (O_EXCL, which
        never follows a symlink), then renamed over the old one (a rename replaces a link
        itself)."""
        self._unsaved, self._saved_at = False, time.monotonic()
        self._manifest["bytes_read"] = self.bytes_read
        fd, new = tempfile.mkstemp(prefix=MANIFEST + ".", suffix=".new", dir=self.directory)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self._manifest, f)
            os.replace(new, os.path.join(self.directory, MANIFEST))
        except BaseException:
            _remove(new)
            raise


def _remove(path, remove=os.remove):
    try:
        remove(path)
    except OSError:
        pass


def _lock(path):
    """An open descriptor of `path` holding an exclusive advisory lock, the process id in it;
    ValueError if another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o644)
    try:
        import fcntl
    except ImportError:  # no advisory locks on this platform
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        owner = os.read(fd, 32).decode("ascii", "replace").strip() or "?"
        os.close(fd)
        raise ValueError("%s is in use by another TensorBoard (process %s): stop it, or name another --mirror_dir"
                         % (os.path.dirname(path), owner)) from None
    os.ftruncate(fd, 0)
    os.write(fd, b"%d\n" % os.getpid())
    return fd


def _extends(have, pieces):
    """Whether an event file's objects `pieces` only grew since `have` (its earlier objects
    unchanged, the last one longer or the same, new ones after it)."""
    if not have or len(have) > len(pieces) or have[:-1] != pieces[:len(have) - 1]:
        return False
    key, size, _ = have[-1]
    now_key, now_size, _ = pieces[len(have) - 1]
    return key == now_key and now_size >= size
