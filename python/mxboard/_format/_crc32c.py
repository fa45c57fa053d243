"""CRC32C (Castagnoli) and TFRecord's masked form of it, the one home of the checksum.

It uses a C implementation, google-crc32c (a dependency) or crc32c. Where neither has a C build,
it uses a table-driven one in Python (tests/test_events.py checks that both give every record the
same CRC).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, List, Optional, Tuple

import numpy as np
import numpy.typing as npt

__all__ = ["IMPLEMENTATION", "crc32c", "crc32c_linear_rows", "masked_crc32c", "masked_crc32c_rows"]


def _table() -> List[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _table()


# The table is a local, for a faster loop.
def _crc32c_python(data: bytes, _table: List[int] = _TABLE) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _c_implementation() -> Optional[Tuple[Callable[[bytes], int], str]]:
    try:
        import google_crc32c
        if google_crc32c.implementation == "c":
            return google_crc32c.value, "google-crc32c"
    except ImportError:
        pass
    try:
        import crc32c as crc32c_module
        return crc32c_module.crc32c, "crc32c"
    except ImportError:
        return None


crc32c: Callable[[bytes], int]
IMPLEMENTATION: str
crc32c, IMPLEMENTATION = _c_implementation() or (_crc32c_python, "python")


def masked_crc32c(data: bytes, _crc: Callable[[bytes], int] = crc32c) -> int:
    """TFRecord's masked CRC32C: the CRC rotated right by 15 bits, plus a constant (mod 2**32)."""
    crc = _crc(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def masked_crc32c_rows(rows: npt.NDArray[np.uint8], columns: Iterable[int],
                       extra: Optional[npt.NDArray[np.uint32]] = None) -> npt.NDArray[Any]:
    """The masked CRC32C of every row of a (k, n) uint8 array in which only `columns` differ
    between rows.

    The other columns are equal in all rows, except for columns that are zero here and whose
    linear part the caller gives per row in `extra`. The work is vectorized over the rows: CRC32C
    is affine, so a row's CRC is that of row 0 with those columns zeroed, XOR the contribution of
    each varying byte, which is looked up by its value and by how many bytes follow it
    (`_shifted`)."""
    width = rows.shape[1]
    template = rows[0].copy()
    template[columns] = 0
    crc: npt.NDArray[Any] = np.full(rows.shape[0], crc32c(template.tobytes()), dtype=np.uint32)
    crc ^= _linear(rows, columns, width)
    if extra is not None:
        crc ^= extra
    return ((crc >> 15) | (crc << 17)) + np.uint32(0xA282EAD8)


def crc32c_linear_rows(block: npt.NDArray[np.uint8], after: int) -> npt.NDArray[np.uint32]:
    """The linear CRC32C part of each row of a (k, m) uint8 `block`, when `after` bytes follow it
    in the checksummed data. `masked_crc32c_rows` takes this as `extra`, for bytes that are zero
    in its rows."""
    return _linear(block, range(block.shape[1]), block.shape[1] + after)


def _linear(rows: npt.NDArray[np.uint8], columns: Iterable[int], width: int) -> npt.NDArray[np.uint32]:
    """The XOR of the linear CRC32C parts of `rows[:, column]` for each of `columns`, in data of
    `width` bytes."""
    tables = _shifted(width)
    linear = np.zeros(rows.shape[0], dtype=np.uint32)
    for column in columns:
        linear ^= tables[width - 1 - column][rows[:, column]]
    return linear


_SHIFTED: List[npt.NDArray[Any]] = []


def _shifted(width: int) -> npt.NDArray[Any]:
    """A table where `_shifted(w)[k][b]` is the linear CRC32C part of byte b followed by k zero
    bytes, for k < w."""
    tables = _SHIFTED[0] if _SHIFTED else np.array([_table()], dtype=np.uint32)
    if len(tables) < width:
        byte_table = tables[0]
        grown = [tables]
        last = tables[-1]
        for _ in range(width - len(tables)):
            last = byte_table[last & 0xFF] ^ (last >> 8)
            grown.append(last[None])
        tables = np.concatenate(grown)
        # Replaced whole: other writer threads see the old or the new, both valid.
        _SHIFTED[:] = [tables]
    return tables
