"""The bundle's loader (`--load_fast=mxboard`) reads a logdir where it changes, through the bundled
server over HTTP: behind a slow network filesystem (tests/slow_fs.py: a FUSE passthrough, each
call 1 ms), where it polls, every run and tag is served, a point logged to a run being written is
served within 3 s, a new run appears, and the calls a second it costs while nothing changes stay
under a bound that does not grow with the runs; on a local disk, where the kernel says what
changed (inotify), a point is served within 3 s even with a reload interval of a minute, and a
deleted run disappears."""
import os
import shutil
import time
import urllib.error

import pytest
from slow_fs import SlowFilesystem, why_unavailable

from mxboard import SummaryWriter
from tensorboard_bundle.loader import schedule, watch

# What the loader may cost behind 1 ms a call while nothing changes (loader/logdir.py's budget
# of 6 calls a second, each a few calls of the server's: a lookup of each part of its path).
IDLE_CALLS_A_SECOND = 20
# How soon a point logged to a run being written is served.
SERVED_WITHIN = 3.0
# The calls a first load makes behind the FUSE layer for each run of one event file, at most.
FIRST_LOAD_CALLS_A_RUN = 11


def _write_runs(logdir, count, age=0):
    """`count` runs of two scalars each, written `age` seconds ago (their files' mtimes)."""
    for i in range(count):
        with SummaryWriter(os.path.join(logdir, "run%04d" % i)) as writer:
            writer.add_scalar("loss", 1.0, 0)
            writer.add_scalar("accuracy", 0.5, 0)
        if age:
            for name in os.listdir(os.path.join(logdir, "run%04d" % i)):
                then = time.time() - age
                os.utime(os.path.join(logdir, "run%04d" % i, name), (then, then))


def _until(what, seconds):
    """`what()` once it is truthy, polled for at most `seconds` (None after them)."""
    deadline = time.monotonic() + seconds
    while True:
        found = what()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _last_step(server, run):
    """The last step of `run`'s loss served; None before the run and its tag are (a run is listed
    as soon as its directory is, its tags once its files are read)."""
    try:
        rows = server.json("/data/plugin/scalars/scalars", {"run": run, "tag": "loss"})
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise
        return None
    return rows[-1][1] if rows else None


def _served_within(server, writer, run, steps):
    """Log each of `steps` to `writer` (its run `run`), and the seconds each took to be served."""
    took = []
    for step in steps:
        writer.add_scalar("loss", 2.0, step)
        writer.flush()
        written = time.monotonic()
        _until(lambda step=step: _last_step(server, run) == step, 30)
        took.append(time.monotonic() - written)
    return took


@pytest.fixture
def slow_fs_available():
    reason = why_unavailable()
    if reason is not None:
        pytest.skip("needs a FUSE mount (make test-tools, pip install '.[test]'): " + reason)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_behind_a_slow_network_filesystem_runs_are_polled_within_a_bounded_budget(
        tmp_path, serve, slow_fs_available):
    source = str(tmp_path / "share")
    runs = 300
    # A sweep written half a minute ago (its runs are due again, all at once, while the calls are
    # counted below: the most polling may want), and a run being written (named last: checked
    # last of those due).
    _write_runs(source, runs, age=30)
    live = SummaryWriter(os.path.join(source, "writing"))
    live.add_scalar("loss", 2.0, 0)
    live.flush()
    with SlowFilesystem(source, latency=0.001) as fs, live:
        started, before = time.monotonic(), fs.calls()
        server = serve(fs.mountpoint, "--load_fast=mxboard")
        # Every run and each of its tags.
        tags = _until(lambda: (lambda found: found if len(found) == runs + 1 and all(
            len(found["run%04d" % i]) == 2 for i in range(runs)) else None)(
                server.json("/data/plugin/scalars/tags")), 60)
        loaded, calls = time.monotonic() - started, fs.calls() - before
        assert tags is not None, "not every run and tag was served within 60 s"
        assert sorted(tags["run0123"]) == ["accuracy", "loss"]
        print("%d runs behind 1 ms a call: loaded in %.1f s, %d calls" % (runs + 1, loaded, calls))
        # Each new run's directory opened once, its file read by its name in it (loader/walk.py):
        # 10 calls a run at this layer, where stating, listing and reading each by its path from
        # the logdir made 14 (each part of a path looked up again).
        assert calls <= FIRST_LOAD_CALLS_A_RUN * (runs + 1), calls
        # What it serves from there is what upstream's Rust loader serves from the share's disk.
        upstream = serve(source, "--load_fast=true")
        # (Its listing leaves each display name empty: the runs and tags are compared.)
        theirs = upstream.json("/data/plugin/scalars/tags", until=lambda found: len(found) == runs + 1)
        assert {run: sorted(found) for run, found in theirs.items()} == \
            {run: sorted(found) for run, found in tags.items()}
        for run in ["run%04d" % i for i in range(0, runs, 7)]:
            for tag in ("loss", "accuracy"):
                query = {"run": run, "tag": tag}
                assert server.json("/data/plugin/scalars/scalars", query) == \
                    upstream.json("/data/plugin/scalars/scalars", query), (run, tag)

        # A run being written (as another machine writes to the share): each point within 3 s.
        took = _served_within(server, live, "writing", range(1, 6))
        print("a point of a run being written served after %s s" % ", ".join("%.2f" % s for s in took))
        assert max(took) <= SERVED_WITHIN, took

        # Nothing changing: the calls a second over 10 s, however many runs there are.
        time.sleep(1)
        before, started = fs.calls(), time.monotonic()
        time.sleep(10)
        rate = (fs.calls() - before) / (time.monotonic() - started)
        print("idle: %.1f calls a second" % rate)
        assert rate <= IDLE_CALLS_A_SECOND, rate

        # A new run: its directory appears in the logdir's listing, checked every reload interval.
        with SummaryWriter(os.path.join(source, "new")) as writer:
            writer.add_scalar("loss", 3.0, 7)
        assert _until(lambda: "new" in server.json("/data/runs") and _last_step(server, "new") == 7, 10)


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_on_a_local_disk_the_kernel_says_what_changed(tmp_path, serve):
    _write_runs(str(tmp_path), 3)
    live = SummaryWriter(str(tmp_path / "live"))
    live.add_scalar("loss", 2.0, 0)
    live.flush()
    with live:
        # A reload interval of a minute: only inotify serves a point within 3 s.
        server = serve(str(tmp_path), "--load_fast=mxboard", "--reload_interval", "60")
        assert _until(lambda: len(server.json("/data/runs")) == 4 and _last_step(server, "live") == 0, 30)
        took = _served_within(server, live, "live", range(1, 4))
        assert max(took) <= SERVED_WITHIN, took

        with SummaryWriter(str(tmp_path / "deeper" / "new")) as writer:
            writer.add_scalar("loss", 3.0, 7)
        assert _until(lambda: _last_step(server, "deeper/new") == 7
                      if "deeper/new" in server.json("/data/runs") else None, SERVED_WITHIN)

        shutil.rmtree(tmp_path / "run0001")
        assert _until(lambda: "run0001" not in server.json("/data/runs"), SERVED_WITHIN)
        assert sorted(server.json("/data/runs")) == ["deeper/new", "live", "run0000", "run0002"]


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_link_from_a_local_logdir_to_a_share_is_polled_there_and_dropped_with_the_link(
        tmp_path, serve, slow_fs_available):
    share, local = tmp_path / "share", tmp_path / "local"
    _write_runs(str(local), 1)
    remote = SummaryWriter(str(share / "remote"))
    remote.add_scalar("loss", 2.0, 0)
    remote.flush()
    with SlowFilesystem(share) as fs, remote:
        os.symlink(fs.mountpoint, str(local / "linked"))
        server = serve(str(local), "--load_fast=mxboard")
        assert _until(lambda: _last_step(server, "linked/remote") == 0
                      if "linked/remote" in server.json("/data/runs") else None, 30)
        # The kernel never says what is written to the share: its directory is polled.
        took = _served_within(server, remote, "linked/remote", range(1, 4))
        assert max(took) <= SERVED_WITHIN, took
        os.unlink(str(local / "linked"))
        assert _until(lambda: server.json("/data/runs") == ["run0000"], SERVED_WITHIN)


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_files_read_whole_with_their_listing_hold_a_bounded_memory_and_read_as_any_file(
        tmp_path, slow_fs_available, monkeypatch):
    """Behind a network filesystem a first pass reads new runs' small files as it lists their
    directories, while the bytes so held stay under `_WHOLE_BYTES` (the others read as before);
    what every run holds after is what a pass over the same files on a local disk holds, and
    nothing read so is held after it."""
    from tensorboard_bundle.loader import logdir

    source = str(tmp_path / "share")
    _write_runs(source, 100)
    size = os.path.getsize(os.path.join(source, "run0000", os.listdir(os.path.join(source, "run0000"))[0]))
    # Room for 5 runs' files at once; the runs read once all are listed (500 at a time).
    monkeypatch.setattr(logdir, "_WHOLE_BYTES", 5 * size)
    held = []
    given = logdir.Logdir._given

    def noted(self, files):
        held.append(self._whole_bytes)
        return given(self, files)

    monkeypatch.setattr(logdir.Logdir, "_given", noted)
    with SlowFilesystem(source, latency=0.001) as fs:
        far = logdir.Logdir(fs.mountpoint)
        far.reload()
        assert not far._whole and far._whole_bytes == 0
    near = logdir.Logdir(source)
    near.reload()
    # (The room is checked before a file is read: each lister may read one file past it.)
    assert 0 < max(held) <= 5 * size + logdir._READERS * size < 100 * size, held
    assert sorted(far.runs) == sorted(near.runs) == ["run%04d" % i for i in range(100)]
    for name in near.runs:
        for tag in ("loss", "accuracy"):
            ours, theirs = (runs[name].index.series[tag].columns.view() for runs in (far.runs, near.runs))
            assert all(a.tolist() == b.tolist() for a, b in zip(ours, theirs)), (name, tag)


@pytest.mark.slow
def test_the_filesystem_kind_decides_between_watching_and_polling(tmp_path, slow_fs_available):
    assert watch.is_local(str(tmp_path))
    with SlowFilesystem(tmp_path) as fs:
        # FUSE, as NFS: another machine's writes are never told by the kernel.
        assert not watch.is_local(fs.mountpoint)
    assert not watch.is_local(str(tmp_path / "not there"))


def test_the_plan_spends_no_more_than_its_budget_however_many_runs():
    plan = schedule.Schedule(interval=1.0, budget=4.0, cap=60.0)
    now = 1000.0
    # Two thousand runs, every one written a second ago: the most a plan can want.
    for i in range(2000):
        plan.add(i, now - 1, now)
    checked, spent = [], 0
    end = now + 100
    while now < end:
        key, wait = plan.next(now)
        if key is None:
            now += max(wait, 0.001)
            continue
        # Each check costs 2 calls and finds nothing new, except key 7's, which is being written.
        plan.checked(key, key == 7, 2, now)
        checked.append((now, key))
        spent += 2
    # The bucket holds a second of budget: at most budget x (seconds + 1) calls.
    assert spent <= 4.0 * 101
    # The run being written is checked every interval, ahead of the quiet backlog.
    sevens = [at for at, key in checked if key == 7]
    assert max(b - a for a, b in zip(sevens, sevens[1:])) <= 1.0 + 0.5


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize("filesystem", ["local", "slow"])
def test_a_loop_a_fifo_and_a_file_of_noise_cost_only_themselves_said_once(tmp_path, serve, filesystem):
    if filesystem == "slow" and why_unavailable() is not None:
        pytest.skip("needs a FUSE mount (make test-tools, pip install '.[test]'): " + why_unavailable())
    source = tmp_path / "logdir"
    _write_runs(str(source), 2)
    (source / "loop").mkdir()
    os.symlink("..", str(source / "loop" / "back"))
    (source / "fifo").mkdir()
    os.mkfifo(str(source / "fifo" / "events.out.tfevents.1.fifo"))
    (source / "noise").mkdir()
    (source / "noise" / "events.out.tfevents.1.noise").write_bytes(os.urandom(4096))
    live = SummaryWriter(str(source / "writing"))
    live.add_scalar("loss", 2.0, 0)
    live.flush()
    with live, (SlowFilesystem(source) if filesystem == "slow" else _Here(source)) as fs:
        server = serve(fs.mountpoint, "--load_fast=mxboard")
        assert _until(lambda: _last_step(server, "writing") == 0 if "writing" in server.json("/data/runs") else None,
                      30)
        # The loop's reloads go on: a point still served within 3 s, a deleted run dropped.
        took = _served_within(server, live, "writing", range(1, 4))
        assert max(took) <= SERVED_WITHIN, took
        shutil.rmtree(str(source / "run0001"))
        assert _until(lambda: "run0001" not in server.json("/data/runs"), SERVED_WITHIN + 2)
        assert {"run0000", "writing"} <= set(server.json("/data/runs"))
        said = "".join(server.output)
        assert said.count("a link loop") == 1, said
        assert said.count("events.out.tfevents.1.noise") == 1, said
        assert "events.out.tfevents.1.fifo" not in said


class _Here:
    """A local directory, as SlowFilesystem's stand-in: `.mountpoint` is the directory itself."""

    def __init__(self, path):
        self.mountpoint = str(path)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        pass
