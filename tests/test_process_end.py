"""The process around the writers: Ctrl-C and signal handlers that exit, SIGTERM while the main
thread waits, writers made in pool workers, many short threads. Each runs in child processes,
killed in `finally` whatever happens."""
import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

from conftest import ROOT, accumulator, event_files, run_python, stress, tb_scalars
from mxboard.reader import TornRecordWarning, read_events

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
    for round_ in range(stress(3, 8)):  # 4 children a round
        children = [subprocess.Popen([sys.executable, "-c", INTERRUPTED_LOOP, str(tmp_path / ("%d-%d" % (round_, i))),
                                      mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for i in range(4)]
        try:
            for child in children:
                assert child.stdout.readline().strip() == "ready"
            for child in children:
                time.sleep(rng.uniform(0.0, 0.15))
                child.send_signal(signum)
            # a hang is for ever; the slowest of 12 children ended 2.4 s after its signal beside a
            # two-core busy load and other jobs (a load average of 20), 0.3 s on a quiet machine
            deadline = time.monotonic() + 15
            for child in children:
                if not _ended_within(child, max(0.1, deadline - time.monotonic())):
                    hung.append(child.args[-2])
        finally:
            _kill(children)
    assert hung == [], "still running 15 s after %s: %s" % (how, hung)


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

    # Warm up with as many threads as are measured: the allocator's arenas and the thread
    # machinery (after 2,000 threads, 20,000 more grew 1.3 MB beside other work, 0.3-0.6 MB alone).
    for first in range(0, 20000, 50):
        wave(first)
    w.flush(); gc.collect()
    before = psutil.Process().memory_info().rss
    for first in range(20000, 40000, 50):
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
    assert sorted(s for _, s, _ in tb_scalars(event_files(str(tmp_path))[0])) == list(range(40000))


# -- SIGTERM given to a thread that is not the main one ------------------------------------------
# The kernel may give a process-directed SIGTERM to any thread that does not block it: a BLAS or
# OpenMP thread, a user's. Python's handler runs only on the main thread, between bytecodes; a
# main thread asleep in a lock (a pool worker waiting on its task queue's) never runs it. The
# main thread here blocks SIGTERM, so the kernel must choose another thread, as it sometimes does
# by itself. On b621f0a the process lived on (4 of 4, until killed); the default action ends it.
OTHER_THREAD = textwrap.dedent(r"""
    import signal, sys, threading, time
    import numpy as np
    import mxboard
    w = mxboard.SummaryWriter(sys.argv[-1], flush_secs=3600)
    for step in range(100):
        w.add_scalar("x", float(step), step)
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()  # a user's thread, in a C call
    a = np.ones((300, 300)); a @ a  # BLAS threads, where numpy's BLAS has them
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP})
    print("ready", flush=True)
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()  # never returns
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("script", [IN_A_C_CALL, OTHER_THREAD],
                         ids=["the main thread then in a C call", "the signal given to another thread"])
def test_sigterm_ends_the_process_within_its_bound_everything_flushed(tmp_path, script, signum):
    """docker stop, Kubernetes, SLURM: SIGTERM, then SIGKILL after a grace period (10 s here). An
    SSH session that drops, a terminal closed: SIGHUP, the same end (on a92d861 it kept nothing
    of what the writer had not written yet)."""
    children = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path / str(i))], stdout=subprocess.PIPE,
                                 text=True) for i in range(4)]
    try:
        for child in children:
            assert child.stdout.readline().strip() == "ready"
        start = time.monotonic()
        for child in children:
            child.send_signal(signum)
        ended = [_ended_within(child, max(0.1, start + 10 - time.monotonic())) for child in children]
        assert all(ended), "%d of 4 still running 10 s after the signal" % ended.count(False)
        assert [child.returncode for child in children] == [-signum] * 4  # as without mxboard
        for i in range(4):  # flushed first
            assert [s for _, s, _ in tb_scalars(event_files(str(tmp_path / str(i)))[0])] == list(range(100))
    finally:
        _kill(children)


# -- pools that end by terminate() ----------------------------------------------------------------
# `with Pool() as pool` ends by terminate(): SIGTERM to each worker. The workers log, with BLAS
# threads in use, on a busy machine (two processes spinning beside them). On b621f0a, 5 of 40 such
# pools hung for ever on Python 3.9 and 1 of 40 on 3.10 (a worker's main thread asleep on the task
# queue's lock, the signal given to an OpenBLAS thread). MXBOARD_POOL_EXITS sets how many (the
# issue's run: 200 on each Python).
POOL_EXITS = textwrap.dedent(r"""
    import concurrent.futures, multiprocessing, os, sys
    import numpy as np
    import mxboard

    WRITER = []

    def log(i):
        if not WRITER:
            WRITER.append(mxboard.SummaryWriter(os.path.join(sys.argv[1], str(os.getpid())), flush_secs=3600))
        a = np.random.default_rng(i).random((200, 200))
        WRITER[0].add_scalar("x", float((a @ a).trace()), i)
        return i

    if __name__ == "__main__":
        context = multiprocessing.get_context("fork")
        for exit in range(int(sys.argv[2])):
            if exit % 4 == 3:  # ProcessPoolExecutor's shutdown: no SIGTERM, the workers return
                with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as executor:
                    assert list(executor.map(log, range(16))) == list(range(16))
            else:
                with context.Pool(2) as pool:
                    assert pool.map(log, range(16)) == list(range(16))
            print(exit, flush=True)
""")


@pytest.mark.process_end
def test_pools_that_end_by_terminate_while_their_workers_log_never_hang(tmp_path):
    exits = int(os.environ.get("MXBOARD_POOL_EXITS", "60"))
    script = tmp_path / "pools.py"
    script.write_text(POOL_EXITS)
    spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"  # ends with the test's process
    busy = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
    child = subprocess.Popen([sys.executable, str(script), str(tmp_path / "logs"), str(exits)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)  # its pool's workers too
    start = time.monotonic()
    done = []
    try:
        while len(done) < exits:  # each pool's exit within 60 s (a few hundred ms when nothing hangs)
            line = _line_within(child, 60)
            assert line is not None, "pool exit %d of %d hung (60 s); the child's stderr:\n%s" % (
                len(done) + 1, exits, _stderr_of(child))
            done.append(int(line))
        assert _ended_within(child, 30) and child.returncode == 0, _stderr_of(child)
    finally:
        _kill(busy)
        try:  # a hung worker holds the pipes open: its whole session goes
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
        child.wait()
        for stream in (child.stdout, child.stderr):
            stream.close()
    print("%d pool exits in %.1f s" % (exits, time.monotonic() - start))
    assert done == list(range(exits))


def _line_within(child, seconds):
    """The child's next stdout line, or None after `seconds` (a thread reads the lines: a select
    on the pipe misses lines already in the reader's buffer)."""
    import queue
    import threading

    lines = getattr(child, "lines", None)
    if lines is None:
        lines = child.lines = queue.SimpleQueue()
        threading.Thread(target=lambda: [lines.put(line.strip()) for line in child.stdout], daemon=True).start()
    try:
        return lines.get(timeout=seconds)
    except queue.Empty:
        return None


def _stderr_of(child):
    """What the child said on stderr so far (its session killed first: a hung pool worker would
    hold the pipe open)."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except OSError:
        pass
    child.wait()
    return child.stderr.read()


# -- a server that ends cleans up after itself -------------------------------------------------
# TensorBoard writes its info file (the bundle's: <tmp>/.tensorboard-info-UID/pid-N-NS.info) while
# it serves and removes it at exit;
# Jupyter's %tensorboard reuses an info file with matching arguments without checking that its
# process lives. On b621f0a the demo, ended by SIGTERM, left its file: the writer's SIGTERM
# handler, still installed after the writer closed, re-raised the signal under TensorBoard's own.
def _start_server(how, logdir, env):
    python = [sys.executable]
    if how == "demo":
        pytest.importorskip("mxnet")
        pytest.importorskip("sklearn")
        args = python + ["-m", "mxboard.demo", "--logdir", logdir, "--run", "r", "--epochs", "1", "--batches", "1",
                         "--histogram-every", "1", "--port", "0"]
    elif how == "module":
        args = python + ["-m", "tensorboard_bundle", "--logdir", logdir, "--port", "0"]
    elif how == "command":
        args = [os.path.join(os.path.dirname(sys.executable), "tensorboard"), "--logdir", logdir, "--port", "0"]
    else:  # tensorboard.notebook.start, as %tensorboard calls it: the server is its child
        args = python + ["-c", "from tensorboard import notebook; notebook.start('--logdir %s --port 0')" % logdir]
    # SIGINT as a terminal gives it (a test runner's child may inherit it ignored)
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _gone(pid, seconds):
    import psutil

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.timeout(420)  # the demo trains first
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("how", ["demo", "module", "command", "notebook.start"])
def test_a_server_ended_by_a_signal_removes_its_info_file(tmp_path, how, signum):
    pytest.importorskip("psutil")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    logdir = str(tmp_path / "logs")
    os.makedirs(logdir)
    starter = _start_server(how, logdir, env)
    info_dir = tmp / (".tensorboard-info-%d" % os.getuid())

    def pid_of(info):
        return json.loads(info.read_text())["pid"]

    try:
        deadline = time.monotonic() + 180
        infos = []
        while not infos and time.monotonic() < deadline and (how == "notebook.start" or starter.poll() is None):
            time.sleep(0.2)
            infos = sorted(info_dir.glob("pid-*.info")) if info_dir.is_dir() else []
        assert infos, "no info file after 180 s: %s" % (starter.stderr.read() if starter.poll() is not None else "")
        pid = pid_of(infos[0])
        os.kill(pid, signum)
        assert _gone(pid, 30), "%s still serving 30 s after %s" % (how, signal.Signals(signum).name)
        assert sorted(info_dir.glob("pid-*.info")) == [], "%s left its info file after %s" % (
            how, signal.Signals(signum).name)
    finally:
        if starter.poll() is None:
            starter.kill()
        starter.communicate()
        for info in info_dir.glob("pid-*.info") if info_dir.is_dir() else ():
            try:
                os.kill(pid_of(info), signal.SIGKILL)
            except (OSError, ValueError):
                pass


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
@pytest.mark.parametrize("asked", [False, True], ids=["by default", "MXBOARD_EXIT_STATUS_ON_ERROR=1"])
def test_a_write_error_at_exit_is_told_on_stderr_and_in_the_exit_status_only_where_asked(tmp_path, asked):
    """On a6ab6a5 the status was 1 whatever the program's; now it is the program's (0 here),
    unless MXBOARD_EXIT_STATUS_ON_ERROR=1 asks for 1."""
    env = {"MXBOARD_EXIT_STATUS_ON_ERROR": "1"} if asked else {}
    proc = run_python("LOGDIR = %r\n" % str(tmp_path) + EXIT_WRITE_ERROR, env=env, check=False)
    assert proc.stdout.strip() == "logged, exiting without close()"
    assert proc.returncode == (1 if asked else 0)
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


# -- mxboard is a guest: the program's exit, its handlers, its threads (issue 57) ------------------
def _child(script, *args, env=None, stdin=False):
    return subprocess.Popen([sys.executable, "-c", script, *[str(a) for a in args]], text=True,
                            stdin=subprocess.PIPE if stdin else None, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), **(env or {})))


def _points(logdir):
    files = event_files(str(logdir))
    return [s for path in files for _, s, _ in tb_scalars(path)]


A_PROGRAMS_END = textwrap.dedent(r"""
    import atexit, multiprocessing, resource, signal, sys, time
    import mxboard

    def helper():
        time.sleep(600)

    if __name__ == "__main__":
        logdir, results, how = sys.argv[1:4]
        atexit.register(lambda: print("the program's exit hook ran", flush=True))
        out = open(results, "w")  # left open: the interpreter's finalization writes its buffer
        helpers = [multiprocessing.get_context("fork").Process(target=helper, daemon=True) for _ in range(2)]
        for p in helpers:
            p.start()
        print(*[p.pid for p in helpers], flush=True)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        w = mxboard.SummaryWriter(logdir, flush_secs=3600)
        if how == "failing":  # a local disk full, for the exit's writes
            resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
        for step in range(8000):  # fewer than a batch: nothing written before exit
            w.add_scalar("x", float(step), step)
        out.write("first line\n")
        out.write("last line\n")
        sys.exit(3)
""")


@pytest.mark.plain
@pytest.mark.parametrize("asked", [False, True], ids=["by default", "MXBOARD_EXIT_STATUS_ON_ERROR=1"])
@pytest.mark.parametrize("writer", ["healthy", "failing"])
def test_a_writer_at_exit_leaves_the_programs_hooks_helpers_files_and_status_alone(tmp_path, writer, asked):
    """A program with an exit hook of its own, a results file left open, two daemonic
    multiprocessing helpers, and `sys.exit(3)`. On a6ab6a5 a writer that failed at exit ended it
    by `os._exit(1)`: status 1, the hook never ran, the file lost its lines, both helpers lived on
    as orphans. Now every writer, healthy or failing, leaves all of it alone; only
    MXBOARD_EXIT_STATUS_ON_ERROR=1 makes a failure status 1, at the cost it documents (the hooks
    registered before the first writer and the finalization skipped; the helpers still ended)."""
    pytest.importorskip("psutil")
    results = tmp_path / "results.txt"
    child = _child(A_PROGRAMS_END, tmp_path / "logs", results, writer,
                   env={"MXBOARD_EXIT_STATUS_ON_ERROR": "1"} if asked else None)
    helpers = []
    try:
        helpers = [int(pid) for pid in child.stdout.readline().split()]
        out, err = child.communicate(timeout=60)
        assert len(helpers) == 2, err
        gone = [_gone(pid, 10) for pid in helpers]
        assert gone == [True, True], "the daemonic helpers outlived their parent:\n%s" % err
        if writer == "failing":
            assert "could not all be written" in err and "File too large" in err, err
        if asked and writer == "failing":  # the setting's status, and its documented cost
            assert child.returncode == 1, err
            return
        assert child.returncode == 3, err
        assert out.strip() == "the program's exit hook ran", err
        assert results.read_text() == "first line\nlast line\n"
        if writer == "healthy":
            assert _points(tmp_path / "logs") == list(range(8000))
    finally:
        _kill([child])
        for pid in helpers:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


# Exit-time code that logs: a last evaluation in an exit hook, with other exit work before it
# (longer than flush_secs). The hook is registered before the writer is made, so that it runs
# after mxboard's own exit hook, or after, so that it runs before it. torch's writer takes the
# same script.
EXIT_TIME_CODE = textwrap.dedent(r"""
    import atexit, sys, time
    which, order, logdir = sys.argv[1:4]
    if which == "torch":
        from torch.utils.tensorboard import SummaryWriter
    else:
        from mxboard import SummaryWriter

    def final():
        time.sleep(1)
        print("closed before:", getattr(w, "closed", None))
        w.add_scalar("x", 10.0, 10)
        w.add_scalar("final/acc", 0.75, 10)
        w.flush()
        w.close()
        print("closed after:", getattr(w, "closed", None))

    if order == "after mxboard's":
        atexit.register(final)
    w = SummaryWriter(logdir, flush_secs=0.2)
    if order == "before mxboard's":
        atexit.register(final)
    for step in range(10):
        w.add_scalar("x", float(step), step)
""")


@pytest.mark.process_end
@pytest.mark.parametrize("order", ["after mxboard's", "before mxboard's"])
def test_a_point_logged_by_exit_time_code_is_written_as_torchs_writer_writes_it(tmp_path, order):
    """Before, a point logged by exit-time code was dropped silently. After mxboard's exit hook had
    closed the writer behind its back (`closed` still False), `add_scalar` returned, `flush()`
    raised WriterClosedError and nothing was written. Before it, once the writer thread had woken
    after the interpreter began to exit (the main thread is then no longer alive), it reclaimed
    the main thread's scalar columns as a dead thread's, and the rows appended there afterwards
    were never written, though `flush()` and `close()` returned. torch's writer writes them in
    both. Now so does mxboard (read back by TensorBoard's loader), and `closed` tells the truth:
    True once the exit closed the writer, and a call then reopens it, written before it returns.
    On every Python: 3.12, which starts no thread in an exit hook, raised WriterClosedError there
    until the reopened writer started none (it writes on the caller's thread)."""
    writers = ["mxboard"] + (["torch"] if importlib.util.find_spec("torch") else [])
    read = {}
    for which in writers:
        child = _child(EXIT_TIME_CODE, which, order, tmp_path / which)
        try:
            out, err = child.communicate(timeout=120)
        finally:
            _kill([child])
        assert child.returncode == 0, err
        if which == "mxboard":
            assert err == ""
            assert out.splitlines() == ["closed before: %s" % (order == "after mxboard's"), "closed after: True"]
        acc = accumulator(tmp_path / which)
        read[which] = {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    assert read["mxboard"] == {"x": [(step, float(step)) for step in range(11)], "final/acc": [(10, 0.75)]}
    assert all(points == read["mxboard"] for points in read.values()), read


CHAINED = textwrap.dedent(r"""
    import signal, sys, time
    import mxboard

    order, signame, logdir, checkpoint = sys.argv[1:5]
    signum = getattr(signal, signame)
    stop = []

    def install_framework():  # as PyTorch Lightning's connector: keep the handler found, call it, stop later
        found = signal.getsignal(signum)

        def framework(s, frame):
            if callable(found):
                found(s, frame)
            stop.append(s)
        signal.signal(signum, framework)

    if order == "framework first":
        install_framework()
    w = mxboard.SummaryWriter(logdir, flush_secs=3600)  # nothing reaches the file but by a flush or close
    if order == "writer first":
        install_framework()
    for step in range(100):
        w.add_scalar("x", float(step), step)
    print("ready", flush=True)
    while not stop:
        time.sleep(0.01)
    print("stopping", flush=True)
    sys.stdin.readline()  # the framework's graceful stop takes its time: the parent says when it ends
    w.add_scalar("x", 100.0, 100)
    with open(checkpoint, "w") as f:
        f.write("checkpoint")
    sys.exit(0)
""")


@pytest.mark.plain
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("order", ["writer first", "framework first"])
def test_a_framework_handler_that_chains_to_ours_stops_its_own_way_with_every_point(tmp_path, order, signum):
    """A framework installs its handler over the writer's and calls the one it found (the SLURM
    requeue path). On a6ab6a5 the writer's handler then ended the process by the signal: no
    checkpoint, status -15 (-1 for SIGHUP). Now, called so, it starts the flush (every point in
    the file while the framework still works) and returns: the framework saves its checkpoint and
    exits 0, and the exit closes the writer. The other order (the framework's handler first) is
    never replaced, and keeps every point too."""
    child = _child(CHAINED, order, signal.Signals(signum).name, tmp_path / "logs", tmp_path / "checkpoint",
                   stdin=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signum)
        assert child.stdout.readline().strip() == "stopping", child.stderr.read()
        if order == "writer first":  # flushed by the chained call, the framework still at work
            deadline = time.monotonic() + 10
            while _points(tmp_path / "logs") != list(range(100)) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _points(tmp_path / "logs") == list(range(100))
        child.stdin.write("\n")
        child.stdin.flush()
        _, err = child.communicate(timeout=30)
        assert child.returncode == 0, err
        assert (tmp_path / "checkpoint").read_text() == "checkpoint"
        assert _points(tmp_path / "logs") == list(range(101)), err
    finally:
        _kill([child])


LIGHTNING = textwrap.dedent(r"""
    import sys
    import torch
    import lightning.pytorch as pl
    import mxboard

    logdir, checkpoint = sys.argv[1:3]
    w = mxboard.SummaryWriter(logdir, flush_secs=3600)  # made first: Lightning's connector chains to its handler
    logged = [0]

    class Model(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, index):
            loss = self.layer(batch[0]).pow(2).mean()
            w.add_scalar("loss", loss.item(), logged[0])
            logged[0] += 1
            if logged[0] == 20:
                print("ready", flush=True)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    class Checkpoint(pl.Callback):  # what a SLURM requeue needs: the state at the stop
        def on_exception(self, trainer, module, exception):
            trainer.save_checkpoint(checkpoint)
            print(type(exception).__name__, logged[0], flush=True)

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4)), batch_size=4)
    trainer = pl.Trainer(max_epochs=100000, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[Checkpoint()], accelerator="cpu", devices=1)
    trainer.fit(Model(), data)
""")


@pytest.mark.timeout(240)
def test_lightnings_signal_connector_over_a_writer_stops_training_with_a_checkpoint(tmp_path):
    """PyTorch Lightning's own SignalConnector, installed by `fit` over the writer's handler. On
    a6ab6a5 SIGTERM ended the process at once (-15, no checkpoint); now Lightning stops training
    its way (SIGTERMException), saves the checkpoint, exits 0, and every point is read back."""
    pytest.importorskip("lightning.pytorch", reason="Lightning is in the [trainers] test extras")
    child = _child(LIGHTNING, tmp_path / "logs", tmp_path / "last.ckpt")
    try:
        line = _line_within(child, 180)
        assert line == "ready", _stderr_of(child)
        child.send_signal(signal.SIGTERM)
        stopped = _line_within(child, 60)
        assert stopped is not None and stopped.startswith("SIGTERMException "), _stderr_of(child)
        assert _ended_within(child, 60), _stderr_of(child)
        assert child.returncode == 0, _stderr_of(child)
        assert (tmp_path / "last.ckpt").stat().st_size > 0
        assert _points(tmp_path / "logs") == list(range(int(stopped.split()[1])))
    finally:
        _kill([child])


ON_A_THREAD = textwrap.dedent(r"""
    import sys, threading, time
    import mxboard

    def main_waits_in_join():
        # Before the writer asks: a main thread still on its way to join() runs the turn (the
        # handlers installed, no warning), on any Python. Waiting there: its innermost frame is
        # threading's join (3.13) or _wait_for_tstate_lock (3.9 to 3.12), at the same bytecode
        # across two looks 0.2 s apart while this thread sleeps (the GIL free: it would have moved).
        main, last, deadline = threading.main_thread().ident, None, time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(0.2)
            frame = sys._current_frames()[main]
            now = (frame.f_code.co_name, frame.f_lasti)
            if now == last and now[0] in ("join", "_wait_for_tstate_lock"):
                return
            last = now
        sys.exit("the main thread was not seen waiting in join() within 30 s: %r" % (last,))

    def train():
        if sys.argv[2] == "join":
            main_waits_in_join()
        w = mxboard.SummaryWriter(sys.argv[1], flush_secs=3600)
        for step in range(100):
            w.add_scalar("x", float(step), step)
        print("ready", flush=True)
        time.sleep(600)

    t = threading.Thread(target=train, daemon=True)
    t.start()
    if sys.argv[2] == "join with a timeout":
        while t.is_alive():
            t.join(0.1)  # the main thread runs Python between its waits
    else:
        t.join()  # the main thread never runs Python again
""")


@pytest.mark.plain
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("main", ["join with a timeout", "join"])
def test_a_writer_made_on_a_thread_is_flushed_at_sigterm_or_told_why_not(tmp_path, main, signum):
    """`signal.signal` works only on the main thread: on a6ab6a5 a writer made on another thread
    kept 0 of 100 points at SIGTERM and SIGHUP, and nothing said so. Now its thread asks the main
    thread to install the handlers (between two of its bytecodes): 100 of 100. A main thread that
    never runs Python again (a `join()` without a timeout) cannot: one RuntimeWarning says so."""
    child = _child(ON_A_THREAD, tmp_path / "logs", main)
    try:
        assert child.stdout.readline().strip() == "ready"
        if main == "join with a timeout":  # the main thread's turn: the kernel then says the signal is caught
            deadline = time.monotonic() + 30
            while not _caught(child.pid, signum) and time.monotonic() < deadline:
                time.sleep(0.05)
        else:  # the warning, after its bound (2 s)
            warned = _stderr_line_within(child, 30)
            assert warned is not None and "RuntimeWarning" in warned, warned
            assert not _caught(child.pid, signum)
        child.send_signal(signum)
        _, err = child.communicate(timeout=30)
        assert child.returncode == -signum, err
        if main == "join with a timeout":
            assert _points(tmp_path / "logs") == list(range(100)), err
            assert err == ""
        else:
            warned += err
            assert warned.count("RuntimeWarning") == 1 and "only the main thread can install" in warned, warned
            assert "join() without a timeout" in warned, warned
    finally:
        _kill([child])



CLOSED_ON_A_THREAD = textwrap.dedent(r"""
    import signal, threading, sys, time
    import mxboard

    def ours():
        return [signal.getsignal(s) is not signal.SIG_DFL for s in (signal.SIGTERM, signal.SIGHUP)]

    def within(seconds, done):
        # The main thread runs Python between short waits: a turn asked of it runs there.
        deadline = time.monotonic() + seconds
        while not done() and time.monotonic() < deadline:
            time.sleep(0.05)

    close = threading.Event()

    def train():
        w = mxboard.SummaryWriter(sys.argv[1], flush_secs=3600)
        w.add_scalar("x", 1.0, 0)
        close.wait()
        w.close()

    t = threading.Thread(target=train)
    t.start()
    within(30, lambda: all(ours()))
    print("made on a thread, installed:", ours(), flush=True)
    close.set()
    within(30, lambda: not t.is_alive() and not any(ours()))
    print("closed on a thread, installed:", ours(), flush=True)
""")


@pytest.mark.plain
def test_the_last_writer_closed_on_a_thread_gives_the_handlers_back(tmp_path):
    """The handlers are undone when the last writer closes (docs/guarantees.md, "What mxboard does
    to your process"), also where it closes on another thread than the main one, which alone may
    set a handler: the closing thread asks the main thread for a turn (`Py_AddPendingCall`, as a
    writer made there does to install them). Without that turn, ours stayed installed for good."""
    child = _child(CLOSED_ON_A_THREAD, tmp_path)
    try:
        out, err = child.communicate(timeout=90)
        assert child.returncode == 0, err
        assert out.splitlines() == ["made on a thread, installed: [True, True]",
                                    "closed on a thread, installed: [False, False]"], err
        assert _points(tmp_path) == [0]
    finally:
        _kill([child])

def _caught(pid, signum):
    """Whether the process `pid` catches `signum` (its handler installed), as Linux says."""
    with open("/proc/%d/status" % pid) as f:
        (mask,) = [line.split()[1] for line in f if line.startswith("SigCgt:")]
    return bool(int(mask, 16) >> (signum - 1) & 1)


def _stderr_line_within(child, seconds):
    """The child's next stderr line, or None after `seconds` (read on a thread)."""
    import queue
    import threading

    lines = queue.SimpleQueue()
    threading.Thread(target=lambda: lines.put(child.stderr.readline()), daemon=True).start()
    try:
        return lines.get(timeout=seconds)
    except queue.Empty:
        return None


HOOKS_OFF = textwrap.dedent(r"""
    import atexit, signal, sys
    import mxboard
    from mxboard import reader

    logdir, how = sys.argv[1:3]

    def close_it():  # registered first: runs after any exit hook of mxboard's
        print("points before the program's close:", len(list(reader.read_events(logdir))) - 1, flush=True)
        w.close()
    atexit.register(close_it)
    w = mxboard.SummaryWriter(logdir, flush_secs=3600, **({"process_hooks": False} if how == "argument" else {}))
    for step in range(100):
        w.add_scalar("x", float(step), step)
    print("handlers:", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, signal.getsignal(signal.SIGHUP)
          is signal.SIG_DFL, flush=True)
""")


@pytest.mark.plain
@pytest.mark.parametrize("how", ["argument", "environment"])
def test_process_hooks_off_leaves_signals_and_the_exit_to_the_program(tmp_path, how):
    """`SummaryWriter(process_hooks=False)` or MXBOARD_PROCESS_HOOKS=0, for frameworks that manage
    their own end: no SIGTERM or SIGHUP handler is installed, and no exit hook closes the writer
    (the program's own hook finds nothing written yet, then closes it: every point kept). On
    a6ab6a5 the argument did not exist and the variable was ignored."""
    env = {"MXBOARD_PROCESS_HOOKS": "0"} if how == "environment" else None
    child = _child(HOOKS_OFF, tmp_path, how, env=env)
    try:
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        assert out.splitlines() == ["handlers: True True", "points before the program's close: 0"], err
        assert _points(tmp_path) == list(range(100))
    finally:
        _kill([child])


GIVEN_BACK_MEANWHILE = textwrap.dedent(r"""
    import os, signal, sys, threading, time
    import mxboard

    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write)  # someone else's wakeup fd: only the main thread's handler acts
    w = mxboard.SummaryWriter(sys.argv[1], flush_secs=3600)
    for step in range(100):
        w.add_scalar("x", float(step), step)

    def close_then_signal():
        w.close()  # the last writer, closed off the main thread: the main thread gives the handlers back later
        os.kill(os.getpid(), signal.SIGTERM)  # taken by this thread (the main one blocks it), ours installed

    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    threading.Thread(target=close_then_signal).start()
    time.sleep(2)  # a C call: Python's handler, and the main thread's turn, wait for its end
    time.sleep(3)
    print("survived", flush=True)
""")


@pytest.mark.plain
def test_a_sigterm_that_came_while_ours_was_installed_ends_the_process_though_given_back_since(tmp_path):
    """A pool worker's writer closed by the reaper asks the main thread to give the handlers back;
    terminate()'s SIGTERM came before. The main thread then runs Python's handler (ours) and the
    give-back at once: ours must not take the default action it finds for a framework's handler
    installed over it. Before this was seen (the chained rule's first form), the process lived on:
    a pool worker outliving terminate(), 4 of 4 runs of this child."""
    child = _child(GIVEN_BACK_MEANWHILE, tmp_path)
    try:
        out, err = child.communicate(timeout=30)
        assert (child.returncode, out) == (-signal.SIGTERM, ""), err
        assert _points(tmp_path) == list(range(100))
    finally:
        _kill([child])
