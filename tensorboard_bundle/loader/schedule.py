"""When each directory of a polled logdir is checked next, within a budget of filesystem calls.

Polling is what a logdir on a network filesystem (NFS, SMB, Lustre, GPFS, FUSE...) gets, where
inotify does not see the writes of other machines (watch.py). Each check costs a few calls (a stat
of the directory, one of each event file; a listing where the directory changed), each a round trip
to the server (about a millisecond). A run being written is checked every reload interval, a quiet
one less and less often, and all checks are paid from one budget of calls a second that does not
grow with the runs: `Schedule` says how, and how late a quiet run is seen.

This module only plans: it makes no filesystem call and reads the time it is given.
"""
import heapq
import itertools
import math
from typing import Dict, Hashable, List, Optional, Tuple

__all__ = ["Schedule"]

# A quiet directory is checked again after this part of its silence.
QUIET_FRACTION = 0.25


class Schedule:
    """The plan of checks over a set of keys (directories); times are `time.monotonic()`'s.

    - A directory that changed recently is checked every `interval` (the reload interval): a point
      logged to a run being written is served within that, plus a check's time.
    - A quiet directory is checked less and less often: after `quiet` seconds without a change, every
      `quiet / 4` seconds (a run quiet for a minute is checked every 15 seconds), at most every `cap`
      seconds. The first point a run logs after a long silence is thus seen late by at most a
      quarter of its silence, and at most `cap`.
    - Every check is paid from one budget of `budget` calls a second (a bucket that holds a second of
      it). The calls a second stay under `budget` however many runs the logdir holds; what grows with
      the runs is how late a quiet run is seen: checking all of them costs about `calls_per_check x
      directories` calls, so a run quiet for a day is seen when it grows again within about
      `max(cap, calls_per_check x directories / budget)` seconds (logdir.py's runs get 4 calls a
      second, a check of a run 2: 60 s up to 120 runs, 150 s at 300, 17 minutes at 2,000).
    - Of the directories due, one whose last check found it changed (a run being written) goes
      first, then the one checked most often (they are classed by their period: the reload interval,
      twice it, four times...): a run being written is never starved by a backlog of quiet runs;
      within a class, the longest due goes first, and of those due at once the last written (of a
      logdir's runs, first planned all at once, the one being written goes first). Where more runs
      are written at once than the budget checks every interval, they share it, each in turn.
    - A directory is first planned by the age of its newest file: a run written a minute before the
      server started is checked every 15 seconds, one written a day before every `cap` seconds.
    """

    def __init__(self, interval: float, budget: float, cap: float = 60.0) -> None:
        if interval <= 0:
            raise ValueError("interval must be > 0 seconds, not %r" % (interval,))
        if budget <= 0:
            raise ValueError("budget must be > 0 calls a second, not %r" % (budget,))
        self.interval = interval
        self.budget = budget
        self.cap = max(cap, interval)
        # {key: (when it last changed, when it is due)}
        self._items: Dict[Hashable, Tuple[float, float]] = {}
        # {class: (due, -changed_at, order, key) of each key checked every interval x 2^class, a
        # heap: of those due at once, the last changed first}; an entry whose due no longer
        # matches _items is stale and passed over.
        self._classes: Dict[int, List[Tuple[float, float, int, Hashable]]] = {}
        self._order = itertools.count()
        # The bucket: calls that may be spent now (negative after a costly check), as of `_at`.
        self._tokens = budget
        self._at: Optional[float] = None

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def add(self, key: Hashable, changed_at: float, now: float) -> None:
        """Plan `key`, last changed at `changed_at` (its newest file's age, on this clock)."""
        self._plan(key, changed_at, now)

    def remove(self, key: Hashable) -> None:
        """Plan `key` no more."""
        self._items.pop(key, None)

    def checked(self, key: Hashable, changed: bool, cost: int, now: float) -> None:
        """`key` was checked at `now`, at a cost of `cost` calls; `changed`: it had changed."""
        self.spend(cost, now)
        if key in self._items:
            self._plan(key, now if changed else self._items[key][0], now)

    def spend(self, cost: int, now: float) -> None:
        """Pay `cost` calls out of the budget (a check's, or a listing's outside the plan)."""
        self._refill(now)
        self._tokens -= cost

    def next(self, now: float) -> Tuple[Optional[Hashable], float]:
        """(the key to check now, 0) or (None, the seconds until one may be)."""
        self._refill(now)
        wait = self.cap
        for _, heap in sorted(self._classes.items()):
            while heap:
                due, _, _, key = heap[0]
                if self._items.get(key, (0.0, None))[1] != due:
                    heapq.heappop(heap)
                    continue
                if due > now:
                    wait = min(wait, due - now)
                    break
                if self._tokens < 1:
                    return None, (1 - self._tokens) / self.budget
                heapq.heappop(heap)
                return key, 0.0
        return None, wait

    def _plan(self, key: Hashable, changed_at: float, now: float) -> None:
        quiet = now - changed_at
        wait = min(self.cap, max(self.interval, quiet * QUIET_FRACTION))
        due = now + wait
        self._items[key] = (changed_at, due)
        # A key whose last check found it changed (a run being written) goes before every other.
        rank = -1 if changed_at >= now else max(0, math.ceil(math.log2(wait / self.interval) - 1e-9))
        heapq.heappush(self._classes.setdefault(rank, []), (due, -changed_at, next(self._order), key))

    def _refill(self, now: float) -> None:
        if self._at is not None:
            self._tokens = min(self.budget, self._tokens + (now - self._at) * self.budget)
        self._at = now
