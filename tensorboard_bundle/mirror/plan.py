"""What the mirror fetches, decided from a listing alone: no disk, no store (tested with
Hypothesis in tests/test_mirror_plan.py).

- `plan(listing, ...)`: the local files a store's listing makes, each the objects it is read from
  in order. mxboard's objects of one event file (`<file>`, `<file>.part0001`, ...:
  _format/names.py) make one file, named as its first; parts whose first object is gone make
  none. A key that is no path below the logdir (`..`, empty parts, the mirror's own names), or
  that lies below an excluded path, makes none, and is reported.
- `extends(have, pieces)`: whether an event file only grew (so only its new bytes are fetched).
- `Job`: what one file lacks, and the range reads that fetch it.
"""
import posixpath
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Set, Tuple

from mxboard._format.names import stitched_name
from mxboard.storage.remote.profiles import OTHER

__all__ = ["Piece", "Plan", "Job", "plan", "extends", "is_event_file", "RANGE_BYTES"]

# One request reads at most this much.
RANGE_BYTES = 16 << 20

# An object: (its key, its size, its version's tag).
Piece = Tuple[str, int, str]


def is_event_file(name: str) -> bool:
    return "tfevents" in posixpath.basename(name)


class Plan(NamedTuple):
    # It maps a local name -> its objects, in reading order.
    wanted: Dict[str, List[Piece]]
    # The keys that are no path below the logdir.
    refused: List[str]
    # Excluded paths (with a trailing /) that held objects.
    excluded: Set[str]


def plan(listing: Mapping[str, Mapping[str, Any]], root: str, exclude: Sequence[str] = (),
         own: Sequence[str] = (), versions: Sequence[str] = OTHER.versions,
         memo: Optional[Dict[str, Tuple[str, str]]] = None) -> Plan:
    """The Plan of a listing ({key: fsspec's info: "type", "size", a tag}) of what the store holds
    below `root` (keys are `<root>/<name>`); `exclude`: relative paths, each with a trailing `/`;
    `own`: names the mirror's directory keeps for itself (never a run's first component);
    `versions`: the info fields that tell an object's versions apart, the first found taken (the
    store's profile says which: remote/profiles.py); `memo`: a dict the caller keeps between the
    listings of one root, exclude and own, where what each key names is kept (10,000 objects are
    planned in 16 ms with it, 40-50 ms without; a key's place depends on its name alone)."""
    memo = {} if memo is None else memo
    if len(memo) > 2 * len(listing) + 1000:
        # Keys gone from the store are forgotten now and then.
        memo.clear()
    wanted: Dict[str, List[Piece]] = {}
    refused: List[str] = []
    excluded: Set[str] = set()
    for key in sorted(listing):
        info = listing[key]
        if info.get("type") != "file":
            continue
        place = memo.get(key)
        if place is None:
            place = memo[key] = _place(key, root, exclude, own)
        kind, name = place
        if kind == "outside":
            continue
        if kind == "refused":
            refused.append(key)
            continue
        if kind == "excluded":
            excluded.add(name)
            continue
        tag = str(next((info[k] for k in versions if info.get(k)), ""))
        wanted.setdefault(name, []).append((key, int(info["size"]), tag))
    first = {name: posixpath.join(root, name) if root else name for name in wanted}
    return Plan({name: pieces for name, pieces in wanted.items() if pieces[0][0] == first[name]}, refused, excluded)


def _place(key: str, root: str, exclude: Sequence[str], own: Sequence[str]) -> Tuple[str, str]:
    """What a file's `key` is to the plan: ("name", the local file it is read into), ("refused",
    "") where it is no path below the logdir, ("excluded", the excluded path it lies below), or
    ("outside", "") where it is not below `root`."""
    if root and not key.startswith(root + "/"):
        return "outside", ""
    name = key[len(root) + 1:] if root else key
    parts = name.split("/")
    if not name or any(p in ("", ".", "..") for p in parts) or parts[0] in own:
        return "refused", ""
    below = next((e for e in exclude if (name + "/").startswith(e)), None)
    if below is not None:
        return "excluded", below
    return "name", stitched_name(name) if is_event_file(name) else name


def extends(have: Sequence[Piece], pieces: Sequence[Piece]) -> bool:
    """Whether an event file's objects `pieces` only grew since `have` (its earlier objects
    unchanged, the last one longer or the same, new ones after it)."""
    if not have or len(have) > len(pieces) or list(have[:-1]) != list(pieces[:len(have) - 1]):
        return False
    key, size, _ = have[-1]
    now_key, now_size, _ = pieces[len(have) - 1]
    return key == now_key and now_size >= size


class Job:
    """What one file lacks: its bytes from `start` (stitched over its objects) to the end; and
    before them, where the file grew, the bytes `verify` (the copy's last), which the store
    must still hold (an object of the same name and a larger size may be another one)."""

    def __init__(self, name: str, pieces: List[Piece], local: str, start: int, verify: bytes = b"") -> None:
        self.name, self.pieces, self.local, self.start = name, pieces, local, start - len(verify)
        self.verify = bytearray(verify)
        # The bytes in the local (or staging) file.
        self.copied = start
        # An event file's record that is still incomplete.
        self.carry = bytearray()
        self.failed = False
        # Why an event file's copy ended.
        self.ended: Optional[str] = None

    def ranges(self, most: Optional[int] = None) -> List[Tuple["Job", str, int, int]]:
        """(job, key, start, end) of each range read, in order, each within `most` bytes
        (RANGE_BYTES), that fetches what the file lacks."""
        most = most or RANGE_BYTES
        found, offset = [], 0
        for key, size, _ in self.pieces:
            begin = max(offset, self.start)
            while begin < offset + size:
                end = min(offset + size, begin + most)
                found.append((self, key, begin - offset, end - offset))
                begin = end
            offset += size
        return found
