"""The process around the writers: Ctrl-C and signal handlers that exit, SIGTERM while the main
thread waits, writers made in pool workers, many short threads. Each runs in child processes,
killed in `finally` whatever happens."""
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import event_files, tb_scalars

pytestmark = pytest.mark.slow


def _kill(children):
    for child in children:
        if child.poll() is None:
            child.kill()
        child.communicate()


def _ended_within(child, seconds):
    try:
        child.wait(seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


# A tight loop of calls that wake the writer thread (every add_text does), interrupted at a
# random moment. Before the fix, an interrupt landing inside threading.Event.set() left its lock
# held: close() (or exit) then hung for ever.
INTERRUPTED_LOOP = textwrap.dedent(r"""
    import signal, sys, time
    import mxboard
    if sys.argv[-1] == "exit":  # a user's SIGTERM handler that exits
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    w = mxboard.SummaryWriter(sys.argv[-2], flush_secs=0.05)
    print("ready", flush=True)
    step = 0
    try:
        while True:
            w.add_text("t", "x", step)
            w.add_scalar("s", 1.0, step)
            step += 1
    except KeyboardInterrupt:
        start = time.monotonic()
        w.close()
        print("closed in %.3f s" % (time.monotonic() - start), flush=True)
""")


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM handler that exits"])
def test_an_interrupt_anywhere_in_a_logging_loop_never_hangs_close_or_exit(tmp_path, how):
    signum, mode = (signal.SIGINT, "interrupt") if how == "SIGINT" else (signal.SIGTERM, "exit")
    rng = random.Random(0)
    hung = []
    for round_ in range(8):
        children = [subprocess.Popen([sys.executable, "-c", INTERRUPTED_LOOP, str(tmp_path / ("%d-%d" % (round_, i))),
                                      mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for i in range(4)]
        try:
            for child in children:
                assert child.stdout.readline().strip() == "ready"
            for child in children:
                time.sleep(rng.uniform(0.0, 0.15))
                child.send_signal(signum)
            deadline = time.monotonic() + 5
            for child in children:
                if not _ended_within(child, max(0.1, deadline - time.monotonic())):
                    hung.append(child.args[-2])
        finally:
            _kill(children)
    assert hung == [], "still running 5 s after %s: %s" % (how, hung)


# SIGTERM lands while the main thread runs Python (the handler runs at once and starts the flush),
# then the main thread enters a C call that does not return (an MXNet engine wait; here a
# pthread mutex locked twice). Before the fix, the flush thread's re-raised signal needed the
# Python handler to run once more, on the main thread: the process lived on.
IN_A_C_CALL = textwrap.dedent(r"""
    import ctypes, sys, threading
    import numpy as np
    import mxboard
    w = mxboard.SummaryWriter(sys.argv[-1], flush_secs=3600)
    for step in range(100):
        w.add_scalar("x", float(step), step)
    mutex = ctypes.create_string_buffer(64)  # zeros: PTHREAD_MUTEX_INITIALIZER
    lock = ctypes.CDLL(None).pthread_mutex_lock
    lock(mutex)
    print("ready", flush=True)
    pixels = np.random.default_rng(0).integers(0, 256, (3, 256, 256), dtype=np.uint8)
    while not any(t.name == "mxboard-sigterm" for t in threading.enumerate()):  # the handler ran
        w.add_image("busy", pixels, 0)  # the writer thread has work when the flush begins
    lock(mutex)  # never returns
""")


def test_sigterm_ends_the_process_when_the_main_thread_then_waits_in_c(tmp_path):
    children = [subprocess.Popen([sys.executable, "-c", IN_A_C_CALL, str(tmp_path / str(i))], stdout=subprocess.PIPE,
                                 text=True) for i in range(4)]
    try:
        for child in children:
            assert child.stdout.readline().strip() == "ready"
        start = time.monotonic()
        for child in children:
            child.send_signal(signal.SIGTERM)
        ended = [_ended_within(child, max(0.1, start + 10 - time.monotonic())) for child in children]
        assert all(ended), "%d of 4 still running 10 s after SIGTERM" % ended.count(False)
        assert [child.returncode for child in children] == [-signal.SIGTERM] * 4  # as without mxboard
        for i in range(4):
            assert [s for _, s, _ in tb_scalars(event_files(str(tmp_path / str(i)))[0])] == list(range(100))
    finally:
        _kill(children)


POOLS = textwrap.dedent(r"""
    import concurrent.futures, multiprocessing, os, sys
    import mxboard

    WRITER = None

    def start(logdir):
        global WRITER  # one writer per worker, kept in a global: never closed by the user
        WRITER = mxboard.SummaryWriter(os.path.join(logdir, str(os.getpid())), flush_secs=3600)

    def log(first):
        for step in range(first, first + 200):
            WRITER.add_scalar("x", float(step), step)
        return os.getpid()

    def process(logdir, first):
        start(logdir)
        log(first)

    if __name__ == "__main__":
        method, logdir = sys.argv[1], sys.argv[2]
        context = multiprocessing.get_context(method)
        with context.Pool(2, initializer=start, initargs=(os.path.join(logdir, "pool"),)) as pool:
            pool.map(log, [0, 200, 400, 600])
            pool.close()
            pool.join()
        with concurrent.futures.ProcessPoolExecutor(2, mp_context=context, initializer=start,
                                                    initargs=(os.path.join(logdir, "executor"),)) as executor:
            list(executor.map(log, [0, 200, 400, 600]))
        processes = [context.Process(target=process, args=(os.path.join(logdir, "process"), first))
                     for first in (0, 200, 400, 600)]
        for p in processes:
            p.start()
        for p in processes:
            p.join()
        print([p.exitcode for p in processes])
""")


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_a_writer_made_in_a_pool_worker_is_closed_when_the_worker_ends(tmp_path, method):
    script = tmp_path / "pools.py"
    script.write_text(POOLS)
    proc = subprocess.run([sys.executable, str(script), method, str(tmp_path / "logs")], capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[0, 0, 0, 0]"
    for kind in ("pool", "executor", "process"):
        steps = sorted(s for path in event_files_below(tmp_path / "logs" / kind) for _, s, _ in tb_scalars(path))
        assert steps == list(range(800)), "%s (%s): %d of 800 points" % (kind, method, len(steps))


def event_files_below(directory):
    return [path for run in sorted(os.listdir(directory)) for path in event_files(os.path.join(directory, run))]


THREADS = textwrap.dedent(r"""
    import gc, sys, threading
    import psutil
    import mxboard

    w = mxboard.SummaryWriter(sys.argv[1])

    def one(step):
        w.add_scalar("x", 1.0, step)

    def wave(first):
        threads = [threading.Thread(target=one, args=(first + i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    for first in range(0, 2000, 50):  # warm up: the allocator's arenas, the thread machinery
        wave(first)
    w.flush(); gc.collect()
    before = psutil.Process().memory_info().rss
    for first in range(2000, 22000, 50):
        wave(first)
    w.flush(); gc.collect()
    print((psutil.Process().memory_info().rss - before) / 1e6)
    w.close()
""")


def test_twenty_thousand_short_threads_each_logging_a_scalar_leave_no_memory_behind(tmp_path):
    """Each thread's scalar columns were kept: 5-9 MB over 60,000 threads (about 100 bytes a
    thread), so 2-3 MB over the 20,000 here."""
    pytest.importorskip("psutil")
    proc = subprocess.run([sys.executable, "-c", THREADS, str(tmp_path)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    growth = float(proc.stdout.strip())
    assert growth < 1.0, "memory grew by %.1f MB over 20,000 threads" % growth
    assert sorted(s for _, s, _ in tb_scalars(event_files(str(tmp_path))[0])) == list(range(22000))
