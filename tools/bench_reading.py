"""Reading a big logdir back, at two tag counts: the same 2M scalar events (10 runs of 200,000
events each), written by mxboard once as 20 tags x 10,000 steps a run and once as 20,000 tags x 10
steps a run (the same tag names' length, so the same bytes), each read by `python -m mxboard report`
(mxboard.report.write, what the command runs), by `mxboard.reader.table(logdir, "scalars")`, by
`mxboard.reader.scalars` (where pandas is installed), by TensorBoard's Python loader
(EventMultiplexer, every point kept) and by tbparse (where installed); and by the scanner alone
(`mxboard._reading.scan.scan_file`, every window consumed) at three window sizes. Each in a fresh
interpreter: seconds (the import of the reader's modules excluded) and the process's peak memory
(VmHWM). The last column is the seconds at the most tags over the seconds at the fewest: reading
should grow with events and bytes, not with tags (issue 66's target: within 2x, at any window).

    python tools/bench_reading.py [--runs 10] [--events 200000] [--tags 20,20000]
                                  [--windows 64K,1M,8M] [--skip-multiplexer] [--json PATH]

`--runs 1` is the same shapes at a tenth of the events (200k). Called by tools/bench.py (`make
bench`); docs/report.md and docs/performance.md quote its rows.

Then a sweep of small runs (issue 74): 3,000 runs of 10 points (one tag) and 1,000 runs of 3 tags x
100 points, each run a file of its own, read by `mxboard.reader.table(logdir, "scalars")` beside
mxboard's record-by-record reader (`mxboard.reader.read_events` over the logdir, every Event
parsed by protobuf, no table built), each the best of three fresh interpreters, interleaved. The
target: the table within 1x of the record-by-record reader. Those rows alone:

    python tools/bench_reading.py --sweep [--sweep-shapes 3000x1x10,1000x3x100] [--repeats 3]"""
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
t0, cpu = time.perf_counter(), time.process_time()
said = mxboard.report.write(LOGDIR, os.path.join(OUT, "report.html"))
seconds = time.perf_counter() - t0
count = int(said[0].split("(")[1].split(" ")[0].replace(",", ""))
# The processor's seconds too: on a shared machine they vary less than the clock's.
extra = {"page_mb": os.path.getsize(os.path.join(OUT, "report.html")) / 1e6, "cpu_s": time.process_time() - cpu}
""",
    # The report's reading alone (what `report` reads before it writes its page), so that the
    # page's work, which grows with the series it draws, is told apart from the reading.
    "mxboard report, reading only": """
import importlib
collect = importlib.import_module("mxboard.report.collect")
t0 = time.perf_counter()
found = collect.collect(LOGDIR)
seconds = time.perf_counter() - t0
count = sum(len(series[0]) for series in found.scalars.values())
""",
    "mxboard.reader.table": """
import mxboard.reader
t0 = time.perf_counter()
count = len(mxboard.reader.table(LOGDIR, "scalars")["value"])
seconds = time.perf_counter() - t0
""",
    "mxboard.reader.scalars": """
import pandas, mxboard.reader
t0 = time.perf_counter()
count = len(mxboard.reader.scalars(LOGDIR))
seconds = time.perf_counter() - t0
""",
    "EventMultiplexer": """
from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer
t0 = time.perf_counter()
mux = EventMultiplexer(size_guidance={"scalars": 0}).AddRunsFromDirectory(LOGDIR)
mux.Reload()
count = sum(len(mux.Scalars(run, tag)) for run, tags in mux.Runs().items() for tag in tags["scalars"])
seconds = time.perf_counter() - t0
""",
    "tbparse": """
from tbparse import SummaryReader
t0 = time.perf_counter()
count = len(SummaryReader(LOGDIR, pivot=False, extra_columns={"wall_time"}).scalars)
seconds = time.perf_counter() - t0
""",
}

# The readers that need a package mxboard does not depend on: the row says "not installed".
NEEDS = {"mxboard.reader.scalars": "pandas", "tbparse": "tbparse"}

# TensorBoard's loaders, which take over a minute at 2M events: --skip-multiplexer skips them.
PEERS = ("EventMultiplexer", "tbparse")

# The scanner alone: every window of every event file consumed, nothing read from a window but
# that it came, so that the scanner's Window may change without this row changing.
SCAN = """
from mxboard._reading.scan import scan_file
from mxboard.reader import event_files
paths = event_files(LOGDIR)
t0 = time.perf_counter()
count = 0
for path in paths:
    for _ in scan_file(path, window_bytes=WINDOW):
        count += 1
seconds = time.perf_counter() - t0
"""

RUNNER = """
import json, os, time
LOGDIR, OUT, WINDOW = {logdir!r}, {out!r}, {window!r}
extra = {{}}
{body}
peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps(dict(extra, seconds=seconds, count=count, peak_mb=int(peak) / 1024)))
"""

# The values are drawn before the loop, so that the writing is mostly add_scalar's own time.
WRITE = """
import sys
import numpy as np
from mxboard import SummaryWriter
root, runs, tags, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
names = ["tag%05d" % t for t in range(tags)]
for r in range(runs):
    values = iter(rng.random(tags * steps).tolist())
    with SummaryWriter("%s/run%02d" % (root, r)) as w:
        for step in range(steps):
            for name in names:
                w.add_scalar(name, next(values), step)
"""


def _installed(module):
    return subprocess.run([sys.executable, "-c", "import " + module], capture_output=True).returncode == 0


def _size(text):
    """Bytes from a size such as 65536, 64K or 8M (binary units)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("IB")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1:] in units else int(text)


def _n(number):
    """A count with thousands separators: 2,000,000."""
    return format(number, ",")


def _binary(size):
    """A byte count as 64 KiB, 1 MiB, 8 MiB."""
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= unit and size % unit == 0:
            return "%d %s" % (size // unit, name)
    return "%d B" % size


def _measure(body, logdir, out, window, timeout):
    """One reader's row, in a fresh interpreter: {seconds, count, peak_mb, process_s}, or
    {timed_out} where it ran past `timeout` seconds."""
    code = RUNNER.format(logdir=logdir, out=out, window=window, body=body)
    t0 = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ, PYTHONSAFEPATH="1"))
    except subprocess.TimeoutExpired:
        return {"timed_out": timeout}
    if done.returncode != 0:
        raise SystemExit("reading %s failed:\n%s" % (logdir, done.stderr[-3000:]))
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["process_s"] = time.perf_counter() - t0
    return row


def _cell(row, unit):
    """A row's figures in one column of the table."""
    if row is None:
        return "-"
    if "timed_out" in row:
        return "over %d s" % row["timed_out"]
    return "%7.2f s %6.0f MB %11s %s" % (row["seconds"], row["peak_mb"], _n(row["count"]), unit)


def main(runs=10, events=200_000, tag_counts=(20, 20_000), windows=(64 << 10, 1 << 20, 8 << 20), multiplexer=True,
         timeout=1800, sweep_shapes=None):
    """Write one logdir a tag count, read each with every reader, and print the table; then the
    sweep's rows (`sweep`) at `sweep_shapes` (by default SWEEP_SHAPES; none where it is empty).

    Returns {"logdirs": {tags: {runs, tags, steps, events, mb, write_s}}, "readers": {reader: {tags:
    row}}, "ratios": {reader: seconds at the most tags / seconds at the fewest}}, with the tag counts
    as strings; a row is {seconds, count, peak_mb, process_s} (count: the points, or the scanner's
    windows; the report's row adds page_mb), {timed_out}, or None for a reader skipped or not
    installed. The scanner's readers are named "scan_file, <window> windows". The sweep's rows
    are under "sweep"."""
    tag_counts = sorted(tag_counts)
    work = tempfile.mkdtemp(prefix="bench-reading-")
    try:
        logdirs, result = {}, {"logdirs": {}, "readers": {}, "ratios": {}}
        for tags in tag_counts:
            steps = events // tags
            logdir = logdirs[tags] = os.path.join(work, "tags%d" % tags)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", WRITE, logdir, str(runs), str(tags), str(steps)], check=True)
            size = sum(os.path.getsize(os.path.join(d, f)) for d, _, names in os.walk(logdir) for f in names)
            result["logdirs"][str(tags)] = {"runs": runs, "tags": tags, "steps": steps, "events": runs * tags * steps,
                                            "mb": size / 1e6, "write_s": time.perf_counter() - t0}
        print("reading %d run%s of %s scalar events each, at %d tag counts (each in a fresh interpreter; the last "
              "column is the time at %s tags over the time at %s):"
              % (runs, "s" * (runs != 1), _n(events), len(tag_counts), _n(tag_counts[-1]), _n(tag_counts[0])))
        for tags in tag_counts:
            shape = result["logdirs"][str(tags)]
            print("  %6s tags x %6s steps a run: %s events, %.1f MB, written in %.1f s" % (
                _n(tags), _n(shape["steps"]), _n(shape["events"]), shape["mb"],
                shape["write_s"]))
        print("  %-30s" % "reader" + "".join("%-42s" % ("%s tags" % _n(tags)) for tags in tag_counts)
              + "time ratio (peak ratio)")
        cases = [(name, body, None, "points") for name, body in READERS.items()]
        cases += [("scan_file, %s windows" % _binary(window), SCAN, window, "windows") for window in windows]
        for name, body, window, unit in cases:
            rows = result["readers"][name] = {}
            if name in PEERS and not multiplexer:
                said = "skipped (--skip-multiplexer)"
            elif name in NEEDS and not _installed(NEEDS[name]):
                said = "not installed (%s)" % NEEDS[name]
            else:
                said = None
            if said:
                rows.update((str(tags), None) for tags in tag_counts)
                print("  %-30s %s" % (name, said))
                continue
            for tags in tag_counts:
                rows[str(tags)] = _measure(body, logdirs[tags], work, window, timeout)
            first, last = rows[str(tag_counts[0])], rows[str(tag_counts[-1])]
            ratio = None
            if "seconds" in first and "seconds" in last and first["seconds"] > 0:
                ratio = result["ratios"][name] = last["seconds"] / first["seconds"]
            print("  %-30s" % name + "".join("%-42s" % _cell(rows[str(tags)], unit) for tags in tag_counts)
                  + ("%5.1fx (%.1fx)" % (ratio, last["peak_mb"] / first["peak_mb"]) if ratio else "-"))
        report, theirs = result["readers"]["mxboard report"], result["readers"].get("EventMultiplexer") or {}
        pages = ["%.1f MB at %s tags" % (report[str(tags)]["page_mb"], _n(tags)) for tags in tag_counts
                 if "page_mb" in report[str(tags)]]
        if pages:
            print("  the report's page: %s" % ", ".join(pages))
        few, most = report[str(tag_counts[0])], report[str(tag_counts[-1])]
        if few and most and "seconds" in few and "seconds" in most:
            # The report's own targets (docs/report.md): at 2M events of 20 tags under 2 s and 200 MB,
            # and at the most tags within 2x of the fewest.
            print("  the report at %s tags: %.2f s (%.2f s of processor), %.0f MB (target: under 2 s and 200 MB at "
                  "10 runs x 200,000 events); at %s tags %.1fx its time (%.1fx of processor; target: 2x)"
                  % (_n(tag_counts[0]), few["seconds"], few["cpu_s"], few["peak_mb"], _n(tag_counts[-1]),
                     most["seconds"] / few["seconds"], most["cpu_s"] / few["cpu_s"]))
        both = [str(tags) for tags in tag_counts if "seconds" in (theirs.get(str(tags)) or {})
                and "seconds" in report[str(tags)]]
        if both:
            print("  EventMultiplexer's time over the report's: %s (target: 20x, and the report <= 2 s and < 200 MB, "
                  "at 20 tags)" % ", ".join("%.1fx at %s tags" % (theirs[tags]["seconds"] / report[tags]["seconds"],
                                                                  _n(int(tags))) for tags in both))
        ours = {name: ratio for name, ratio in result["ratios"].items() if name not in PEERS}
        if ours:
            worst = max(ours, key=ours.get)
            print("  time at %s tags over %s, target <= 2x for every mxboard reader and window: %s (worst %.1fx, %s)"
                  % (_n(tag_counts[-1]), _n(tag_counts[0]), "met" if ours[worst] <= 2 else "NOT met", ours[worst],
                     worst))
        if sweep_shapes is None or sweep_shapes:
            result["sweep"] = sweep(SWEEP_SHAPES if sweep_shapes is None else sweep_shapes, timeout=timeout)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


# A sweep: RUNS runs of TAGS tags x STEPS steps, each run a file of its own, the tags named alike
# in every run.
WRITE_SWEEP = """
import sys
from mxboard import SummaryWriter
root, runs, tags, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
names = ["tag%02d" % t for t in range(tags)]
for r in range(runs):
    with SummaryWriter("%s/run%05d" % (root, r)) as w:
        for step in range(steps):
            for t, name in enumerate(names):
                w.add_scalar(name, r * 0.001 + t + step * 0.5, step)
"""

# The sweep's readers: the table, and mxboard's record-by-record reader (every record framed and
# its CRCs checked, every Event parsed by protobuf).
SWEEP_READERS = {
    "mxboard.reader.table": READERS["mxboard.reader.table"],
    "read_events, record by record": """
import mxboard.reader
t0 = time.perf_counter()
count = sum(1 for _ in mxboard.reader.read_events(LOGDIR))
seconds = time.perf_counter() - t0
""",
}

# The sweep's shapes: (runs, tags, steps).
SWEEP_SHAPES = ((3000, 1, 10), (1000, 3, 100))


def _shape_name(shape):
    runs, tags, steps = shape
    return "%s runs of %s" % (_n(runs), "%d points" % steps if tags == 1 else "%d x %d points" % (tags, steps))


def sweep(shapes=SWEEP_SHAPES, repeats=3, timeout=600):
    """Write each sweep's logdir, read it with the table and record by record, `repeats` times
    each in fresh interpreters, interleaved, and print the best of each beside the ratio.

    Returns {shape name: {runs, tags, steps, events, files, mb, write_s, readers: {reader: best
    row}, ratio}}: a row is as in `main`, with the seconds of every repeat added as `all_s`; the
    ratio is the table's best seconds over the record-by-record reader's."""
    work = tempfile.mkdtemp(prefix="bench-sweep-")
    try:
        result = {}
        print("reading a sweep of small runs, one file a run (each reader the best of %d fresh interpreters, "
              "interleaved; target: mxboard.reader.table <= 1x the record-by-record reader):" % repeats)
        for shape in shapes:
            runs, tags, steps = shape
            logdir = os.path.join(work, "%dx%dx%d" % shape)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", WRITE_SWEEP, logdir, str(runs), str(tags), str(steps)], check=True)
            paths = [os.path.join(d, f) for d, _, names in os.walk(logdir) for f in names]
            row = result[_shape_name(shape)] = {
                "runs": runs, "tags": tags, "steps": steps, "events": runs * tags * steps, "files": len(paths),
                "mb": sum(os.path.getsize(path) for path in paths) / 1e6, "write_s": time.perf_counter() - t0}
            print("  %s (%d tag%s a run): %s events in %s files, %.1f MB, written in %.1f s" % (
                _shape_name(shape), tags, "s" * (tags != 1), _n(row["events"]), _n(row["files"]), row["mb"],
                row["write_s"]))
            times = {name: [] for name in SWEEP_READERS}
            best = row["readers"] = {}
            for _ in range(repeats):
                for name, body in SWEEP_READERS.items():
                    measured = _measure(body, logdir, work, None, timeout)
                    if "seconds" in measured:
                        times[name].append(measured["seconds"])
                        if name not in best or measured["seconds"] < best[name]["seconds"]:
                            best[name] = measured
                    else:
                        best.setdefault(name, measured)
            for name in SWEEP_READERS:
                best[name]["all_s"] = times[name]
        print("  %-32s" % "reader" + "".join("%-42s" % name for name in result))
        for reader in SWEEP_READERS:
            print("  %-32s" % reader + "".join("%-42s" % _small_cell(row["readers"][reader], "points" if "table"
                                                                        in reader else "events")
                                               for row in result.values()))
        ratios = []
        for name, row in result.items():
            ours, theirs = (row["readers"][reader] for reader in SWEEP_READERS)
            if "seconds" in ours and "seconds" in theirs:
                row["ratio"] = ours["seconds"] / theirs["seconds"]
                ratios.append("%.2fx at %s (%.0f us a file)" % (row["ratio"], name,
                                                                 ours["seconds"] / row["files"] * 1e6))
        if ratios:
            worst = max(row.get("ratio", 0) for row in result.values())
            print("  the table's time over the record-by-record reader's, target <= 1x: %s: %s"
                  % (", ".join(ratios), "met" if worst <= 1 else "NOT met"))
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _small_cell(row, unit):
    """`_cell`, with milliseconds: a sweep is read in a tenth of a second."""
    if "timed_out" in row:
        return "over %d s" % row["timed_out"]
    return "%7.3f s %5.0f MB %9s %s" % (row["seconds"], row["peak_mb"], _n(row["count"]), unit)


def _shapes(text):
    """Sweep shapes from RUNSxTAGSxSTEPS,...: 3000x1x10,1000x3x100."""
    return [tuple(int(n) for n in shape.split("x")) for shape in text.split(",")]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs in each logdir (default: %(default)s)")
    parser.add_argument("--events", type=int, default=200_000, help="scalar events a run (default: %(default)s)")
    parser.add_argument("--tags", default="20,20000", help="the tag counts a run, comma-separated: each a logdir of "
                        "--events / tags steps a tag (default: %(default)s)")
    parser.add_argument("--windows", default="64K,1M,8M", help="the scanner's window sizes (default: %(default)s)")
    parser.add_argument("--skip-multiplexer", action="store_true",
                        help="skip TensorBoard's loaders (EventMultiplexer, tbparse): over a minute each at 2M events")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds one reader may take (default: %(default)s)")
    parser.add_argument("--sweep", action="store_true", help="only the sweep's rows: many small runs")
    parser.add_argument("--no-sweep", action="store_true", help="no sweep's rows: the big logdirs only")
    parser.add_argument("--sweep-shapes", default="3000x1x10,1000x3x100",
                        help="the sweeps, RUNSxTAGSxSTEPS, comma-separated (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="fresh interpreters a sweep's reader (default: "
                        "%(default)s; the best is shown)")
    parser.add_argument("--json", help="also write the rows to this file")
    options = parser.parse_args()
    rows = {}
    if not options.sweep:
        rows = main(options.runs, options.events, [int(t) for t in options.tags.split(",")],
                    [_size(w) for w in options.windows.split(",")], not options.skip_multiplexer, options.timeout,
                    sweep_shapes=())
    if not options.no_sweep:
        rows["sweep"] = sweep(_shapes(options.sweep_shapes), options.repeats)
    if options.json:
        with open(options.json, "w") as f:
            json.dump(rows, f, indent=2)
