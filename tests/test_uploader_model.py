"""The uploader's model: Hypothesis drives one writer of a real store (S3, GCS and Azure Blob:
SeaweedFS, fake-gcs-server and Azurite, each behind the fault proxy) through outages (a store
that hangs: it takes the connection and never answers; one that drops every connection; one
whose answers stall mid-body), a slow uplink (a bandwidth limit), their ends, the uploader's
give-up, flushes, and the end (close), with what waits in memory only (a spool limit of 0) or
spilling to the spool on disk.

At each step it checks the rule that matters, reading the store's objects with TensorBoard's own
loader: no record is stored twice, and they are in call order; after a flush that the store
answered, every accepted record (its call returned) is stored; no call waits past its bound
(here the spool always has room: a call never waits on the store). At the end, close() with the
store back stores everything; with it down, close() raises naming the kept files, and the store
with those files put at their keys holds every accepted record, once, in order.

`make test` runs a bounded, derandomized budget; HYPOTHESIS_PROFILE=long runs more, fresh seeds."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from conftest import LineChild, signal_once_waiting, tb_scalars
from mxboard import SpoolSettings, SummaryWriter, UploadPolicy, WriterError

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

for machine, sizes in {"uploader": {"default": (10, 10), "quick": (4, 8), "long": (100, 20)},
                       "ends": {"default": (8, 8), "quick": (4, 6), "long": (60, 15)}}.items():
    for profile, (examples, steps) in sizes.items():  # `long`: fresh seeds; the others derandomized
        settings.register_profile("%s-%s" % (machine, profile), max_examples=examples, stateful_step_count=steps,
                                  deadline=None, derandomize=profile != "long",
                                  suppress_health_check=list(HealthCheck))
PROFILE = "uploader-" + os.environ.get("HYPOTHESIS_PROFILE", "default")

CALL_SECS = 1.0  # no add_scalar may take longer (the spool has room: the loop never waits on the store)


def kept_files(spool):
    """{key: path} of the kept files in the spool directory `spool` (no spool file may be left)."""
    kept = {}
    for folder, _, names in os.walk(spool):
        for name in names:
            assert "spooling" not in name, "a spool file left: %s" % name
            key = os.path.relpath(os.path.join(folder, name), spool)
            kept[re.sub(r"\.kept\d+$", "", key)] = os.path.join(folder, name)
    return kept


def stored_steps(store, prefix, kept=None):
    """The steps of 'x' in the store's objects below `prefix` (the kept files put at their keys),
    in the order of their names (creation order), each object read by TensorBoard's loader."""
    store.invalidate_cache()
    keys = {key: None for key in store.find(prefix) if "tfevents" in key.rsplit("/", 1)[-1]}
    keys.update(kept or {})
    steps = []
    with tempfile.TemporaryDirectory() as scratch:
        for i, key in enumerate(sorted(keys)):
            path = keys[key]
            if path is None:
                path = os.path.join(scratch, "%d.tfevents" % i)
                with open(path, "wb") as f:
                    f.write(store.cat_file(key))
            steps += [s for t, s, _ in tb_scalars(path) if t == "x"]
    return steps


def check_final(final, accepted, maybe):
    assert final == sorted(set(final)), "twice or out of order: %s" % final[:20]
    assert set(accepted) <= set(final), "lost: %s" % sorted(set(accepted) - set(final))[:10]
    assert set(final) <= set(accepted) | maybe, "stored, never logged: %s" % sorted(set(final) - set(accepted) - maybe)


class Outages(RuleBasedStateMachine):
    """The store's rules, shared by both machines: `self.proxy` (the FaultProxy) hangs or drops
    connections, answers again, or stays down past the uploader's give-up."""

    proxy = None
    down_since = None  # the outage's start (time.monotonic()), None while the store answers
    gave_up = False  # the uploader gave up in this outage

    @precondition(lambda self: self.proxy is not None and self.down_since is None)
    @rule(kind=st.sampled_from(["hang", "reset", "stall"]))
    def outage(self, kind):
        self.proxy.set(kind, rate=None)
        self.down_since = time.monotonic()

    @precondition(lambda self: self.proxy is not None and self.down_since is None)
    @rule(rate=st.sampled_from([20_000, 100_000]))
    def slow_link(self, rate):
        """The uplink slows to `rate` bytes a second (every connection's together): slow, not down.
        A flush may then wait its bound: the store still answers."""
        self.proxy.set("pass", rate=rate)

    @precondition(lambda self: self.down_since is not None)
    @rule()
    def store_back(self):
        self.proxy.set("pass", rate=None)
        self.down_since, self.gave_up = None, False

    @precondition(lambda self: self.down_since is not None and not self.gave_up)
    @rule()
    def past_give_up(self):
        """The outage lasts past GIVE_UP_SECS (2 s here): the uploader gives up (then the next
        calls raise)."""
        time.sleep(max(0.0, self.down_since + 2 + 1 + 0.5 - time.monotonic()))  # + a request's bound (1 s)
        self.gave_up = True


def test_every_accepted_record_is_stored_once_or_kept(store, store_proxy, monkeypatch, tmp_path):
    proxy, url = store_proxy
    policy = UploadPolicy(request_secs=1, retry_secs=0.1, give_up_secs=2, upload_secs=0.5,
                          flush_secs=3,  # room for a request of the outage to fail late (1 s) and two more
                          max_object=8 << 10)  # many parts from a few hundred points
    direct = store.filesystem()  # read past the proxy
    bucket = url.split("://", 1)[1]
    examples = iter(range(10 ** 6))

    class Uploader(Outages):
        @initialize(spool=st.sampled_from(["disk", "memory"]))
        def start(self, spool):
            n = next(examples)
            proxy.set("pass", rate=None)
            self.spool = tmp_path / ("spool%d" % n)
            if spool == "memory":  # no disk spool: everything waits in memory (within max_unsent)
                spooling, unsent = SpoolSettings(str(self.spool), max_bytes=0), 64 << 20
            else:  # past 2 KiB, what waits goes to the spool
                spooling, unsent = SpoolSettings(str(self.spool)), 2 << 10
            self.prefix = "%s/model/%d" % (bucket, n)
            self.writer = SummaryWriter("%s://%s" % (store.scheme, self.prefix), flush_secs=0.2,
                                        upload_policy=replace(policy, max_unsent=unsent), spool=spooling)
            self.accepted, self.maybe, self.step = [], set(), 0
            self.proxy, self.down_since, self.gave_up = proxy, None, False

        # -- the steps ---------------------------------------------------------------------
        @rule(count=st.integers(1, 150))
        def log(self, count):
            for _ in range(count):
                start = time.monotonic()
                try:
                    self.writer.add_scalar("x", float(self.step), self.step)
                except (OSError, WriterError):  # the uploader gave up (said once, then a WriterError a call)
                    self.maybe.add(self.step)  # queued or not: stored (or kept) at most once
                else:
                    self.accepted.append(self.step)
                took = time.monotonic() - start
                assert took < CALL_SECS, "add_scalar waited %.2f s (the loop never waits on the store)" % took
                self.step += 1

        @rule()
        def flush(self):
            try:
                self.writer.flush()
            except (OSError, WriterError):  # the uploader gave up: said at the next call, this one
                pass  # (and a WriterError at each call after it), the store tried again all the same
            if self.down_since is None and not self.proxy.rate:  # a store that answers takes everything at a flush
                stored = self._stored()
                assert set(self.accepted) <= set(stored), "after a flush the store answered, not stored: %s" % (
                    sorted(set(self.accepted) - set(stored))[:10])

        @invariant()
        def each_once_in_order(self):
            if hasattr(self, "writer"):
                stored = self._stored()
                assert stored == sorted(set(stored)), "stored twice or out of order: %s" % stored[:20]

        def teardown(self):
            if not hasattr(self, "writer"):
                return
            kept = {}
            try:
                self.writer.close()
            except OSError as exc:
                assert self.down_since is not None, "close() with the store answering raised %r" % exc
                assert "it is kept in %s" % self.spool in str(exc), str(exc)
                kept = kept_files(self.spool)
            finally:
                proxy.set("pass", rate=None)
            check_final(self._stored(kept), self.accepted, self.maybe)

        def _stored(self, kept=None):
            return stored_steps(direct, self.prefix, kept)

    run_state_machine_as_test(Uploader, settings=settings.get_profile(PROFILE))


CHILD = textwrap.dedent(r"""
    import signal, sys, time
    import mxboard
    from mxboard._writer import lifecycle

    policy = mxboard.UploadPolicy(request_secs=1, retry_secs=0.1, give_up_secs=2, flush_secs=3, upload_secs=0.5,
                                  max_object=8 << 10, max_unsent=2 << 10)
    lifecycle.END_SECS = 3  # the ends' one deadline (30 s by default)
    w = mxboard.SummaryWriter(sys.argv[1], flush_secs=0.2, upload_policy=policy)
    step = 0
    print("ready", flush=True)
    for line in sys.stdin:
        command, *args = line.split()
        if command == "log":
            raised = []
            for _ in range(int(args[0])):
                try:
                    w.add_scalar("x", float(step), step)
                except (OSError, mxboard.WriterError):
                    raised.append(step)
                step += 1
            print("ok", *raised, flush=True)
        elif command == "flush":
            try:
                w.flush()
            except (OSError, mxboard.WriterError):
                pass
            print("ok", flush=True)
        elif command == "end":
            if args[0] == "close":
                try:
                    w.close()
                except OSError as exc:
                    print(exc, file=sys.stderr)
            print("ok", flush=True)
            if args[0] in ("exit", "close"):
                sys.exit(0)
            # sigterm, sigint: the parent sends it; this thread waits on stdin
""")

ENDS = ["exit", "close", "sigterm", "sighup", "sigint"]
END_BOUND = 3 + 10  # the one deadline, then the interpreter's exit (a loaded machine)


def test_every_end_of_the_process_stores_or_keeps_every_accepted_record(store, store_proxy, tmp_path):
    """The uploader's model at the process's end: a child process logs to the store through the
    proxy, through outages, give-ups and flushes, and ends one way (exit, close() then exit,
    SIGTERM, SIGHUP, Ctrl-C), on each store. Each end is within its bound, with the status it has
    without mxboard (or 1 where data was kept, as documented), and every accepted record is in the
    store or the kept files, once, in order."""
    from conftest import ROOT

    proxy, url = store_proxy
    direct = store.filesystem()  # read past the proxy
    bucket = url.split("://", 1)[1]
    examples = iter(range(10 ** 6))

    class ProcessEnds(Outages):
        @initialize(how=st.sampled_from(ENDS))
        def start(self, how):
            n = next(examples)
            proxy.set("pass", rate=None)
            self.how, self.spool = how, tmp_path / ("spool%d" % n)
            self.prefix = "%s/ends/%d" % (bucket, n)
            env = dict(os.environ, MXBOARD_SPOOL_DIR=str(self.spool), PYTHONPATH=os.path.join(ROOT, "python"))
            self.talk = LineChild(subprocess.Popen(
                [sys.executable, "-c", CHILD, "%s://%s" % (store.scheme, self.prefix)], env=env, text=True, bufsize=1,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)))
            self.child = self.talk.popen
            assert self.talk.line(60) == "ready", self.talk.stderr()
            self.accepted, self.maybe, self.step = [], set(), 0
            self.proxy, self.down_since, self.gave_up = proxy, None, False

        def _send(self, command):
            answer = self.talk.send(command)
            assert answer.startswith("ok"), "%r: %r\n%s" % (command, answer, self.talk.stderr())
            return answer.split()[1:]

        @rule(count=st.integers(1, 150))
        def log(self, count):
            raised = {int(s) for s in self._send("log %d" % count)}
            steps = range(self.step, self.step + count)
            self.accepted += [s for s in steps if s not in raised]
            self.maybe |= raised
            self.step += count

        @rule()
        def flush(self):
            self._send("flush")

        def teardown(self):
            if not hasattr(self, "child"):
                return
            try:
                self._send("end " + self.how)
                start = time.monotonic()
                if self.how == "sigterm":
                    self.child.send_signal(signal.SIGTERM)
                elif self.how == "sighup":
                    self.child.send_signal(signal.SIGHUP)
                elif self.how == "sigint":  # once it waits on stdin: see conftest's signal_once_waiting
                    signal_once_waiting(self.child, signal.SIGINT)
                try:
                    self.child.wait(END_BOUND)
                except subprocess.TimeoutExpired:
                    raise AssertionError("end %r: still running %d s later:\n%s"
                                         % (self.how, END_BOUND, self.talk.stderr())) from None
                took, stderr = time.monotonic() - start, self.talk.stderr()
                # as without mxboard, or 1 where the end kept data (told on stderr, as documented)
                expected = {"sigterm": {-signal.SIGTERM}, "sighup": {-signal.SIGHUP},
                            "sigint": {-signal.SIGINT, 1}}.get(self.how, {0, 1})
                assert self.child.returncode in expected, (self.how, self.child.returncode, stderr)
                kept = kept_files(self.spool)
                if kept:
                    assert "it is kept in %s" % self.spool in stderr, stderr  # the end says where
                check_final(stored_steps(direct, self.prefix, kept), self.accepted, self.maybe)
                assert took < END_BOUND
            finally:
                proxy.set("pass", rate=None)
                self.talk.close()

    run_state_machine_as_test(ProcessEnds, settings=settings.get_profile(PROFILE.replace("uploader", "ends")))
