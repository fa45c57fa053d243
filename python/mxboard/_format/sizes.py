"""Sizes as people write and read them: `parse_bytes("1.5G")`, `readable(300 << 10)` ("300.0 KiB")."""
from __future__ import annotations

import re

__all__ = ["parse_bytes", "readable"]

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", re.IGNORECASE)


def parse_bytes(text: str, what: str) -> int:
    """The number of bytes that `text` gives: a number, optionally followed by K, M, G or T
    (powers of 1024). Raises a ValueError naming `what` (the flag or variable it came from) if
    `text` gives none."""
    match = _SIZE.fullmatch(text or "")
    if not match:
        raise ValueError("%s %r: a number of bytes, with K, M, G or T after it if you like" % (what, text))
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def readable(size: float) -> str:
    """`size` bytes as people read them: 300 KiB, 1.5 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return ("%d %s" if unit == "B" else "%.1f %s") % (size, unit)
        size /= 1024
    return "%.1f TiB" % size
