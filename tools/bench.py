"""The hot-path benchmark: mxboard side by side with its peers, in one run, on one machine.

    make bench                       # or: python tools/bench.py [--scalars N] [--json PATH]

Every case runs in a fresh interpreter per library (so no library warms another's caches), each
library on the same data. For each case it prints the caller's cost per call (wall time of the
logging loop, what the training loop loses; and the caller thread's CPU time), the time until
everything is on disk (loop plus close), and the ratio peer / mxboard. A JSON report is written
too (default: dist/bench.json).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Each library: how to import it and open a writer on LOGDIR.
LIBRARIES = {
    "mxboard": "from mxboard import SummaryWriter",
    "tensorboardX": "from tensorboardX import SummaryWriter",
    "torch.utils.tensorboard": "from torch.utils.tensorboard import SummaryWriter",
}

# Each case: setup code (with N), then the logging loop body (with i). The loop is timed; then
# close(), timed too.
CASES = {
    "add_scalar": ("", "w.add_scalar('loss', i * 0.001, i)"),
}

RUNNER = r"""
import json, sys, time
{import_line}
N = {n}
{setup}
w = SummaryWriter(LOGDIR)
w.add_scalar('warmup', 0.0, 0)
t0, c0 = time.perf_counter(), time.thread_time()
for i in range(N):
    {body}
t1, c1 = time.perf_counter(), time.thread_time()
w.close()
t2 = time.perf_counter()
print(json.dumps({{"call_us": (t1 - t0) / N * 1e6, "call_cpu_us": (c1 - c0) / N * 1e6,
                  "on_disk_s": t2 - t0}}))
"""


def available(library):
    probe = subprocess.run([sys.executable, "-c", LIBRARIES[library]], capture_output=True)
    return probe.returncode == 0


def run_case(library, case, n):
    setup, body = CASES[case]
    code = "LOGDIR = %r\n" % tempfile.mkdtemp(prefix="bench-") + RUNNER.format(
        import_line=LIBRARIES[library], n=n, setup=setup, body=body)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit("%s / %s failed:\n%s" % (library, case, proc.stderr))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scalars", type=int, default=100_000, help="calls per case")
    parser.add_argument("--json", default=os.path.join(ROOT, "dist", "bench.json"))
    args = parser.parse_args()
    libraries = [lib for lib in LIBRARIES if available(lib)]
    report = {"python": sys.version.split()[0], "calls": args.scalars, "results": {}}
    print("%-12s %-24s %12s %12s %12s %9s %9s" % (
        "case", "library", "call (us)", "call cpu", "on disk (s)", "x call", "x disk"))
    for case in CASES:
        results = report["results"][case] = {lib: run_case(lib, case, args.scalars) for lib in libraries}
        ours = results["mxboard"]
        for lib, r in results.items():
            r["ratio_call"] = r["call_us"] / ours["call_us"]
            r["ratio_on_disk"] = r["on_disk_s"] / ours["on_disk_s"]
            print("%-12s %-24s %12.2f %12.2f %12.3f %9.1f %9.1f" % (
                case, lib, r["call_us"], r["call_cpu_us"], r["on_disk_s"], r["ratio_call"], r["ratio_on_disk"]))
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
    print("report:", args.json)


if __name__ == "__main__":
    main()
