"""What the end of a process keeps of an object store's files: every end (exit, SIGTERM,
SIGHUP, Ctrl-C) with a hung store keeps what the store did not take, within one deadline for all
writers, and a killed writer's spool file is kept by the next writer, never stored twice
(storage/remote/keep.py, spool_leftovers.py; _writer/lifecycle.py)."""
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest
from store_outages import child_in_an_outage, image_of_one_mib, spool_after_one_mib

from mxboard import SummaryWriter, reader
from mxboard.storage.remote import spool as spool_file

ENDING = textwrap.dedent(r"""
    import os, sys, time
    import mxboard
    from mxboard._writer import lifecycle

    policy = mxboard.UploadPolicy(request_secs=2, retry_secs=0.2, flush_secs=6)
    lifecycle.END_SECS = 6  # the one deadline of every end (30 s by default), scaled down
    url, count, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    writers = [mxboard.SummaryWriter("%s/w%d" % (url, i), flush_secs=0.2, upload_policy=policy) for i in range(count)]
    for w in writers:
        w.add_scalar("x", 0.0, 0)
        w.flush()
    print("ready", flush=True)
    sys.stdin.readline()  # the parent hangs the store
    for step in range(1, 201):
        for w in writers:
            w.add_scalar("x", float(step), step)
    time.sleep(1)  # the writer threads pass them to the uploaders
    print("logged", flush=True)
    if how in ("exit", "sigint_at_exit"):
        print("exiting", flush=True)
        sys.exit(0)
    if how == "sigint_in_close":
        print("closing", flush=True)
        for w in writers:
            w.close()
    time.sleep(3600)  # sigterm, sighup, sigint: the parent sends it
""")


@pytest.mark.parametrize("how, outage", [("exit", "reset"), ("sigterm", "hang"), ("sighup", "hang"),
                                         ("sigint", "reset"), ("sigint_in_close", "hang"), ("sigint_at_exit", "hang")])
def test_every_end_keeps_what_the_store_did_not_take_all_writers_within_one_deadline(proxied, tmp_path, how, outage):
    """Four writers of a store that hangs, 200 points each waiting, and the process ends. On
    b621f0a a plain exit kept them but took 30 s a writer, one after another (here 6 s each:
    24 s); SIGTERM kept nothing and said they were "kept and retried"; Ctrl-C during close()
    kept nothing and said nothing. Now every end keeps every point in kept files of the spool
    directory (read by TensorBoard's own loader), says where, and all four writers take one
    deadline (6 s here, 30 s by default), not one each. The client libraries' tracebacks of the
    failed uploads stay off stderr. On a92d861 SIGHUP (an SSH session that drops) kept nothing, and
    a Ctrl-C during the exit's wait ended with status 0 after "Exception ignored in atexit
    callback": now SIGHUP is an end like SIGTERM, and that Ctrl-C ends quietly, with the program's
    status (0 here: sys.exit(0)), as a plain exit whose store kept data does (on a6ab6a5 both
    ended by `os._exit`: 1 and 130, the program's later exit hooks skipped)."""
    from conftest import signal_once_waiting, tb_scalars

    proxy, bucket = proxied
    spool = tmp_path / "spool"
    url = "s3://%s/ending-%s/run" % (bucket, how)
    with child_in_an_outage(proxy, ENDING, [url, "4", how], spool, outage,  # a store that hangs, or drops
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) as child:
        assert child.stdout.readline().strip() == "logged", child.stderr.read()
        start = time.monotonic()
        if how == "sigterm":
            child.send_signal(signal.SIGTERM)
        elif how == "sighup":
            child.send_signal(signal.SIGHUP)
        elif how == "sigint_at_exit":
            assert child.stdout.readline().strip() == "exiting"
            time.sleep(2)  # the exit's close() waits for the store
            child.send_signal(signal.SIGINT)
        elif how == "sigint":  # once it sleeps: see conftest's signal_once_waiting
            signal_once_waiting(child, signal.SIGINT, "sleep")
        elif how == "sigint_in_close":
            assert child.stdout.readline().strip() == "closing"
            time.sleep(2)  # the first close() waits for the store
            child.send_signal(signal.SIGINT)
        child.wait(60)
        took = time.monotonic() - start
        stderr = child.stderr.read()
    expected = {"sigterm": {-signal.SIGTERM}, "sighup": {-signal.SIGHUP}, "exit": {0},  # the program's status
                "sigint_at_exit": {0}}.get(how, {1, -signal.SIGINT})
    assert child.returncode in expected, (child.returncode, stderr)
    assert took < 6 + 6, "four writers, one deadline of 6 s: %.1f s\n%s" % (took, stderr)  # 24 s on b621f0a
    for i in range(4):
        kept = sorted(p for p in (spool / bucket / ("ending-" + how) / "run" / ("w%d" % i)).glob("*tfevents*"))
        assert kept, "writer %d kept nothing:\n%s" % (i, stderr)
        steps = [s for path in kept for t, s, _ in tb_scalars(str(path)) if t == "x"]
        # each once, in order; step 0 too where the kept file is the first object put again whole
        assert steps in (list(range(1, 201)), list(range(201))), "writer %d: kept %s" % (i, steps[:5])
        assert str(kept[0]) in stderr, "the end says where writer %d's points are:\n%s" % (i, stderr)
    assert not list(spool.rglob("*spooling*")), "the spool files are gone (their records kept)"
    assert "Task exception" not in stderr and "ClientConnection" not in stderr, stderr
    assert stderr.count("mxboard: upload to") <= 4, "one warning an outage and a writer:\n%s" % stderr
    if how in ("exit", "sigterm", "sighup", "sigint_at_exit"):
        assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr


def test_a_killed_writers_spool_file_is_kept_by_the_next_writer_and_a_live_one_left_alone(proxied, monkeypatch,
                                                                                          tmp_path, seaweed, caplog):
    """On b621f0a a killed writer's `.spooling` file stayed for ever, nothing uploaded or named it,
    and its name held `tfevents`. Now the next writer made with the same spool directory keeps it
    as an event file (TensorBoard's loader reads its images) and says so once; a live writer's
    spool file, beside it, is left alone and uploaded when the store returns, and so is one of
    another host's (its lock may not be seen across NFS)."""
    from conftest import ROOT, tb_events

    proxy, bucket = proxied
    spool = tmp_path / "spool"
    policy = spool_after_one_mib(monkeypatch, spool, flush_secs=60)
    live = SummaryWriter("s3://%s/left/live" % bucket, flush_secs=0.2, upload_policy=policy)
    killed = subprocess.Popen([sys.executable, "-c", textwrap.dedent(r"""
        import sys, time
        import numpy as np
        import mxboard
        policy = mxboard.UploadPolicy(max_unsent=1 << 20, request_secs=2)
        w = mxboard.SummaryWriter(sys.argv[1], flush_secs=0.2, upload_policy=policy)
        print("ready", flush=True)
        sys.stdin.readline()  # the parent hangs the store
        for step in range(4):
            w.add_image("photo", np.random.default_rng(step).integers(0, 256, (512, 512, 4), dtype=np.uint8),
                        step, dataformats="HWC")
        time.sleep(3600)
    """), "s3://%s/left/killed" % bucket], env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert killed.stdout.readline().strip() == "ready"
    proxy.set("hang")
    killed.stdin.write("go\n")
    killed.stdin.flush()
    for step in range(4):  # 4 MiB: past what waits in memory, into the spool
        live.add_image("photo", image_of_one_mib(step), step, dataformats="HWC")
    deadline = time.monotonic() + 60
    while len([p for p in spool.rglob("*spooling*") if p.stat().st_size]) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    killed.kill()
    killed.communicate()
    (left,) = [p for p in spool.rglob("*spooling*") if "/left/killed/" in str(p)]
    records = left.stat().st_size
    elsewhere = left.parent / "events.out.spooling.1700000000.another-host.7.000000.0123456789abcdef"
    elsewhere.write_bytes(b"another host's writer, maybe alive: its lock may not be seen here (NFS)")
    caplog.clear()
    SummaryWriter("memory://left/next").close()  # any store: the spool directory is what it shares
    said = [r.getMessage() for r in caplog.records]
    (kept,) = [p for p in spool.rglob("*.left") if "/left/killed/" in str(p)]
    assert kept.name == left.name.replace("spooling", "tfevents") + ".left" and not left.exists()
    assert kept.stat().st_size == records - spool_file.HEADER and stat.S_IMODE(kept.stat().st_mode) == 0o600
    steps = [e.step for e in tb_events(str(kept)) for v in e.summary.value if v.tag == "photo"]
    assert steps and steps == list(range(steps[0], steps[0] + len(steps)))  # TensorBoard's own loader reads them
    assert [m for m in said if "left by processes that ended without closing" in m and str(kept) in m]
    assert [p for p in spool.rglob("*spooling*") if "/left/live/" in str(p)], "a live writer's spool file: untouched"
    assert elsewhere.exists(), "another host's spool file is left to that host's next writer"
    proxy.set("pass")
    live.close()
    monkeypatch.setenv("AWS_ENDPOINT_URL", seaweed.endpoint)
    assert [e.step for e in reader.read_events("s3://%s/left/live" % bucket, strict=True)
            for v in e.summary.value if v.tag == "photo"] == [0, 1, 2, 3]


DRAINING = textwrap.dedent(r"""
    import sys, time
    import numpy as np
    import mxboard

    policy = mxboard.UploadPolicy(max_unsent=1 << 20, max_object=1 << 20, request_secs=2, retry_secs=0.2)
    w = mxboard.SummaryWriter(sys.argv[1], flush_secs=0.2, upload_policy=policy)
    w.add_scalar("before", 1.0, 0)
    w.flush()
    print("ready", flush=True)
    sys.stdin.readline()  # the parent hangs the store
    for step in range(8):  # 8 MiB: past what waits in memory, into the spool
        w.add_image("photo", np.random.default_rng(step).integers(0, 256, (512, 512, 4), dtype=np.uint8), step,
                    dataformats="HWC")
    print("logged", flush=True)
    time.sleep(3600)
""")


def test_a_writer_killed_while_draining_its_spool_leaves_nothing_to_store_twice(proxied, monkeypatch, tmp_path,
                                                                                 seaweed):
    """Read in a92d861's code: a writer killed while draining its spool (the store back, slowly)
    left in its spool file the records the uploader had read back and the store had taken; its
    `.left` file, uploaded as the next part as the warning suggests, stored them twice. Now the
    spool file's header says up to where the store took its records, and the leftover keeps only
    what follows: each image is in the store or in the `.left` file, not both, but for the put
    in flight at the kill (its bytes, already in the kernel's buffers, still reach the store:
    an answer lost, which no header can know of; before, every image the store had taken)."""
    from conftest import tb_events

    proxy, bucket = proxied
    spool = tmp_path / "spool"
    url = "s3://%s/draining/run" % bucket
    direct = seaweed.filesystem()
    with child_in_an_outage(proxy, DRAINING, [url], spool) as child:
        assert child.stdout.readline().strip() == "logged", child.stderr.read()
        deadline = time.monotonic() + 60
        while not [p for p in spool.rglob("*spooling*") if p.stat().st_size >= 4 << 20]:
            assert time.monotonic() < deadline, "nothing spooled"
            time.sleep(0.2)
        proxy.set("pass", rate=500_000)  # back, slowly: about two seconds an image

        def stored():
            direct.invalidate_cache()
            return [k for k in direct.find("%s/draining/run" % bucket) if "tfevents" in k]

        while len(stored()) < 4:  # some of the spooled images are in the store, some still wait
            assert time.monotonic() < deadline + 60, "the store took nothing"
            time.sleep(0.1)
        time.sleep(0.5)  # killed in the middle of the next put: the last one's answer came
        child.kill()
        child.wait()
    proxy.set("pass", rate=None)
    monkeypatch.setenv("MXBOARD_SPOOL_DIR", str(spool))
    SummaryWriter("memory://draining/next").close()  # takes the killed writer's spool file as a leftover
    (left,) = spool.rglob("*.left")
    in_store = [e.step for e in reader.read_events("s3://%s/draining/run" % bucket)
                for v in e.summary.value if v.tag == "photo"]
    in_left = [e.step for e in tb_events(str(left)) for v in e.summary.value if v.tag == "photo"]
    assert in_store and in_left, (in_store, in_left)
    both = set(in_store) & set(in_left)
    assert both <= {max(in_store)}, "stored and kept both: %s (but for the put in flight)" % sorted(both)
    assert in_store == list(range(len(in_store))) and in_left == sorted(in_left), (in_store, in_left)
