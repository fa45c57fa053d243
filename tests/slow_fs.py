"""A slow filesystem for the tests and the benchmark: a read-only FUSE passthrough of a directory
in which each filesystem call waits `latency` seconds, as a call to an NFS or Lustre server does
(about a millisecond).

`SlowFilesystem(source, latency=0.001)` mounts `source` at a fresh directory (`.mountpoint`),
served by a child process (mfusepy over libfuse3, multi-threaded: calls are served concurrently,
as a network server serves them). The kernel caches nothing (attributes, entries and misses time
out at once), so each stat, lookup, listing and read of a reader reaches the server, as on NFS
mounted with `actimeo=0` or on Lustre; what is written into `source` (as another machine writes
to the share) is seen at the next call. `.calls()` is the number of calls served so far (a
counter the child keeps in a shared file), `.stop()` unmounts (fusermount3 -u) and ends the child
(safe twice; the context manager's exit calls it, on a failure too). The mount is waited for at
most 20 seconds. `why_unavailable()` says why it cannot run here (None where it can): no
/dev/fuse, no fusermount3, no mfusepy.

Run as a script (`python slow_fs.py SOURCE MOUNTPOINT LATENCY COUNTER`), it is the child.
"""
import errno
import importlib.util
import mmap
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

__all__ = ["SlowFilesystem", "why_unavailable"]

# The child's counter of calls: one little-endian u64 at the start of a shared file.
_COUNTER = struct.Struct("<Q")
# How long the mount is waited for, and its unmounting.
_MOUNT_SECONDS = 20
_STOP_SECONDS = 10


def why_unavailable():
    """Why a SlowFilesystem cannot be mounted here, in one line; None where it can."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse (FUSE is not available in this kernel or container)"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse cannot be opened by this user"
    if shutil.which("fusermount3") is None:
        return "no fusermount3 (apt-get install fuse3; make test-tools installs it)"
    if importlib.util.find_spec("mfusepy") is None:
        return "no mfusepy (pip install '.[test]')"
    return None


class SlowFilesystem:
    """`source` mounted read-only at `.mountpoint`, each call waiting `latency` seconds."""

    def __init__(self, source, latency=0.001):
        reason = why_unavailable()
        if reason is not None:
            raise RuntimeError("SlowFilesystem cannot run here: " + reason)
        self.source = os.path.abspath(str(source))
        self.latency = float(latency)
        self._scratch = tempfile.mkdtemp(prefix="slow-fs-")
        self.mountpoint = os.path.join(self._scratch, "mnt")
        os.mkdir(self.mountpoint)
        counter = os.path.join(self._scratch, "calls")
        with open(counter, "wb") as f:
            f.write(bytes(mmap.PAGESIZE))
        self._log = open(os.path.join(self._scratch, "log"), "w+b")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), self.source, self.mountpoint, repr(self.latency),
                 counter], stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
        except BaseException:
            self._log.close()
            shutil.rmtree(self._scratch, ignore_errors=True)
            raise
        with open(counter, "r+b") as f:
            self._counter = mmap.mmap(f.fileno(), mmap.PAGESIZE)
        self._stopped = False
        try:
            self._wait_mounted()
        except BaseException:
            self.stop()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def calls(self):
        """The calls served so far."""
        return _COUNTER.unpack_from(self._counter, 0)[0]

    def stop(self):
        """Unmount and end the child (lazily where a reader still holds the mount); safe twice."""
        if self._stopped:
            return
        self._stopped = True
        if os.path.ismount(self.mountpoint):
            done = subprocess.run(["fusermount3", "-u", self.mountpoint], capture_output=True, timeout=_STOP_SECONDS)
            if done.returncode != 0:
                subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], capture_output=True,
                               timeout=_STOP_SECONDS)
        try:
            self._proc.wait(_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._counter.close()
        self._log.close()
        shutil.rmtree(self._scratch, ignore_errors=True)

    def _wait_mounted(self):
        deadline = time.monotonic() + _MOUNT_SECONDS
        while not os.path.ismount(self.mountpoint):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self._log.seek(0)
                said = self._log.read().decode("utf-8", "replace")[-2000:]
                raise RuntimeError("SlowFilesystem: %s was not mounted within %d s (the server %s): %s" % (
                    self.mountpoint, _MOUNT_SECONDS,
                    "is running" if self._proc.poll() is None else "exited %d" % self._proc.returncode, said))
            time.sleep(0.05)


def _serve(source, mountpoint, latency, counter):
    """The child: serve `source` at `mountpoint` until unmounted."""
    import mfusepy

    with open(counter, "r+b") as f:
        shared = mmap.mmap(f.fileno(), mmap.PAGESIZE)
    lock = threading.Lock()
    served = [0]

    def call(method):
        """`method` counted, after `latency` seconds."""
        def slowed(self, path, *args):
            with lock:
                served[0] += 1
                _COUNTER.pack_into(shared, 0, served[0])
            time.sleep(latency)
            return method(self, source + path, *args)
        slowed.__name__ = method.__name__
        return slowed

    def os_errors(function, *args):
        try:
            return function(*args)
        except OSError as exc:
            raise mfusepy.FuseOSError(exc.errno or errno.EIO) from None

    class Passthrough(mfusepy.Operations):
        use_ns = True

        @call
        def getattr(self, path, fh=None):
            found = os_errors(os.lstat, path)
            return {key: getattr(found, key) for key in (
                "st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime_ns", "st_mtime_ns", "st_ctime_ns",
                "st_ino")} | {"st_atime": found.st_atime_ns, "st_mtime": found.st_mtime_ns,
                              "st_ctime": found.st_ctime_ns}

        @call
        def access(self, path, amode):
            if not os.access(path, amode):
                raise mfusepy.FuseOSError(errno.EACCES)
            return 0

        @call
        def readdir(self, path, fh):
            # Each entry with its type, as NFS's READDIRPLUS gives it: a reader tells a file from
            # a directory without a call for each.
            with os_errors(os.scandir, path) as entries:
                return [".", ".."] + [(entry.name, {"st_mode": entry.stat(follow_symlinks=False).st_mode}, 0)
                                      for entry in entries]

        @call
        def readlink(self, path):
            return os_errors(os.readlink, path)

        @call
        def open(self, path, flags):
            return os_errors(os.open, path, os.O_RDONLY)

        @call
        def read(self, path, size, offset, fh):
            return os_errors(os.pread, fh, size, offset)

        @call
        def release(self, path, fh):
            os.close(fh)
            return 0

        @call
        def statfs(self, path):
            found = os_errors(os.statvfs, path)
            return {key: getattr(found, key) for key in (
                "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag",
                "f_frsize", "f_namemax")}

    # Nothing cached by the kernel: every call a reader makes reaches this server.
    mfusepy.FUSE(Passthrough(), mountpoint, foreground=True, nothreads=False, ro=True, auto_unmount=True,
                 fsname="slowfs", subtype="slowfs", attr_timeout=0, entry_timeout=0, negative_timeout=0)


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4])
