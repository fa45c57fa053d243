"""Logdirs in object stores: a real S3 server (SeaweedFS, tests/object_stores.py) and fsspec's
memory://, read back by the bundled TensorBoard over HTTP (its fast loader, over the mirror it
keeps: tests/test_mirror.py) and by mxboard.reader."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ROOT, UPSTREAM, run_python, served_losses, timed
from mxboard import SummaryWriter, UploadPolicy, WriterError, reader

pytest.importorskip("s3fs")
def test_objects_are_parts_read_in_order(monkeypatch):
    """Small objects (MAX_OBJECT lowered) make many parts; TensorBoard's loader and the reader
    read them as one stream (fsspec's memory:// store)."""
    policy = UploadPolicy(max_object=600, upload_secs=0)
    with SummaryWriter("memory://parts/run", upload_policy=policy) as writer:
        for step in range(300):
            writer.add_scalar("loss", float(step), step)
            if step % 20 == 0:
                writer.flush()
    import fsspec

    assert len([o for o in fsspec.filesystem("memory").ls("/parts/run", detail=False) if "tfevents" in o]) > 5
    table = reader.table("memory://parts", "scalars")
    assert table["step"] == list(range(300)) and set(table["run"]) == {"run"}
    paths = reader.event_files("memory://parts/run")
    assert paths == sorted(paths) and paths[1].endswith(".part0001")
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    with open_local_copy(paths) as local:  # TensorBoard's own loader over the same objects
        steps = [e.step for path in local for e in EventFileLoader(path).Load() if e.summary.value]
    assert steps == list(range(300))


class open_local_copy:  # noqa: N801 - a context manager
    def __init__(self, urls):
        import tempfile

        import fsspec

        self.directory = tempfile.mkdtemp()
        self.paths = []
        for i, url in enumerate(urls):
            path = os.path.join(self.directory, "%04d.tfevents" % i)
            with fsspec.open(url, "rb") as src, open(path, "wb") as dst:
                dst.write(src.read())
            self.paths.append(path)

    def __enter__(self):
        return self.paths

    def __exit__(self, *exc):
        import shutil

        shutil.rmtree(self.directory)


@pytest.mark.plain
def test_the_server_reads_a_bucket_root_and_a_prefix(seaweed, serve):
    bucket = seaweed.bucket("root-%d" % os.getpid())
    with SummaryWriter("s3://%s/exp/run" % bucket) as w:
        w.add_scalar("loss", 1.5, 3)
    for logdir, run in (("s3://%s/" % bucket, "exp/run"), ("s3://%s" % bucket, "exp/run"),
                        ("s3://%s/exp" % bucket, "run"), ("s3://%s/exp/" % bucket, "run")):
        server = serve(logdir)
        assert served_losses(server, run) == [(3, 1.5)], logdir
        server.close()
    # upstream's launcher on the bucket root: no run (its loader fails on the root)
    upstream = serve("s3://%s/" % bucket, command=UPSTREAM)
    time.sleep(4)
    assert upstream.json("/data/runs") == []
    assert any("is not a directory" in line or "substring not found" in line for line in upstream.output)


@pytest.mark.plain
def test_an_unreachable_endpoint_wrong_credentials_or_an_unknown_scheme_fail_at_the_constructor(
        seaweed, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    bucket = seaweed.bucket("faults-%d" % os.getpid())
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(PermissionError, match="refused the credentials"):
        SummaryWriter("s3://%s/run" % bucket)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", seaweed.env["AWS_SECRET_ACCESS_KEY"])
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:%d" % closed_port)
    start = time.monotonic()
    with pytest.raises(ConnectionError, match="cannot be reached"):
        SummaryWriter("s3://%s/run" % bucket)
    assert time.monotonic() - start < 30
    with pytest.raises(ValueError, match="unknown URL scheme nosuch://"):
        SummaryWriter("nosuch://bucket/run")
    with pytest.raises(ImportError, match="ossfs"):  # a scheme whose package is not installed (gs:// and az://
        SummaryWriter("oss://bucket/run")             # have theirs in the test extra)
    assert os.listdir(tmp_path) == []  # no local folder named after a URL
    missing = run_python(MISSING_PACKAGES).stdout  # gs:// and az:// where their packages are not installed
    assert "(adlfs) is not installed: pip install 'mxboard[azure]'" in missing, missing
    assert "(gcsfs) is not installed: pip install 'mxboard[gcs]'" in missing, missing


MISSING_PACKAGES = r"""
import sys
sys.modules["adlfs"] = sys.modules["gcsfs"] = None  # not installed, as after a plain pip install mxboard
import mxboard
for url in ("az://container/run", "gs://bucket/run"):
    try:
        mxboard.SummaryWriter(url)
    except ImportError as exc:
        print(exc)
"""


def test_a_store_gone_for_good_is_a_writer_error_and_close_returns(seaweed, monkeypatch):
    policy = UploadPolicy(upload_secs=0.2, retry_secs=0.1, give_up_secs=1)
    bucket = seaweed.bucket("gone-%d" % os.getpid())
    writer = SummaryWriter("s3://%s/run" % bucket, flush_secs=0.2, upload_policy=policy)
    seaweed.stop()
    try:
        with pytest.raises((OSError, WriterError)) as raised:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                writer.add_scalar("loss", 1.0, 0)
                time.sleep(0.1)
        assert "did not take" in str(raised.value) + str(raised.value.__cause__)
        start = time.monotonic()
        try:
            writer.close()
        except (OSError, WriterError):
            pass
        assert time.monotonic() - start < 30
    finally:
        seaweed.start()


def test_memory_urls_and_the_peers_names(tmp_path):
    """Any fsspec URL: memory:// takes every kind, the projector included."""
    with SummaryWriter("memory://generic/run") as w:
        w.add_scalar("loss", 1.0, 1)
        w.add_text("note", "hi", 1)
        w.add_embedding("emb", np.eye(3), ["a", "b", "c"])
    assert reader.table("memory://generic", "text")["text"] == ["hi"]
    import fsspec

    config = fsspec.filesystem("memory").cat_file("/generic/run/projector_config.pbtxt").decode()
    assert 'tensor_name: "emb"' in config and 'metadata_path: "emb/metadata.tsv"' in config


def test_make_demo_logs_to_s3(seaweed):
    """make demo LOGDIR=s3://bucket/run: the demo's every kind lands in the store."""
    bucket = seaweed.bucket("demo-%d" % os.getpid())
    keep = [arg for stamp in (".base", ".demo", ".mxboard") for arg in ("-o", os.path.join(".venv", stamp))]
    proc = subprocess.run(["make", "-s", "-C", ROOT] + keep + ["demo", "SERVE=0", "LOGDIR=s3://%s/demo" % bucket,
                                                                "PY=" + sys.executable],
                          capture_output=True, text=True, timeout=900)  # the venv as the suite runs it
    assert proc.returncode == 0, proc.stderr
    for kind in ("scalars", "histograms", "text", "hparams"):
        assert reader.table("s3://%s/demo" % bucket, kind)["run"], kind


def test_parts_past_10000_are_read_in_order_while_tensorboard_tails_the_run(bucket, serve, monkeypatch):
    """Part names sort in creation order for ever (part9999, then partz10000): the reader and
    TensorBoard's Python loader, which only moves on to greater names while it tails a run, read
    every part in order (FIRST_PART starts the parts just below 10000)."""
    policy = UploadPolicy(first_part=9995, max_object=400, upload_secs=0)  # a few points an object
    logdir = "s3://%s/long" % bucket
    writer = SummaryWriter(logdir + "/run", flush_secs=0.2, upload_policy=policy)
    server = serve(logdir)
    for step in range(120):
        writer.add_scalar("loss", float(step), step)
        if step % 10 == 9:
            writer.flush()
            if step == 29:  # the server has found the run and tails it from here
                assert served_losses(server, "run", until=lambda r: len(r) == 30) == [(s, float(s)) for s in range(30)]
    writer.close()
    names = [p.rsplit(".", 1)[-1] for p in reader.event_files(logdir + "/run")]
    assert "part9999" in names and "partz10000" in names, names
    assert [e.step for e in reader.read_events(logdir) if e.summary.value] == list(range(120))
    assert served_losses(server, "run", until=lambda r: len(r) == 120) == [(s, float(s)) for s in range(120)]


SAME_HOST_AND_PID = r"""
import os, socket, sys, time
os.getpid = lambda: 1  # two containers' pid 1 on one host name (hostNetwork pods)
socket.gethostname = lambda: "node"
import mxboard
start, logdir, name = float(sys.argv[1]), sys.argv[2], sys.argv[3]
time.sleep(max(0.0, start - time.time()))  # both start in the same second
with mxboard.SummaryWriter(logdir, flush_secs=0.5) as w:
    for step in range(100):
        w.add_scalar(name, float(step), step)
"""


def test_two_processes_with_one_host_name_and_pid_never_overwrite_each_other(bucket, tmp_path, serve):
    script = tmp_path / "same.py"
    script.write_text(SAME_HOST_AND_PID)
    logdir = "s3://%s/same/run" % bucket
    start = str(float(int(time.time()) + 3))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    procs = [subprocess.Popen([sys.executable, str(script), start, logdir, name], env=env, stderr=subprocess.PIPE,
                              text=True) for name in ("a", "b")]
    try:
        for proc in procs:
            assert proc.wait(timeout=120) == 0, proc.stderr.read()
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
            proc.stderr.close()
    events = [e for e in reader.read_events(logdir) if e.summary.value]
    for name in ("a", "b"):
        assert [e.step for e in events if e.summary.value[0].tag == name] == list(range(100)), name
    server = serve("s3://%s/same" % bucket)
    for name in ("a", "b"):
        assert served_losses(server, "run", name, until=lambda r: len(r) == 100) == [(s, float(s)) for s in range(100)]


def test_a_hung_store_is_a_writer_error_within_the_budget_and_close_returns(proxied, monkeypatch):
    """A store that takes the connection and never answers (nor says 100 Continue): logging goes
    on without waiting, the error comes after GIVE_UP_SECS, close() returns within FLUSH_SECS."""
    proxy, bucket = proxied
    policy = UploadPolicy(request_secs=2, give_up_secs=6, flush_secs=3, upload_secs=0.5)
    writer = SummaryWriter("s3://%s/hung/run" % bucket, flush_secs=0.5, upload_policy=policy)
    writer.add_scalar("loss", 0.0, 0)
    writer.flush()
    proxy.set("hang")
    slowest, start, step = 0.0, time.monotonic(), 1
    with pytest.raises((OSError, WriterError)) as raised:
        while time.monotonic() - start < 60:
            slowest = max(slowest, timed(writer.add_scalar, "loss", float(step), step))
            step += 1
            time.sleep(0.05)
    assert 6 <= time.monotonic() - start < 6 + 2 * 2 + 5, "the error comes after the budget"
    assert slowest < 1.0, slowest
    assert "did not take" in str(raised.value) + str(raised.value.__cause__)
    start = time.monotonic()
    try:
        writer.close()  # the error was raised already: close() need not raise it again
    except (OSError, WriterError):
        pass
    assert time.monotonic() - start < 3 + 2 + 2
    proxy.set("pass")


def test_a_slow_store_never_makes_a_call_wait(proxied, monkeypatch, seaweed):
    """Every answer 12 s late: a scalar every 50 ms and a 100k-value histogram every 10th step
    never wait (each call under 1 s), and everything reaches the store once it answers."""
    proxy, bucket = proxied
    policy = UploadPolicy(upload_secs=1)
    url = "s3://%s/slow/run" % bucket
    writer = SummaryWriter(url, flush_secs=0.5, upload_policy=policy)
    proxy.set("slow", delay=12.0)
    rng = np.random.default_rng(0)
    slowest = 0.0
    for step in range(200):  # 10 s
        slowest = max(slowest, timed(writer.add_scalar, "loss", float(step), step))
        if step % 10 == 0:
            slowest = max(slowest, timed(writer.add_histogram, "weights", rng.normal(size=100_000), step))
        time.sleep(0.05)
    assert slowest < 1.0, slowest
    proxy.set("pass")
    writer.close()
    monkeypatch.setenv("AWS_ENDPOINT_URL", seaweed.endpoint)
    steps = [e.step for e in reader.read_events(url) if e.summary.value and e.summary.value[0].tag == "loss"]
    assert steps == list(range(200))


def test_fast_logging_keeps_objects_and_waiting_bytes_bounded(bucket, tmp_path, seaweed):
    """10 s of 3 MB images as fast as they come: every object within 16 MiB, and the process's
    memory within the documented bounds (64 MiB queued for the writer thread, 64 MiB waiting for
    the store, the current object), not everything logged between uploads."""
    script = tmp_path / "images.py"
    script.write_text(r'''
import resource, sys, time
import numpy as np
import mxboard
rng = np.random.default_rng(0)
images = [rng.integers(0, 256, (1000, 1000, 3), dtype=np.uint8) for _ in range(4)]  # 3 MB PNGs
w = mxboard.SummaryWriter(sys.argv[1])
w.add_image("warm", images[0], 0, dataformats="HWC")
w.flush()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start, step = time.monotonic(), 0
while time.monotonic() - start < 10:
    w.add_image("noise", images[step % 4], step, dataformats="HWC")
    step += 1
w.close()
print(step, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)
''')
    url = "s3://%s/images/run" % bucket
    proc = subprocess.run([sys.executable, str(script), url], capture_output=True, text=True, timeout=240,
                          env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert proc.returncode == 0, proc.stderr
    logged, grown_mib = map(int, proc.stdout.split())
    import fsspec

    fs = fsspec.filesystem("s3", skip_instance_cache=True, endpoint_url=seaweed.endpoint)
    sizes = [o["size"] for o in fs.ls("%s/images/run" % bucket, detail=True, refresh=True)]
    assert logged * 3 > 16 * 4 and sum(sizes) > 3 * logged * 1000_000  # more than the 64 MiB that may wait
    assert max(sizes) <= 16 << 20, sizes
    assert grown_mib < 64 + 64 + 16 * 3 + 64, grown_mib  # the bounds, the objects' copies, numpy's work
    steps = [e.step for e in reader.read_events(url) if e.summary.value and e.summary.value[0].tag == "noise"]
    assert steps == list(range(logged))


def test_the_python_loaders_s3_filesystem_makes_one_client_a_thread(bucket, seaweed, monkeypatch):
    """patches/0007: upstream's gfile builds a boto3 client (or resource) for every request; the
    bundle's makes one a thread, and reads the same."""
    import importlib.util

    import boto3
    from tensorboard.compat.tensorflow_stub.io import gfile as upstream

    import tensorboard_bundle

    path = os.path.join(os.path.dirname(tensorboard_bundle.__file__), "_patched", "gfile.py")
    spec = importlib.util.spec_from_file_location("bundled_gfile", path)
    bundled = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bundled)
    with SummaryWriter("s3://%s/loader/run" % bucket) as w:
        w.add_scalar("loss", 1.0, 0)
    monkeypatch.setenv("S3_ENDPOINT", seaweed.endpoint)
    made = []
    for name in ("client", "resource"):
        real = getattr(boto3, name)
        monkeypatch.setattr(boto3, name, lambda *a, real=real, name=name, **k: made.append(name) or real(*a, **k))
    read = {}
    for module in (upstream, bundled):
        fs = module.S3FileSystem()
        made.clear()
        names = []
        for _ in range(10):
            names = fs.listdir("s3://%s/loader/run" % bucket)
            assert fs.isdir("s3://%s/loader" % bucket) and fs.exists("s3://%s/loader/run/%s" % (bucket, names[0]))
            data = fs.read("s3://%s/loader/run/%s" % (bucket, names[0]), binary_mode=True)
        read[module] = (len(made), names, data)
    assert read[upstream][0] >= 40 and read[bundled][0] <= 2, (read[upstream][0], read[bundled][0])
    assert read[upstream][1:] == read[bundled][1:]


