"""A point logged while the interpreter shuts down: from a `__del__` at the modules' teardown, a
`weakref.finalize`, an exit hook that runs after mxboard's, a thread still logging as the main
thread ends, and the `__del__` of a writer's owner that closes or flushes it. Each shape runs in
the real interpreter's shutdown of a child, with a bound: a hang fails, with the child's output.
Marked `process_end`, so that every plain environment (tools/plain_envs.sh: Python 3.9, 3.10,
3.12, 3.13) runs it too, beside make test's 3.11: the shutdown differs in each (3.9-3.11 wait for
ever in `Thread.start()` once the interpreter finalizes, 3.12 and 3.13 raise there, and 3.12
starts no thread in an exit hook either).

A first writer made in an exit hook (where an exit hook registered then never runs, and 3.12
starts no thread) writes each call on the caller's thread too: before, 3.9-3.11 and 3.13 lost
its points (never closed), and 3.12 raised WriterClosedError.

Before, a `__del__` that logged after mxboard's exit hook had closed the writer reopened it, and
its new thread never started: the process never ended on 3.9-3.11 (3.12 and 3.13 printed a
WriterClosedError's traceback, the point lost), and on 3.13 a writer made with
process_hooks=False whose owner closed it in `__del__` hung in the join of a thread that would
never run again. Now a writer opened once the exit began starts no thread and writes each call
on the caller's thread; a writer whose thread no longer runs is written and closed there. What
cannot be written is said in one line on stderr, and the exit status is the program's."""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT
from mxboard.reader import read_events

pytestmark = [pytest.mark.slow, pytest.mark.process_end]

# One shape a run: the writer logs steps 0-4 of "x", then the shape logs "last" at step 99 (or a
# histogram "h", a text "t") while the interpreter shuts down, and the program ends with status 3.
SHAPES = textwrap.dedent(r"""
    import atexit, sys, threading, time, weakref
    shape, hooks, logdir = sys.argv[1], sys.argv[2] == "hooks", sys.argv[3]
    import mxboard

    class Tracker:  # a global object that logs a last point when it goes
        def __init__(self, writer):
            self.writer = writer

        def __del__(self):
            print("closed before:", self.writer.closed, flush=True)
            if shape == "__del__ add_scalar":
                self.writer.add_scalar("last", 1.0, 99)
            elif shape == "__del__ add_histogram":
                self.writer.add_histogram("h", [1.0, 2.0, 2.5, 3.0], 99)
            elif shape == "__del__ add_text":
                self.writer.add_text("t", "the end", 99)
            elif shape == "owner's __del__ closes":
                self.writer.close()
            elif shape == "owner's __del__ flushes":
                self.writer.flush()
            print("returned", flush=True)

    class Anything:
        pass

    def last_point():
        print("closed before:", writer.closed, flush=True)
        writer.add_scalar("last", 1.0, 99)
        print("returned", flush=True)

    if shape == "exit hook after mxboard's":
        atexit.register(last_point)  # before the writer: it runs after mxboard's hook
    elif shape == "a first writer in an exit hook":
        def first_writer():  # no writer before: an exit hook registered now would never run
            late = mxboard.SummaryWriter(logdir, flush_secs=30, process_hooks=hooks)
            for step in range(5):
                late.add_scalar("x", float(step), step)
            late.add_scalar("last", 1.0, 99)
            print("returned", flush=True)
        atexit.register(first_writer)
        sys.exit(3)
    writer = mxboard.SummaryWriter(logdir, flush_secs=0.2, process_hooks=hooks)
    for step in range(5):
        writer.add_scalar("x", float(step), step)
    if shape.startswith("__del__") or shape.startswith("owner"):
        tracker = Tracker(writer)
        if shape.startswith("owner"):
            del writer  # the tracker owns it
    elif shape == "weakref.finalize":
        anything = Anything()
        weakref.finalize(anything, last_point)
    elif shape == "a thread logs on":
        def log_on():
            for step in range(5, 25):
                writer.add_scalar("x", float(step), step)
                time.sleep(0.02)
            print("returned", flush=True)
        threading.Thread(target=log_on).start()
    sys.exit(3)
""")

# What each shape leaves: the steps of "x", and the step of "last" (None: no such tag).
STEPS = {"a thread logs on": (list(range(25)), None), "owner's __del__ closes": (list(range(5)), None),
         "owner's __del__ flushes": (list(range(5)), None)}


def _run(shape, hooks, logdir):
    """The child's (status, stdout, stderr); a child still running after 60 s fails the test."""
    child = subprocess.Popen([sys.executable, "-c", SHAPES, shape, hooks, str(logdir)], text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        pytest.fail("%s (%s): the process never ended (killed after 60 s)\nstdout:\n%s\nstderr:\n%s"
                    % (shape, hooks, out, err))
    return child.returncode, out, err


def _logged(logdir):
    """{tag: [step, ...]} of every summary value in the logdir's event files."""
    tags = {}
    for event in read_events(str(logdir)):
        for value in event.summary.value:
            tags.setdefault(value.tag, []).append(event.step)
    return tags


# With process_hooks=False the program closes the writer (no exit hook does): its owner's
# `__del__` does, once the writer's thread no longer runs.
@pytest.mark.parametrize("shape, hooks", [(shape, "hooks") for shape in (
    "__del__ add_scalar", "__del__ add_histogram", "__del__ add_text", "weakref.finalize", "exit hook after mxboard's",
    "a first writer in an exit hook", "a thread logs on", "owner's __del__ closes", "owner's __del__ flushes")] + [
    ("owner's __del__ closes", "process_hooks=False"), ("owner's __del__ flushes", "process_hooks=False")])
def test_a_point_logged_at_shutdown_is_written_or_said_and_the_process_ends(tmp_path, shape, hooks):
    status, out, err = _run(shape, hooks, tmp_path)
    shown = "stdout:\n%s\nstderr:\n%s" % (out, err)
    # mxboard never decides the exit status, and never prints a traceback.
    assert status == 3, shown
    assert "Traceback" not in err, shown
    logged = _logged(tmp_path)
    steps, _ = STEPS.get(shape, (list(range(5)), 99))
    assert sorted(logged.pop("x")) == steps, shown
    if shape == "a thread logs on":
        assert out == "returned\n" and err == "", shown
        assert logged == {}, shown
        return
    # The shape's call ran, and returned.
    assert out.splitlines()[-1] == "returned", shown
    if shape.startswith("owner"):
        assert err == "" and logged == {}, shown
        return
    tag = {"__del__ add_histogram": "h", "__del__ add_text": "t"}.get(shape, "last")
    assert err == "", shown
    assert logged == {tag: [99]}, shown
    if shape != "a first writer in an exit hook":
        # mxboard's exit hook closed the writer before the shape's call, which reopened it.
        assert out.splitlines()[0] == "closed before: True", shown
