"""The event file's format: its name and its records (TFRecord framing). The files themselves
belong to storage/.

A record is `length (u64 LE) | masked CRC32C of length (u32 LE) | payload | masked CRC32C of
payload (u32 LE)`. The first record of every file is an Event with `file_version`.
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
# A header holds the length and the masked CRC32C of the length.
RECORD_HEADER = struct.Struct("<QI")
# A trailer holds the masked CRC32C of the payload.
RECORD_TRAILER = struct.Struct("<I")
# Makes names unique within one process, even in one second.
_counter = itertools.count()


def record_header(size: int) -> bytes:
    """The 12-byte header of a record whose payload is `size` bytes."""
    return RECORD_HEADER.pack(size, masked_crc32c(_LENGTH.pack(size)))


def frame(payload: bytes) -> bytes:
    """One TFRecord: header, payload and trailer, as bytes."""
    return b"".join((record_header(len(payload)), payload, RECORD_TRAILER.pack(masked_crc32c(payload))))


def whole_records(data: Union[bytes, bytearray], limit: int, room: Optional[int] = None,
                  at_least_one: bool = False, start: int = 0, check_from: int = 1 << 20) -> Tuple[int, Optional[str]]:
    """Find where the whole records of a TFRecord stream end. This is the package's one framing:
    the mirror copies by it, the uploader cuts its objects with it, and the reader reads by it.

    Args:
        data: the stream's bytes.
        limit: the longest record allowed.
        room: if given, the most bytes the whole records may take from `start`.
        at_least_one: let the first record pass `room` when it alone does not fit.
        start: where a record starts in `data`.
        check_from: check the CRC of every length of this size or more. Payloads are never checked,
            and by default lengths under 1 MiB are not either: this runs on every byte a mirror
            copies, and a wrong small length costs a reader little. The reader, which checks every
            CRC, passes 0.

    Returns:
        (end, problem): `end` is where the last whole record ends. `problem` says why no record
        can follow there however the stream grows (a length over `limit`, or a checked length
        whose CRC is wrong); it is None where the rest is an incomplete record or lies past `room`.
    """
    offset, size, unpack = start, len(data), RECORD_HEADER.unpack_from
    # 12 is RECORD_HEADER.size.
    while size - offset >= 12:
        length, length_crc = unpack(data, offset)
        if length >= check_from:
            if masked_crc32c(bytes(data[offset:offset + 8])) != length_crc:
                return offset, "a record's header at byte %d fails its checksum" % offset
            if length > limit:
                return offset, "a record at byte %d claims %d bytes, over the limit of %d" % (offset, length, limit)
        # 16 adds RECORD_HEADER.size and RECORD_TRAILER.size.
        end = offset + length + 16
        if end > size or room is not None and end - start > room and not (at_least_one and offset == start):
            break
        offset = end
    return offset, None


def event_file_name(suffix: str = "", token: str = "") -> str:
    """A new event file name: `events.out.tfevents.<secs>.<host>.<pid>.<n><token><suffix>`.

    `<n>` is a zero-padded counter of this process, so a name is never the same twice in a
    process, nor (with the pid) across processes on one host. As loaders read a run's files in
    name order, the files of one process sort in the order they were made. `token` adds entropy
    where hosts and pids may repeat and no exclusive create guards the name (an object store)."""
    return "events.out.tfevents.%010d.%s.%d.%06d%s%s" % (
        int(time.time()), socket.gethostname(), os.getpid(), next(_counter), token, suffix)
