"""Read event files back: records checked against their CRCs, parsed into Events.

    for event in mxboard.reader.read_events("logs/"):   # a file, or every event file below a dir
        print(event.step, event.summary)

A torn last record (a writer killed mid-write, or a file still being written) ends the file
with a `TornRecordWarning`; a corrupt record (a CRC that does not match, or bytes that are no
Event) raises `DataLossError`. Only regular files are read (a FIFO named like an event file
would block forever).
"""
import os
import stat
import warnings

from google.protobuf.message import DecodeError

from ._crc32c import masked_crc32c
from .events import RECORD_HEADER, RECORD_TRAILER
from .proto import Event

__all__ = ["DataLossError", "TornRecordWarning", "read_events", "read_records", "event_files"]


class DataLossError(ValueError):
    """A corrupt record: its length or payload does not match its CRC, or it is no Event."""


class TornRecordWarning(UserWarning):
    """The file ends inside a record: the writer stopped mid-write, or is still writing."""


def read_records(path, offset=0):
    """The payloads of the TFRecords in one file (from byte `offset`, a record boundary), each
    checked against its CRCs."""
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    start, offset = offset, 0
    while offset < len(data):
        if len(data) - offset < RECORD_HEADER.size:
            _torn(path, start + offset, start + len(data))
            return
        length, length_crc = RECORD_HEADER.unpack_from(data, offset)
        if masked_crc32c(data[offset:offset + 8]) != length_crc:
            raise DataLossError("%s: corrupt record length at byte %d" % (path, start + offset))
        end = offset + RECORD_HEADER.size + length + 4
        if end > len(data):
            _torn(path, start + offset, start + len(data))
            return
        payload = data[offset + RECORD_HEADER.size:end - 4]
        if masked_crc32c(payload) != RECORD_TRAILER.unpack_from(data, end - 4)[0]:
            raise DataLossError("%s: corrupt record payload at byte %d" % (path, start + offset))
        yield payload
        offset = end


def _torn(path, offset, size):
    warnings.warn(TornRecordWarning("%s: the last record is incomplete (%d of its bytes from "
                                    "offset %d); it is skipped" % (path, size - offset, offset)),
                  stacklevel=3)


def event_files(logdir):
    """Every event file below `logdir` (or `logdir` itself if it is a file), in name order
    within each directory, directories in sorted order."""
    if os.path.isfile(logdir):
        return [logdir]
    if os.path.exists(logdir) and not os.path.isdir(logdir):
        raise ValueError("%s is neither a regular file nor a directory" % logdir)
    found = []
    for directory, subdirs, names in os.walk(logdir):
        subdirs.sort()
        found.extend(path for path in (os.path.join(directory, name) for name in sorted(names) if "tfevents" in name)
                     if _regular(path))
    return found


def _regular(path):
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:  # gone since it was listed, or a dangling link
        return False


def read_events(path):
    """The Events of an event file, or of every event file below a directory."""
    for event_file in event_files(path):
        for offset, payload in enumerate(read_records(event_file)):
            try:
                yield Event.FromString(payload)
            except DecodeError as exc:
                raise DataLossError("%s: record %d has a valid CRC but is no Event: %s"
                                    % (event_file, offset, exc)) from None
