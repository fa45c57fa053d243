"""The writer off the happy path: writers collected unclosed (on any thread), add_embedding's
files, the call order of interleaved kinds on one tag, what a closed writer keeps, forked data
loader workers and several processes in one logdir."""
import gc
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc

import numpy as np
import pytest

from conftest import ROOT, accumulator, event_files, projector_config, tb_events, tb_scalars
from mxboard import SummaryWriter, reader
from mxboard._writer import lifecycle
from mxboard.reader import read_events

COLLECTED_LOOP = """
import tempfile
import numpy as np
from mxboard import SummaryWriter

for i in range(30):
    w = SummaryWriter(tempfile.mkdtemp(dir=ROOT))
    w.add_embedding(np.random.rand(3, 3), metadata=[33, 44, 55], label_img=np.zeros((3, 3, 5, 5)), global_step=2)
print("done", flush=True)
"""


@pytest.mark.slow
@pytest.mark.plain
def test_thirty_writers_collected_unclosed_never_hang_the_exit(tmp_path):
    """Rebinding `w` made each old writer garbage; the collection ran on some writer's own thread,
    which closed that writer there and waited for itself, and the exit hook waited on it: 5 of 6
    runs never exited. Now the reaper thread closes them: each run exits within 2 s of its loop."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    for run in range(5):
        root = tmp_path / str(run)
        root.mkdir()
        proc = subprocess.Popen([sys.executable, "-c", "ROOT = %r\n" % str(root) + COLLECTED_LOOP],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert proc.stdout.readline() == "done\n"
        looped = time.monotonic()
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise AssertionError("run %d: still running 10 s after its loop" % run) from None
        finally:
            proc.stdout.close()
            proc.stderr.close()
        assert time.monotonic() - looped < 2, "run %d took %.1f s to exit" % (run, time.monotonic() - looped)
        assert proc.returncode == 0 and err == "", err
        logdirs = sorted(root.iterdir())
        assert len(logdirs) == 30 and all((d / "projector_config.pbtxt").is_file() for d in logdirs)


def test_a_writer_collected_on_its_own_writer_thread_is_closed_by_the_reaper(logdir):
    """The collection happens on the writer thread itself (a task that drops the last reference
    and collects there): the writer is closed, and that thread never waits for itself."""
    holder = [SummaryWriter(logdir, flush_secs=3600)]
    holder[0].add_scalar("x", 1.0, 1)
    ran = threading.Event()

    def collect_here(storage):  # runs on the writer's own thread
        holder.clear()
        gc.collect()
        ran.set()

    holder[0]._core.thread.call(collect_here)
    assert ran.is_set() and not holder
    assert lifecycle.reaped(10)
    (path,) = event_files(logdir)
    assert [(v.tag, e.step) for e in tb_events(path) for v in e.summary.value] == [("x", 1)]


def test_add_embedding_returns_with_its_files_in_place(tmp_path):
    """torch's own test_embedding: a writer never closed, then rmtree in tearDown (it failed with
    "Directory not empty" in 3 of 4 runs: the projector's files came after the call)."""
    for _ in range(20):
        where = tempfile.mkdtemp(dir=str(tmp_path))
        w = SummaryWriter(where)
        w.add_embedding(np.random.rand(3, 3), metadata=[33, 44, 55], label_img=np.zeros((3, 3, 5, 5)),
                        global_step=2)
        names = sorted(os.listdir(os.path.join(where, "default_000002")))
        assert names == ["metadata.tsv", "sprite.png", "tensors.tsv"]
        assert "projector_config.pbtxt" in os.listdir(where)
        shutil.rmtree(where)  # nothing more is written there after the call


def test_add_embedding_raises_its_own_write_error_at_the_call(tmp_path):
    logdir = tmp_path / "logs"
    w = SummaryWriter(str(logdir))
    (logdir / "e").write_text("a file where the embedding's folder goes")
    with pytest.raises(OSError):
        w.add_embedding(np.eye(2), tag="e")
    w.add_scalar("after", 1.0, 0)  # the writer goes on
    w.close()
    assert reader.table(str(logdir), "scalars")["value"] == [1.0]


def _forms():
    """Ways to log one point of the tag "t" in the main file, by name."""
    forms = {
        "float": lambda w, step: w.add_scalar("t", float(step), step),
        "numpy": lambda w, step: w.add_scalar("t", np.float32(step), step),
        "display_name": lambda w, step: w.add_scalar("t", float(step), step, display_name="T"),
        "new_style": lambda w, step: w.add_scalar("t", float(step), step, new_style=True),
        "array": lambda w, step: w.add_scalar("t", np.array([step], dtype=np.float64), step),
    }
    if "mxnet" in sys.modules or _has("mxnet"):
        forms["ndarray"] = lambda w, step: w.add_scalar("t", sys.modules["mxnet"].nd.array([step]), step)
    return forms


def _has(module):
    import importlib.util

    return importlib.util.find_spec(module) is not None


FORMS = sorted(_forms())
PAIRS = [(a, b) for a in FORMS for b in FORMS if a < b]


@pytest.mark.parametrize("first, second", PAIRS, ids=["%s+%s" % p for p in PAIRS])
def test_interleaved_forms_on_one_tag_keep_the_call_order(logdir, first, second):
    """A scalar that becomes a record of its own (display_name) between batched rows of the same
    tag was written after them: steps 1, 2, 3, 4 landed as 2, 4, 1, 3, and TensorBoard, taking
    a step that goes back for a restart, hid points. Every pair of forms, alternating."""
    if "ndarray" in (first, second):
        import mxnet  # noqa: F401 - the NDArray form's module
    forms = _forms()
    with SummaryWriter(logdir, flush_secs=3600) as w:  # one batch: rows and records together
        for step in range(40):
            forms[first if step % 2 == 0 else second](w, step)
    raw = reader.table(logdir, "scalars", raw=True)
    assert raw["step"] == list(range(40)) and raw["value"] == [float(s) for s in range(40)]
    (path,) = event_files(logdir)
    steps = [e.step for e in tb_events(path) for v in e.summary.value if v.tag == "t"]  # TensorBoard's loader
    assert steps == list(range(40))


def test_named_values_and_add_scalars_on_one_sub_run_keep_the_call_order(logdir):
    with SummaryWriter(logdir, flush_secs=3600) as w:
        for step in range(40):
            if step % 2:
                w.add_scalars("t", {"a": float(step)}, step)
            else:
                w.add_scalar("t", {"a": float(step)}, step)
            w.add_histogram("t", np.arange(3.0), step)  # a record of another kind on the same tag
    scalars = reader.table(os.path.join(logdir, "t", "a"), "scalars", raw=True)
    assert scalars["step"] == list(range(40))
    assert reader.table(logdir, "histograms", raw=True)["step"] == list(range(40))


def test_a_closed_writer_keeps_no_state_per_tag(logdir):
    """A writer kept about 290 bytes per distinct tag after close() (1M tags: 259 MB)."""
    tags = ["tag/%d" % i for i in range(100_000)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        w = SummaryWriter(logdir)
        for tag in tags:
            w.add_scalar(tag, 1.0, 0)
        w.close()
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert w.closed
    assert kept < 1_000_000, "%d bytes kept, %.1f a tag" % (kept, kept / len(tags))  # 10 bytes a tag at most


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
