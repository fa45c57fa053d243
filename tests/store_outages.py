"""Helpers for the tests of an object store that stops answering (test_spool.py,
test_store_at_exit.py): a child process that logs through an outage, and images that PNG cannot
shrink."""
import contextlib
import os
import subprocess
import sys
import time

import numpy as np

from mxboard import UploadPolicy


def image_of_one_mib(step):
    """A 1 MiB image that PNG cannot shrink (random pixels), its first pixel its step."""
    pixels = np.random.default_rng(step).integers(0, 256, (512, 512, 4), dtype=np.uint8)
    pixels[0, 0, 0] = step % 256
    return pixels


def spool_after_one_mib(monkeypatch, spool, flush_secs):
    """What waits past 1 MiB goes to the spool directory `spool` (None: the default); a hung put
    gives up in 2 s; flush() and close() wait `flush_secs` for the store."""
    if spool is not None:
        monkeypatch.setenv("MXBOARD_SPOOL_DIR", str(spool))
    return UploadPolicy(max_unsent=1 << 20, request_secs=2, flush_secs=flush_secs)


@contextlib.contextmanager
def child_in_an_outage(proxy, script, args, spool, outage="hang", **popen):
    """A child process running `script` with mxboard from this checkout and `spool` as its spool
    directory: once it prints "ready", the store goes down (`outage`) and the child is told to
    go on. At the end it is killed if still running, and the store is back."""
    from conftest import ROOT

    env = dict(os.environ, MXBOARD_SPOOL_DIR=str(spool), PYTHONPATH=os.path.join(ROOT, "python"))
    with subprocess.Popen([sys.executable, "-c", script] + list(args), env=env, text=True, bufsize=1,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen) as child:
        try:
            assert child.stdout.readline().strip() == "ready", child.stderr.read()
            proxy.set(outage)
            child.stdin.write("go\n")
            child.stdin.flush()
            yield child
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            proxy.set("pass")


def until_spooled(spool, size, seconds=60):
    """Wait until a spool file below `spool` holds `size` bytes (a failure after `seconds`)."""
    deadline = time.monotonic() + seconds
    while not [p for p in spool.rglob("*spooling*") if p.stat().st_size >= size]:
        assert time.monotonic() < deadline, "nothing spooled"
        time.sleep(0.05)
