"""The objects of one event file in a store (`Parts`), and how whole records are taken from what
waits for them (`take_records`)."""
from __future__ import annotations

import posixpath
import secrets
from typing import Deque, List, Tuple

from ..._format.events import event_file_name, whole_records
from ..._format.names import part_key

__all__ = ["Parts", "take_records"]

# The writer's own records: any length it wrote is whole.
MAX_OBJECT_RECORD = 1 << 62


class Parts:
    """The objects of an event file: their keys, `base` (named with no request to the store, so
    that opening a file never waits on it: a random 64-bit token, so that it is another writer's
    key only if that one had the same host, pid, second and token), then `<base>.part0001` ...
    `.part9999`, `.partz10000`, `.partzz100000` (a `z` for each digit past four: names sort in creation
    order for ever); the current part's bytes as last put, whether the store acknowledged them,
    and the acknowledged size of each part. Its owner's lock guards it."""

    def __init__(self, directory: str, suffix: str, first_part: int = 1) -> None:
        # The number of the second object.
        self._first = first_part
        self.base = posixpath.join(directory, event_file_name(suffix, token=".%s" % secrets.token_hex(8)))
        self._part, self._object, self._confirmed = 0, b"", True
        self._sizes: List[int] = []
        # Bytes put, for the 2x budget.
        self._uploaded = 0

    def abandon(self) -> None:
        """In a forked child: nothing left to confirm (the parent uploads it)."""
        self._confirmed = True

    def key(self, part: int) -> str:
        return part_key(self.base, part - 1 + self._first) if part else self.base

    def body(self, waiting: Deque[bytes], waiting_bytes: int, logged: int, cap: int) -> Tuple[int, bytes, int]:
        """(part, body, bytes taken from `waiting`) of the next put. The current part is extended
        while it stays within `cap` (the policy's max_object, or less on a slow link) and the file's uploads
        within twice its `logged` bytes; otherwise the next part begins. A part whose last put
        was not acknowledged (the store may hold it) is put again with the same bytes, nothing
        added: no record is ever in two objects, and a put that was cut but lands late (its bytes
        were still on their way) holds what the store holds anyway."""
        if not self._confirmed:
            return self._part, self._object, 0
        extend = len(self._object) + waiting_bytes
        if self._object and (extend > cap or self._uploaded + extend > 2 * logged):
            # The current part stays as it is.
            self._part, self._object = self._part + 1, b""
        taken = take_records(waiting, cap - len(self._object), at_least_one=not self._object)
        self._object = self._object + b"".join(taken)
        self._confirmed = False
        return self._part, self._object, sum(len(piece) for piece in taken)

    def acknowledge(self, part: int, body: bytes) -> None:
        if part == len(self._sizes):
            self._sizes.append(0)
        self._sizes[part] = len(body)
        self._uploaded += len(body)
        self._confirmed = True

    def unconfirmed(self) -> int:
        """Bytes of the current part that the store has not acknowledged."""
        return 0 if self._confirmed else len(self._object)

    def unconfirmed_bytes(self) -> bytes:
        return b"" if self._confirmed else self._object

    def pending_part(self) -> int:
        """The part that what is not yet stored goes to: the current one while the store may
        hold it (its put not acknowledged) or it is empty, else the next."""
        if not self._confirmed or not self._object:
            return self._part
        return self._part + 1

    def kept(self, last: int) -> None:
        """What was pending is kept on disk up to part `last`: the next put starts the part after."""
        self._part, self._object, self._confirmed = last + 1, b"", True

    def acknowledged(self) -> List[Tuple[str, int]]:
        """(key, bytes) of each object the store acknowledged, in order."""
        return [(self.key(i), size) for i, size in enumerate(self._sizes)]


def take_records(waiting: Deque[bytes], room: int, at_least_one: bool) -> List[bytes]:
    """Take whole records from the front of `waiting` (a deque of bytes, each whole records)
    within `room` bytes (the first record alone if it is longer and `at_least_one`), splitting a
    piece at a record boundary where it does not fit. Returns the pieces taken."""
    taken: List[bytes] = []
    while waiting and (room > 0 or at_least_one and not taken):
        piece = waiting[0]
        if len(piece) > room:
            cut, _ = whole_records(piece, MAX_OBJECT_RECORD, room=room, at_least_one=at_least_one and not taken)
            if not cut:
                break
            if cut < len(piece):
                waiting[0], piece = piece[cut:], piece[:cut]
            else:
                waiting.popleft()
        else:
            waiting.popleft()
        taken.append(piece)
        room -= len(piece)
    return taken
