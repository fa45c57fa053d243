"""Nothing lost, nothing corrupted, no one let in: kill -9, fork, write errors, many writers,
hostile names, fuzzed files, and where the server listens."""
import contextlib
import json
import multiprocessing
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import BUNDLE, ROOT, accumulator, event_files, needs, projector_config, tb_scalars
from mxboard import SummaryWriter, reader
from mxboard._format._crc32c import masked_crc32c
from mxboard._format.events import frame
from mxboard.reader import DataLossError, TornRecordWarning, read_events, read_records

# -- kill -9 ------------------------------------------------------------------------------------

KILLED = r"""
import sys, time
import mxboard
w = mxboard.SummaryWriter(LOGDIR, flush_secs=0.5)
step = 0
while True:
    w.add_scalar("x", float(step), step)
    if step % 100 == 0:
        print(step, time.time(), flush=True)   # what was logged, and when
    step += 1
    time.sleep(0.0005)
"""


@pytest.mark.plain
@pytest.mark.slow
def test_kill_9_loses_nothing_older_than_flush_secs(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    proc = subprocess.Popen([sys.executable, "-c", "LOGDIR = %r\n" % str(tmp_path) + KILLED],
                            stdout=subprocess.PIPE, text=True, env=env)
    logged = []
    while not logged or logged[-1][1] - logged[0][1] < 3:
        step, wall = proc.stdout.readline().split()
        logged.append((int(step), float(wall)))
    proc.send_signal(signal.SIGKILL)
    killed_at = time.time()
    proc.wait()
    proc.stdout.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornRecordWarning)  # a write may have been cut: allowed
        ours = [e.step for e in read_events(str(tmp_path)) if e.HasField("summary")]
    theirs = [s for _, s, _ in tb_scalars(event_files(str(tmp_path))[0])]
    must_have = max(step for step, wall in logged if wall < killed_at - 0.5 - 1.0)
    assert ours == theirs == list(range(len(ours)))  # in order, none missing, none corrupt
    assert ours[-1] >= must_have


# -- fork -------------------------------------------------------------------------------------

def _child_logs(index):
    writer = _CHILD_WRITER[0]
    for step in range(50):
        writer.add_scalar("child", float(index), step)
    writer.flush()
    return os.getpid()


_CHILD_WRITER = []


def test_forked_data_loader_workers_log_to_files_of_their_own_and_nothing_hangs(logdir):
    writer = SummaryWriter(logdir, flush_secs=3600)
    _CHILD_WRITER[:] = [writer]
    for step in range(2000):
        writer.add_scalar("parent", float(step), step)  # queued, unwritten, when the workers fork
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pids = set(pool.map(_child_logs, range(4), chunksize=1))
        for step in range(2000, 3000):
            writer.add_scalar("parent", float(step), step)
        pool.close()  # the workers end as they would in a data loader, not by terminate()'s SIGTERM
        pool.join()
    writer.close()
    files = {os.path.basename(f).split(".")[5]: f for f in event_files(logdir)}
    parent = files.pop(str(os.getpid()))
    assert [s for t, s, _ in tb_scalars(parent)] == list(range(3000))  # complete, only the parent's
    assert set(files) == {str(p) for p in pids}  # one file a worker, named by its pid
    child_points = [(t, s) for f in files.values() for t, s, _ in tb_scalars(f)]
    assert len(child_points) == 4 * 50 and {t for t, _ in child_points} == {"child"}
    list(read_events(logdir))  # every record of every file CRC-clean


# -- write errors -----------------------------------------------------------------------------

def test_a_vanished_logdir_raises_within_bounded_time_and_close_returns(logdir):
    writer = SummaryWriter(logdir, flush_secs=0.2)
    writer.add_scalar("x", 1.0, 0)
    writer.flush()
    shutil.rmtree(logdir)
    start = time.monotonic()
    with pytest.raises(FileNotFoundError, match="deleted"):
        for step in range(1, 100_000):
            writer.add_scalar("x", 1.0, step)
            if step % 1000 == 0:
                writer.flush()
    assert time.monotonic() - start < 10
    writer.close()


@pytest.mark.plain
@pytest.mark.slow
def test_a_read_only_logdir_raises_at_the_call(tmp_path):
    if os.geteuid() == 0:
        # root ignores permissions: a read-only bind mount is the honest test
        if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
            pytest.skip("root without mount namespaces: cannot make a read-only directory")
        readonly = tmp_path / "ro"
        readonly.mkdir()
        out = subprocess.run(
            ["unshare", "-m", "sh", "-c", "mount --bind {0} {0} && mount -o remount,ro,bind {0} && "
             "PYTHONPATH={1} {2} -c \"import mxboard; mxboard.SummaryWriter('{0}/logs')\"".format(
                 readonly, os.path.join(ROOT, "python"), sys.executable)],
            capture_output=True, text=True)
        assert out.returncode != 0 and "Read-only file system" in out.stderr
    else:
        readonly = tmp_path / "ro"
        readonly.mkdir(mode=0o500)
        with pytest.raises(PermissionError):
            SummaryWriter(str(readonly / "logs"))


# -- many writers -----------------------------------------------------------------------------

def _rank(args):
    logdir, rank = args
    import mxboard

    with mxboard.SummaryWriter(logdir) as w:
        for step in range(500):
            w.add_scalar("loss/rank%d" % rank, float(step), step)
            w.add_scalar("shared", float(rank), step)
        w.add_histogram("weights", np.full(10, rank), 0)
        w.add_embedding("rank%d" % rank, np.random.rand(4, 2))


def test_several_processes_in_one_logdir(logdir):
    os.makedirs(logdir)
    ranks = 4
    with multiprocessing.get_context("spawn").Pool(ranks) as pool:
        pool.map(_rank, [(logdir, r) for r in range(ranks)])
    files = event_files(logdir)
    assert len(files) == ranks and len({os.path.basename(f) for f in files}) == ranks
    acc = accumulator(logdir)
    for r in range(ranks):
        assert [e.step for e in acc.Scalars("loss/rank%d" % r)] == list(range(500))
    assert sorted({e.value for e in acc.Scalars("shared")}) == [0.0, 1.0, 2.0, 3.0]
    assert len(acc.Scalars("shared")) == ranks * 500
    assert sorted(e.tensor_name for e in projector_config(logdir).embeddings) == ["rank%d" % r for r in range(ranks)]


# -- hostile names ----------------------------------------------------------------------------

HOSTILE = ["../../escape", "/etc/passwd", "..\\..\\win", "a/../../../b", "nul\x00byte", "x" * 10_000,
           "/".join(["deep"] * 5000), ".", "..", " ", "con:aux?*<>|", "é/ü/日本"]


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_tags_and_names_never_leave_the_logdir_and_are_kept(tmp_path, name):
    logdir = tmp_path / "inside" / "logs"
    with SummaryWriter(str(logdir)) as w:
        w.add_scalar(name, {name: 1.0}, 1)  # tag and name become directories
        w.add_scalar(name, 2.0, 1)
        w.add_embedding(name, np.ones((2, 2)))
        w.add_hparams({"lr": 0.1}, {"m": 1.0}, run_name=name)
    inside = os.path.realpath(str(tmp_path / "inside"))
    for directory, subdirs, names in os.walk(str(tmp_path)):
        for entry in subdirs + names:
            path = os.path.realpath(os.path.join(directory, entry))
            assert path == inside or path.startswith(inside + os.sep), path
    assert sorted(os.listdir(str(tmp_path))) == ["inside"]
    tags = {v.tag for e in read_events(str(logdir)) for v in e.summary.value}
    assert name in tags  # the text itself is kept in the events


def test_tags_that_are_not_unicode_are_refused_clearly(logdir):
    with SummaryWriter(logdir) as w:
        for tag in ("bad\udcff", b"bytes"):
            with pytest.raises((ValueError, TypeError), match="tag"):
                w.add_scalar(tag, 1.0)
        w.add_scalar("ok", 1.0)


# -- fuzzing the reader and the framing -------------------------------------------------------

@contextlib.contextmanager
def _window(size):
    saved, reader.WINDOW = reader.WINDOW, size
    try:
        yield
    finally:
        reader.WINDOW = saved


@pytest.mark.slow
def test_a_large_file_is_read_in_little_memory(tmp_path):
    """Records are read in windows (reader.WINDOW), never the whole file: 256 MB of 1 MB records
    cost a few windows of memory (on 802362c: the whole file). `make bench` reads 1 GB."""
    path = tmp_path / "events.out.tfevents.big"
    record = frame(b"\x00" * (1 << 20))
    with open(path, "wb") as f:
        for _ in range(256):
            f.write(record)
    code = ("import resource, sys\nfrom mxboard.reader import read_records\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "count = sum(1 for _ in read_records(sys.argv[1]))\n"
            "print(count, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    count, grown_mb = map(int, out.stdout.split())
    assert count == 256 and grown_mb < 40, out.stdout


def _records(payloads):
    return b"".join(frame(p) for p in payloads)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=64), max_size=8), st.data())
def test_fuzzed_files_never_crash_the_reader_nor_pass_a_bad_record(tmp_path, payloads, data):
    good = _records(payloads)
    mutation = data.draw(st.sampled_from(["none", "truncate", "flip", "garbage"]))
    blob = bytearray(good)
    if mutation == "truncate":
        blob = blob[:data.draw(st.integers(0, len(blob)))]
    elif mutation == "flip" and blob:
        blob[data.draw(st.integers(0, len(blob) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    elif mutation == "garbage":
        blob = bytearray(data.draw(st.binary(max_size=200)))
    path = tmp_path / "events.out.tfevents.fuzz"
    path.write_bytes(bytes(blob))
    returned = []
    # the reader's window: a record across windows, or longer than one, is read whole
    window = data.draw(st.sampled_from([1, 5, 12, 16, 17, 64, reader.WINDOW]))
    with warnings.catch_warnings(), _window(window):
        warnings.simplefilter("ignore", TornRecordWarning)
        try:
            for payload in read_records(str(path), strict=True):
                returned.append(payload)
        except DataLossError:
            pass
    # whatever came back is a prefix of what was written, each record intact
    assert returned == payloads[:len(returned)] or mutation == "garbage" and all(
        _records([p]) in bytes(blob) for p in returned)
    for payload in returned:
        assert masked_crc32c(payload) == struct.unpack("<I", _records([payload])[-4:])[0]
    if mutation == "none":
        assert returned == payloads


# -- where the server listens -----------------------------------------------------------------

LISTEN_CHECK = r"""
import json, os, socket, subprocess, sys, time
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["ip", "addr", "add", "192.0.2.10/32", "dev", "lo"], check=True)  # this namespace's 2nd address
os.makedirs(LOGDIR, exist_ok=True)
results = {}
for name, extra in (("default", []), ("bind_all", ["--bind_all"]), ("host", ["--host", "192.0.2.10"])):
    server = subprocess.Popen(BUNDLE + ["--logdir", LOGDIR, "--port", "6006"] + extra,
                              stderr=subprocess.PIPE, text=True)
    banner = server.stderr.readline()
    reach = {}
    for address in ("127.0.0.1", "192.0.2.10"):
        try:
            socket.create_connection((address, 6006), timeout=2).close()
            reach[address] = True
        except OSError:
            reach[address] = False
    results[name] = reach
    server.terminate()
    server.wait(10)
print(json.dumps(results))
"""


@pytest.mark.slow
@needs("unshare", "ip")
def test_the_server_listens_on_127_0_0_1_unless_told_otherwise(tmp_path):
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("needs unshare -n")
    code = "LOGDIR = %r\nBUNDLE = %r\n" % (str(tmp_path / "logs"), BUNDLE) + LISTEN_CHECK
    proc = subprocess.run(["unshare", "-n", sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=180, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results["default"] == {"127.0.0.1": True, "192.0.2.10": False}
    assert results["bind_all"] == {"127.0.0.1": True, "192.0.2.10": True}
    assert results["host"] == {"127.0.0.1": False, "192.0.2.10": True}
