"""A model-checked lifecycle: Hypothesis drives one or two writers through random interleavings
of every kind on shared and distinct tags, values as floats, numpy and NDArrays, flush, close, a
call after close (reopen), a writer dropped and collected on another thread (and replaced, as a
notebook re-running a cell, with purge_step), a second thread logging, and add_embedding. Each
step is checked against a model of what TensorBoard must show: per run, tag and kind, the steps
in call order, nothing lost, nothing twice, files present after flush, and no step that hangs.

`make test` runs a bounded, CI-stable budget; HYPOTHESIS_PROFILE=long runs hundreds of examples
with fresh random seeds."""
import functools
import gc
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import weakref

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from conftest import tb_events
from mxboard import SummaryWriter, reader
from mxboard._writer import lifecycle
from mxboard._writer.intake import Outcome, Task

settings.register_profile("default", max_examples=25, stateful_step_count=25, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
# the plain environments but the served one (make test-plain's budget): the first examples of the same sequence
settings.register_profile("quick", max_examples=8, stateful_step_count=20, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=400, stateful_step_count=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")

STEP_SECS = 30  # no step of the model may take longer (a hang is a failure, not a stuck suite)
TAGS = ("a", "b")
MXNET = importlib.util.find_spec("mxnet") is not None
VALUE_FORMS = ("float", "numpy", "array") + (("ndarray",) if MXNET else ())


def bounded(action, what):
    """Run `action` on a thread of its own; fail if it takes longer than STEP_SECS."""
    outcome = []

    def run():
        try:
            action()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, name="model-step", daemon=True)
    thread.start()
    thread.join(STEP_SECS)
    assert not thread.is_alive(), "%s did not return within %d s" % (what, STEP_SECS)
    if outcome[0] is not None:
        raise outcome[0]


def as_form(value, form):
    if form == "numpy":
        return np.float32(value)
    if form == "array":
        return np.array([value])
    if form == "ndarray":
        return sys.modules["mxnet"].nd.array([value], dtype="float64")
    return float(value)


class WriterLifecycle(RuleBasedStateMachine):
    @initialize(count=st.integers(1, 2))
    def start(self, count):
        self.root = tempfile.mkdtemp(prefix="mxboard-model-")
        self.logdirs = [os.path.join(self.root, "w%d" % i) for i in range(count)]
        self.writers = [SummaryWriter(d, flush_secs=3600) for d in self.logdirs]  # only flush and close write
        self.step = [0] * count
        # per writer: (kind, run, tag) -> [(step, value)] in call order (value None where not compared)
        self.expected = [{} for _ in range(count)]
        self.embeddings = [[] for _ in range(count)]
        self.stalls = [None] * count  # an Event the writer thread waits on, while it is busy
        for i in range(count):
            self.stall(i)
        if MXNET:
            import mxnet  # noqa: F401 - the NDArray form's module, loaded before any call needs it

    def teardown(self):
        writers = getattr(self, "writers", [])
        for i, w in enumerate(writers):
            self.release(i)
            bounded(w.close, "close")
            self.check(i)
            self.check_with_tensorboard(i)
        if hasattr(self, "root"):
            shutil.rmtree(self.root, ignore_errors=True)

    # -- what the calls do ------------------------------------------------------------------
    def next_step(self, i):
        self.step[i] += 1
        return self.step[i]

    def expect(self, i, kind, run, tag, step, value=None):
        self.expected[i].setdefault((kind, run, tag), []).append((step, value))
        if self.stalls[i] is None:  # the call reopened a closed writer, whose new thread may have
            bounded(self.writers[i].flush, "flush")  # written it or not yet: the same every run
            self.stall(i)

    @rule(data=st.data(), forms=st.lists(st.sampled_from(VALUE_FORMS + ("display_name",)), min_size=1, max_size=6))
    def add_scalar(self, data, forms):
        """A training step's scalars on one tag, each value in one form: a float, numpy, a
        one-element array, an NDArray, or with tensorboardX's display_name (a record of its own
        among the batched rows)."""
        i = data.draw(st.integers(0, len(self.writers) - 1))
        tag = data.draw(st.sampled_from(TAGS))
        for form in forms:
            step = self.next_step(i)
            value = float(step % 7) / 2
            if form == "display_name":
                call = functools.partial(self.writers[i].add_scalar, tag, value, step, display_name="D")
            else:
                call = functools.partial(self.writers[i].add_scalar, tag, as_form(value, form), step)
            bounded(call, "add_scalar")
            self.expect(i, "scalars", ".", tag, step, value)

    @rule(data=st.data())
    def add_named_scalars(self, data):
        i = data.draw(st.integers(0, len(self.writers) - 1))
        tag, name = data.draw(st.sampled_from(TAGS)), data.draw(st.sampled_from(("x", "y")))
        step = self.next_step(i)
        self.release(i)  # a name's first use waits for the writer thread to open its sub-run's file
        if data.draw(st.booleans()):
            bounded(lambda: self.writers[i].add_scalars(tag, {name: 1.5}, step), "add_scalars")
        else:
            bounded(lambda: self.writers[i].add_scalar(tag, {name: 1.5}, step), "add_scalar(dict)")
        self.expect(i, "scalars", "%s/%s" % (tag, name), tag, step, 1.5)

    @rule(data=st.data())
    def add_histogram(self, data):
        i = data.draw(st.integers(0, len(self.writers) - 1))
        tag = data.draw(st.sampled_from(TAGS))
        step = self.next_step(i)
        bounded(lambda: self.writers[i].add_histogram(tag, np.arange(5.0) + step, step), "add_histogram")
        self.expect(i, "histograms", ".", tag, step)

    @rule(data=st.data())
    def add_text(self, data):
        i = data.draw(st.integers(0, len(self.writers) - 1))
        tag = data.draw(st.sampled_from(TAGS))
        step = self.next_step(i)
        bounded(lambda: self.writers[i].add_text(tag, "at %d" % step, step), "add_text")
        self.expect(i, "text", ".", tag, step, "at %d" % step)

    @rule(data=st.data())
    def add_embedding(self, data):
        i = data.draw(st.integers(0, len(self.writers) - 1))
        self.release(i)  # it waits for the writer thread
        step = self.next_step(i)
        bounded(lambda: self.writers[i].add_embedding(np.eye(3) * step, metadata=["p", "q", "r"], global_step=step),
                "add_embedding")
        folder = os.path.join(self.logdirs[i], "default_%06d" % step)
        assert sorted(os.listdir(folder)) == ["metadata.tsv", "tensors.tsv"]  # in place when the call returns
        self.embeddings[i].append("default:%d" % step)
        self.stall(i)

    @rule(data=st.data(), count=st.integers(1, 30))
    def another_thread_logs(self, data, count):
        i = data.draw(st.integers(0, len(self.writers) - 1))
        steps = [self.next_step(i) for _ in range(count)]
        tag = data.draw(st.sampled_from(TAGS + ("thread",)))
        writer = self.writers[i]

        def log():
            for step in steps:
                writer.add_scalar(tag, float(step), step)

        bounded(log, "logging from another thread")
        for step in steps:
            self.expect(i, "scalars", ".", tag, step, float(step))

    def stall(self, i):
        """Keep the writer thread busy (a large image being encoded, a slow disk), so that what
        the calls queue until the next flush, close or collection is taken as one batch, whatever
        the timing: every run of the model is the same. (A closed writer has no thread: the
        call that reopens it stalls it again.)"""
        if self.writers[i].closed:
            self.stalls[i] = None
            return
        self.stalls[i] = busy = threading.Event()
        entered = threading.Event()

        def keep_busy(storage):
            entered.set()
            busy.wait(STEP_SECS)

        self.writers[i]._core.thread.put(Task(keep_busy, (), Outcome()))
        assert entered.wait(STEP_SECS)  # the thread took its batch: later calls go to the next one

    def release(self, i):
        if self.stalls[i] is not None:
            self.stalls[i].set()
            self.stalls[i] = None

    @rule(data=st.data())
    def flush(self, data):
        i = data.draw(st.integers(0, len(self.writers) - 1))
        self.release(i)
        bounded(self.writers[i].flush, "flush")
        self.check(i)
        self.stall(i)

    @rule(data=st.data())
    def close(self, data):
        """Closed, then (at the next call) reopened with a new event file."""
        i = data.draw(st.integers(0, len(self.writers) - 1))
        self.release(i)
        bounded(self.writers[i].close, "close")
        self.check(i)  # the next call reopens it (a new event file), and stalls it again: see expect

    @rule(data=st.data(), purge=st.booleans())
    def drop_and_collect(self, data, purge):
        """`del` of a writer and a collection on another thread (a notebook re-running a cell):
        it is closed without waiting on any writer thread, and a new writer takes its place. A
        collection runs wherever memory is allocated: on a thread of the test's, or on a writer
        thread, the dropped writer's own among them."""
        i = data.draw(st.integers(0, len(self.writers) - 1))
        threads = ["a thread of the test's"]  # a closed writer has no thread to collect on
        if not self.writers[i].closed:
            threads.append("its own writer thread")
        if len(self.writers) > 1 and not self.writers[1 - i].closed:
            threads.append("the other writer's thread")
        where = data.draw(st.sampled_from(threads))
        self.release(i)
        gc.disable()  # the collection happens where the rule says, not wherever memory is allocated first
        try:
            self._drop_and_collect(i, where, purge)
        finally:
            gc.enable()

    def _drop_and_collect(self, i, where, purge):
        ref = weakref.ref(self.writers[i])
        collector = None
        if where == "its own writer thread":
            collector = self.writers[i]
        elif where == "the other writer's thread":
            collector = self.writers[1 - i]
            self.release(1 - i)
        if collector is not None:  # a task that collects on that writer thread, once the reference is gone
            gate, task = threading.Event(), Task(lambda storage: (gate.wait(STEP_SECS), gc.collect()), (), Outcome())
            collector._core.thread.put(task)
            collector = None
        # resumed as from a checkpoint: purge_step writes restart marks, the records stay (raw reading)
        purge_step = self.step[i] + 1 if purge else None
        self.writers[i] = SummaryWriter(self.logdirs[i], flush_secs=3600, purge_step=purge_step)
        if where == "a thread of the test's":
            bounded(gc.collect, "gc.collect() on another thread")
        else:
            gate.set()
            finished = []
            bounded(lambda: finished.append(task.outcome.done.wait(STEP_SECS)), "gc.collect() on %s" % where)
            assert finished == [True], "gc.collect() on %s did not return" % where
            if where == "the other writer's thread":
                self.stall(1 - i)
        assert ref() is None, "the writer is still referenced"
        assert lifecycle.reaped(STEP_SECS), "the reaper did not close it within %d s" % STEP_SECS
        self.check(i)
        self.stall(i)

    # -- the model's checks -------------------------------------------------------------------
    def actual(self, i):
        """(kind, run, tag) -> [(step, value)] as written, every record in file order."""
        found = {}
        for kind, value_column in (("scalars", "value"), ("histograms", None), ("text", "text")):
            columns = reader.table(self.logdirs[i], kind, raw=True, strict=True)
            values = columns[value_column] if value_column else [None] * len(columns["step"])
            for run, tag, step, value in zip(columns["run"], columns["tag"], columns["step"], values):
                found.setdefault((kind, run, tag), []).append((step, value))
        return found

    def check(self, i):
        """Everything logged so far is in the files (the writer was flushed or closed): per kind,
        run and tag, in call order, nothing lost, nothing twice."""
        assert self.actual(i) == self.expected[i]
        config = os.path.join(self.logdirs[i], "projector_config.pbtxt")
        if self.embeddings[i]:
            with open(config) as f:
                text = f.read()
            assert all('tensor_name: "%s"' % name in text for name in self.embeddings[i])

    def check_with_tensorboard(self, i):
        """TensorBoard's own loader reads every file of the main run: each tag's scalars in call
        order."""
        run_files = sorted(os.path.join(self.logdirs[i], n) for n in os.listdir(self.logdirs[i]) if "tfevents" in n)
        steps = {}
        for path in run_files:
            for event in tb_events(path):
                for value in event.summary.value:
                    if value.metadata.plugin_data.plugin_name == "scalars":  # simple_value, as the loader migrates it
                        steps.setdefault(value.tag, []).append(event.step)
        expected = {tag: [s for s, _ in rows] for (kind, run, tag), rows in self.expected[i].items()
                    if kind == "scalars" and run == "."}
        assert steps == expected


WriterLifecycle.TestCase.settings = settings.get_profile(PROFILE)
TestTheWritersLifecycleMatchesTheModel = WriterLifecycle.TestCase


@pytest.fixture(autouse=True)
def _collections_on_every_thread():
    """Frequent collections: writer threads collect too (there, closing a writer once waited for
    its own thread)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(200, 2, 2)
    yield
    gc.set_threshold(*thresholds)
