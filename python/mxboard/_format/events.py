"""The event file's format: its name and its records (TFRecord framing). The files themselves
are the storage's (storage/).

A record is `length (u64 LE) | masked CRC32C of length (u32 LE) | payload | masked CRC32C of
payload (u32 LE)`; the first record of every file is an Event with `file_version`.
"""
from __future__ import annotations

import itertools
import os
import socket
import struct
import time
from typing import Optional, Tuple, Union

from ._crc32c import masked_crc32c

__all__ = ["FILE_VERSION", "RECORD_HEADER", "RECORD_TRAILER", "event_file_name", "frame",
           "record_header", "whole_records"]

FILE_VERSION = "brain.Event:2"
_LENGTH = struct.Struct("<Q")
RECORD_HEADER = struct.Struct("<QI")  # length, masked CRC32C of the length
RECORD_TRAILER = struct.Struct("<I")  # masked CRC32C of the payload
_counter = itertools.count()  # makes names unique within one process, even in one second


def record_header(size: int) -> bytes:
    """The 12-byte header of a record whose payload is `size` bytes."""
    return RECORD_HEADER.pack(size, masked_crc32c(_LENGTH.pack(size)))


def frame(payload: bytes) -> bytes:
    """One TFRecord: header, payload and trailer, as bytes."""
    return b"".join((record_header(len(payload)), payload, RECORD_TRAILER.pack(masked_crc32c(payload))))


def whole_records(data: Union[bytes, bytearray], limit: int, room: Optional[int] = None,
                  at_least_one: bool = False, start: int = 0, check_from: int = 1 << 20) -> Tuple[int, Optional[str]]:
    """(end, problem) of a TFRecord stream's bytes `data`, from a record's start (`start`): `end`
    is where its last whole record ends (within `room` bytes if given: the first record alone may
    pass it, with `at_least_one`); `problem` why no record can follow there however the stream
    grows (a length over `limit`, or one of `check_from` or more whose checksum is wrong), else
    None (the rest is a record still incomplete, or past `room`). The one framing of this package:
    the mirror copies by it, the uploader cuts its objects with it, the reader reads by it.

    Payloads are not checked, nor, by default, the checksums of lengths under 1 MiB: this runs on
    every byte a mirror copies, and what a small length claims costs a reader little (the reader,
    which checks every CRC, passes `check_from=0`)."""
    offset, size, unpack = start, len(data), RECORD_HEADER.unpack_from
    while size - offset >= 12:  # RECORD_HEADER.size
        length, length_crc = unpack(data, offset)
        if length >= check_from:
            if masked_crc32c(bytes(data[offset:offset + 8])) != length_crc:
                return offset, "a record's header at byte %d fails its checksum" % offset
            if length > limit:
                return offset, "a record at byte %d claims %d bytes, over the limit of %d" % (offset, length, limit)
        end = offset + length + 16  # with RECORD_HEADER.size and RECORD_TRAILER.size
        if end > size or room is not None and end - start > room and not (at_least_one and offset == start):
            break
        offset = end
    return offset, None


def event_file_name(suffix: str = "", token: str = "") -> str:
    """`events.out.tfevents.<secs>.<host>.<pid>.<n><token><suffix>`, `<n>` a zero-padded counter
    of this process: never the same twice in a process, never the same across processes on one
    host (the pid), and, since loaders read a run's files in name order, sorted in creation
    order among the files of one process. `token`: more entropy, where hosts and pids may repeat
    and no exclusive create guards the name (an object store)."""
    return "events.out.tfevents.%010d.%s.%d.%06d%s%s" % (
        int(time.time()), socket.gethostname(), os.getpid(), next(_counter), token, suffix)
