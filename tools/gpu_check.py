"""The GPU check (issue 62) as one command: `make gpu-check`, or `python3 tools/gpu_check.py` on a
GPU machine that has no `make` or no network.

It runs, each step's output into one log (gpu-check.log):
1. what the machine has: torch and its CUDA, the card, CuPy, JAX, NVML (summary.json);
2. `pytest -m gpu tests/test_gpu.py`: every add_* of a CUDA tensor under torch's sync debug mode,
   CuPy's and JAX's arrays through every add_* on their own paths, the values as TensorBoard's
   loader reads them, the system metrics' GPU rows (pytest-gpu.xml);
3. tools/bench_gpu.py: S1 and S2, no logger, the limit, torch, tensorboardX and mxboard (bench-gpu.json);
4. the system metrics' GPU rows, sampled while the GPU works (summary.json).

The figures go to one folder: $OUT where it is set, else dist/gpu-check (or --out). The wheels
that `make gpu-wheels` put in .whl/ (what the GPU machine's image lacks) are installed first, into
a folder of their own. Without a CUDA GPU it runs what a CPU allows (the GPU tests are collected
and skip, the bench checks itself with --cpu, the system metrics are sampled), says "no CUDA GPU:
nothing measured", and exits 0 where those passed.
"""
import argparse
import atexit
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = r"""
import json, platform
found = {"python": platform.python_version()}
try:
    import torch
    found["torch"] = torch.__version__
    found["torch_cuda"] = torch.version.cuda
    found["cuda"] = torch.cuda.is_available()
    if found["cuda"]:
        found["card"] = torch.cuda.get_device_name()
except ImportError:
    found["cuda"] = False
for name in ("cupy", "jax", "tensorboard", "tensorboardX", "protobuf", "numpy", "pynvml"):
    try:
        module = __import__("google.protobuf" if name == "protobuf" else name, fromlist=["_"])
        found[name] = getattr(module, "__version__", "installed")
    except Exception as exc:
        found[name] = "missing: %s" % exc.__class__.__name__
if not found["jax"].startswith("missing"):
    try:
        import jax
        found["jax_gpus"] = len(jax.devices("gpu"))
    except Exception as exc:
        found["jax_gpus"] = "none: %s" % exc.__class__.__name__
print(json.dumps(found))
"""

METRICS = r"""
import json, tempfile, time
from mxboard import SummaryWriter
from mxboard.system_metrics import SystemMetrics
with tempfile.TemporaryDirectory() as logdir, SummaryWriter(logdir) as writer:
    metrics = SystemMetrics(writer, interval=3600)
    try:
        import torch
        if torch.cuda.is_available():
            heavy = torch.randn(8192, 8192, device="cuda")
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                heavy = heavy @ heavy / 8192
                torch.cuda.synchronize()
    except ImportError:
        pass
    sampled = metrics.sample()
    metrics.stop()
print(json.dumps({tag: value for tag, value in sampled.items() if tag.startswith("system/gpu")}))
"""


class Log:
    """The check's one log, echoed as it is written (a device run shows the end of its output)."""

    def __init__(self, path):
        self.file = open(path, "w")

    def say(self, text):
        for out in (sys.stdout, self.file):
            out.write(text + "\n")
            out.flush()

    def step(self, name, command, env, timeout):
        """Run one step, its output into the log: (status, seconds, output)."""
        shown = ["-c <%s>" % name if arg.startswith("\n") else arg for arg in command if arg != "-c"]
        self.say("\n== %s: %s" % (name, " ".join(shown)))
        start = time.monotonic()
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        stop = threading.Timer(timeout, proc.kill)  # a step that hangs, silent or not, ends at its bound
        stop.start()
        lines = []
        for line in proc.stdout:
            lines.append(line)
            for out in (sys.stdout, self.file):
                out.write(line)
                out.flush()
        status = proc.wait()
        stop.cancel()
        seconds = time.monotonic() - start
        if seconds >= timeout:
            self.say("== %s: stopped at its bound of %d s" % (name, timeout))
        self.say("== %s: exit status %d, %.1f s" % (name, status, seconds))
        return status, seconds, "".join(lines)


def _fits(wheel, log):
    """Whether a carried wheel (made for the GPU image's Python 3.12) installs on this Python."""
    from packaging.tags import sys_tags
    from packaging.utils import parse_wheel_filename

    if set(parse_wheel_filename(os.path.basename(wheel))[3]) & set(sys_tags()):
        return True
    log.say("gpu-check: %s is not for this Python: left out" % os.path.basename(wheel))
    return False


def environment(log):
    """The children's environment: the carried wheels' folder and this checkout's mxboard first."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", XLA_PYTHON_CLIENT_PREALLOCATE="false")
    paths = [os.path.join(ROOT, "python")]
    wheels = [w for w in sorted(glob.glob(os.path.join(ROOT, ".whl", "*.whl"))) if _fits(w, log)]
    if wheels:
        site = tempfile.mkdtemp(prefix="mxboard-gpu-site-")
        atexit.register(shutil.rmtree, site, True)
        status, _, _ = log.step("wheels", [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                                           "--no-compile", "--no-cache-dir", "--upgrade", "--target", site] + wheels,
                                env, 300)
        if status != 0:
            raise SystemExit("gpu-check: the carried wheels in .whl/ did not install (status %d)" % status)
        paths.insert(0, site)
    env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or os.path.join(ROOT, "dist", "gpu-check"),
                        help="the folder of the figures (default: $OUT, else dist/gpu-check)")
    parser.add_argument("--rounds", type=int, default=3, help="the GPU bench's rounds (default 3)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    log = Log(os.path.join(args.out, "gpu-check.log"))
    env = environment(log)
    summary = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "steps": {}}
    status, _, output = log.step("probe", [sys.executable, "-c", PROBE], env, 120)
    summary["machine"] = probe = json.loads(output.strip().splitlines()[-1]) if status == 0 else {}
    gpu = bool(probe.get("cuda"))
    bench = [sys.executable, "tools/bench_gpu.py", "--rounds", str(args.rounds), "--json",
             os.path.join(args.out, "bench-gpu.json")]
    if not gpu:
        bench = [sys.executable, "tools/bench_gpu.py", "--cpu", "--rounds", "1", "--json",
                 os.path.join(args.out, "bench-gpu-cpu.json")]
    steps = [
        ("pytest -m gpu", [sys.executable, "-m", "pytest", "-q", "-rs", "-m", "gpu", "-p", "no:randomly", "-p",
                           "no:cacheprovider", "--junitxml", os.path.join(args.out, "pytest-gpu.xml"),
                           "tests/test_gpu.py"], 420),
        ("bench", bench, 540),
        ("system metrics", [sys.executable, "-c", METRICS], 120),
    ]
    for name, command, timeout in steps:
        status, seconds, output = log.step(name, command, env, timeout)
        summary["steps"][name] = {"status": status, "seconds": round(seconds, 1)}
        if name == "system metrics" and status == 0:
            summary["system_metrics_gpu_rows"] = json.loads(output.strip().splitlines()[-1])
    failed = [name for name, step in summary["steps"].items() if step["status"] != 0]
    summary["measured"] = gpu
    summary["failed"] = failed
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    if not gpu:
        log.say("\ngpu-check: no CUDA GPU: nothing measured (torch %s). The CPU ran what it can: %s."
                % (probe.get("torch", "missing"), "; ".join("%s %s" % (n, "passed" if s["status"] == 0 else "FAILED")
                                                           for n, s in summary["steps"].items())))
    else:
        log.say("\ngpu-check on %s: %s" % (probe.get("card"), "every step passed" if not failed
                                           else "FAILED: " + ", ".join(failed)))
    log.say("gpu-check: figures in %s" % args.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
