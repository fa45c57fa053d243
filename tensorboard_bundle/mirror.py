"""An incremental local copy of a logdir in an object store, which the fast (Rust) loader serves:
that loader reads local paths only, and the Python one reads a store ten times slower.

- Every pass lists the store once and fetches only what is new: new objects, and the new bytes
  of the objects that grew (a range read from the size mirrored), many requests at once
  (stores.py: on S3, presigned requests, a quarter of s3fs's CPU). Every byte of the logdir is
  read once, but where an object changed other than by growing (it is then read again whole).
- mxboard's objects of one event file (`<file>`, `<file>.part0001`, ...: storage/names.py) are
  stitched into one local `<file>`, in name order; other writers' files (tensorboardX, torch,
  TensorFlow) are copied as they are, and so are non-event files (the projector's).
- A local event file only grows, by what its objects added (whole records, but for a range of an
  object past RANGE_BYTES: the loader then waits for the rest of its last record), so the loader
  tailing it reads every record once. A file that changed other than by growing is written anew
  and replaced at once.
- Disk: at most `max_bytes`; what would pass it is not fetched (said once, and the mirror
  goes on with what fits).
- Outages: a pass that fails changes nothing; the mirror keeps what it has, which the server
  goes on serving, and catches up at the first pass that succeeds (the outage and its end are
  logged).
- CPU: a pass runs every `interval` seconds, or less often when listing the store is costly:
  watching an idle store costs at most MAX_CPU_SHARE of a core. A listing like the last one is
  not parsed again, and a pass over a listing that was all fetched does nothing more. (What a
  change costs to fetch is work the user asked for, not counted.)
- The mirror's directory holds MANIFEST (what it fetched, and the bytes it read from the store),
  which marks it as a mirror: a directory named by the user is reused only when it is empty or a
  mirror already, and everything in it that the store no longer holds is removed.
"""
import json
import logging
import os
import posixpath
import threading
import time
from typing import Any, Dict, List, Set

from mxboard.storage.names import stitched_name
from tensorboard_bundle.stores import open_reader

__all__ = ["Mirror", "MANIFEST"]

log = logging.getLogger("tensorboard_bundle")

MANIFEST = ".mxboard-mirror.json"
MAX_CPU_SHARE = 0.02  # of a core, for the passes
MAX_INTERVAL = 60  # seconds between passes at most, however costly their listings are
SAVE_SECS = 10  # the manifest is written at most this often (and at stop): a file's size is the truth
BATCH_BYTES = 64 << 20  # fetched in one batch of concurrent requests at most (memory)
RANGE_BYTES = 16 << 20  # one request reads at most this much


class Mirror:
    """The mirror of `url` (an fsspec URL) in the local `directory`."""

    def __init__(self, url, directory, max_bytes, interval=2.0):
        self.url, self.directory, self.max_bytes, self.interval = url, directory, max_bytes, interval
        self._store = open_reader(url)
        self._root = self._store.root
        self._manifest = self._claim(directory)
        self._files = self._manifest.setdefault("files", {})  # local name -> [[key, bytes, tag], ...]
        self.bytes_read = self._manifest.setdefault("bytes_read", 0)
        self._used = 0  # bytes on disk, counted at the start of a pass that fetches, plus what it took
        self._full = False  # said that max_bytes was reached
        self._failing_since = None
        self._settled = None  # the listing of the last pass, if it fetched all it wanted
        self._poll_cpu = 0.0  # CPU seconds the last listing took
        self._unsaved, self._saved_at = False, 0.0
        self._stop = threading.Event()
        self.first_pass = threading.Event()  # set when the first pass ended (done or failed)
        self._thread = None
        self._save()  # the directory is a mirror of url's from now on

    def _claim(self, directory):
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, MANIFEST)
        if os.path.exists(path):
            with open(path) as f:
                manifest = json.load(f)
            if manifest.get("url") != self.url:
                raise ValueError("%s mirrors %s, not %s: name another directory" % (directory, manifest.get("url"),
                                                                                    self.url))
            return manifest
        if os.listdir(directory):
            raise ValueError("%s is not empty and not a mirror (no %s): name an empty directory"
                             % (directory, MANIFEST))
        return {"url": self.url}

    def start(self):
        self._thread = threading.Thread(target=self._loop, name="mirror %s" % self.url, daemon=True)
        self._thread.start()

    def stop(self, wait=30):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(wait)

    def _loop(self):
        while not self._stop.is_set():
            try:
                self.sync()
            except Exception as exc:  # noqa: BLE001 - a store's errors vary by library: all are an outage
                if self._failing_since is None:
                    self._failing_since = time.time()
                    log.warning("mirror: %s cannot be read (%s: %s); serving what was mirrored, retrying",
                                self.url, type(exc).__name__, exc)
            else:
                if self._failing_since is not None:
                    log.warning("mirror: %s answers again after %.0f s; caught up", self.url,
                                time.time() - self._failing_since)
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
        """One pass: list the store, fetch what is new, remove what it no longer holds. Raises
        when the store cannot be listed (nothing changed then)."""
        cpu = self._cpu()
        listing = self._store.listing()
        settled_before = listing == self._settled
        self._poll_cpu = self._cpu() - cpu  # what watching costs, whether or not anything is new
        if settled_before:
            return  # nothing changed since a pass that left nothing to do
        wanted = self._plan(listing)
        fetches = []
        for name, pieces in wanted.items():
            fetches.extend(self._fetches(name, pieces))
        settled = self._fetch(fetches, wanted)
        self._settled = listing if settled else None
        gone = [name for name in self._files if name not in wanted]
        for name in gone:
            self._remove(name)
            del self._files[name]
        self._unsaved = self._unsaved or bool(fetches or gone)
        if self._unsaved and time.monotonic() - self._saved_at > SAVE_SECS:
            self._save()

    def _plan(self, listing):
        """{local name: [[key, bytes, tag], ...] in reading order} of what the store holds."""
        wanted: Dict[str, List[List[Any]]] = {}
        for key in sorted(listing):
            info = listing[key]
            if info.get("type") != "file" or (self._root and not key.startswith(self._root + "/")):
                continue
            name = key[len(self._root) + 1:] if self._root else key
            parts = name.split("/")
            if not name or any(p in ("", ".", "..") or "\x00" in p for p in parts) or name == MANIFEST:
                log.warning("mirror: %r is not a path below the logdir; skipped", key)
                continue
            if "tfevents" in parts[-1]:
                name = stitched_name(name)
            tag = str(info.get("ETag") or info.get("LastModified") or info.get("mtime") or info.get("created") or "")
            wanted.setdefault(name, []).append([key, int(info["size"]), tag])
        return {name: pieces for name, pieces in wanted.items() if pieces[0][0] == self._key(name)}

    def _key(self, name):
        return posixpath.join(self._root, name) if self._root else name

    def _fetches(self, name, pieces):
        """[(name, key, start, end, offset in the local file)] of what `name` lacks: the bytes its
        objects added, for an event file whose objects only grew; else the whole file (which
        then replaces the local one)."""
        have = self._files.get(name)
        if have == pieces:
            return []
        start_at = _grown(have, pieces) if "tfevents" in name else 0
        fetches, offset = [], 0
        for key, size, _ in pieces:
            begin = max(offset, start_at)
            while begin < offset + size:
                end = min(offset + size, begin + RANGE_BYTES)
                fetches.append((name, key, begin - offset, end - offset, begin))
                begin = end
            offset += size
        return fetches

    def _fetch(self, fetches, wanted):
        """Fetch in batches of concurrent range reads, and write each file's bytes in order; a
        file's fetches after one that failed wait for the next pass. Whether nothing failed."""
        if fetches:
            self._used = sum(self._size(name) for name in self._files)
        failed: Set[str] = set()
        pending: Dict[str, Any] = {}
        try:
            for batch in self._batches(fetches, failed):
                if self._stop.is_set():  # the server is exiting (and may remove the directory)
                    return False
                results = self._store.read_ranges([f[1] for f in batch], [f[2] for f in batch],
                                                  [f[3] for f in batch])
                for (name, _, start, end, offset), data in zip(batch, results):
                    if name in failed:
                        continue
                    if isinstance(data, BaseException) or len(data) != end - start:
                        failed.add(name)
                        continue
                    self.bytes_read += len(data)
                    if not self._write(name, offset, data, pending):
                        failed.add(name)
                        self._files.pop(name, None)  # the local file is not what the manifest says: fetched anew
            for name in set(wanted) - failed:
                if name in pending or (self._files.get(name) != wanted[name] and self._complete(name, wanted[name])):
                    self._finish(name, wanted[name], pending.pop(name, None))
            return not failed and all(self._files.get(name) == pieces for name, pieces in wanted.items())
        finally:
            for new_file in pending.values():
                new_file.close()
                os.remove(new_file.name)

    def _batches(self, fetches, failed):
        batch: List[Any] = []
        size = 0
        for fetch in fetches:
            if fetch[0] in failed or not self._room_for(fetch):
                failed.add(fetch[0])
                continue
            if batch and size + fetch[3] - fetch[2] > BATCH_BYTES:
                yield batch
                batch, size = [], 0
            batch.append(fetch)
            size += fetch[3] - fetch[2]
        if batch:
            yield batch

    def _room_for(self, fetch):
        if self._used + (fetch[3] - fetch[2]) <= self.max_bytes:
            self._used += fetch[3] - fetch[2]
            return True
        if not self._full:
            self._full = True
            log.warning("mirror: %s holds %d bytes, the most it may (--mirror_max_bytes): newer data of %s is not "
                        "fetched", self.directory, self._used, self.url)
        return False

    def _write(self, name, offset, data, pending):
        """Append to the local file where it grows from its end (False if its end is not at
        `offset`); a file fetched from its start is written beside it, and replaces it once whole
        (_finish)."""
        path = self._path(name)
        if offset == 0 or name in pending:
            if name not in pending:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                pending[name] = open(path + ".mirror-new", "wb")
            pending[name].write(data)
            return True
        with open(path, "ab") as f:
            if f.tell() != offset:
                return False
            f.write(data)
        return True

    def _complete(self, name, pieces):
        return self._size(name) == sum(size for _, size, _ in pieces)

    def _finish(self, name, pieces, new_file):
        path = self._path(name)
        if new_file is not None:
            new_file.close()
            os.replace(new_file.name, path)
        elif not os.path.exists(path):  # empty objects
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "wb").close()
        self._files[name] = pieces

    def _remove(self, name):
        try:
            os.remove(self._path(name))
        except FileNotFoundError:
            pass

    def _path(self, name):
        return os.path.join(self.directory, *name.split("/"))

    def _size(self, name):
        try:
            return os.path.getsize(self._path(name))
        except OSError:
            return 0

    def _save(self):
        self._unsaved, self._saved_at = False, time.monotonic()
        self._manifest["bytes_read"] = self.bytes_read
        path = os.path.join(self.directory, MANIFEST)
        with open(path + ".new", "w") as f:
            json.dump(self._manifest, f)
        os.replace(path + ".new", path)


def _grown(have, pieces):
    """The bytes mirrored of an event file whose objects now are `pieces`, if they only grew since
    `have` (its earlier objects unchanged, the last one longer or the same, new ones after it);
    else 0 (fetch it whole)."""
    if not have or len(have) > len(pieces) or have[:-1] != pieces[:len(have) - 1]:
        return 0
    key, size, _ = have[-1]
    now_key, now_size, _ = pieces[len(have) - 1]
    return sum(s for _, s, _ in have) if key == now_key and now_size >= size else 0
