"""An object store that stops answering: the local spool (the loop never waits on the store),
and close()'s bound with a hung store (storage/remote/: spool.py, spool_settings.py, unsent.py,
keep.py). What the end of a process keeps is in test_store_at_exit.py. Beside test_remote.py so
that make test's two processes share the load."""
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from store_outages import child_in_an_outage, image_of_one_mib, spool_after_one_mib, until_spooled

from conftest import timed
from mxboard import SummaryWriter, UploadPolicy, reader
from mxboard.storage.remote import spool as spool_file


def _fill(disk):
    """Another file fills `disk` (a small tmpfs) to the last byte."""
    with open(disk / "ballast", "wb", buffering=0) as ballast:
        try:
            while True:
                ballast.write(bytes(4096))
        except OSError:
            pass


def test_a_store_hung_for_a_minute_never_holds_the_loop_and_every_image_is_stored_once(proxied, monkeypatch,
                                                                                          tmp_path, seaweed, caplog):
    """Images at 4 MB/s while the store takes connections and never answers for 10 s: past the
    8 MiB kept in memory (MAX_UNSENT, 64 MiB, scaled down with the time: the issue's minute and
    64 MiB with MXBOARD_LONG_TESTS=1), what waits goes to the local spool (32 of the 40 MiB), so
    no call waits (each under 0.1 s); when the store returns, everything is uploaded in order, each
    image once. (20 s proved no more than 10: twice the images through the same two paths.)"""
    proxy, bucket = proxied
    hung = 60 if os.environ.get("MXBOARD_LONG_TESTS") else 10
    policy = UploadPolicy(max_unsent=UploadPolicy().max_unsent * hung // 60 // (4 << 20) * (4 << 20),
                          request_secs=5,  # a hung put gives up in 5 s (the default 30 s is for real stores)
                          flush_secs=180)  # 240 MB through this test's Python proxy take longer than S3 would
    monkeypatch.setenv("MXBOARD_SPOOL_DIR", str(tmp_path / "spool"))
    url = "s3://%s/spooled/run" % bucket
    writer = SummaryWriter(url, flush_secs=1, max_queue=10, upload_policy=policy)
    writer.add_scalar("before", 1.0, 0)
    writer.flush()
    proxy.set("hang")
    slowest, step, start = 0.0, 0, time.monotonic()
    while time.monotonic() - start < hung:
        image = image_of_one_mib(step)
        slowest = max(slowest, timed(writer.add_image, "photo", image, step, dataformats="HWC"))
        step += 1
        time.sleep(max(0.0, start + step * 0.25 - time.monotonic()))  # 4 images, 4 MiB, a second
    proxy.set("pass")
    assert slowest < 0.1, slowest
    assert any("waits on disk in %s" % (tmp_path / "spool") in r.getMessage() for r in caplog.records)
    writer.close()
    monkeypatch.setenv("AWS_ENDPOINT_URL", seaweed.endpoint)
    steps = [e.step for e in reader.read_events(url, strict=True) for v in e.summary.value if v.tag == "photo"]
    assert steps == list(range(step)), "every image once, in order"
    assert not list((tmp_path / "spool").rglob("*spooling*")), "the spool is emptied"


def test_close_keeps_its_word_with_a_hung_store_and_releases_a_blocked_call(proxied, monkeypatch, tmp_path):
    """A store that never answers, memory and spool full: a call blocks (the documented bound).
    close() from another thread returns within FLUSH_SECS (plus one request's bound), raising an
    error that names the file keeping the rest (a valid event file); the blocked call is
    released with the same error. (It took 200 s, until uploads gave up.)"""
    proxy, bucket = proxied
    policy = UploadPolicy(request_secs=3, flush_secs=5, max_unsent=2 << 20)
    monkeypatch.setenv("MXBOARD_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("MXBOARD_SPOOL_MAX_BYTES", "3M")
    writer = SummaryWriter("s3://%s/closing/run" % bucket, flush_secs=0.2, max_queue=1, upload_policy=policy)
    writer.add_scalar("before", 1.0, 0)
    writer.flush()
    proxy.set("hang")
    blocked, raised = threading.Event(), []

    def log_until_blocked():
        try:
            for step in range(1000):
                writer.add_image("photo", image_of_one_mib(step), step, dataformats="HWC")
        except (OSError, RuntimeError) as exc:
            raised.append(exc)
        blocked.set()

    logger = threading.Thread(target=log_until_blocked, daemon=True)
    logger.start()
    assert not blocked.wait(8), "the call never blocked: the bounds were not reached"
    start = time.monotonic()
    with pytest.raises(OSError) as closed:
        writer.close()
    assert time.monotonic() - start < 5 + 3 + 2, time.monotonic() - start
    assert blocked.wait(5) and raised and raised[0] is closed.value  # released with the same error
    message = str(closed.value)
    assert "did not take" in message and str(tmp_path / "spool") in message
    kept = next((tmp_path / "spool").rglob("*tfevents*"))  # a spool file's name holds "spooling"
    steps = [e.step for e in reader.read_events(str(kept), strict=True) for v in e.summary.value if v.tag == "photo"]
    assert steps and steps == list(range(steps[0], steps[0] + len(steps)))  # whole records, in order
    proxy.set("pass")


@pytest.mark.parametrize("after", ["the store is back", "the store stays down"])
def test_a_store_down_past_give_up_keeps_every_accepted_point(proxied, monkeypatch, tmp_path, seaweed, after):
    """The uploader gives up (GIVE_UP_SECS, 3 min, here 3 s): the next call raises, as documented.
    On b621f0a close() then returned without a word, uploaded nothing and kept nothing: every
    point logged meanwhile was gone. Now a store that is back takes them at close(), once each,
    in order; one still down leaves them in a kept file that close() names."""
    from conftest import event_files, tb_scalars

    proxy, bucket = proxied
    policy = UploadPolicy(request_secs=1, retry_secs=0.2, give_up_secs=3, flush_secs=8)
    spool = tmp_path / "spool"
    monkeypatch.setenv("MXBOARD_SPOOL_DIR", str(spool))
    url = "s3://%s/gave-up/%s" % (bucket, after.split()[-1])
    writer = SummaryWriter(url, flush_secs=0.1, upload_policy=policy)
    writer.add_scalar("x", 0.0, 0)
    writer.flush()
    proxy.set("hang")
    accepted, step, deadline = [0], 1, time.monotonic() + 60
    with pytest.raises(OSError, match="the store did not take"):
        while time.monotonic() < deadline:
            writer.add_scalar("x", float(step), step)
            accepted.append(step)  # the call returned: accepted
            step += 1
            time.sleep(0.005)
    if after == "the store is back":
        proxy.set("pass")
        writer.close()  # quiet: the store took everything
        monkeypatch.setenv("AWS_ENDPOINT_URL", seaweed.endpoint)
        stored = [e.step for e in reader.read_events(url, strict=True) for v in e.summary.value if v.tag == "x"]
    else:
        with pytest.raises(OSError, match="it is kept in %s" % spool) as closed:
            writer.close()
        said = str(closed.value)
        path, target = said.split("it is kept in ")[1].split(": upload it to ")
        target = target.split(", or serve it")[0]
        assert [s for t, s, _ in tb_scalars(path) if t == "x"][-1] >= accepted[-1]  # TensorBoard's own loader
        assert event_files(os.path.dirname(path))  # served from the spool directory: a kept file is an event file
        import fsspec

        monkeypatch.setenv("AWS_ENDPOINT_URL", seaweed.endpoint)
        fsspec.filesystem("s3", skip_instance_cache=True).put_file(path, target)  # as the message says
        stored = [e.step for e in reader.read_events(url, strict=True) for v in e.summary.value if v.tag == "x"]
    assert stored == sorted(set(stored)), "each point once, in order"
    assert set(accepted) <= set(stored), "lost: %s" % sorted(set(accepted) - set(stored))[:10]


# -- a private spool, its settings checked when the writer is made --------------------------------

def test_the_spools_settings_are_checked_when_the_writer_is_made(tmp_path, monkeypatch):
    """On b621f0a they were read mid-outage: MXBOARD_SPOOL_MAX_BYTES=2e9 dropped each later batch
    with a ValueError, a read-only or foreign directory stopped the writer for good, none named
    the spool. Now the constructor says so, naming the variable. A symlink planted where the
    spool's private subdirectory goes in a shared directory is refused, never followed."""
    monkeypatch.setenv("MXBOARD_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("MXBOARD_SPOOL_MAX_BYTES", "2e9")
    with pytest.raises(ValueError, match="MXBOARD_SPOOL_MAX_BYTES '2e9': a number of bytes"):
        SummaryWriter("memory://settings/run")
    monkeypatch.setenv("MXBOARD_SPOOL_MAX_BYTES", "1G")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    (shared / ("mxboard-spool-%d" % os.getuid())).symlink_to(tmp_path)  # planted by another user
    monkeypatch.setenv("MXBOARD_SPOOL_DIR", str(shared))
    with pytest.raises(PermissionError, match=r"the spool directory .*shared \(MXBOARD_SPOOL_DIR\) is a symlink"):
        SummaryWriter("memory://settings/run")
    if os.geteuid() == 0:  # root can make a directory another user's
        foreign = tmp_path / "foreign"
        foreign.mkdir()
        os.chown(foreign, 65534, 65534)
        monkeypatch.setenv("MXBOARD_SPOOL_DIR", str(foreign))
        with pytest.raises(PermissionError, match=r"belongs to another user \(uid 65534\)"):
            SummaryWriter("memory://settings/run")
    readonly = tmp_path / "readonly"
    readonly.write_text("a file, where a directory is needed: nothing can be made below it")
    monkeypatch.setenv("MXBOARD_SPOOL_DIR", str(readonly / "spool"))
    with pytest.raises(OSError, match=r"the spool directory .*readonly/spool \(MXBOARD_SPOOL_DIR\) cannot be made"):
        SummaryWriter("memory://settings/run")


@pytest.mark.parametrize("mode", [0o1777, 0o2770], ids=["tmp-like 1777", "group 2770"])
def test_a_shared_spool_directory_keeps_its_mode_and_others_still_write_there(proxied, monkeypatch, tmp_path, mode):
    """On a92d861 MXBOARD_SPOOL_DIR=/tmp (or a group's 2770 project directory) made every store
    writer chmod it 0700, silently: /tmp went from 1777 to 0700, and another user who had written
    there got PermissionError. Now the named directory keeps its mode; the spool lives in a
    private subdirectory made there (0700, the user's), and another user still writes beside it."""
    import pathlib
    import shutil
    import tempfile

    proxy, bucket = proxied
    shared = pathlib.Path(tempfile.mkdtemp(prefix="mxboard-shared-"))  # below /tmp: others can reach it
    if os.geteuid() == 0:
        os.chown(shared, 0, 65534)
    os.chmod(shared, mode)
    policy = spool_after_one_mib(monkeypatch, shared, flush_secs=60)
    writer = SummaryWriter("s3://%s/shared/run" % bucket, flush_secs=0.2, upload_policy=policy)
    writer.add_scalar("before", 1.0, 0)
    writer.flush()
    proxy.set("hang")
    for step in range(3):  # 3 MiB: past what waits in memory, into the spool
        writer.add_image("photo", image_of_one_mib(step), step, dataformats="HWC")
    deadline = time.monotonic() + 20
    while not list(shared.rglob("*spooling*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    (spooled,) = [p for p in shared.rglob("*spooling*") if p.is_file()]
    private = shared / ("mxboard-spool-%d" % os.getuid())
    assert private in spooled.parents and stat.S_IMODE(os.lstat(private).st_mode) & 0o777 == 0o700
    assert stat.S_IMODE(os.lstat(shared).st_mode) == mode, oct(os.lstat(shared).st_mode)
    if os.geteuid() == 0:  # another user (uid 65534, of the directory's group) still writes there
        other = subprocess.run(["/bin/sh", "-c", 'echo mine > "$1"', "sh", str(shared / "another-users-file")],
                               user=65534, group=65534, capture_output=True, text=True, timeout=30)
        assert other.returncode == 0, other.stderr
    proxy.set("pass")
    writer.close()
    assert stat.S_IMODE(os.lstat(shared).st_mode) == mode
    shutil.rmtree(shared, ignore_errors=True)


READ_ONLY_HOME = textwrap.dedent(r"""
    import sys
    import numpy as np
    import mxboard

    policy = mxboard.UploadPolicy(max_unsent=1 << 20, request_secs=2, retry_secs=0.2, flush_secs=60)
    w = mxboard.SummaryWriter(sys.argv[1], flush_secs=0.2, upload_policy=policy)  # the store is up: nothing spools
    for step in range(100):
        w.add_scalar("loss", float(step), step)
    w.flush()
    print("ready", flush=True)
    sys.stdin.readline()  # the parent hangs the store: now the spool is needed
    for step in range(3):
        w.add_image("photo", np.random.default_rng(step).integers(0, 256, (512, 512, 4), dtype=np.uint8), step,
                    dataformats="HWC")
    print("logged", flush=True)
    sys.stdin.readline()  # the store is back
    w.close()
""")


def test_a_read_only_home_stores_everything(proxied, monkeypatch, tmp_path, seaweed):
    """On a92d861 a read-only home (docker run -u 1000 with HOME=/, readOnlyRootFilesystem, an HPC
    compute node) refused every store writer: the default spool directory was made at the
    constructor, though the store was up and nothing needed spooling. Now it is made when first
    needed, and where the user's cache cannot be had, a private directory in the temporary
    directory takes the spool, said once: 100 of 100 points stored, and the images of an outage
    too. (A cache directory below a file stands for a read-only one: root writes anywhere.)"""
    proxy, bucket = proxied
    url = "s3://%s/readonly-home/run" % bucket
    home = tmp_path / "home"
    home.write_text("a file: no directory can be made below it")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "MXBOARD_SPOOL_DIR"}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), TMPDIR=str(temporary))
    from conftest import ROOT

    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    with subprocess.Popen([sys.executable, "-c", READ_ONLY_HOME, url], env=env, text=True, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        try:
            assert child.stdout.readline().strip() == "ready", child.stderr.read()
            proxy.set("hang")
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "logged", child.stderr.read()
            fallback = temporary / ("mxboard-spool-%d" % os.getuid())
            deadline = time.monotonic() + 20
            while not list(fallback.rglob("*spooling*")) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert list(fallback.rglob("*spooling*")), "nothing spooled in %s" % fallback
            proxy.set("pass")
            child.stdin.write("back\n")
            child.stdin.flush()
            out, err = child.communicate(timeout=90)
        finally:
            if child.poll() is None:
                child.kill()
            proxy.set("pass")
    assert child.returncode == 0, err
    assert err.count("no spool in") == 1 and "spooling in %s instead" % fallback in err, err
    monkeypatch.setenv("AWS_ENDPOINT_URL", seaweed.endpoint)
    events = list(reader.read_events(url, strict=True))
    assert [e.step for e in events for v in e.summary.value if v.tag == "loss"] == list(range(100))
    assert [e.step for e in events for v in e.summary.value if v.tag == "photo"] == [0, 1, 2]


def test_a_leftover_is_kept_whatever_its_path_holds(tmp_path, monkeypatch, caplog):
    """On a92d861 a leftover's new name replaced `spooling` with `tfevents` across its whole path:
    a spool directory, bucket or run path holding "spooling" made the rename fail quietly, and the
    leftover was never kept or named. Now only the file's own name changes."""
    import socket

    from conftest import tb_scalars

    spool = tmp_path / "spooling-area"
    monkeypatch.setenv("MXBOARD_SPOOL_DIR", str(spool))
    local = tmp_path / "local"
    with SummaryWriter(str(local)) as writer:
        for step in range(5):
            writer.add_scalar("loss", float(step), step)
    (records,) = [p for p in local.iterdir() if "tfevents" in p.name]
    folder = spool / "bucket" / "spooling-runs" / "run"
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(spool, 0o700)
    left = folder / ("events.out.spooling.1700000000.%s.7.000000.0123456789abcdef" % socket.gethostname())
    left.write_bytes(records.read_bytes())
    SummaryWriter("memory://leftover/run").close()
    kept = folder / (left.name.replace("spooling", "tfevents") + ".left")
    assert kept.exists() and not left.exists(), sorted(p.name for p in folder.iterdir())
    assert [s for t, s, _ in tb_scalars(str(kept)) if t == "loss"] == list(range(5))
    assert str(kept) in caplog.text


def test_the_default_spool_is_private_in_the_users_cache_and_its_files_are_0600(proxied, monkeypatch, tmp_path):
    """On b621f0a the default was /tmp/mxboard-spool-<user>, made 0755 with files 0644 (every
    user of a lab server could read the spooled images), and one another user made first was
    trusted. Now: the user's cache directory (XDG), 0700, files 0600."""
    proxy, bucket = proxied
    monkeypatch.delenv("MXBOARD_SPOOL_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    policy = spool_after_one_mib(monkeypatch, None, flush_secs=60)
    writer = SummaryWriter("s3://%s/private/run" % bucket, flush_secs=0.2, upload_policy=policy)
    writer.add_scalar("before", 1.0, 0)
    writer.flush()
    proxy.set("hang")
    spool = tmp_path / "cache" / "mxboard" / "spool"
    for step in range(4):  # 4 MiB: past what waits in memory
        writer.add_image("photo", image_of_one_mib(step), step, dataformats="HWC")
    deadline = time.monotonic() + 20
    while not list(spool.rglob("*spooling*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    (spooled,) = [p for p in spool.rglob("*spooling*") if p.is_file()]
    assert stat.S_IMODE(os.lstat(spool).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(spooled).st_mode) == 0o600
    assert "tfevents" not in spooled.name  # serving the spool directory serves kept files only
    proxy.set("pass")
    writer.close()
    assert not [p for p in spool.rglob("*") if p.is_file()]


def test_a_symlink_planted_where_close_keeps_its_file_is_never_followed(proxied, monkeypatch, tmp_path):
    """On b621f0a a symlink at the kept file's name made the victim's own process replace the file
    it pointed to with the event records. Now that name is never opened through a link: the
    records are kept beside it, and the file pointed to is untouched."""
    proxy, bucket = proxied
    spool = tmp_path / "spool"
    policy = spool_after_one_mib(monkeypatch, spool, flush_secs=3)
    writer = SummaryWriter("s3://%s/planted/run" % bucket, flush_secs=0.2, upload_policy=policy)
    proxy.set("hang")
    for step in range(4):
        writer.add_image("photo", image_of_one_mib(step), step, dataformats="HWC")
    deadline = time.monotonic() + 20
    while not list(spool.rglob("*spooling*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    (spooled,) = [p for p in spool.rglob("*spooling*") if p.is_file()]
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file")
    (spooled.parent / spooled.name.replace("spooling", "tfevents")).symlink_to(victim)
    with pytest.raises(OSError, match="it is kept in") as closed:
        writer.close()
    assert victim.read_text() == "the user's own file"
    path = str(closed.value).split("it is kept in ")[1].split(": upload it to ")[0]
    assert path.endswith(".kept1") and not os.path.islink(path)
    steps = [e.step for e in reader.read_events(path, strict=True) for v in e.summary.value if v.tag == "photo"]
    assert steps == [0, 1, 2, 3]
    proxy.set("pass")


def test_a_spool_limit_below_one_batch_means_no_disk_spool_and_the_loop_goes_on(proxied, monkeypatch, tmp_path,
                                                                               seaweed):
    """On b621f0a MXBOARD_SPOOL_MAX_BYTES=0 (or 1M) blocked the loop for good: room_for was never
    true for a batch larger than the limit. Now such a batch waits in memory (bounded as before),
    and the loop goes on as soon as the store takes it."""
    proxy, bucket = proxied
    monkeypatch.setenv("MXBOARD_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("MXBOARD_SPOOL_MAX_BYTES", "0")
    policy = UploadPolicy(max_unsent=2 << 20, request_secs=2, retry_secs=0.2)
    url = "s3://%s/nospool/run" % bucket
    writer = SummaryWriter(url, flush_secs=0.2, max_queue=2, upload_policy=policy)
    proxy.set("hang")
    logged = threading.Event()

    def log():
        for step in range(12):  # 12 MiB through 2 MiB of memory
            writer.add_image("photo", image_of_one_mib(step), step, dataformats="HWC")
        logged.set()

    threading.Thread(target=log, daemon=True).start()
    time.sleep(3)
    assert not logged.is_set()  # waiting in memory, bounded
    proxy.set("pass")
    assert logged.wait(60), "the loop never went on once the store was back"
    writer.close()
    monkeypatch.setenv("AWS_ENDPOINT_URL", seaweed.endpoint)
    steps = [e.step for e in reader.read_events(url, strict=True) for v in e.summary.value if v.tag == "photo"]
    assert steps == list(range(12))
    assert not [p for p in (tmp_path / "spool").rglob("*") if p.is_file()]  # nothing on disk


# -- every end of a process keeps what waits, all writers within one deadline ----------------------

CLOSING_BIG = textwrap.dedent(r"""
    import os, sys
    import mxboard

    policy = mxboard.UploadPolicy(request_secs=2, flush_secs=2)
    url, mib = sys.argv[1], int(sys.argv[2])
    w = mxboard.SummaryWriter(url, flush_secs=0.5, max_queue=8, upload_policy=policy)
    w.add_scalar("before", 1.0, 0)
    w.flush()
    print("ready", flush=True)
    sys.stdin.readline()  # the parent hangs the store
    text = os.urandom(1 << 19).hex()  # 1 MiB of text a call
    for step in range(mib):
        w.add_text("t", text, step)
    w.flush()

    def status(field):
        with open("/proc/self/status") as f:
            return int(next(line for line in f if line.startswith(field + ":")).split()[1]) << 10

    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak (VmHWM) starts again from now
    before = status("VmRSS")
    try:
        w.close()
    except OSError as exc:
        print("closed", status("VmHWM") - before, flush=True)
        print(exc, flush=True)
""")


@pytest.mark.slow
def test_a_gib_spool_is_kept_in_object_sized_files_with_bounded_memory(proxied, tmp_path):
    """On b621f0a close() read the whole spool into memory, twice: 1 GiB spooled raised peak RSS
    from about 260 MB to 2.4 GB, and the kept file was one object of the spool's size. Now it is
    streamed: close() adds less than 256 MiB to the peak (45 MiB measured), and the kept files are
    the objects the run would have had (MAX_OBJECT, 16 MiB, each), their records whole."""
    from conftest import tb_events

    proxy, bucket = proxied
    spool = tmp_path / "spool"
    with child_in_an_outage(proxy, CLOSING_BIG, ["s3://%s/big/run" % bucket, "1024"], spool) as child:
        out, err = child.communicate(timeout=200)
    assert out.startswith("closed "), out + err
    added = int(out.split()[1])
    assert added < 256 << 20, "close() added %.0f MiB to the peak RSS" % (added / 2**20)
    kept = sorted(p for p in spool.rglob("*tfevents*") if p.is_file())
    assert sum(p.stat().st_size for p in kept) > 1 << 30
    assert max(p.stat().st_size for p in kept) <= UploadPolicy().max_object
    assert len(kept) == len({p.name for p in kept}) >= 64
    for path in (kept[0], kept[-1]):  # TensorBoard's own loader (a minute a GiB: two of the files)
        assert [e.step for e in tb_events(str(path)) for v in e.summary.value if v.tag == "t"]
    steps = [e.step for p in kept for e in reader.read_events(str(p), strict=True) for v in e.summary.value
             if v.tag == "t"]
    assert steps == list(range(1024)), "every text once, in order, over the kept files"


FULL_SPOOL = textwrap.dedent(r"""
    import resource, signal, sys
    import numpy as np
    import mxboard

    policy = mxboard.UploadPolicy(max_unsent=2 << 20, request_secs=2, retry_secs=0.2)
    w = mxboard.SummaryWriter(sys.argv[1], flush_secs=0.2, upload_policy=policy)
    w.add_scalar("before", 1.0, 0)
    w.flush()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), as on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (3 << 20, resource.RLIM_INFINITY))
    print("ready", flush=True)
    sys.stdin.readline()  # the parent hangs the store
    for step in range(8):
        w.add_image("photo", np.random.default_rng(step).integers(0, 256, (512, 512, 4), dtype=np.uint8), step,
                    dataformats="HWC")
        print("logged", step, flush=True)
    w.close()
""")


def test_a_spool_whose_disk_fills_mid_outage_falls_back_to_memory_and_nothing_is_lost(proxied, monkeypatch, tmp_path,
                                                                                     seaweed):
    """On b621f0a a spool disk that filled mid-outage stopped the writer for good (118 of 220
    points stored), the error not naming the spool. Now the spool's failure is one warning naming
    it, what follows waits in memory (a call waits while memory is full: the documented bound),
    and once the store is back every image is stored, once, in order. The disk fills at 3 MiB a
    file (RLIMIT_FSIZE: EFBIG, as ENOSPC would)."""
    proxy, bucket = proxied
    spool = tmp_path / "spool"
    url = "s3://%s/fullspool/run" % bucket
    with child_in_an_outage(proxy, FULL_SPOOL, [url], spool) as child:
        until_spooled(spool, 2 << 20)
        time.sleep(3)  # the spool fails; what follows waits in memory, bounded
        proxy.set("pass")
        out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert out.count("logged") == 8
    assert err.count("cannot take more") == 1 and str(spool) in err, err  # one warning, naming the spool
    monkeypatch.setenv("AWS_ENDPOINT_URL", seaweed.endpoint)
    steps = [e.step for e in reader.read_events(url, strict=True) for v in e.summary.value if v.tag == "photo"]
    assert steps == list(range(8)), "every image once, in order"


FULL_SPOOL_SMALL = textwrap.dedent(r"""
    import sys, time
    import mxboard

    policy = mxboard.UploadPolicy(max_unsent=64 << 10, request_secs=2, retry_secs=0.2)
    w = mxboard.SummaryWriter(sys.argv[1], flush_secs=0.2, upload_policy=policy)
    w.add_scalar("before", 1.0, 0)
    w.flush()
    print("ready", flush=True)
    sys.stdin.readline()  # the parent hangs the store
    for step in range(20000):  # a step's scalar at a time: small appends (about 380 KB in all, over 4 s)
        w.add_scalar("x", float(step), step)
        if step % 50 == 0:
            time.sleep(0.01)
    print("logged", flush=True)
    w.close()
""")


@pytest.fixture
def small_spool_disk(tmp_path):
    """A 1 MiB tmpfs (root only), unmounted after."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("needs root to mount a small tmpfs")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


@pytest.mark.slow
def test_an_append_that_meets_a_full_disk_leaves_what_was_spooled_readable(small_spool_disk):
    """The mechanism of a92d861's dead uploader, at the spool itself: a small append that met a
    full disk stayed in the file's buffer, and the next read's seek flushed it again and raised
    ENOSPC: nothing spooled before could be read back. Now the append raises, and every piece
    spooled before it reads back whole."""
    os.makedirs(small_spool_disk / "spool", mode=0o700)
    spool = spool_file.Spool("bucket/run/events.out.tfevents.1.host.7.000000.ab", str(small_spool_disk / "spool"),
                             1 << 30)
    first = spool.append(b"a" * 20000)
    _fill(small_spool_disk)
    with pytest.raises(OSError):
        spool.append(b"b" * 1000)  # a small append, past the last page the file has
    assert spool.read(first) == b"a" * 20000
    spool.close()


def test_a_spool_disk_that_fills_with_small_appends_loses_nothing_and_no_thread_dies(proxied, monkeypatch,
                                                                                    small_spool_disk, seaweed):
    """On a92d861 a spool disk that filled mid-outage killed the uploader when the store returned,
    where the append that met the full disk was a small one (a step's scalars, the usual case once
    memory is full): its bytes stayed in the file's buffer, and every later read flushed them
    again and failed ("Exception in thread mxboard-upload: ... No space left on device"); about
    400 of 7,800 points were stored, then the loop blocked. Now appends are unbuffered: the
    spool's failure is one warning, what follows waits in memory, and once the store is back
    every point is stored, once, in order. The disk: a 1 MiB tmpfs, filled by another file once
    the spool holds 64 KiB."""
    proxy, bucket = proxied
    spool = small_spool_disk / "spool"
    url = "s3://%s/fullspool-small/run" % bucket
    with child_in_an_outage(proxy, FULL_SPOOL_SMALL, [url], spool) as child:
        until_spooled(spool, 64 << 10)
        _fill(small_spool_disk)
        time.sleep(3)  # small appends meet the full disk; what follows waits in memory, bounded
        proxy.set("pass")
        out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert "logged" in out and "Exception in thread" not in err and "Traceback" not in err, err
    assert err.count("cannot take more") == 1, err
    monkeypatch.setenv("AWS_ENDPOINT_URL", seaweed.endpoint)
    steps = [e.step for e in reader.read_events(url, strict=True) for v in e.summary.value if v.tag == "x"]
    assert steps == list(range(20000)), "every point once, in order"


def test_the_flush_warning_counts_what_the_store_has_not_confirmed(proxied, monkeypatch, tmp_path, caplog):
    """On b621f0a a flush during an outage said "the store has not taken 0 bytes after 30 s"
    while 4.6 KiB waited unconfirmed (in a put that got no answer): it counted only what waited
    in memory. Now it counts both, readably."""
    proxy, bucket = proxied
    policy = spool_after_one_mib(monkeypatch, tmp_path / "spool", flush_secs=2)
    writer = SummaryWriter("s3://%s/counted/run" % bucket, flush_secs=0.2, upload_policy=policy)
    writer.add_scalar("x", 0.0, 0)
    writer.flush()
    proxy.set("hang")
    for step in range(1, 101):
        writer.add_scalar("x", float(step), step)
    writer.flush()  # its put of them hangs: they wait unconfirmed, none in memory
    (said,) = [r.getMessage() for r in caplog.records if "has not taken" in r.getMessage()]
    taken = said.split("has not taken ")[1].split(" after")[0]
    assert taken != "0 B" and taken.endswith(("B", "KiB")), said
    proxy.set("pass")
    writer.close()
