"""The suite's own machinery: a test past its bound fails alone, and the tests queued behind it
on its xdist worker still run (tests/timeouts.py); a child a test starts gets Ctrl-C as a
terminal gives it, however pytest was started (conftest.py)."""
import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

FILES = {
    "test_lock.py": """
        import threading
        import pytest

        def test_before():
            pass

        @pytest.mark.timeout(3)
        def test_hangs_in_a_lock():
            lock = threading.Lock()
            lock.acquire()
            lock.acquire()  # the main thread asleep in a lock, for ever

        def test_after():
            pass
    """,
    "test_sleep.py": """
        import threading
        import time
        import pytest

        def test_before():
            pass

        @pytest.mark.timeout(3)
        def test_hangs_in_sleep():
            threading.Thread(target=time.sleep, args=(600,), daemon=True, name="another sleeper").start()
            time.sleep(600)  # in C (clock_nanosleep)

        def test_after():
            pass
    """,
    "test_teardown.py": """
        import threading
        import pytest

        @pytest.fixture
        def hangs_at_teardown():
            yield
            threading.Event().wait()  # a server's close that never returns

        @pytest.mark.timeout(3)
        def test_fails_then_its_teardown_hangs(hangs_at_teardown):
            assert False, "a plain failure"

        def test_after():
            pass
    """,
    **{"test_next_%s.py" % n: """
        def test_one():
            pass

        def test_two():
            pass
    """ for n in "abc"},
}

SWALLOWS = """
    import time
    import pytest

    @pytest.mark.timeout(2)
    def test_swallows_every_exception():
        while True:
            try:
                time.sleep(100)
            except BaseException:
                pass  # the bound's exception too: only the grace period's end stops it
"""


def _pytest(directory, files, method="signal"):
    """`make test`'s pytest (xdist, files kept together, no worker restarted) over `files`, with
    this suite's plugin and bounds, a grace period of 4 s."""
    os.makedirs(str(directory))
    for name, text in files.items():
        (directory / name).write_text(textwrap.dedent(text))
    (directory / "pytest.ini").write_text("[pytest]\ntimeout = 60\ntimeout_method = %s\ntimeout_grace = 4\n" % method)
    env = {k: v for k, v in os.environ.items() if k != "MXBOARD_TEST_STACKS"}  # a session of its own
    env.update(PYTHONPATH=HERE, COLUMNS="300")  # the summary's lines whole
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "timeouts", "-p", "no:randomly", "-p",
                           "no:cacheprovider", "-q", "-n", "2", "--dist", "loadfile", "--max-worker-restart=0", "."],
                          cwd=str(directory), env=env, capture_output=True, text=True, timeout=180)


@pytest.mark.slow
def test_a_test_past_its_bound_fails_alone_and_the_tests_behind_it_run(tmp_path):
    """On a6ab6a5 (pytest-timeout's thread method) a test past its bound ended its xdist worker,
    and with --max-worker-restart=0 the files queued on that worker never ran (477 of about 670
    tests ran in one CI). Now the test that hangs (in a lock, in time.sleep) fails, its stacks
    shown, and every other test runs and passes: those after it in its file, and the next files.
    A teardown that hangs after a plain failure is bounded too (pytest-timeout cancels its bound
    at the failure: its signal method then waits for ever)."""
    done = _pytest(tmp_path / "run", FILES)
    said = done.stdout + done.stderr
    assert done.returncode == 1 and "3 failed, 11 passed, 1 error" in said, said
    assert "ERROR test_teardown.py::test_fails_then_its_teardown_hangs - Failed: Timeout (>3s)" in said, said
    assert "crashed" not in said, said
    for test, line in (("test_lock.py::test_hangs_in_a_lock", "lock.acquire()  # the main thread asleep"),
                       ("test_sleep.py::test_hangs_in_sleep", "time.sleep(600)  # in C")):
        assert "FAILED %s - Failed: Timeout (>3s)" % test in said, said
        assert re.search(r"\n>\s+%s" % re.escape(line), said), said  # the traceback points at the line it waited on
    assert "~~~ thread another sleeper" in said, said  # the other threads' stacks are in the message


@pytest.mark.slow
def test_a_test_that_does_not_end_after_its_bound_ends_its_worker_with_its_stacks(tmp_path):
    """The last resort: a test that swallows the bound's exception ends its worker when the grace
    period is over (the session fails, naming it), and the summary shows where its threads were."""
    done = _pytest(tmp_path / "run", {"test_swallows.py": SWALLOWS, "test_next.py": FILES["test_next_a.py"]})
    said = done.stdout + done.stderr
    assert done.returncode == 1 and "FAILED test_swallows.py::test_swallows_every_exception - worker" in said, said
    assert "stacks of a test that ended its process, 4 past its bound" in said, said
    assert 'test_swallows.py", line 9 in test_swallows_every_exception' in said, said  # faulthandler's stack


CTRL_C = """
    import signal, subprocess, sys
    import pytest
    from conftest import signal_once_waiting

    @pytest.mark.slow
    def test_a_child_stops_at_ctrl_c():
        child = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(600)"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline() == "ready\\n"
            signal_once_waiting(child, signal.SIGINT, "sleep")
            _, said = child.communicate(timeout=20)
        finally:
            child.kill()
            child.communicate()
        assert "KeyboardInterrupt" in said
"""


@pytest.mark.slow
def test_a_child_gets_ctrl_c_when_pytest_was_started_in_the_background(tmp_path):
    """`make test &` (a background job of a shell without job control) starts pytest with SIGINT
    ignored, and every child inherits that: on a6ab6a5 each test that sends SIGINT to a child
    failed as if the child hung (beside a busy load in CI: test_process_end.py's 32 of 32 children
    "still running 5 s after SIGINT", test_demo.py's Ctrl-C after 60 s). conftest.py puts
    Python's handler back, which exec resets to the default in the children."""
    (tmp_path / "test_ctrl_c.py").write_text(textwrap.dedent(CTRL_C))
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers = slow\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:randomly", "-p",
                           "no:cacheprovider", "-q", "-n", "0", "."], cwd=str(tmp_path),
                          env=dict(os.environ, PYTHONPATH=HERE), capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))  # as `make test &`
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
