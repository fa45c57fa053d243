"""The same behaviour on every object store a team uses: S3 (SeaweedFS), Google Cloud Storage
(fake-gcs-server) and Azure Blob storage (Azurite), each real, on 127.0.0.1, reached through the
standard variables only (AWS_*, STORAGE_EMULATOR_HOST, AZURE_STORAGE_CONNECTION_STRING:
tests/object_stores.py). Each test runs against the three (the `store` fixture): writing (objects
as parts within bounds, at most 2x the bytes, exactly once under lost answers, an outage kept
then uploaded, ranks, a fork) and serving by the bundled server's loader over HTTP (names
as data, a resumed --mirror_dir, hostile records)."""
import gc
import json
import logging
import os
import subprocess
import sys
import time
import urllib.parse

import numpy as np
import pytest

from conftest import ROOT, event_files, served_losses, tb_scalars
from mxboard import SummaryWriter, UploadPolicy, reader
from mxboard._format.events import record_header
from mxboard.storage import remote
from tensorboard_bundle.mirror import MANIFEST, Mirror
from tensorboard_bundle.mirror import loop as mirror_loop

pytest.importorskip("fsspec")
pytestmark = pytest.mark.slow
CHILD_ENV = {"PYTHONPATH": os.path.join(ROOT, "python")}


def _log(writer, steps):
    for step in steps:
        writer.add_scalar("loss", float(step), step)


def _points(steps, value=float):
    return [(s, value(s)) for s in steps]


def _objects(url):
    """The event objects below `url`, as the store lists them now."""
    fs, root = remote.open_filesystem(url)
    fs.invalidate_cache()
    return [key for key in fs.find(root) if "tfevents" in key]


def test_a_point_is_served_within_30_s_uploads_stay_within_twice_the_bytes(store_proxy, serve):
    proxy, url = store_proxy  # in 'pass' mode: it counts the bytes of the uploads the store performed
    writer = SummaryWriter("%s/exp/run" % url)
    server = serve("%s/exp" % url)
    assert "data loader: mxboard (in-process)" in server.banner  # served from a local mirror
    assert any(line.startswith("mirror: %s/exp in /" % url) for line in server.output), server.output
    start = time.monotonic()
    writer.add_scalar("loss", 0.0, 0)
    assert served_losses(server, "run", until=bool, timeout=40) == [(0, 0.0)]
    assert time.monotonic() - start < 30
    for step in range(1, 150):  # 15 s of steady logging, a histogram every 50 steps
        writer.add_scalar("loss", float(step), step)
        if step % 50 == 0:
            writer.add_histogram("weights", np.random.default_rng(step).normal(size=1000), step)
        time.sleep(0.1)
    writer.close()
    served = served_losses(server, "run", until=lambda rows: len(rows) == 150)
    assert served == _points(range(150))  # one ordered stream over the objects
    fs, _ = remote.open_filesystem(url)
    objects = _objects("%s/exp/run" % url)
    logged = sum(fs.size(o) for o in objects)  # each record is in exactly one object
    assert proxy.put_bytes <= 2 * logged, (proxy.put_bytes, logged)
    assert 1 <= len(objects) <= 1 + proxy.puts // 2  # an object at most every second upload
    assert [e[1] for e in server.json("/data/plugin/histograms/histograms", {"run": "run", "tag": "weights"})] \
        == [50, 100]
    table = reader.table("%s/exp" % url, "scalars")
    assert list(zip(table["step"], table["value"])) == served


def test_objects_are_parts_within_their_bound(store_url, serve, monkeypatch):
    """On b621f0a a writer of gs:// paid gcsfs' 60 s gRPC probe of the bucket's type against an
    emulator, and the bundled server left gs:// to the data server, which knows only Google's
    endpoint: 0 of 50 points served. Each store now holds an event file as parts, none past
    MAX_OBJECT, written within seconds and served by the bundle's loader."""
    policy = UploadPolicy(max_object=600, upload_secs=0)  # several parts
    logdir = "%s/exp" % store_url
    start = time.monotonic()
    with SummaryWriter(logdir + "/run", flush_secs=0.2, upload_policy=policy) as w:
        for step in range(50):
            w.add_scalar("loss", float(step), step)
            if step % 10 == 9:
                w.flush()
    assert time.monotonic() - start < 20, "writing took %.0f s" % (time.monotonic() - start)
    fs, _ = remote.open_filesystem(logdir)
    objects = _objects(logdir + "/run")
    assert len(objects) > 2 and any(".part0001" in key for key in objects)
    assert max(fs.size(key) for key in objects) <= 600
    server = serve(logdir)
    assert "data loader: mxboard (in-process)" in server.banner
    assert served_losses(server, "run", until=lambda rows: len(rows) == 50) == _points(range(50))


def test_a_lost_acknowledgement_never_stores_a_record_twice(store_proxy, monkeypatch, serve):
    """The store performs six uploads whose answers are lost (a gateway's 504, past the client
    library's own retries) while a part is extended; then a burst no longer fits that part. Each
    step is stored, and served, once."""
    proxy, url = store_proxy
    policy = UploadPolicy(max_object=2000, upload_secs=0, retry_secs=0.05)
    writer = SummaryWriter("%s/lost/run" % url, flush_secs=0.2, upload_policy=policy)
    _log(writer, range(10))
    writer.flush()
    proxy.set("lost_ack", lose_next=6)
    _log(writer, range(10, 20))  # extends the first part: stored, but the answers are lost
    deadline = time.monotonic() + 60
    while proxy.lose_next and time.monotonic() < deadline:
        time.sleep(0.01)
    _log(writer, range(20, 150))  # more than the part has room for
    writer.close()
    assert proxy.lose_next == 0
    proxy.set("pass")
    steps = [e.step for e in reader.read_events("%s/lost/run" % url) if e.summary.value]
    assert steps == list(range(150))
    server = serve("%s/lost" % url)
    assert served_losses(server, "run", until=lambda r: len(r) >= 150) == _points(range(150))


def test_the_store_going_away_keeps_the_data_then_uploads_it(store, store_url, serve, monkeypatch):
    policy = UploadPolicy(upload_secs=1, retry_secs=0.5)
    writer = SummaryWriter("%s/run" % store_url, flush_secs=0.5, upload_policy=policy)
    _log(writer, range(10))
    writer.flush()
    store.stop()
    try:
        for step in range(10, 30):
            writer.add_scalar("loss", float(step), step)  # no error: the data waits
            time.sleep(0.1)
    finally:
        store.start()
    writer.close()
    server = serve(store_url)
    assert served_losses(server, "run", until=lambda r: len(r) == 30) == _points(range(30))


RANK = r"""
import sys
import numpy as np
from mxboard import SummaryWriter
rank, logdir = int(sys.argv[1]), sys.argv[2]
with SummaryWriter(logdir) as w:
    for step in range(100):
        w.add_scalar("loss", rank * 1000.0 + step, step)
        w.add_scalar("rank%d/acc" % rank, step / 100.0, step)
    w.add_embedding("features%d" % rank, np.eye(4) * rank, labels=list("abcd"))
    w.add_hparams({"lr": 0.1 * (rank + 1), "rank": rank}, {"hparam/acc": 0.9}, run_name="hp%d" % rank)
"""


@pytest.mark.plain
def test_ranks_write_one_logdir_projector_and_hparams_included(store_url, serve):
    logdir = "%s/ranks" % store_url
    env = dict(os.environ, **CHILD_ENV)
    procs = [subprocess.Popen([sys.executable, "-c", RANK, str(rank), logdir], env=env) for rank in range(3)]
    assert [p.wait(120) for p in procs] == [0, 0, 0]
    server = serve(logdir)
    server.json("/data/runs", until=lambda runs: {".", "hp0", "hp1", "hp2"} <= set(runs))
    for rank in range(3):
        served = served_losses(server, ".", "rank%d/acc" % rank, until=lambda r: len(r) == 100)
        assert served[-1] == (99, pytest.approx(0.99))
    table = reader.table(logdir, "scalars", raw=True)  # every record: three ranks log one tag in one run,
    loss = [v for run, tag, v in zip(table["run"], table["tag"], table["value"])  # which TensorBoard shows as
            if run == "." and tag == "loss"]  # restarts
    assert sorted(loss) == sorted(rank * 1000.0 + s for rank in range(3) for s in range(100))
    server.json("/data/plugin/projector/runs", until=lambda runs: "." in runs)
    info = server.json("/data/plugin/projector/info", {"run": "."})
    assert sorted(e["tensorName"] for e in info["embeddings"]) == ["features0", "features1", "features2"]
    _, metadata = server.get("/data/plugin/projector/metadata?" + urllib.parse.urlencode(
        {"run": ".", "name": "features2"}))
    assert metadata.decode().split() == list("abcd")
    groups = server.post_json("/data/plugin/hparams/session_groups", {
        "experimentName": "", "allowedStatuses": ["STATUS_SUCCESS", "STATUS_UNKNOWN"],
        "colParams": [{"hparam": "rank"}], "startIndex": 0, "sliceSize": 10})
    assert sorted(g["hparams"]["rank"] for g in groups["sessionGroups"]) == [0, 1, 2]


FORK_POOL = r"""
import multiprocessing, os, sys
import mxboard

writer = mxboard.SummaryWriter(sys.argv[1], flush_secs=0.5)
writer.add_scalar("parent", 1.0, 0)


def log(first):  # a fork-Pool worker logs through the parent's writer (a DataLoader worker does)
    for step in range(first, first + 50):
        writer.add_scalar("child/%d" % first, float(step), step)
    writer.flush()
    return os.getpid()


if __name__ == "__main__":
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pids = pool.map(log, [0, 50, 100, 150])
        pool.close()
        pool.join()
    writer.close()
    print(len(set(pids)))
"""


@pytest.mark.plain
def test_a_forked_child_logs_through_its_parents_writer(store_url, tmp_path, serve):
    """The child's worker opens a store connection of its own (the parent's fsspec instance is
    not fork-safe) and objects of its own: 200 of 200 points, stored and served."""
    script = tmp_path / "fork_pool.py"
    script.write_text(FORK_POOL)
    url = "%s/forked" % store_url
    proc = subprocess.run([sys.executable, str(script), url], capture_output=True, text=True, timeout=240,
                          env=dict(os.environ, **CHILD_ENV))
    assert proc.returncode == 0, proc.stderr
    assert "Error" not in proc.stderr, proc.stderr
    rows = [(e.step, e.summary.value[0].simple_value) for e in reader.read_events(url)
            if e.summary.value and e.summary.value[0].tag.startswith("child")]
    assert sorted(rows) == _points(range(200))
    server = serve(store_url)
    for first in (0, 50, 100, 150):
        served = served_losses(server, "forked", "child/%d" % first, until=lambda r: len(r) == 50)
        assert served == _points(range(first, first + 50))


NAMES = ["lr=0.1,bs=32", "baseline (v2)", "run 1", "résumé", "a+b", "plain"]


def test_run_names_with_spaces_commas_plus_and_accents_are_served(store_url, serve):
    """On S3 the presigned listing returned keys URL-escaped (botocore asks for
    encoding-type=url): they were never decoded, so only 'plain' of these six runs was served
    (and none under a prefix with a space). Every run is served by the bundle's loader, as named in
    the store, under a prefix with a space."""
    logdir = "%s/my experiments" % store_url
    for name in NAMES:
        with SummaryWriter("%s/%s" % (logdir, name)) as writer:
            _log(writer, range(5))
    server = serve(logdir)
    assert "data loader: mxboard (in-process)" in server.banner
    runs = server.json("/data/runs", until=lambda runs: len(runs) == len(NAMES), timeout=40)
    assert sorted(runs) == sorted(NAMES)
    for name in NAMES:
        assert served_losses(server, name, until=lambda rows: len(rows) == 5) == _points(range(5))


def test_a_mirror_dir_resumed_after_a_kill_serves_all(store_url, serve, tmp_path, monkeypatch):
    """On 802362c a --mirror_dir resumed after a kill -9 (its manifest older than its files) froze
    the run for the server's life. A resumed mirror checks its files against its manifest: what
    was copied after the last save is cut and copied again."""
    policy = UploadPolicy(upload_secs=0)
    url = "%s/resumed" % store_url
    directory = str(tmp_path / "kept")
    writer = SummaryWriter("%s/run" % url, flush_secs=1, upload_policy=policy)
    _log(writer, range(10))
    writer.flush()
    monkeypatch.setattr(mirror_loop, "SAVE_SECS", 0)
    mirror = Mirror(url, directory, 1 << 30)
    mirror.sync()  # saves its manifest
    monkeypatch.setattr(mirror_loop, "SAVE_SECS", 3600)
    _log(writer, range(10, 20))
    writer.flush()
    mirror.sync()  # copied, not yet in the manifest, as before a kill -9
    with open(os.path.join(directory, MANIFEST)) as f:
        recorded = sum(entry["copied"] for entry in json.load(f)["files"].values())
    assert 0 < recorded < sum(os.path.getsize(p) for p in event_files(os.path.join(directory, "run")))
    del mirror
    gc.collect()  # its lock released, as by the process's end

    server = serve(url, "--mirror_dir", directory)
    assert len(served_losses(server, "run", until=lambda rows: len(rows) == 20)) == 20
    _log(writer, range(20, 30))
    writer.close()
    assert served_losses(server, "run", until=lambda rows: len(rows) == 30) == _points(range(30))


def test_a_hostile_event_file_cannot_take_the_server_down(store_url, serve, tmp_path, monkeypatch):
    """On 802362c an 80-byte event file whose record header claims 2^62 bytes (its checksum
    right) aborted the data server, and every request got HTTP 500; one claiming 2^30 bytes cost
    it 1 GB. The mirror copies whole records only, checking each header: the first file is served
    up to its last good record (said once), the second's record waits for its rest; the server's
    process stays small."""
    import psutil

    policy = UploadPolicy(upload_secs=0)
    logdir = "%s/hostile" % store_url
    local = tmp_path / "local"
    with SummaryWriter(str(local)) as writer:
        for step in range(3):
            writer.add_scalar("loss", 7.0, step)
    (path,) = event_files(local)
    with open(path, "rb") as f:
        good = f.read()
    fs, _ = remote.open_filesystem(logdir)
    for name, claim in (("hostile62", 1 << 62), ("hostile30", 1 << 30)):
        fs.pipe_file(remote.open_filesystem("%s/%s/events.out.tfevents.1.h" % (logdir, name))[1],
                     good + record_header(claim) + bytes(20))
    with SummaryWriter("%s/live" % logdir, upload_policy=policy) as writer:
        _log(writer, range(20))
    server = serve(logdir)
    assert served_losses(server, "live", until=lambda rows: len(rows) == 20) == _points(range(20))
    for name in ("hostile62", "hostile30"):
        assert served_losses(server, name, until=lambda rows: len(rows) == 3) == _points(range(3), lambda s: 7.0)
    assert server.status("/data/runs") == 200
    output = "".join(server.output)
    assert output.count("is served up to its last good record") == 1
    assert "hostile62/events.out.tfevents.1.h is served up to its last good record" in output
    # The bundle's loader reads in the server's process, in windows: what a length claims is never
    # allocated.
    assert psutil.Process(server.proc.pid).memory_info().rss < 500 << 20


def test_an_object_the_store_refuses_is_said_once_and_backed_off_and_the_rest_served(store_proxy, tmp_path,
                                                                                      monkeypatch, caplog):
    """An object the store lists but refuses to return (403: archived to Glacier or GCS's
    Archive class, a KMS key the server may not use). On b621f0a the run was missing without a
    word and the object was asked for at every pass (30 runs: 253 refused GETs in 30 s). Now the
    refusal is said once, naming the object and the reason, the object is tried again backing
    off, the other run is mirrored, and once the store returns it, so is this one."""
    proxy, url = store_proxy
    policy = UploadPolicy(upload_secs=0)
    for run in ("kept", "archived"):
        with SummaryWriter("%s/cold/%s" % (url, run), upload_policy=policy) as w:
            for step in range(6):
                w.add_scalar("loss", float(step), step)
    proxy.set("refuse_objects", refused="/cold/archived/")
    with caplog.at_level(logging.WARNING, "tensorboard_bundle"):
        mirror = Mirror("%s/cold" % url, str(tmp_path / "m"), 1 << 30, interval=0.5)
        for _ in range(6):  # within the first backoff (1 s)
            mirror.sync()
    said = [r.getMessage() for r in caplog.records if "archived" in r.getMessage()]
    assert len(said) == 1 and ("InvalidObjectState" in said[0] or "Forbidden" in said[0] or "403" in said[0]), said
    assert proxy.refusals == 1, "asked again at each pass: %d refusals" % proxy.refusals
    assert _served_file(tmp_path / "m" / "kept") == [("loss", s, float(s)) for s in range(6)]
    proxy.set("pass")
    time.sleep(1.2)
    mirror.sync()
    assert _served_file(tmp_path / "m" / "archived") == [("loss", s, float(s)) for s in range(6)]
    assert "copied now" in caplog.text


def _served_file(run):
    """What TensorBoard's own loader reads of the run's one event file."""
    (path,) = event_files(run)
    return tb_scalars(path)
