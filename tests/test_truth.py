"""What you log is what TensorBoard shows, and nothing is lost: each case as a hostile user
would try it, read back from what the bundled TensorBoard serves over HTTP with its default
(fast, Rust) loader, which hides every point whose step is at or above a step that comes later
in a run (it takes that for a restart)."""
import gc
import os
import signal
import stat
import subprocess
import sys
import threading
import time
import tracemalloc

import numpy as np
import pytest

from conftest import ROOT, event_files, projector_config, run_python, started_worker, tb_scalars
from mxboard import SummaryWriter
from mxboard._thread.intake import Record


def served_steps(serve, logdir, tag, count, run="."):
    """The steps of `tag` the bundled TensorBoard serves, once it serves `count` points (or
    after 30 s, whatever it serves then)."""
    server = serve(logdir)
    assert "data loader: fast (Rust data server)" in server.banner
    points = server.json("/data/plugin/scalars/scalars", {"run": run, "tag": tag},
                         until=lambda p: isinstance(p, list) and len(p) >= count, timeout=30)
    return [step for _, step, _ in points]


@pytest.mark.plain
def test_a_thread_pool_logging_one_tag_in_step_order_shows_every_point(logdir, serve):
    # four threads take strict turns (thread i logs the steps i, i + 4, ...): the calls are
    # ordered, and the writer must keep that order
    w = SummaryWriter(logdir, flush_secs=3600)
    turn = threading.Condition()
    state = {"next": 0}

    def work(index):
        for step in range(index, 1000, 4):
            with turn:
                turn.wait_for(lambda step=step: state["next"] == step, timeout=30)
                w.add_scalar("loss", 1.0 / (step + 1), step)
                state["next"] += 1
                turn.notify_all()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w.close()
    assert served_steps(serve, logdir, "loss", 1000) == list(range(1000))


def test_ndarray_and_float_values_on_one_tag_keep_their_order(logdir, serve):
    nd = pytest.importorskip("mxnet").nd
    with SummaryWriter(logdir, flush_secs=3600) as w:
        for step in range(200):
            value = nd.array([step * 0.5]) if step % 3 == 0 else step * 0.5
            w.add_scalar("mixed", value, step)
    assert served_steps(serve, logdir, "mixed", 200) == list(range(200))


@pytest.mark.plain
def test_twelve_writers_in_one_second_are_read_in_creation_order(logdir, serve):
    for writer in range(12):  # a run resumed twelve times within one second: files sort in order
        with SummaryWriter(logdir) as w:
            for step in range(20 * writer, 20 * writer + 20):
                w.add_scalar("x", float(step), step)
    names = [os.path.basename(p) for p in event_files(logdir)]
    assert len({n.split(".")[3] for n in names}) <= 2  # (at most two seconds)
    assert served_steps(serve, logdir, "x", 240) == list(range(240))


# -- nothing lost silently ------------------------------------------------------------------

EXIT_WRITE_ERROR = r"""
import resource, signal
import mxboard
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
w = mxboard.SummaryWriter(LOGDIR, flush_secs=3600)
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
for step in range(8000):  # fewer than a batch (8192): nothing is written before exit
    w.add_scalar("x", float(step), step)
print("logged, exiting without close()")
"""


@pytest.mark.plain
@pytest.mark.slow
def test_a_write_error_at_exit_is_told_on_stderr_and_in_the_exit_status(tmp_path):
    proc = run_python("LOGDIR = %r\n" % str(tmp_path) + EXIT_WRITE_ERROR, check=False)
    assert proc.stdout.strip() == "logged, exiting without close()"
    assert proc.returncode == 1
    assert "could not all be written" in proc.stderr and "File too large" in proc.stderr


SIGTERM_SCRIPT = r"""
import signal, sys, time
import mxboard
if USER_HANDLER:
    signal.signal(signal.SIGTERM, lambda *a: (print("user handler"), sys.stdout.flush(), sys.exit(3)))
w = mxboard.SummaryWriter(LOGDIR, flush_secs=3600)
for step in range(100):
    w.add_scalar("x", float(step), step)
print("ready", flush=True)
time.sleep(600)  # far longer than the test waits
"""


@pytest.mark.plain
@pytest.mark.slow
@pytest.mark.parametrize("user_handler", [False, True])
def test_sigterm_flushes_then_ends_the_process_by_the_signal_and_never_replaces_a_handler(tmp_path, user_handler):
    code = "LOGDIR = %r\nUSER_HANDLER = %r\n" % (str(tmp_path), user_handler) + SIGTERM_SCRIPT
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=15)[0]
        if user_handler:  # the user's handler ran (and its exit closed the writer)
            assert (proc.returncode, rest.strip()) == (3, "user handler")
        else:
            assert proc.returncode == -signal.SIGTERM  # ended by the signal, as without mxboard
        assert [s for _, s, _ in tb_scalars(event_files(str(tmp_path))[0])] == list(range(100))
    finally:
        proc.kill()
        proc.communicate()


def test_a_call_racing_close_is_written_once_or_raises_and_later_calls_reopen(logdir):
    """A call that races close() is written before it, or raises; the calls after it reopen the
    writer (a new event file, as tensorboardX and torch): every accepted step is served once."""
    for attempt in range(5):
        directory = os.path.join(logdir, str(attempt))
        w = SummaryWriter(directory, flush_secs=3600)
        accepted, started, stop = [], threading.Event(), threading.Event()

        def log(w=w, accepted=accepted, started=started, stop=stop):
            step = 0
            while not stop.is_set():
                try:
                    w.add_scalar("x", 1.0, step)
                    accepted.append(step)
                except RuntimeError as exc:
                    assert "closed" in str(exc)
                step += 1
                started.set()
                if step % 50 == 0:
                    time.sleep(0.001)  # a training loop, not a flood

        thread = threading.Thread(target=log)
        thread.start()
        started.wait(10)
        time.sleep(0.01 * attempt)
        w.close()
        time.sleep(0.05)
        stop.set()
        thread.join(10)
        w.close()
        files = event_files(directory)
        assert len(files) == 2  # the reopened writer's file follows the first
        written = [s for f in files for _, s, _ in tb_scalars(f)]
        assert written == accepted and accepted


# -- per-thread state and queued bytes are bounded ------------------------------------------

def test_scalar_state_of_ended_threads_is_reclaimed(logdir):
    import mxboard._thread.worker

    with SummaryWriter(logdir) as w:
        def one(step):
            w.add_scalar("x", 1.0, step)

        def threads(first, count):
            for step in range(first, first + count):
                thread = threading.Thread(target=one, args=(step,))
                thread.start()
                thread.join()
            w.flush()
            w.flush()  # the second batch finds the first one's threads ended and empty

        threads(0, 200)  # warm up: caches, arrays of the counter
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        threads(200, 1500)
        gc.collect()  # thread-local dicts of ended threads are freed by the cyclic collector
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
    held = sum(d.size_diff for d in after.compare_to(before, "filename")
               if d.traceback[0].filename == mxboard._thread.worker.__file__)
    assert held < 100_000, held  # 1500 threads' columns would hold ~1.5 MB
    assert [s for _, s, _ in tb_scalars(event_files(logdir)[0])] == list(range(1700))


def test_the_queue_is_bounded_in_bytes_as_well_as_items(logdir):
    gate = threading.Event()

    def held(tag, text):
        gate.wait(30)  # the writer thread is slow
        from mxboard.summaries.text import text_summary
        return text_summary(tag, text)

    worker = started_worker(logdir, flush_secs=3600, max_queue=10, max_bytes=26 << 20)
    text = "x" * (8 << 20)  # 8 MB a call
    queued = []

    def producer():
        for i in range(8):
            worker.put(Record(None, held, ("t", text), i, 1.0))
            queued.append(i)

    thread = threading.Thread(target=producer)
    thread.start()
    thread.join(0.5)
    assert thread.is_alive() and len(queued) == 3  # 24 MB wait; the 4th would pass 26 MB
    gate.set()
    thread.join(60)
    assert queued == list(range(8)) and worker.close() is None


# -- the projector ----------------------------------------------------------------------------

FOREIGN_CONFIG = """embeddings {
  tensor_name: "from_another_tool"
  tensor_path: "other/tensors.tsv"
}
model_checkpoint_path: "ckpt/model"
"""


def test_the_projector_config_keeps_entries_it_did_not_write(logdir):
    os.makedirs(logdir)
    with open(os.path.join(logdir, "projector_config.pbtxt"), "w") as f:
        f.write(FOREIGN_CONFIG)
    with SummaryWriter(logdir) as w:
        w.add_embedding("ours", np.ones((3, 2)))
    config = projector_config(logdir)
    assert sorted(e.tensor_name for e in config.embeddings) == ["from_another_tool", "ours"]
    assert config.model_checkpoint_path == "ckpt/model"


@pytest.mark.slow
def test_projector_files_follow_the_umask(tmp_path):
    run_python("LOGDIR = %r\n" % str(tmp_path) + r"""
import os
import numpy as np
import mxboard
os.umask(0o022)
with mxboard.SummaryWriter(LOGDIR) as w:
    w.add_embedding("e", np.ones((3, 2)), labels=["a", "b", "c"], images=np.zeros((3, 1, 4, 4)))
""")
    files = [os.path.join(d, n) for d, _, names in os.walk(str(tmp_path)) for n in names if "tfevents" not in n]
    assert len(files) == 6  # tensors, metadata, sprite, config; our entry and lock beside it
    assert {oct(stat.S_IMODE(os.stat(f).st_mode)) for f in files} == {"0o644"}


def test_embedding_folders_of_different_tags_or_steps_never_collide(logdir):
    with SummaryWriter(logdir) as w:
        w.add_embedding("a", np.full((2, 2), 1.0), global_step=1)
        w.add_embedding("a_000001", np.full((2, 2), 2.0))
    config = projector_config(logdir)
    paths = {e.tensor_name: e.tensor_path for e in config.embeddings}
    assert set(paths) == {"a:1", "a_000001"} and len(set(paths.values())) == 2
    values = {name: np.loadtxt(os.path.join(logdir, path)) for name, path in paths.items()}
    assert values["a:1"].tolist() == [[1.0, 1.0]] * 2 and values["a_000001"].tolist() == [[2.0, 2.0]] * 2


# -- arguments are taken as they were at the call -------------------------------------------

def test_config_dict_is_copied_at_the_call(logdir):
    import json

    from conftest import plugin_accumulator

    config = {"camera": {"fov": 75}}
    with SummaryWriter(logdir, flush_secs=3600) as w:
        w.add_mesh("m", np.ones((4, 3)), config_dict=config)
        config["camera"]["fov"] = 10  # after the call
    content = plugin_accumulator(logdir).SummaryMetadata("m_VERTEX").plugin_data.content
    from tensorboard.plugins.mesh import plugin_data_pb2

    assert json.loads(plugin_data_pb2.MeshPluginData.FromString(content).json_config) == {"camera": {"fov": 75}}


def test_a_bad_call_never_costs_the_next_call_its_data(logdir, serve):
    nd = pytest.importorskip("mxnet").nd
    with SummaryWriter(logdir, flush_secs=0.05) as w:
        # an MXNet array is checked when the writer thread has its values: the error comes
        # with a later call, which is written all the same
        w.add_image("img", nd.array([[[300]]], dtype="int32"), 0)
        for step in range(200):  # the writer thread wakes every 50 ms
            try:
                w.add_scalar("after", 1.0, step)
            except ValueError as exc:
                assert "integer pixels must lie in [0, 255]" in str(exc)
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the error was never reported")
    assert served_steps(serve, logdir, "after", step + 1) == list(range(step + 1))
