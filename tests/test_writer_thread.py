"""The writer thread: flush barrier, bounded queue, errors handed back, exit, GC and fork."""
import errno
import gc
import os
import threading
import time
import tracemalloc
import warnings
import weakref

import numpy as np
import pytest

from conftest import accumulator, event_files, run_python, started_worker, tb_events, tb_scalars
from mxboard import MXBoardError, SummaryWriter, WriterClosedError, WriterError, errors, proto
from mxboard._writer import lifecycle
from mxboard._writer.intake import Record
from mxboard.reader import TornRecordWarning, read_events


def _summary(tag, value):
    return proto.Summary(value=[proto.Summary.Value(tag=tag, simple_value=value)])


def test_flush_returns_with_everything_on_disk(logdir):
    w = SummaryWriter(logdir, flush_secs=3600)
    for step in range(2_000):
        w.add_scalar("x", step, step)
    w.add_text("array-kind", "two", 5)
    w.flush()
    (path,) = event_files(logdir)
    scalars = tb_scalars(path)  # read while the writer is still open
    assert [s for t, s, _ in scalars if t == "x"] == list(range(2_000))
    texts = [(v.tag, e.step) for e in tb_events(path) for v in e.summary.value if v.tag == "array-kind"]
    assert texts == [("array-kind", 5)]
    w.close()


def test_data_reach_the_file_within_flush_secs_without_flush(logdir):
    w = SummaryWriter(logdir, flush_secs=0.2)
    w.add_scalar("x", 1.0, 1)
    (path,) = event_files(logdir)
    for _ in range(50):  # up to 5 s; returns as soon as the point is there
        if tb_scalars(path):
            break
        time.sleep(0.1)
    assert tb_scalars(path) == [("x", 1, 1.0)]
    w.close()


def _fill(logdir, max_queue, payload, count):
    """Puts `count` records carrying `payload` while the writer thread is held: how many went in
    before the caller blocked; then everything once the thread goes on."""
    gate = threading.Event()

    def slow(tag, payload):
        gate.wait(10)
        return _summary(tag, 1.0)

    worker = started_worker(logdir, flush_secs=3600, max_queue=max_queue)
    calls = []

    def producer():
        for i in range(count):
            worker.put(Record(None, slow, ("t%d" % i, payload), i, 1.0))
            calls.append(i)

    thread = threading.Thread(target=producer)
    thread.start()
    thread.join(0.5)
    blocked_after = len(calls) if thread.is_alive() else None
    gate.set()
    thread.join(10)
    assert calls == list(range(count))
    assert worker.close() is None
    assert sorted(t for t, _, _ in tb_scalars(event_files(logdir)[0])) == sorted("t%d" % i for i in range(count))
    return blocked_after


def test_a_full_queue_blocks_the_caller_until_the_thread_catches_up(logdir):
    # items of 1 MiB or more take a whole slot: max_queue of them wait (taken or not)
    assert _fill(logdir, 2, np.zeros(1 << 18, np.float32), 5) == 2


def test_small_items_share_a_slot_by_size(logdir):
    # a training step's few dozen small histograms must not block the loop: 64 items of 16 KiB
    # or less to a slot, larger ones by size (256 KiB: a quarter)
    assert _fill(logdir, 1, np.zeros(100, np.float32), 100) == 64
    assert _fill(logdir + "-2", 2, np.zeros(1 << 16, np.float32), 12) == 8


def test_an_error_on_the_writer_thread_is_reported_once_and_writing_goes_on(logdir):
    worker = started_worker(logdir, flush_secs=3600, max_queue=10)
    worker.put(Record(None, lambda: 1 / 0, (), 0, 1.0))
    worker.put(Record(None, _summary, ("after", 1.0), 1, 1.0))
    worker.flush()
    with pytest.raises(ZeroDivisionError):
        worker.deliver_to_caller()
    worker.deliver_to_caller()  # once: nothing more to say
    assert not worker.holds_for_caller
    assert worker.close() is None
    assert accumulator(logdir).Scalars("after")[0].value == 1.0


def test_an_unreported_error_is_returned_by_close(logdir):
    worker = started_worker(logdir, flush_secs=3600, max_queue=10)
    worker.put(Record(None, lambda: 1 / 0, (), 0, 1.0))
    assert isinstance(worker.close(), ZeroDivisionError)
    assert worker.close() is None  # and a second close is quiet


def test_a_bad_items_os_error_is_an_mxboard_error_and_writing_goes_on(logdir):
    """An OSError of one item (not of the file) has the one face too, and stops nothing."""
    def unreadable():
        raise PermissionError(errno.EACCES, "Permission denied", "/a/sprite.png")

    worker = started_worker(logdir, flush_secs=3600, max_queue=10)
    worker.put(Record(None, unreadable, (), 0, 1.0))
    worker.put(Record(None, _summary, ("after", 1.0), 1, 1.0))
    worker.flush()
    with pytest.raises(MXBoardError) as raised:
        worker.deliver_to_caller()
    assert type(raised.value) is errors.WriterIOError and raised.value.errno == errno.EACCES
    assert raised.value.filename == "/a/sprite.png" and type(raised.value.__cause__) is PermissionError
    worker.deliver_to_caller()  # once: the writer goes on
    assert worker.close() is None
    assert accumulator(logdir).Scalars("after")[0].value == 1.0


def _faults():
    from mxboard._writer.faults import Faults

    flags = []
    return Faults(lambda: flags.append(1)), flags


def test_faults_a_stop_is_raised_once_then_every_call_says_the_writer_stopped():
    faults, flags = _faults()
    disk_full = OSError(errno.ENOSPC, "No space left on device")
    faults.stop(disk_full, filename="/logs/events.out.tfevents.1")
    assert flags == [1]
    first, more = faults.take()
    assert type(first) is errors.WriterIOError and first.__cause__ is disk_full and more
    assert (first.errno, first.filename) == (errno.ENOSPC, "/logs/events.out.tfevents.1")
    for _ in range(3):
        then, more = faults.take()
        assert type(then) is errors.WriterIOError and then.__cause__ is disk_full and more
        assert then.errno == errno.ENOSPC and "stopped writing after an earlier error" in str(then)
    faults.begin_close()
    fault, news = faults.end_close(True)
    assert type(fault) is errors.WriterIOError and not news  # callers waiting for room get it; close() does not


def test_faults_close_raises_what_no_call_raised_and_tells_it_as_the_cause_of_its_own():
    faults, _ = _faults()
    gave_up = OSError(errno.EIO, "s3://b/run: the store did not take 5 bytes")
    faults.stop(gave_up, kept_after=True)
    faults.begin_close()
    kept = OSError(errno.EIO, "s3://b/run: the store did not take 5 bytes in time; it is kept in /spool")
    faults.hold(kept)
    fault, news = faults.end_close(False)
    assert news and type(fault) is errors.WriterIOError and str(fault) == str(kept)
    assert fault.__cause__ is kept and type(kept.__cause__) is errors.WriterIOError
    assert kept.__cause__.__cause__ is gave_up  # the give-up no call raised: told as the cause


def test_faults_a_store_that_took_everything_at_close_makes_its_give_up_moot():
    faults, _ = _faults()
    faults.stop(OSError(errno.EIO, "the store did not take 5 bytes"), kept_after=True)
    faults.begin_close()
    assert faults.end_close(True) == (None, False)
    faults, _ = _faults()  # a local file's error is never moot
    faults.stop(OSError(errno.ENOSPC, "No space left on device"))
    faults.begin_close()
    fault, news = faults.end_close(True)
    assert news and fault.errno == errno.ENOSPC


def test_faults_a_deleted_logdir_is_not_news_at_close_and_a_non_os_stop_is_a_writer_error():
    faults, _ = _faults()
    faults.stop(errors.FileDeletedError(errno.ENOENT, "deleted", "/logs/e"))
    faults.begin_close()
    fault, news = faults.end_close(True)
    assert type(fault) is errors.FileDeletedError and not news
    faults, _ = _faults()
    broken = ValueError("a storage that cannot open a file")
    faults.stop(broken)
    first, _ = faults.take()
    assert type(first) is WriterError and first.__cause__ is broken and not isinstance(first, OSError)



def test_a_logdir_that_cannot_be_a_directory_fails_at_the_constructor(tmp_path):
    (tmp_path / "taken").write_text("a file")
    with pytest.raises(NotADirectoryError, match="is a file"):
        SummaryWriter(str(tmp_path / "taken"))
    with pytest.raises(NotADirectoryError):
        SummaryWriter(str(tmp_path / "taken" / "run"))


def test_a_main_file_the_thread_cannot_open_is_raised_by_the_next_call(logdir, monkeypatch):
    import mxboard.storage.local as local

    os.makedirs(logdir)
    taken = "events.out.tfevents.taken"
    open(os.path.join(logdir, taken), "wb").close()
    monkeypatch.setattr(local, "event_file_name", lambda suffix="": taken)  # every name is taken
    w = SummaryWriter(logdir)
    # An OSError, as ever (its errno EEXIST), and an MXBoardError: the cause chained.
    with pytest.raises(errors.WriterIOError, match="no free event file name") as raised:
        w.add_scalar("x", 1.0, 0)
        w.flush()
    assert raised.value.errno == errno.EEXIST and isinstance(raised.value.__cause__, FileExistsError)
    with pytest.raises(errors.WriterIOError, match="stopped writing") as stopped:
        w.add_scalar("x", 2.0, 1)
    assert stopped.value.errno == errno.EEXIST and stopped.value.__cause__ is raised.value.__cause__
    w.close()
    assert os.listdir(logdir) == [taken] and os.path.getsize(os.path.join(logdir, taken)) == 0


IO_ERROR = r"""
import resource, signal, sys, time
import mxboard
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # so that a write past the limit fails with EFBIG
w = mxboard.SummaryWriter(LOGDIR)
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
start = time.time()
try:
    for step in range(1_000_000):
        w.add_scalar("x", step, step)
        if step % 10_000 == 0:
            w.flush()
    print("no error")
except mxboard.MXBoardError as exc:
    print("raised", type(exc).__name__, isinstance(exc, OSError), exc.errno, type(exc.__cause__).__name__,
          exc.__cause__.errno, "after %.1f s" % (time.time() - start))
try:
    w.add_scalar("x", 0.0, 0)
except mxboard.MXBoardError as exc:
    print("then", type(exc).__name__, isinstance(exc, OSError), exc.errno, type(exc.__cause__).__name__)
w.close()
print("closed")
"""


@pytest.mark.plain
@pytest.mark.slow
def test_a_write_error_surfaces_to_the_caller_and_close_returns(tmp_path):
    """A file past RLIMIT_FSIZE (EFBIG, as a full disk's ENOSPC; tests/test_errors.py fills a
    real one): each call raises an MXBoardError that is an OSError of that errno, the cause
    chained (issue 69: the first was a bare OSError); close() returns, the error told."""
    out = run_python("LOGDIR = %r\n" % str(tmp_path) + IO_ERROR, timeout=60).stdout.splitlines()
    assert out[0].startswith("raised WriterIOError True 27 OSError 27 after"), out  # EFBIG
    assert out[1:] == ["then WriterIOError True 27 OSError", "closed"]
    with warnings.catch_warnings():  # the write that failed may have left a torn last record
        warnings.simplefilter("ignore", TornRecordWarning)
        events = list(read_events(str(tmp_path)))  # what was written before is intact
    assert events[0].file_version and len(events) > 1000


def test_a_call_after_close_reopens_the_writer_with_a_new_event_file(logdir):
    """As tensorboardX and torch do (their users close at an epoch's end and go on logging)."""
    w = SummaryWriter(logdir)
    w.add_scalar("x", 1.0, 0)
    w.close()
    w.close()
    w.flush()  # nothing to flush: no reopening
    assert w.closed and len(event_files(logdir)) == 1
    w.add_scalar("x", 2.0, 1)
    assert not w.closed
    w.add_scalars("g", {"a": 3.0}, 2)
    w.close()
    w.add_text("t", "after", 3)  # any call reopens
    w.close()
    first, second, third = event_files(logdir)
    assert tb_scalars(first) == [("x", 0, 1.0)] and tb_scalars(second) == [("x", 1, 2.0)]
    assert tb_scalars(event_files(os.path.join(logdir, "g", "a"))[0]) == [("g", 2, 3.0)]


def test_context_manager_and_get_logdir(logdir):
    with SummaryWriter(logdir) as w:
        assert w.get_logdir() == logdir
        w.add_scalar("x", 1.0)
    assert w.closed


def test_an_unreferenced_writer_is_collected_and_its_file_completed(logdir):
    w = SummaryWriter(logdir, flush_secs=3600)
    w.add_scalar("x", 1.0, 1)
    ref = weakref.ref(w)
    del w
    assert ref() is None  # freed at once (no cycle): neither the thread nor the exit hook keeps it alive
    assert lifecycle.reaped(10)  # the reaper thread closed it
    assert tb_scalars(event_files(logdir)[0]) == [("x", 1, 1.0)]


@pytest.mark.plain
@pytest.mark.slow
def test_a_write_error_of_a_writer_collected_unclosed_is_told_on_stderr(tmp_path):
    """The reaper closes it: close() returns the error no call raised (a WriterIOError, as every
    I/O error now is), and the reaper says it, since nobody else can."""
    proc = run_python("LOGDIR = %r\n" % str(tmp_path) + r"""
import resource, signal, threading, time
import mxboard
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
w = mxboard.SummaryWriter(LOGDIR, flush_secs=3600)
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
for step in range(8000):  # fewer than a batch: nothing written until it is closed
    w.add_scalar("x", float(step), step)
del w
deadline = time.monotonic() + 20
while any(t.name == "mxboard-writer" for t in threading.enumerate()) and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(1)  # the reaper tells once close() has returned
print("reaped")
""", timeout=60)
    assert proc.stdout.strip() == "reaped"
    assert "collected unclosed could not write everything" in proc.stderr, proc.stderr
    assert "WriterIOError(27, 'File too large'" in proc.stderr, proc.stderr


@pytest.mark.plain
@pytest.mark.slow
def test_writers_open_at_exit_are_flushed_and_closed(tmp_path):
    run_python("LOGDIR = %r\n" % str(tmp_path) + r"""
import mxboard
w = mxboard.SummaryWriter(LOGDIR, flush_secs=3600)
for step in range(5000):
    w.add_scalar("x", step, step)
w.add_scalar("y", {"a": 1.0}, 1)
""")
    assert [e.step for e in accumulator(tmp_path).Scalars("x")] == list(range(5000))
    assert accumulator(tmp_path / "y" / "a").Scalars("y")[0].value == 1.0


@pytest.mark.plain
@pytest.mark.slow
def test_a_forked_child_never_writes_into_the_parents_file(tmp_path):
    out = run_python("LOGDIR = %r\n" % str(tmp_path) + r"""
import os
import mxboard
w = mxboard.SummaryWriter(LOGDIR, flush_secs=3600)
for step in range(3000):
    w.add_scalar("parent", step, step)   # still queued when we fork
pid = os.fork()
if pid == 0:
    w.add_scalar("child", 1.0, 1)
    w.close()
    os._exit(0)
os.waitpid(pid, 0)
w.add_scalar("parent", -1.0, 3000)
w.close()
print(pid)
""").stdout.split()
    child_pid = out[0]
    files = event_files(str(tmp_path))
    assert len(files) == 2
    by_pid = {os.path.basename(f).split(".")[5]: f for f in files}
    child_file = by_pid.pop(child_pid)
    (parent_file,) = by_pid.values()
    assert [(t, s) for t, s, _ in tb_scalars(parent_file)] == [("parent", s) for s in range(3001)]
    assert [(t, s) for t, s, _ in tb_scalars(child_file)] == [("child", 1)]
    assert [e.file_version for e in read_events(child_file)][0] == "brain.Event:2"  # CRC-clean
    assert sum(1 for _ in read_events(parent_file)) == 3002


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


def test_scalar_state_of_ended_threads_is_reclaimed(logdir):
    import mxboard._writer.writer_thread

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
               if d.traceback[0].filename == mxboard._writer.writer_thread.__file__)
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


class _LateLook:
    """The writer thread as a caller sees it on a busy machine, paused between a wait that ran out
    and its look at the thread: the look (`is_alive`) sets `go` (the thread may go on), and
    answers only once `meanwhile()` returned (the thread did what it was waited for, or ended)."""

    def __init__(self, thread, go, meanwhile):
        self._thread, self._go, self._meanwhile = thread, go, meanwhile

    def is_alive(self):
        self._go.set()
        self._meanwhile()
        return self._thread.is_alive()


def _held_worker(logdir, max_queue=10):
    """A started worker whose records `slow(tag)` are written only once `gate` is set."""
    gate = threading.Event()

    def slow(tag, *payload):
        assert gate.wait(30)
        return _summary(tag, 1.0)

    return started_worker(logdir, flush_secs=3600, max_queue=max_queue), gate, slow


def test_close_whose_last_batch_outlasts_its_wait_never_takes_the_ended_thread_for_dead(logdir):
    # the CI failure: close()'s wait for its barrier ran out; the thread then wrote the last
    # batch, released the barrier and ended, all before close() looked at it
    worker, gate, slow = _held_worker(logdir)
    real = worker._intake.thread
    worker._intake.thread = _LateLook(real, gate, lambda: real.join(30))
    worker.put(Record(None, slow, ("last",), 1, 1.0))
    assert worker.close() is None
    assert not real.is_alive()
    assert tb_scalars(event_files(logdir)[0]) == [("last", 1, 1.0)]


def test_a_flush_done_as_its_timeout_passes_says_it_is_done(logdir, monkeypatch):
    # flush(timeout) (a signal's write-out): the barrier released between the wait that ran out
    # and the look at the deadline is a flush done, not one timed out
    worker, gate, slow = _held_worker(logdir)
    intake, released = worker._intake, threading.Event()
    release = intake.release

    def release_and_say(batch):
        release(batch)
        if batch.barriers:
            released.set()

    monkeypatch.setattr(intake, "release", release_and_say)
    intake.thread = _LateLook(intake.thread, gate, lambda: released.wait(30))
    worker.put(Record(None, slow, ("x",), 1, 1.0))
    assert worker.flush(timeout=0) is True
    assert tb_scalars(event_files(logdir)[0]) == [("x", 1, 1.0)]
    assert worker.close() is None


def test_a_call_that_ran_while_another_thread_closed_returns(logdir):
    # worker.call() (a sub-run's file, an embedding's assets) on one thread, close() on another:
    # the task ran, then the thread ended, both between the caller's wait and its look
    worker, gate, _ = _held_worker(logdir)
    real = worker._intake.thread
    worker._intake.thread = _LateLook(real, gate, lambda: real.join(30))
    ran, outcome = [], []

    def task(storage):
        assert gate.wait(30)
        ran.append(storage)

    def caller():
        try:
            worker.call(task)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - told to the test
            outcome.append(exc)

    thread = threading.Thread(target=caller)
    thread.start()
    assert gate.wait(30)  # the caller's wait ran out, and it looks at the thread
    assert worker.close() is None
    thread.join(30)
    assert ran and outcome == [None]


def test_a_caller_blocked_for_room_when_close_ends_the_thread_hears_close(logdir):
    # a caller waiting for room: its wait ran out, then close() began and the thread wrote the
    # rest and ended before the caller looked: it raises what close() raises, as any caller
    # close() finds waiting for room, not that the thread died
    worker, gate, slow = _held_worker(logdir, max_queue=1)
    real, looked = worker._intake.thread, threading.Event()
    worker._intake.thread = _LateLook(real, looked, lambda: real.join(30))
    payload = b"\0" * (1 << 20)  # a whole slot: the second waits for the first
    outcome = []

    def caller():
        try:
            for i in range(2):
                worker.put(Record(None, slow, ("t%d" % i, payload), i, 1.0))
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - told to the test
            outcome.append(exc)

    thread = threading.Thread(target=caller)
    thread.start()
    assert looked.wait(30)  # blocked for room, its wait ran out, and it looks at the thread
    gate.set()
    assert worker.close() is None
    thread.join(30)
    (error,) = outcome
    assert type(error) is WriterClosedError and "is closed" in str(error), repr(error)
    assert [t for t, _, _ in tb_scalars(event_files(logdir)[0])] == ["t0"]
