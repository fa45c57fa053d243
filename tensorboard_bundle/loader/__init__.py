"""The bundle's own data loader, the server's default (`--load_fast=mxboard` names it): an
in-process TensorBoard data provider on mxboard's CRC-checked reading.

walk.py finds the runs below a logdir; run.py reads a run's event files into its index:
ingest.py reads each file from where the last read stopped, index.py keeps a run's tags in memory
(scalars as numpy columns, every point; where each tensor's and blob's record lies); blobs.py
reads those records back on request, downsample.py picks what a plugin's budget allows (each
bucket's extremes, the first and the last point), logdir.py reads the runs again where they
change, on a thread (told by the kernel on a local disk: watch.py; polled within a budget of calls
on a network filesystem: schedule.py), and provider.py answers TensorBoard's DataProvider calls.
ahead.py starts a big first pass's scanning process before TensorBoard's imports: this package
imports its modules when they are asked for, so that the launcher imports ahead.py without them.
"""
import importlib
from typing import Any

__all__ = ["Logdir", "MxboardDataProvider", "start"]

# {name: the module that defines it}
_DEFINED = {"Logdir": "logdir", "MxboardDataProvider": "provider", "start": "provider"}


def __getattr__(name: str) -> Any:
    if name not in _DEFINED:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    return getattr(importlib.import_module("tensorboard_bundle.loader." + _DEFINED[name]), name)
