"""A test past its bound fails by itself, and the tests after it still run (a pytest plugin that
conftest.py loads, over pytest-timeout's `signal` method).

pytest-timeout's signal method arms an interval timer, whose SIGALRM the kernel gives to any thread
of the process that does not block it: a main thread asleep in a lock (a join, a queue, an Event)
then never runs the handler, and the test hangs. Its thread method ends the whole process instead:
an xdist worker, and every test file queued on it. Here a watchdog thread sends SIGALRM to the
main thread itself when the bound passes (signal.pthread_kill): the main thread's wait returns
EINTR, CPython runs the handler there, and its exception fails the test where it waits. Every wait
of the standard library (a lock's acquire, a join, time.sleep, select, a subprocess's wait) runs
the handlers and raises their exception (PEP 475). A test still running `timeout_grace` seconds
after its bound (a C call that retries without running handlers, an exception swallowed) ends its
process, as the thread method does, every thread's stack written first; faulthandler does the same
from C, 15 s later, if no Python thread can run at all (the GIL held for ever).

The stacks of a test that ended its process go to a file of their own, printed by the session's
summary (the controller's, under xdist: a worker's terminal is seen by nobody); those of a test
that failed by its bound are in its failure's message.
"""
import faulthandler
import os
import shutil
import signal
import sys
import tempfile
import threading
import traceback

import pytest
import pytest_timeout

STACKS = "MXBOARD_TEST_STACKS"  # the directory of the stacks' files, shared with xdist's workers


def pytest_addoption(parser):
    parser.addini("timeout_grace", "Seconds a test past its bound (failed there) may take to end, its teardown "
                  "included, before its process is ended (pytest-timeout's thread method)", default="60")


def pytest_configure(config):
    if STACKS not in os.environ:  # the controller (or a lone pytest): its workers inherit it
        os.environ[STACKS] = config._mxboard_stacks = tempfile.mkdtemp(prefix="mxboard-test-stacks-")


def pytest_unconfigure(config):
    if getattr(config, "_mxboard_stacks", None):
        shutil.rmtree(config._mxboard_stacks, ignore_errors=True)
        del os.environ[STACKS]


def pytest_terminal_summary(terminalreporter):
    """The stacks of each test that ended its process (the controller's summary, under xdist)."""
    directory = os.environ.get(STACKS)
    if not directory or not os.path.isdir(directory):
        return
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name)) as f:
            text = f.read()
        if "Thread" in text or "Stack" in text:
            terminalreporter.section("stacks of a test that ended its process, %s past its bound"
                                     % terminalreporter.config.getini("timeout_grace"), sep="+")
            terminalreporter.write(text)


def _stacks():
    """The stack of every thread but the main one (the failure's traceback) and this one."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    return "".join("~~~ thread %s (%d)\n%s" % (names.get(ident, "<unknown>"), ident,
                                                "".join(traceback.format_stack(frame)))
                   for ident, frame in sys._current_frames().items()
                   if ident not in (threading.get_ident(), threading.main_thread().ident)) or "(no other thread)\n"


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item, settings):
    if settings.method != "signal" or threading.current_thread() is not threading.main_thread():
        return None  # pytest-timeout's own
    grace = float(item.config.getini("timeout_grace"))
    main = threading.main_thread().ident
    done = threading.Event()
    state = {"ending": False, "stacks": ""}

    def handler(signum, frame):
        if state["ending"] or not getattr(item, "_mxboard_in_phase", False) or (
                not settings.disable_debugger_detection and pytest_timeout.is_debugging()):
            return  # a signal sent as the test ended, or between its phases (pytest's own code), or a debugger's
        __tracebackhide__ = True
        pytest.fail("Timeout (>%gs) from pytest-timeout: the test is stopped where its main thread waited "
                    "(the traceback); every other thread's stack then:\n%s" % (settings.timeout, state["stacks"]))

    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in item.nodeid)[:150]
    path = os.path.join(os.environ[STACKS], "%s.%d.txt" % (name, os.getpid()))
    stacks = open(path, "w")
    stacks.write("%s: every thread's stack %g s after its bound (%g s), which did not end it\n"
                 % (item.nodeid, grace, settings.timeout))
    stacks.flush()

    def watchdog():
        if done.wait(settings.timeout):
            return
        state["stacks"] = _stacks()
        for wait in (grace / 2, grace / 2):  # once for the test, once more for a teardown that hangs
            if not done.is_set():
                signal.pthread_kill(main, signal.SIGALRM)
            if done.wait(wait):
                return
        faulthandler.dump_traceback(stacks, all_threads=True)
        stacks.flush()
        pytest_timeout.timeout_timer(item, settings)  # os._exit(1), the stacks on the terminal too

    previous = signal.signal(signal.SIGALRM, handler)
    faulthandler.dump_traceback_later(settings.timeout + grace + 15, exit=True, file=stacks)
    thread = threading.Thread(target=watchdog, name="pytest-timeout watchdog", daemon=True)
    thread.start()

    def cancel():
        if state["ending"]:
            return
        state["ending"] = True
        done.set()
        thread.join()
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)
        stacks.close()
        os.remove(path)

    item.cancel_timeout = cancel
    return True


def _phase(item):
    """The bound's exception is raised only inside the test's setup, call or teardown, never in
    pytest's code between them (its reports): the watchdog's second signal comes in the next."""
    item._mxboard_in_phase = True
    try:
        yield
    finally:
        item._mxboard_in_phase = False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _phase(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _phase(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield from _phase(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_exception_interact(node):
    node._mxboard_failing = True  # pytest-timeout cancels the bound here: below, only for --pdb
    yield
    node._mxboard_failing = False


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_cancel_timer(item):
    """The bound holds through the teardown of a test that failed (pytest-timeout ends it at the
    failure, for a debugger's post-mortem): a teardown that hangs after a failure is bounded too."""
    if getattr(item, "_mxboard_failing", False) and not item.config.getvalue("usepdb"):
        return True
    return None
