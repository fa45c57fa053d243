"""The benchmark: mxboard side by side with tensorboardX and torch.utils.tensorboard, in one run,
on the same machine and data; prints a table of ratios (peer / mxboard) and writes a JSON report.

    make bench                      # or: python tools/bench.py [--scalars N] [--json PATH]

`make bench` runs it in a venv of its own (.bench-venv), where mxboard is what a user's plain
`pip install 'mxboard[mxnet,s3]'` gives (no test extra), beside tensorboardX and torch; the
report says which CRC32C implementation mxboard used. Every measurement runs in a fresh
interpreter per library, on the installed packages. What is measured:
- add_scalar: a tight loop of N calls; the caller's cost per call (wall time of the loop: what the
  training loop loses; and the caller thread's CPU time), and the time until all N are on disk
  (loop plus close); on one tag, and over 1000 tags.
- add_histogram of 1M float32, add_image of a 3x256x256 float image: the time spent inside the
  call, with 20 ms of (GIL-free) training work between calls, as in a training loop; then the time
  until everything is on disk. (A tight loop of array calls measures the writer's throughput
  instead: the bounded queue fills and blocks the caller, by design.)
- add_histogram of an MXNet NDArray whose computation is still pending, for two sizes: the
  caller's cost against the pending work (peers wait for it).
- The real loop: a Gluon CNN on scikit-learn's digits (32x32 inputs, 171 steps of 64) logging the
  loss every step (an NDArray), every parameter's and gradient's histogram every 10 steps and the
  input batch as an image grid every 50 steps; the same loop with tensorboardX and with no
  logger, interleaved, several runs: the loop's slowdown in percent, by the median and the best.
- Throughput: for arrays, the whole work per call (a loop of calls plus close(), each kind on a
  writer of its own: wall time and the process's CPU time over every thread), beside the
  caller's share; a 1M float32 histogram against one np.sum over it, a real photo, 1 s of
  16 kHz audio.
- add_scalar of a ready NDArray (the loss): the caller's cost.
- system metrics (SummaryWriter(system_metrics=...)): the CPU of an idle process with a writer over
  30 s, with the metrics every 10 s (the default) and every 1 s, beside none.
- memory: peak RSS while logging 4 MB arrays in a tight loop, against max_queue x 4 MB + 100 MB.
- liveness: with default settings, seconds from add_scalar to the point being served by the
  bundled TensorBoard's HTTP API.
- remote (with the test extra's SeaweedFS, a real S3 server on 127.0.0.1): a minute of steady
  logging (20 scalars a second, 16 histograms every 10 s) to s3://: bytes uploaded over bytes
  logged, objects made, and seconds from the first add_scalar to the point being served.
- reading (tools/bench_reading.py): the same 2M scalar events (10 runs) as 20 tags x 10,000 steps
  a run and as 20,000 tags x 10 steps, read by the report, by mxboard.reader (table and scalars),
  by TensorBoard's EventMultiplexer, by tbparse and by the scanner alone at 64 KiB, 1 MiB and
  8 MiB windows: seconds and peak memory at each tag count, and the time at 20,000 tags over the
  time at 20 (target: 2x for every mxboard reader and window).
- serving (tools/bench_serving.py): 100 and 10,000 runs in s3://, and 100 in gs:// and az://
  (fake-gcs-server, Azurite), served by the bundled server from its mirror, beside the same runs
  on local disk and the old path (the Python loader). Then the loader's rows: the bundle's own
  loader (--load_fast=mxboard) beside upstream's Rust data server (--load_fast=true) and Python
  loader (--load_fast=false, given 90 s): every tag served from 2,000 runs on local disk and behind
  a FUSE passthrough that waits 1 ms a call (the bench venv's mfusepy, Debian's fuse3), with the
  filesystem calls a second while nothing changes; from 10,000 runs on local disk, with the idle
  CPU and a new point's delay; from 100,000 runs (the bundle's loader alone), with the peak RSS;
  and a scalars request over a 1,000,000-point series with a spike: its time and whether the
  spike is served. Each target of the [loader] issue is printed under its row, held or missed
  (about 11 minutes on 2 cores).
- serving, who may read (tools/bench_access.py): a scalars request to the bundle as it starts by
  default (the token; its fast loader private), with --auth none, with --load_fast=false, and to
  upstream's launcher; the token check alone, and its share of a scalars request (target: 1%).
- trainers (tools/bench_integrations.py): a training step's time with Lightning, the Hugging
  Face Trainer, Accelerate and Keras logging every step through mxboard.integrations, beside the
  trainer's own TensorBoard writer and no logger.
"""
import argparse
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARIES = {
    "mxboard": "from mxboard import SummaryWriter",
    "tensorboardX": "from tensorboardX import SummaryWriter",
    "torch.utils.tensorboard": "from torch.utils.tensorboard import SummaryWriter",
}

SCALARS = """
w = SummaryWriter(LOGDIR)
w.add_scalar('warmup', 0.0, 0)
t0, c0 = time.perf_counter(), time.thread_time()
for i in range(N):
    w.add_scalar('loss', i * 0.001, i)
t1, c1 = time.perf_counter(), time.thread_time()
w.close()
t2 = time.perf_counter()
result = {"call_us": (t1 - t0) / N * 1e6, "call_cpu_us": (c1 - c0) / N * 1e6, "on_disk_s": t2 - t0}
"""

SCALARS_TAGS = """
w = SummaryWriter(LOGDIR)
tags = ["layer%d/loss" % k for k in range(1000)]
w.add_scalar('warmup', 0.0, 0)
t0, c0 = time.perf_counter(), time.thread_time()
for i in range(N):
    w.add_scalar(tags[i % 1000], i * 0.001, i // 1000)
t1, c1 = time.perf_counter(), time.thread_time()
w.close()
t2 = time.perf_counter()
result = {"call_us": (t1 - t0) / N * 1e6, "call_cpu_us": (c1 - c0) / N * 1e6, "on_disk_s": t2 - t0}
"""

ARRAYS = """
import numpy as np
w = SummaryWriter(LOGDIR)
data = {data}
w.{method}('warmup', data, 0)
w.flush()
inside = 0.0
t0 = time.perf_counter()
for i in range(CALLS):
    time.sleep(0.02)                       # the training step: releases the GIL, as MXNet does
    start = time.perf_counter()
    w.{method}('x', data, i)
    inside += time.perf_counter() - start
w.close()
result = {{"call_ms": inside / CALLS * 1e3, "on_disk_s": time.perf_counter() - t0 - CALLS * 0.02}}
"""

PENDING = """
import mxnet as mx, numpy as np
w = SummaryWriter(LOGDIR)
result = {}
for side in (1000, 4000):                  # 1M and 16M elements
    a = mx.nd.random.uniform(shape=(side, side))
    w.add_histogram('warmup', a, 0); mx.nd.waitall(); w.flush()
    t0 = time.perf_counter()
    pending = a
    for _ in range(3):
        pending = mx.nd.dot(pending, a) / side   # work queued on the engine, not yet done
    start = time.perf_counter()
    w.add_histogram('h', pending, side)
    call = time.perf_counter() - start
    mx.nd.waitall()
    result["%dM" % (side * side // 10**6)] = {"call_ms": call * 1e3, "pending_ms": (time.perf_counter() - t0) * 1e3}
w.close()
"""

REAL_LOOP = """
import mxnet as mx, numpy as np
from sklearn.datasets import load_digits
mx.random.seed(0); np.random.seed(0)
digits = load_digits()
images = np.kron((digits.images / 16.0).astype(np.float32), np.ones((4, 4), np.float32))[:, None]  # 32x32
labels = digits.target.astype(np.float32)
net = mx.gluon.nn.HybridSequential()
with net.name_scope():
    net.add(mx.gluon.nn.Conv2D(16, 3, padding=1, activation="relu"), mx.gluon.nn.MaxPool2D(),
            mx.gluon.nn.Conv2D(32, 3, padding=1, activation="relu"), mx.gluon.nn.MaxPool2D(),
            mx.gluon.nn.Flatten(), mx.gluon.nn.Dense(64, activation="relu"), mx.gluon.nn.Dense(10))
net.initialize(mx.init.Xavier())
net.hybridize()
trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05})
loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
w = SummaryWriter(LOGDIR) if LOG else None
params = list(net.collect_params().values())
batch = 64
def step(i):
    start = (i * batch) % (len(labels) - batch)
    x, y = mx.nd.array(images[start:start + batch]), mx.nd.array(labels[start:start + batch])
    with mx.autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(batch)
    if w is not None:
        w.add_scalar("loss", loss.mean(), i)
        if i % 10 == 0:
            for p in params:
                w.add_histogram(p.name, p.data(), i)
                w.add_histogram(p.name + "/grad", p.grad(), i)
        if i % 50 == 0:
            w.add_images("inputs", x, i)
for i in range(3):                         # warm-up: hybridize, allocate
    step(i)
mx.nd.waitall()
t0 = time.perf_counter()
for i in range(3, 3 + 171):
    step(i)
mx.nd.waitall()
loop = time.perf_counter() - t0
if w is not None:
    w.close()
result = {"loop_s": loop, "with_close_s": time.perf_counter() - t0}
"""

THROUGHPUT = """
import numpy as np, resource
data = {data}
w = SummaryWriter(LOGDIR)
w.{method}('warmup', data, 0{extra})
w.flush()
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
t0, c0, inside = time.perf_counter(), cpu(), 0.0
for i in range(CALLS):
    start = time.perf_counter()
    w.{method}('x', data, i{extra})
    inside += time.perf_counter() - start
w.close()
result = {{"call_ms": inside / CALLS * 1e3, "total_ms": (time.perf_counter() - t0) / CALLS * 1e3,
          "cpu_ms": (cpu() - c0) / CALLS * 1e3, "on_disk_s": time.perf_counter() - t0}}
"""

NP_SUM = """
import numpy as np
data = np.random.rand(1 << 20).astype(np.float32)
data.sum()
t0 = time.perf_counter()
for _ in range(200):
    data.sum()
result = {"sum_ms": (time.perf_counter() - t0) / 200 * 1e3}
"""

NDARRAY_SCALAR = """
import mxnet as mx
loss = mx.nd.array([0.5])
loss.wait_to_read()
w = SummaryWriter(LOGDIR)
for i in range(50):
    w.add_scalar('warmup', loss, i)
t0 = time.perf_counter()
for i in range(N):
    w.add_scalar('loss', loss, i)
call = time.perf_counter() - t0
w.close()
result = {"call_us": call / N * 1e6, "on_disk_s": time.perf_counter() - t0}
"""

MEMORY = """
import threading, numpy as np, psutil
process = psutil.Process()
data = np.random.rand(1024 * 1024).astype(np.float32)     # 4 MB
w = SummaryWriter(LOGDIR, max_queue=10)
base = peak = process.memory_info().rss
stop = threading.Event()
def sample():
    global peak
    while not stop.is_set():
        peak = max(peak, process.memory_info().rss); time.sleep(0.002)
sampler = threading.Thread(target=sample); sampler.start()
for i in range(200):
    w.add_histogram('x', data, i)
w.close()
stop.set(); sampler.join()
result = {"peak_extra_mb": (peak - base) / 2**20, "limit_mb": 10 * 4 + 100}
"""

SYSTEM_METRICS = """
import resource
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
def idle(**options):  # a writer with nothing to log for 30 s: the process's CPU over that time
    w = SummaryWriter(LOGDIR + str(len(options)), **options)
    time.sleep(1)
    c0, t0 = cpu(), time.monotonic()
    time.sleep(30)
    spent = (cpu() - c0) / (time.monotonic() - t0)
    w.close()
    return 100 * spent
result = {"without_pct": idle(), "every_10s_pct": idle(system_metrics=True), "every_1s_pct": idle(system_metrics=1.0)}
"""

READ_1GB = """
import os, resource
from mxboard._format.events import frame
path = os.path.join(LOGDIR, "events.out.tfevents.1gb")
record = frame(bytes(1 << 20))
with open(path, "wb") as f:
    for _ in range(1024):
        f.write(record)
del record
def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
start, t0 = peak_mb(), time.perf_counter()
if WHOLE:  # what 802362c's reader did: the file in memory at once
    with open(path, "rb") as f:
        count = len(f.read()) // (16 + (1 << 20))
else:
    from mxboard.reader import read_records
    count = sum(1 for _ in read_records(path))
seconds = time.perf_counter() - t0
os.remove(path)
result = {"records": count, "peak_extra_mb": peak_mb() - start, "seconds": seconds}
"""

RUNNER = """
import json, sys, time
{import_line}
LOGDIR, N, CALLS, LOG = {logdir!r}, {n}, {calls}, {log}
{body}
if "mxboard" in sys.modules:
    from mxboard._format._crc32c import IMPLEMENTATION
    result["crc32c"] = IMPLEMENTATION
print(json.dumps(result))
"""


def _installed_extras():
    """What the bench's venv holds beside mxboard: the test extra must not be there."""
    names = ("pytest", "hypothesis", "onnx", "pandas")  # (soundfile is there: tensorboardX's audio needs it)
    present = [n for n in names if subprocess.run([sys.executable, "-c", "import " + n], capture_output=True,
                                                  env=dict(os.environ, PYTHONSAFEPATH="1")).returncode == 0]
    return "test extra's packages present: " + ", ".join(present) if present else "no test extra"


def available(library):
    return subprocess.run([sys.executable, "-c", LIBRARIES[library]], capture_output=True).returncode == 0


def run(library, body, n=0, calls=0):
    """`body` in a fresh interpreter with `library`'s SummaryWriter (library None: no logger)."""
    code = RUNNER.format(import_line=LIBRARIES[library] if library else "", logdir=tempfile.mkdtemp(prefix="bench-"),
                         n=n, calls=calls, log=library is not None, body=textwrap.dedent(body))
    env = dict(os.environ, PYTHONSAFEPATH="1")  # the installed packages, never this checkout's
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (library or "no logger", proc.stderr[-3000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


# The bundled server answers only a request that carries its token: each server here is given this
# one (MXBOARD_TOKEN), and each request sends it.
TOKEN = secrets.token_urlsafe(32)


def _scalars_request(port, run, tag):
    """A request for the points of `tag` in `run` from the bundled server on `port`, with the token."""
    url = "http://127.0.0.1:%d/data/plugin/scalars/scalars?run=%s&tag=%s" % (port, run, tag)
    return urllib.request.Request(url, headers={"Authorization": "token " + TOKEN})


def liveness():
    """Seconds from add_scalar (default settings) to the bundled server serving the point."""
    logdir = tempfile.mkdtemp(prefix="bench-live-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "tensorboard_bundle", "--logdir", logdir, "--port", str(port)],
                              stderr=subprocess.PIPE, text=True, env=dict(os.environ, MXBOARD_TOKEN=TOKEN))
    try:
        server.stderr.readline()
        request = _scalars_request(port, ".", "live")
        from mxboard import SummaryWriter

        writer = SummaryWriter(logdir)
        time.sleep(6)  # the server has seen the (empty) run at least once
        start = time.monotonic()
        writer.add_scalar("live", 1.0, 1)
        while time.monotonic() - start < 30:
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    if json.loads(response.read()):
                        break
            except OSError:
                pass
            time.sleep(0.05)
        seconds = time.monotonic() - start
        writer.close()
        return {"served_after_s": seconds}
    finally:
        server.terminate()
        server.wait(10)


def remote(seconds=60):
    """The remote case (see the docstring), or None without SeaweedFS or s3fs."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from faultproxy import FaultProxy
    from object_stores import SeaweedFS, weed_binary

    try:
        import s3fs  # noqa: F401
    except ImportError:
        return None
    if weed_binary() is None:
        return None
    store = SeaweedFS(tempfile.mkdtemp(prefix="bench-s3-"))
    os.environ.update(store.env)
    bucket = store.bucket("bench")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "tensorboard_bundle", "--logdir", "s3://%s/exp" % bucket,
                               "--port", str(port)], stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, MXBOARD_TOKEN=TOKEN))
    try:
        server.stderr.readline()
        import numpy as np

        from mxboard import SummaryWriter

        # the writer's way to the store through a proxy that forwards and counts each PUT's bytes
        proxy = FaultProxy(store.env["AWS_ENDPOINT_URL"])
        os.environ["AWS_ENDPOINT_URL"] = proxy.endpoint
        writer = SummaryWriter("s3://%s/exp/run" % bucket)
        os.environ["AWS_ENDPOINT_URL"] = store.env["AWS_ENDPOINT_URL"]
        request = _scalars_request(port, "run", "loss")
        start = time.monotonic()
        writer.add_scalar("loss", 0.0, 0)
        served_after = None
        rng = np.random.default_rng(0)
        step = 0
        while time.monotonic() - start < seconds:
            step += 1
            writer.add_scalar("loss", 1.0 / step, step)
            if step % 200 == 0:
                for layer in range(16):
                    writer.add_histogram("layer%d" % layer, rng.normal(size=10_000), step)
            if served_after is None:
                try:
                    with urllib.request.urlopen(request, timeout=5) as response:
                        if json.loads(response.read()):
                            served_after = time.monotonic() - start
                except OSError:
                    pass
            time.sleep(0.05)
        writer.close()
        proxy.close()
        from mxboard.storage.remote import open_filesystem

        fs = open_filesystem("s3://%s" % bucket)[0]
        objects = [o for o in fs.ls("%s/exp/run" % bucket, detail=False, refresh=True) if "tfevents" in o]
        logged = sum(fs.size(o) for o in objects)
        return {"seconds": seconds, "logged_bytes": logged, "uploaded_bytes": proxy.put_bytes,
                "upload_over_logged": proxy.put_bytes / logged, "objects": len(objects),
                "served_after_s": served_after}
    finally:
        server.terminate()
        server.wait(10)
        store.stop()


def real_loop(results, libraries, rounds):
    """The training loop with each logger and with none, interleaved, `rounds` times: the best
    and the median of each (this 2-core machine's wall times vary by several percent from run to
    run, as MXNet's engine threads are scheduled)."""
    times = {}
    for _ in range(rounds):
        for lib in [None] + libraries:
            times.setdefault(lib, []).append(run(lib, REAL_LOOP)["loop_s"])
    best = {lib: min(seconds) for lib, seconds in times.items()}
    median = {lib: statistics.median(seconds) for lib, seconds in times.items()}
    rows = results["real loop: Gluon CNN, 171 steps"] = {"no logger": {"loop_s": best[None], "median_s": median[None]}}
    print("%-34s %-24s %12.2f s (median %.2f s)" % ("real loop, 171 steps", "no logger", best[None], median[None]))
    for lib in libraries:
        overhead = {key: 100 * (seconds[lib] / seconds[None] - 1)
                    for key, seconds in (("best", best), ("median", median))}
        rows[lib] = {"loop_s": best[lib], "median_s": median[lib], "overhead_percent": overhead["best"],
                     "median_overhead_percent": overhead["median"]}
        print("%-34s %-24s %12.2f s (median %.2f s)  %+.1f%% over no logger, median %+.1f%% (target: mxboard <= 5%%)"
              % ("real loop, 171 steps", lib, best[lib], median[lib], overhead["best"], overhead["median"]))


def throughput(results, libraries, calls):
    """The whole work per array call (calls plus close), beside the caller's share."""
    np_sum = run(None, NP_SUM)["sum_ms"]
    cases = [("histogram 1M float32, default bins", "add_histogram", "np.random.randn(1 << 20).astype(np.float32)", ""),
             ("image: china.jpg 427x640x3 uint8", "add_image",
              "__import__('sklearn.datasets').datasets.load_sample_image('china.jpg')", ", dataformats='HWC'"),
             ("audio: 1 s at 16 kHz", "add_audio", "np.sin(np.arange(16000) / 10.0).astype(np.float32)",
              ", sample_rate=16000")]
    targets = {"add_histogram": "x10 tensorboardX", "add_image": "x5 tensorboardX", "add_audio": "< 1 ms in all"}
    for name, method, data, extra in cases:
        rows = results["throughput: " + name] = {
            lib: run(lib, THROUGHPUT.format(method=method, data=data, extra=extra), calls=calls) for lib in libraries}
        ours = rows["mxboard"]
        for lib, row in rows.items():
            row["ratio_total"], row["ratio_cpu"] = row["total_ms"] / ours["total_ms"], row["cpu_ms"] / ours["cpu_ms"]
            print("%-34s %-24s %8.2f ms a call in all, %6.2f ms CPU, %6.2f ms in the call; x%.1f in all, x%.1f CPU"
                  " (target: %s)" % (name[:34], lib, row["total_ms"], row["cpu_ms"], row["call_ms"], row["ratio_total"],
                                     row["ratio_cpu"], targets[method]))
        if method == "add_histogram":
            rows["np.sum"] = {"ms": np_sum, "mxboard_over_np_sum": ours["total_ms"] / np_sum}
            print("%-34s %-24s %8.3f ms: mxboard's histogram is %.0fx one np.sum (target 10x)" % (
                name[:34], "np.sum of the same array", np_sum, ours["total_ms"] / np_sum))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scalars", type=int, default=1_000_000, help="add_scalar calls")
    parser.add_argument("--calls", type=int, default=30, help="add_histogram / add_image calls")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved runs of the real loop (median and best)")
    parser.add_argument("--json", default=os.path.join(ROOT, "dist", "bench.json"))
    args = parser.parse_args()
    libraries = [lib for lib in LIBRARIES if available(lib)]
    from mxboard._format._crc32c import IMPLEMENTATION

    report = {"python": sys.version.split()[0], "libraries": libraries, "crc32c": IMPLEMENTATION, "results": {}}
    results = report["results"]
    print("mxboard as installed in %s (%s); its CRC32C: %s" % (sys.prefix, _installed_extras(), IMPLEMENTATION))
    print("%-34s %-24s %12s %12s %12s %8s %8s" % ("case", "library", "call", "call cpu", "on disk (s)",
                                                   "x call", "x disk"))
    cases = [
        ("add_scalar x%d (us)" % args.scalars, SCALARS, "call_us"),
        ("add_scalar x%d, 1000 tags (us)" % args.scalars, SCALARS_TAGS, "call_us"),
        ("add_histogram 1M float32 (ms)", ARRAYS.format(method="add_histogram",
                                                        data="np.random.rand(1 << 20).astype(np.float32)"), "call_ms"),
        ("add_image 3x256x256 float (ms)",
         ARRAYS.format(method="add_image", data="np.random.rand(3, 256, 256).astype(np.float32)"), "call_ms"),
    ]
    for name, body, key in cases:
        rows = results[name] = {lib: run(lib, body, args.scalars, args.calls) for lib in libraries}
        ours = rows["mxboard"]
        for lib, row in rows.items():
            row["ratio_call"] = row[key] / ours[key]
            row["ratio_on_disk"] = row["on_disk_s"] / ours["on_disk_s"]
            print("%-34s %-24s %12.3f %12s %12.3f %8.1f %8.1f" % (
                name, lib, row[key], "%.3f" % row["call_cpu_us"] if "call_cpu_us" in row else "",
                row["on_disk_s"], row["ratio_call"], row["ratio_on_disk"]))
    one, many = (results[name]["mxboard"]["on_disk_s"] for name, _, _ in cases[:2])
    print("%-34s %-24s %12.2f x one tag's time to disk (target <= 1.3)" % ("add_scalar over 1000 tags", "mxboard",
                                                                            many / one))
    has_mxnet = subprocess.run([sys.executable, "-c", "import mxnet"], capture_output=True).returncode == 0
    if available("mxboard") and has_mxnet:
        rows = results["add_histogram of a pending NDArray"] = {
            lib: run(lib, PENDING) for lib in libraries if lib != "torch.utils.tensorboard"}
        for lib, sizes in rows.items():
            for size, row in sizes.items():
                if not isinstance(row, dict):  # the run's "crc32c"
                    continue
                print("%-34s %-24s %12.3f ms of %.0f ms pending work (%.1f%%)" % (
                    "add_histogram pending NDArray " + size, lib, row["call_ms"], row["pending_ms"],
                    100 * row["call_ms"] / row["pending_ms"]))
    has_mxnet = subprocess.run([sys.executable, "-c", "import mxnet, sklearn"], capture_output=True).returncode == 0
    if has_mxnet:
        real_loop(results, [lib for lib in libraries if lib != "torch.utils.tensorboard"], args.rounds)
    throughput(results, libraries, args.calls)
    if has_mxnet:
        rows = results["add_scalar of a ready NDArray"] = {
            lib: run(lib, NDARRAY_SCALAR, n=3000) for lib in libraries if lib != "torch.utils.tensorboard"}
        for lib, row in rows.items():
            print("%-34s %-24s %12.1f us a call (%.1fx mxboard's)" % (
                "add_scalar ready NDArray", lib, row["call_us"], row["call_us"] / rows["mxboard"]["call_us"]))
    if available("mxboard") and subprocess.run([sys.executable, "-c", "import psutil"]).returncode == 0:
        row = results["system metrics"] = run("mxboard", SYSTEM_METRICS)
        print("%-34s %-24s %6.3f%% of a core every 10 s (target < 0.5%%), %.3f%% every 1 s, over an idle writer's "
              "%.3f%%" % ("system_metrics=True, idle loop", "mxboard", row["every_10s_pct"] - row["without_pct"],
                          row["every_1s_pct"] - row["without_pct"], row["without_pct"]))
    rows = results["reading a 1 GB event file"] = {
        how: run("mxboard", "WHOLE = %r\n" % (how != "mxboard.reader") + READ_1GB)
        for how in ("mxboard.reader", "whole file (802362c)")}
    for how, row in rows.items():
        print("%-34s %-24s %12.0f MB peak above start, %d records in %.1f s (target < 100 MB)" % (
            "read a 1 GB event file", how, row["peak_extra_mb"], row["records"], row["seconds"]))
    rows = results["memory: 4 MB arrays in a tight loop"] = {lib: run(lib, MEMORY) for lib in libraries}
    for lib, row in rows.items():
        print("%-34s %-24s %12.0f MB peak above start (mxboard's limit %d MB)" % (
            "memory 200 x 4 MB histograms", lib, row["peak_extra_mb"], row["limit_mb"]))
    results["liveness"] = liveness()
    print("%-34s %-24s %12.2f s from add_scalar to the HTTP API (target 5 s)" % (
        "liveness, default settings", "mxboard", results["liveness"]["served_after_s"]))
    row = results["remote"] = remote()
    if row:
        print("%-34s %-24s %12.2f x uploaded over logged (%d KB), %d objects in %d s, served after %.1f s" % (
            "remote: s3:// (SeaweedFS)", "mxboard", row["upload_over_logged"], row["logged_bytes"] // 1024,
            row["objects"], row["seconds"], row["served_after_s"] or float("nan")))
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bench_reading

    # The same events at 20 and at 20,000 tags a run, every reader beside EventMultiplexer: the
    # last column of each row is the time at 20,000 tags over the time at 20.
    results["reading 2M scalar events at 20 and 20,000 tags"] = bench_reading.main(
        runs=10, events=200_000, tag_counts=(20, 20_000), multiplexer=True)
    import bench_serving

    print("serving (the bundled server; targets: 100 runs in a store within 1.5x local disk, 10,000 within 30 s, "
          "idle <= 2% of a core, a new point within 5 s, <= 1.1x the logdir read):")
    results["serving"] = bench_serving.main()
    print("serving, the loader (the bundle's own beside upstream's Rust server and Python loader; targets under "
          "each row):")
    results["serving: the loader"] = bench_serving.loader()
    import bench_access

    print("serving, who may read (the token check: target <= 1% of a scalars request):")
    results["serving access"] = bench_access.main()
    import bench_integrations

    print("trainers (mxboard.integrations): a step's time with no logger, mxboard's integration, the trainer's own:")
    results["integrations"] = bench_integrations.main()
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
    print("report:", args.json)


if __name__ == "__main__":
    main()
