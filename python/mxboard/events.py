"""The event file: its name and its records (TFRecord framing). Bytes in, bytes on disk.

A record is `length (u64 LE) | masked CRC32C of length (u32 LE) | payload | masked CRC32C of
payload (u32 LE)`; the first record of every file is an Event with `file_version`.
"""
import errno
import itertools
import os
import socket
import struct
import time

from ._crc32c import masked_crc32c

__all__ = ["EventFile", "FILE_VERSION", "RECORD_HEADER", "RECORD_TRAILER", "event_file_name", "frame",
           "record_header"]

FILE_VERSION = "brain.Event:2"
_LENGTH = struct.Struct("<Q")
RECORD_HEADER = struct.Struct("<QI")  # length, masked CRC32C of the length
RECORD_TRAILER = struct.Struct("<I")  # masked CRC32C of the payload
_counter = itertools.count()  # makes names unique within one process, even in one second
_TRIES = 1000


def record_header(size):
    """The 12-byte header of a record whose payload is `size` bytes."""
    return RECORD_HEADER.pack(size, masked_crc32c(_LENGTH.pack(size)))


def frame(payload):
    """One TFRecord: header, payload and trailer, as bytes."""
    return b"".join((record_header(len(payload)), payload, RECORD_TRAILER.pack(masked_crc32c(payload))))


def event_file_name(suffix=""):
    """`events.out.tfevents.<secs>.<host>.<pid>.<n><suffix>`, `<n>` a zero-padded counter of this
    process: never the same twice in a process, never the same across processes on one host
    (the pid), and, since loaders read a run's files in name order, sorted in creation order
    among the files of one process."""
    return "events.out.tfevents.%010d.%s.%d.%06d%s" % (
        int(time.time()), socket.gethostname(), os.getpid(), next(_counter), suffix)


class EventFile:
    """An event file, created new (never reopened, never overwritten), written whole records at a
    time with `os.write` so that nothing sits in a user-space buffer: a write returns with the
    bytes in the OS, and a forked child that drops this object writes nothing."""

    def __init__(self, directory, suffix=""):
        self.directory = directory
        for _ in range(_TRIES):  # a name taken already (a restarted container: same host, pid,
            self.path = os.path.join(directory, event_file_name(suffix))  # second): the next one
            try:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                                   0o666)  # as the umask allows, like any file
                return
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "no free event file name after %d tries" % _TRIES, self.path)

    def write(self, data):
        if os.fstat(self._fd).st_nlink == 0:  # deleted (the logdir removed): writes would vanish
            raise FileNotFoundError(errno.ENOENT, "the event file was deleted while being written", self.path)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

    def sync(self, force):
        """Nothing to do: `write` hands the bytes to the OS (a remote file uploads here)."""

    def pieces(self):
        """(path, bytes) of what holds this file's records: the file itself."""
        return [(self.path, os.path.getsize(self.path))]

    def close(self, sync=True):
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def abandon(self):
        """Forget the descriptor without touching the file (a forked child's copy)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

