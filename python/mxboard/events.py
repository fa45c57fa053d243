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

__all__ = ["EventFile", "event_file_name", "frame", "header", "FILE_VERSION", "HEADER", "U32"]

FILE_VERSION = "brain.Event:2"
_U64 = struct.Struct("<Q")
U32 = struct.Struct("<I")  # a record's trailer: masked CRC32C of the payload
HEADER = struct.Struct("<QI")  # a record's header: length, masked CRC32C of the length
_counter = itertools.count()  # makes names unique within one process, even in one second


def header(size):
    """The 12-byte header of a record whose payload is `size` bytes."""
    return HEADER.pack(size, masked_crc32c(_U64.pack(size)))


def frame(payload):
    """One TFRecord: header, payload and trailer, as bytes."""
    return b"".join((header(len(payload)), payload, U32.pack(masked_crc32c(payload))))


def event_file_name(suffix=""):
    """`events.out.tfevents.<secs>.<host>.<pid>.<n><suffix>`: never the same twice in a process,
    never the same across processes on one host (the pid), and sorted by time as TensorBoard
    expects."""
    return "events.out.tfevents.%010d.%s.%d.%d%s" % (
        int(time.time()), socket.gethostname(), os.getpid(), next(_counter), suffix)


class EventFile:
    """An event file, created new (never reopened, never overwritten), written whole records at a
    time with `os.write` so that nothing sits in a user-space buffer: a write returns with the
    bytes in the OS, and a forked child that drops this object writes nothing."""

    def __init__(self, directory, suffix=""):
        self.path = os.path.join(directory, event_file_name(suffix))
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644)

    def write(self, data):
        if os.fstat(self._fd).st_nlink == 0:  # deleted (the logdir removed): writes would vanish
            raise FileNotFoundError(errno.ENOENT, "the event file was deleted while being written", self.path)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

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
