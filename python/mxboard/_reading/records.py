"""Read one event file's records, each checked against its CRCs, in windows of a bounded size.

mxboard.reader and the scan (scan.py) read records through here. A corrupt record is skipped with
a CorruptRecordWarning, or raises DataLossError with `strict`; a torn last record ends the file
with a TornRecordWarning.
"""
from __future__ import annotations

import warnings
from typing import Any, Iterator, Tuple

from .._format._crc32c import masked_crc32c
from .._format.events import RECORD_HEADER, RECORD_TRAILER, whole_records
from ..errors import CorruptRecordWarning, DataLossError, TornRecordWarning
from ..storage import checked_logdir, is_url

__all__ = ["WINDOW", "corrupt", "open_at", "read_records", "torn"]


def read_records(path: str, offset: int = 0, strict: bool = False) -> Iterator[bytes]:
    """The payloads of the TFRecords in one file, each checked against its CRCs.

    Args:
        path: an event file, or its URL in an object store.
        offset: the byte to start from (a record boundary).
        strict: raise on a corrupt record, instead of warning and skipping it.

    Yields:
        bytes: each record's payload (a serialized Event).

    Raises:
        DataLossError: with `strict`, a record whose CRCs do not match.

    Warns:
        TornRecordWarning: the file ends inside a record (its writer stopped or is writing).
        CorruptRecordWarning: a corrupt record was skipped (a corrupt length ends the file).
    """
    length_at, unpack_trailer, crc = RECORD_HEADER.unpack_from, RECORD_TRAILER.unpack_from, masked_crc32c
    with open_at(path, offset) as f:
        # data[at:] is unparsed and starts at byte base + at.
        data, base, at, more = b"", offset, 0, True
        while True:
            # Frame with the shared framing (events.whole_records), which checks every length's CRC.
            # A length longer than the file is never allocated: the windows read what the file
            # holds, and the record then reads as torn.
            whole, problem = whole_records(data, _NO_LIMIT, start=at, check_from=0)
            while at < whole:
                # 16: RECORD_HEADER.size + RECORD_TRAILER.size.
                end = at + 16 + length_at(data, at)[0]
                payload = data[at + 12:end - 4]
                if crc(payload) == unpack_trailer(data, end - 4)[0]:
                    yield payload
                else:
                    corrupt("%s: corrupt record payload at byte %d; the record is skipped" % (path, base + at), strict)
                at = end
            if problem is not None:
                corrupt("%s: corrupt record length at byte %d; the rest of the file cannot be framed"
                        % (path, base + at), strict)
                return
            if not more:
                if at < len(data):
                    torn(path, base + at, base + len(data))
                return
            need = 12 if len(data) - at < 12 else 16 + length_at(data, at)[0]
            data, base, at, more = _refill(f, data, base, at, need)


# Above any u64: a record is bounded by what its file holds, not by a size.
_NO_LIMIT = 1 << 64


# The bytes read at a time, so a file of any size is read in about this much memory.
WINDOW = 4 << 20


def open_at(path: str, offset: int) -> Any:
    """`path` (a file or a URL) open for reading from `offset`."""
    path = checked_logdir(path)
    if is_url(path):
        from ..storage import open_filesystem

        fs, key = open_filesystem(path, shared=True)
        # Read the size the store holds now, not the one an old listing gave.
        fs.invalidate_cache(key)
        f = fs.open(key, "rb", block_size=WINDOW)
    else:
        f = open(path, "rb")
    f.seek(offset)
    return f


def _refill(f: Any, data: bytes, base: int, at: int, need: int) -> Tuple[bytes, int, int, bool]:
    """Carry the unparsed rest `data[at:]` over and read windows after it, until `need` bytes are
    there or the file ends.

    Returns (data, base, at, more), where `more` is False once the file has ended. Reading one
    window at a time means a header that claims more bytes than the file holds (2^62, say) costs
    only what the file holds, and the record then reads as torn; it is never allocated."""
    pieces, have = [data[at:]], len(data) - at
    while have < need or len(pieces) == 1:
        piece = f.read(WINDOW)
        if not piece:
            return b"".join(pieces), base + at, 0, False
        pieces.append(piece)
        have += len(piece)
    return b"".join(pieces), base + at, 0, True


def corrupt(message: str, strict: bool) -> None:
    """Raise DataLossError with `strict`, else warn with a CorruptRecordWarning."""
    if strict:
        raise DataLossError(message)
    warnings.warn(CorruptRecordWarning(message), stacklevel=4)


def torn(path: str, offset: int, size: int) -> None:
    """Warn that the file at `path` ends inside a record, which started at `offset`."""
    warnings.warn(TornRecordWarning("%s: the last record is incomplete (%d of its bytes from "
                                    "offset %d); it is skipped" % (path, size - offset, offset)),
                  stacklevel=3)
