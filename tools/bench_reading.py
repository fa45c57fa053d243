"""Reading a big logdir back, in one run on one machine: 10 runs x 20 tags x 10,000 steps (2M
scalar events, about 84 MB, written by mxboard), read by `python -m mxboard report`, by
`mxboard.reader.table(logdir, "scalars")`, by TensorBoard's Python loader (EventMultiplexer, every
point kept) and by tbparse (where installed). Each in a fresh interpreter: seconds (the import
of the reader's modules excluded) and the process's peak memory (VmHWM).

    python tools/bench_reading.py [--runs 10 --tags 20 --steps 10000] [--skip-multiplexer]

Called by tools/bench.py (`make bench`); docs/report.md quotes its row."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

READERS = {
    "mxboard report": """
import mxboard.report
t0 = time.perf_counter()
said = mxboard.report.write(LOGDIR, os.path.join(OUT, "report.html"))
seconds = time.perf_counter() - t0
points = int(said[0].split("(")[1].split(" ")[0].replace(",", ""))
""",
    "mxboard.reader.table": """
import mxboard.reader
t0 = time.perf_counter()
points = len(mxboard.reader.table(LOGDIR, "scalars")["value"])
seconds = time.perf_counter() - t0
""",
    "EventMultiplexer": """
from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer
t0 = time.perf_counter()
mux = EventMultiplexer(size_guidance={"scalars": 0}).AddRunsFromDirectory(LOGDIR)
mux.Reload()
points = sum(len(mux.Scalars(run, tag)) for run, tags in mux.Runs().items() for tag in tags["scalars"])
seconds = time.perf_counter() - t0
""",
    "tbparse": """
from tbparse import SummaryReader
t0 = time.perf_counter()
points = len(SummaryReader(LOGDIR, pivot=False, extra_columns={"wall_time"}).scalars)
seconds = time.perf_counter() - t0
""",
}

RUNNER = """
import json, os, time
LOGDIR, OUT = {logdir!r}, {out!r}
{body}
peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps({{"seconds": seconds, "points": points, "peak_mb": int(peak) / 1024}}))
"""

WRITE = """
import sys
import numpy as np
from mxboard import SummaryWriter
root, runs, tags, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
for r in range(runs):
    with SummaryWriter("%s/run%02d" % (root, r)) as w:
        for step in range(steps):
            for t in range(tags):
                w.add_scalar("tag%02d" % t, float(rng.random()), step)
"""


def _installed(module):
    return subprocess.run([sys.executable, "-c", "import " + module], capture_output=True).returncode == 0


def main(runs=10, tags=20, steps=10_000, multiplexer=True):
    """The rows: {reader: {seconds, points, peak_mb}} (None for a reader not installed)."""
    work = tempfile.mkdtemp(prefix="bench-reading-")
    try:
        logdir = os.path.join(work, "logdir")
        subprocess.run([sys.executable, "-c", WRITE, logdir, str(runs), str(tags), str(steps)], check=True)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, names in os.walk(logdir) for f in names)
        print("reading %d runs x %d tags x %d steps (%s scalar events, %.0f MB):"
              % (runs, tags, steps, format(runs * tags * steps, ","), size / 1e6))
        rows = {}
        for name, body in READERS.items():
            if name == "EventMultiplexer" and not multiplexer or name == "tbparse" and not _installed("tbparse"):
                rows[name] = None
                print("  %-22s %s" % (name, "skipped" if name == "EventMultiplexer" else "not installed"))
                continue
            code = RUNNER.format(logdir=logdir, out=work, body=body)
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  env=dict(os.environ, PYTHONSAFEPATH="1"))
            if done.returncode != 0:
                raise SystemExit("%s failed:\n%s" % (name, done.stderr[-3000:]))
            row = rows[name] = json.loads(done.stdout.strip().splitlines()[-1])
            row["process_s"] = time.perf_counter() - t0
            print("  %-22s %8.2f s %8.0f MB peak  %s points  (%.1f s with the interpreter's start)"
                  % (name, row["seconds"], row["peak_mb"], format(row["points"], ","), row["process_s"]))
        ours, theirs = rows["mxboard report"], rows.get("EventMultiplexer")
        if theirs:
            print("  the report reads in %.0fx less time than EventMultiplexer (target: 20x, and <= 2 s, < 200 MB)"
                  % (theirs["seconds"] / ours["seconds"]))
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tags", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--skip-multiplexer", action="store_true", help="TensorBoard's loader takes minutes")
    options = parser.parse_args()
    main(options.runs, options.tags, options.steps, not options.skip_multiplexer)
