"""A big first pass's scanning process, started by the launcher before TensorBoard's imports.

The server imports TensorBoard for about 0.4 s before its loader lists the logdir. Where the
logdir lies on a local disk and holds `SPREAD_RUNS` entries or more, the launcher starts the
scanner's child process first (`start`), with the plan of the batches that the loader's first
pass will send it (mxboard._reading.scan_ahead): the child lists the runs and scans their small
files meanwhile, on the second core. The loader takes it (`taken`) as its first pass lists the
runs. A logdir whose runs lie deeper (a directory of sweeps of runs) starts the child as the
loader lists them, as before.
"""
import itertools
import os
from typing import Dict, Optional

from mxboard._reading.scan_ahead import Plan
from mxboard._reading.scan_process import ScanProcess
from tensorboard_bundle.loader.ingest import SMALL, SPREAD_BATCH
from tensorboard_bundle.loader.watch import is_local

__all__ = ["HELD", "SPREAD_RUNS", "start", "taken"]

# A first pass of this many runs or more, on a local disk, is scanned by a second process, and
# read so many runs at a time (logdir.py).
SPREAD_RUNS = 2_000
# The most bytes of files scanned ahead and not yet asked for.
HELD = 64 << 20
# {logdir: its scanning process, started and not yet taken}
_started: Dict[str, ScanProcess] = {}


def start(logdir: str) -> None:
    """Start `logdir`'s scanning process, where its top directory holds SPREAD_RUNS entries or
    more and lies on a local disk."""
    try:
        with os.scandir(logdir) as found:
            count = sum(1 for _ in itertools.islice(found, SPREAD_RUNS))
    except OSError:
        return
    if count >= SPREAD_RUNS and is_local(logdir):
        _started[logdir] = ScanProcess(Plan(logdir, SPREAD_RUNS, SPREAD_BATCH, SMALL, HELD))


def taken(logdir: str) -> Optional[ScanProcess]:
    """The scanning process started for `logdir`, now the caller's; any other one started is
    ended."""
    mine = _started.pop(logdir, None)
    while _started:
        _started.popitem()[1].close()
    return mine
