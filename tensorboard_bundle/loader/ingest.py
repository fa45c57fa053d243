"""Read an event file's new records, each checked against its CRCs, from where the last read
stopped.

An `EventFile` remembers how far its file was read. `new_records` frames what was added since with
mxboard's one framing (`events.whole_records`, every length's CRC checked) and checks each
payload's CRC. A damaged record is skipped and said once in the server's log (it is never read
again); a damaged length ends what can be read of the file, said once. A torn last record (its
writer is writing it) is read again at the next reload. A file is not opened while its size is
the one last seen.
"""
import logging
import os
from typing import Any, Dict, Iterator, Optional, Tuple

from mxboard._format._crc32c import masked_crc32c
from mxboard._format.events import RECORD_HEADER, RECORD_TRAILER, whole_records

__all__ = ["EventFile", "WINDOW", "new_records"]

logger = logging.getLogger(__name__)

# The bytes read at a time: a file of any size is read in about this much memory.
WINDOW = 4 << 20
# Above any u64: a record is bounded by what its file holds, not by a size.
_NO_LIMIT = 1 << 64


class EventFile:
    """One event file of a run, and how far it was read.

    Attributes:
        path: the file.
        offset: where its next record starts (after the last whole record read).
        size: the file's size at the last read (-1 before the first).
        ended: a damaged length was found at `offset`: nothing after it can be framed.
        bytes_read: every byte read from the file so far (a torn end is read again).
        initial_metadata: upstream's state of the file's migration (dataclass_compat), kept for
            reading a blob's record back as it was read first.
    """

    __slots__ = ("path", "offset", "size", "ended", "bytes_read", "initial_metadata")

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.size = -1
        self.ended = False
        self.bytes_read = 0
        self.initial_metadata: Dict[str, Any] = {}


def new_records(file: EventFile, size: Optional[int] = None) -> Iterator[Tuple[int, bytes]]:
    """(byte offset, payload) of each whole record added to `file` since its last read, its CRCs
    checked; `file.offset` moves past them as they are read. `size`: the file's size where the
    caller knows it (None: stat it)."""
    if size is None:
        try:
            size = os.stat(file.path).st_size
        except OSError:
            # Gone (a run deleted while served): the caller finds that out when it walks the logdir.
            return
    if size == file.size or file.ended:
        return
    if size < file.offset:
        logger.warning("%s: the file shrank from %d to %d bytes: it is read no more (what was read is served)",
                       file.path, file.offset, size)
        file.ended = True
        return
    file.size = size
    try:
        with open(file.path, "rb") as f:
            f.seek(file.offset)
            yield from _records(file, f)
    except OSError as exc:
        logger.warning("%s: cannot be read from byte %d: %s", file.path, file.offset, exc)
        file.size = -1


def _records(file: EventFile, f: Any) -> Iterator[Tuple[int, bytes]]:
    """The records of `f` from `file.offset`, a window at a time."""
    length_at, trailer_at = RECORD_HEADER.unpack_from, RECORD_TRAILER.unpack_from
    # data[0:] starts at byte `file.offset` of the file; `need`: the bytes the next record needs.
    data, need = b"", 1
    while True:
        data, more = _refill(file, f, data, need)
        end, problem = whole_records(data, _NO_LIMIT, check_from=0)
        at = 0
        while at < end:
            # 16: RECORD_HEADER.size + RECORD_TRAILER.size.
            stop = at + 16 + length_at(data, at)[0]
            payload = data[at + 12:stop - 4]
            if masked_crc32c(payload) == trailer_at(data, stop - 4)[0]:
                yield file.offset + at, payload
            else:
                logger.warning("%s: the record at byte %d fails its checksum: it is skipped, the rest of the file "
                               "is served", file.path, file.offset + at)
            at = stop
        data = data[end:]
        file.offset += end
        if problem is not None:
            logger.warning("%s: the length of the record at byte %d fails its checksum: the rest of the file "
                           "cannot be read (what comes before it is served)", file.path, file.offset)
            file.ended = True
            return
        if not more:
            # A torn last record, if any, is read again at the next reload.
            return
        need = 16 + length_at(data, 0)[0] if len(data) >= 12 else 12


def _refill(file: EventFile, f: Any, data: bytes, need: int) -> Tuple[bytes, bool]:
    """`data` and windows read after it, until it holds `need` bytes and one window more was read,
    or the file ends: (the bytes, whether the file may hold more). A length claiming more than the
    file holds (2^62, say) costs what the file holds, never what it claims."""
    pieces, have = [data], len(data)
    while have < need or len(pieces) == 1:
        piece = f.read(WINDOW)
        file.bytes_read += len(piece)
        if not piece:
            return b"".join(pieces), False
        pieces.append(piece)
        have += len(piece)
    return b"".join(pieces), True
