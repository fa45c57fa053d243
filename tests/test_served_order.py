"""What you log is what TensorBoard shows, in the order you logged it (threads, NDArrays and floats
on one tag, many writers in one second, a bad call among good ones): each case as a hostile user
would try it, read back from what the bundled TensorBoard serves over HTTP with its default loader (the
bundle's own), which, as upstream's loaders do, hides every point whose step is at or above a step
that comes later in a run (it takes that for a restart)."""
import os
import threading
import time

import pytest

from conftest import event_files
from mxboard import SummaryWriter


def served_steps(serve, logdir, tag, count, run="."):
    """The steps of `tag` the bundled TensorBoard serves, once it serves `count` points (or
    after 30 s, whatever it serves then)."""
    server = serve(logdir)
    assert "data loader: mxboard (in-process)" in server.banner
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
