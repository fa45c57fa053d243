"""The lifecycle model's process dimension: Hypothesis drives a real child process that logs
(plain scalars, named values, flush), while threads that are not ours run beside the writer's
(busy in BLAS, asleep in a lock, asleep in a C call), and ends it one of the ways a process ends:
a plain exit, `os._exit` after close, SIGTERM (with the main thread in Python, or asleep in a lock
while the kernel gives the signal to another thread), SIGHUP, SIGINT, a Pool whose workers log ending by
terminate(), and a tear-down that deletes the logdir with the writer open.

At each step it checks what the model promises, through TensorBoard's own loader: after a
`flush()`, every point logged before it is in the file; a named value's sub-run file is there
when the call returns. At the end: the process ends within its bound (SIGTERM's flush is 30 s
at most; each end here has 45 s), with the status it would have without mxboard, and what the
end promises is on disk (everything logged, for every end that flushes), and a deleted logdir
never comes back.

The busy thread is busy in numpy, not in BLAS: a fork made while another thread is inside
OpenBLAS can deadlock in OpenBLAS's own fork handler (seen here twice in 30 examples: the parent's
main thread stuck in `os.fork`, mxboard's threads idle), whatever the writers do. The pool test
in test_process_end.py has its workers, not a thread beside the fork, use BLAS.

`make test` runs a bounded, derandomized budget (the `quick` profile in the plain environments);
HYPOTHESIS_PROFILE=long runs many more with fresh seeds."""
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from conftest import LineChild, event_files, signal_once_waiting, tb_scalars

pytestmark = [pytest.mark.slow, pytest.mark.process_end, pytest.mark.timeout(600)]

settings.register_profile("process-default", max_examples=30, stateful_step_count=15, deadline=None,
                          derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("process-quick", max_examples=6, stateful_step_count=10, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("process-long", max_examples=200, stateful_step_count=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
PROFILE = "process-" + os.environ.get("HYPOTHESIS_PROFILE", "default")

STEP_SECS = 30  # no command of the child may take longer
END_SECS = 45  # the end's bound: SIGTERM's flush (30 s at most), and the interpreter's exit
# SIGINT is sent once the child's main thread waits in read() on its stdin (conftest's
# signal_once_waiting: one sent a moment earlier can be taken before read() blocks, and CPython
# then raises no KeyboardInterrupt until a line comes; it failed CI once so on e1226c8, with no
# thread of the user's). With a thread not ours that does not block SIGINT (busy in numpy), a
# SIGINT was still lost now and then before that wait was made: 300 runs each of this file's child
# with a failing example's steps, 1 hung without mxboard (a stub of its calls), 2 with mxboard at
# e1987e8. Whether those were the same race is not known, so such a process that has not ended
# this long after the SIGINT gets a second one, as a user would press Ctrl-C again (a local
# logdir's exit flush takes well under a second, so a second Ctrl-C never cuts it short here).
SIGINT_AGAIN_SECS = 10

CHILD = textwrap.dedent(r"""
    import faulthandler, multiprocessing, os, signal, sys, threading, time
    import numpy as np
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the parent asks for the stacks of a hang
    import mxboard

    logdir = sys.argv[1]
    w = mxboard.SummaryWriter(logdir, flush_secs=3600)  # nothing reaches the file but by flush, close or the end
    step = 0

    def spin():  # a thread not ours, busy in numpy (element-wise: not in BLAS, see the docstring)
        a = np.random.default_rng(0).random(1 << 16)
        while True:
            a = np.sin(a) * 0.5 + 0.25

    def pool_worker(i):
        writer = mxboard.SummaryWriter(os.path.join(logdir, "pool", str(os.getpid())), flush_secs=3600)
        for k in range(50):
            writer.add_scalar("p", float(k), k)
        return i

    print("ready", flush=True)
    for line in sys.stdin:
        command, *args = line.split()
        if command == "log":
            for _ in range(int(args[0])):
                w.add_scalar("x", float(step), step)
                step += 1
            print("ok", flush=True)
        elif command == "named":
            w.add_scalars("g", {"a": 1.0, "b": 2.0}, step)
            there = all(any("tfevents" in f for f in os.listdir(os.path.join(logdir, "g", n))) for n in "ab")
            print("ok" if there else "missing", flush=True)
        elif command == "flush":
            w.flush()
            print("ok", flush=True)
        elif command == "thread":
            kind = args[0]
            if kind == "busy":
                target, targs = spin, ()
            elif kind == "lock":
                lock = threading.Lock()
                lock.acquire()
                target, targs = lock.acquire, ()
            else:  # asleep in a C call
                target, targs = time.sleep, (3600,)
            threading.Thread(target=target, args=targs, daemon=True).start()
            print("ok", flush=True)
        elif command == "end":
            how = args[0]
            if how == "exit":
                print("ok", flush=True)
                sys.exit(0)
            if how == "close_os_exit":
                w.close()
                print("ok", flush=True)
                os._exit(0)
            if how == "pool_terminate":
                with multiprocessing.get_context("fork").Pool(2) as pool:  # its exit: terminate()
                    pool.map(pool_worker, range(4))
                print("ok", flush=True)
                sys.exit(0)
            if how == "sigterm_main_in_lock":  # the kernel must give SIGTERM to another thread
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
                print("ok", flush=True)
                lock = threading.Lock()
                lock.acquire()
                lock.acquire()
            print("ok", flush=True)  # sigterm, sigint, rmtree: the parent does it; the main thread waits on stdin
""")

# The status each end has without mxboard. CPython 3.9 sometimes ends an unhandled
# KeyboardInterrupt with status 1 instead of by SIGINT while another thread is busy: 5 of 60
# runs of this child's loop without mxboard (a numpy thread spinning, SIGINT just after a line
# is read); 0 of 40 on 3.10, 3.11, 3.12 and 3.13.
AS_WITHOUT_MXBOARD = {"sigterm": {-signal.SIGTERM}, "sigterm_main_in_lock": {-signal.SIGTERM},
                      "sighup": {-signal.SIGHUP},
                      "sigint": {-signal.SIGINT} if sys.version_info >= (3, 10) else {-signal.SIGINT, 1}}

ENDS = ["exit", "close_os_exit", "sigterm", "sigterm_main_in_lock", "sigint", "pool_terminate", "rmtree", "sighup"]


class ProcessEnd(RuleBasedStateMachine):
    """One example: one child process, its logdir, and the model (points logged; points flushed)."""

    @initialize(how=st.sampled_from(ENDS))
    def start(self, how):
        import tempfile

        self.how = how
        self.root = tempfile.mkdtemp(prefix="mxboard-process-model-")
        self.logdir = os.path.join(self.root, "logs")
        self.logged = 0
        self.flushed = 0
        self.talk = LineChild(subprocess.Popen([sys.executable, "-c", CHILD, self.logdir], stdin=subprocess.PIPE,
                                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)))
        self.child = self.talk.popen
        assert self.talk.line(60) == "ready", self.talk.stderr()

    def _send(self, command):
        return self.talk.send(command, STEP_SECS)

    def _stderr(self):
        return self.talk.stderr()

    def _stacks(self):
        """What the child printed on stderr, with every thread's stack where it still runs."""
        if self.child.poll() is None:
            self.child.send_signal(signal.SIGUSR1)
            time.sleep(1)
        return self.talk.stderr()

    def _on_disk(self):
        return [s for t, s, _ in tb_scalars(event_files(self.logdir)[0]) if t == "x"]

    @rule(count=st.integers(1, 400))
    def log(self, count):
        assert self._send("log %d" % count) == "ok"
        self.logged += count

    @rule()
    def named(self):
        assert self._send("named") == "ok", "a named value's sub-run file was missing when add_scalars returned"

    @rule()
    def flush(self):
        assert self._send("flush") == "ok"
        self.flushed = self.logged
        assert self._on_disk() == list(range(self.flushed))  # flush() means in the file

    @precondition(lambda self: not getattr(self, "threads", 0) >= 3)
    @rule(kind=st.sampled_from(["busy", "lock", "sleep"]))
    def thread_not_ours(self, kind):
        assert self._send("thread " + kind) == "ok"
        self.threads = getattr(self, "threads", 0) + 1

    def teardown(self):
        child = getattr(self, "child", None)
        if child is None:
            return
        try:
            self._end()
        finally:
            self.talk.close()
            shutil.rmtree(self.root, ignore_errors=True)

    def _end(self):
        how, child = self.how, self.child
        assert self._send("end " + how) == "ok"
        if how == "rmtree":  # a tear-down that deletes the logdir with the writer open
            shutil.rmtree(self.logdir)
            child.stdin.close()  # the loop ends: a plain exit
        elif how in ("sigterm", "sigterm_main_in_lock"):
            child.send_signal(signal.SIGTERM)
        elif how == "sighup":  # an SSH session that drops: an end like SIGTERM (on a92d861 it lost everything)
            child.send_signal(signal.SIGHUP)
        elif how == "sigint":
            signal_once_waiting(child, signal.SIGINT)
        again = how == "sigint" and getattr(self, "threads", 0) > 0  # a thread not ours may take the SIGINT
        try:
            child.wait(SIGINT_AGAIN_SECS if again else END_SECS)
        except subprocess.TimeoutExpired:
            if not again:
                raise AssertionError("end %r: still running %d s later:\n%s"
                                     % (how, END_SECS, self._stacks())) from None
            child.send_signal(signal.SIGINT)  # Ctrl-C again, as a user would (see SIGINT_AGAIN_SECS)
            try:
                child.wait(END_SECS - SIGINT_AGAIN_SECS)
            except subprocess.TimeoutExpired:
                raise AssertionError("end 'sigint': still running after a second SIGINT, %d s later:\n%s"
                                     % (END_SECS, self._stacks())) from None
        assert child.returncode in AS_WITHOUT_MXBOARD.get(how, {0}), "end %r: status %d:\n%s" % (
            how, child.returncode, self._stderr())
        if how == "rmtree":
            assert not os.path.exists(self.logdir), "the deleted logdir came back: %s" % (
                [os.path.join(d, f) for d, _, fs in os.walk(self.logdir) for f in fs])
            return
        assert self._on_disk() == list(range(self.logged)), "end %r: not everything logged is in the file" % how
        if how == "pool_terminate":  # the workers' writers made their files; terminate() ended them
            assert len(os.listdir(os.path.join(self.logdir, "pool"))) >= 1


ProcessEnd.TestCase.settings = settings.get_profile(PROFILE)
TestProcessEnd = ProcessEnd.TestCase
