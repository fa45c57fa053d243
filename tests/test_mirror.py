"""The bundled server's mirror of an object-store logdir (tensorboard_bundle/mirror/): what it
fetches, what it keeps, and what the bundle's loader serves from it. Fast tests use fsspec's
memory:// store (real fsspec, real files, TensorBoard's own loader on the mirror); the slow ones a
real S3 server (SeaweedFS) and the real bundled server over HTTP."""
import importlib.util
import logging
import os
import pathlib
import subprocess
import sys
import time

import fsspec
import numpy as np
import pytest

from conftest import event_files, run_python, served_losses, tb_scalars
from mxboard import SummaryWriter, UploadPolicy
from mxboard._format.sizes import readable
from mxboard.storage import remote
from tensorboard_bundle.mirror import LOCK, MANIFEST, Mirror


@pytest.fixture
def small_objects():
    """Objects of a few records each (max_object lowered), uploaded at every flush."""
    return UploadPolicy(max_object=500, upload_secs=0)


def _store_bytes(url):
    fs, root = remote.open_filesystem(url)
    return sum(info["size"] for info in fs.find(root, detail=True).values())


def _log(writer, steps, tag="loss"):
    for step in steps:
        writer.add_scalar(tag, float(step), step)
        if step % 7 == 0:
            writer.flush()
    writer.flush()


def test_parts_are_stitched_into_one_file_and_every_byte_is_read_once(small_objects, tmp_path):
    fs = fsspec.filesystem("memory")
    url = "memory://stitch/exp"
    writer = SummaryWriter(url + "/run", upload_policy=small_objects)
    _log(writer, range(40))
    other = pathlib.Path(_other_writers_file(tmp_path)).read_bytes()
    fs.pipe_file("/stitch/exp/tbx/events.out.tfevents.1.other", other)
    mirror = Mirror(url, str(tmp_path / "mirror"), 1 << 30)
    mirror.sync()
    assert len([o for o in fs.ls("/stitch/exp/run", detail=False) if "tfevents" in o]) > 3  # several parts
    _log(writer, range(40, 100))
    writer.close()
    mirror.sync()
    mirror.sync()  # nothing new: nothing read
    bases = [os.path.basename(o) for o in fs.ls("/stitch/exp/run", detail=False) if ".part" not in o]
    assert [os.path.basename(p) for p in event_files(tmp_path / "mirror" / "run")] == bases  # one file for all
    assert _scalars(tmp_path / "mirror" / "run") == [("loss", s, float(s)) for s in range(100)]
    assert _scalars(tmp_path / "mirror" / "tbx") == [("other", 0, 1.0), ("other", 1, 2.0)]  # copied as it is
    # each byte once, and the copy's last 64 bytes again where an object grew (the same object?)
    assert _store_bytes(url) <= mirror.bytes_read <= _store_bytes(url) + 64


def _scalars(run):
    """What TensorBoard's own loader reads of the run's one event file."""
    (path,) = event_files(run)
    return tb_scalars(path)


def _other_writers_file(tmp_path):
    """An event file of another writer (written locally, as tensorboardX's would be)."""
    with SummaryWriter(str(tmp_path / "other")) as w:
        w.add_scalar("other", 1.0, 0)
        w.add_scalar("other", 2.0, 1)
    return event_files(tmp_path / "other")[0]


def test_a_changed_object_is_fetched_anew_and_a_dropped_one_removed(tmp_path):
    fs = fsspec.filesystem("memory")
    url = "memory://changes/exp"
    with SummaryWriter(url + "/a") as w:
        w.add_scalar("x", 1.0, 0)
    fs.pipe_file("/changes/exp/a/projector_config.pbtxt", b"embeddings {}\n")
    mirror = Mirror(url, str(tmp_path / "m"), 1 << 30)
    mirror.sync()
    assert (tmp_path / "m" / "a" / "projector_config.pbtxt").read_bytes() == b"embeddings {}\n"
    fs.pipe_file("/changes/exp/a/projector_config.pbtxt", b"embeddings { tensor_name: 't' }\n")
    mirror.sync()
    assert (tmp_path / "m" / "a" / "projector_config.pbtxt").read_bytes() == b"embeddings { tensor_name: 't' }\n"
    fs.rm("/changes/exp/a", recursive=True)
    mirror.sync()
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [MANIFEST, LOCK]  # its directory too


def test_a_key_that_would_leave_the_mirror_is_skipped(tmp_path, caplog):
    fs = fsspec.filesystem("memory")
    fs.pipe_file("/escape/exp/run/../../../../outside.tfevents.1", b"x")
    fs.pipe_file("/escape/exp/run/events.out.tfevents.2", b"")
    with caplog.at_level(logging.WARNING, "tensorboard_bundle"):
        Mirror("memory://escape/exp", str(tmp_path / "deep" / "m"), 1 << 30).sync()
    assert "is not a path below the logdir" in caplog.text
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [MANIFEST, LOCK, "events.out.tfevents.2"]


def test_the_mirror_stays_within_its_bytes_and_says_so(small_objects, tmp_path, caplog):
    url = "memory://bounded/exp"
    for run in ("a", "b", "c"):
        with SummaryWriter("%s/%s" % (url, run), upload_policy=small_objects) as w:
            w.add_histogram("h", np.arange(10000.0), 0)  # about 6 KB a run
    bound = _store_bytes(url + "/a") + 100
    with caplog.at_level(logging.WARNING, "tensorboard_bundle"):
        mirror = Mirror(url, str(tmp_path / "m"), bound)
        mirror.sync()
        mirror.sync()
    held = sum(p.stat().st_size for p in (tmp_path / "m").rglob("*") if p.is_file() and p.name not in (MANIFEST, LOCK))
    assert 0 < held <= bound
    assert sorted(p.parent.name for p in (tmp_path / "m").rglob("*tfevents*")) == ["a"]
    assert caplog.text.count("KiB, the most it may is %s (--mirror_max_bytes)" % readable(bound)) == 1
    assert " holds %s," % readable(held) in caplog.text  # on disk


def test_a_directory_is_a_mirror_only_when_empty_or_one_already(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty and not a mirror"):
        Mirror("memory://claim/exp", str(tmp_path / "busy"), 1 << 30)
    Mirror("memory://claim/exp", str(tmp_path / "m"), 1 << 30).sync()
    with pytest.raises(ValueError, match="mirrors memory://claim/exp, not memory://claim/other"):
        Mirror("memory://claim/other", str(tmp_path / "m"), 1 << 30)
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"


def test_nothing_is_written_through_a_symlink_planted_in_the_mirror_directory(tmp_path):
    """On b621f0a a symlink named `.mxboard-mirror.json.new` made the mirror overwrite the file it
    pointed to with its manifest, and one named `.mxboard-mirror-new` made it stage every fetched
    projector file in the directory it pointed to. Now neither is followed: the files they point
    to are untouched, and the run is mirrored all the same (TensorBoard's loader reads it)."""
    fs = fsspec.filesystem("memory")
    url = "memory://planted/exp"
    mirror = Mirror(url, str(tmp_path / "m"), 1 << 30)
    victim, victim_dir = tmp_path / "victim.txt", tmp_path / "victim_dir"
    victim.write_text("the server account's own file")
    victim_dir.mkdir()
    (tmp_path / "m" / (MANIFEST + ".new")).symlink_to(victim)
    (tmp_path / "m" / ".mxboard-mirror-new").symlink_to(victim_dir)
    with SummaryWriter(url + "/run") as w:
        _log(w, range(5))
    fs.pipe_file("/planted/exp/run/projector_config.pbtxt", b"embeddings { tensor_name: 'x' }")
    mirror.sync()
    assert victim.read_text() == "the server account's own file"
    assert list(victim_dir.iterdir()) == []
    assert (tmp_path / "m" / "run" / "projector_config.pbtxt").read_bytes() == b"embeddings { tensor_name: 'x' }"
    assert _scalars(tmp_path / "m" / "run") == [("loss", s, float(s)) for s in range(5)]
    (tmp_path / "m" / MANIFEST).unlink()
    (tmp_path / "m" / MANIFEST).symlink_to(victim)  # the manifest itself: replaced, never written through
    mirror._save()
    assert victim.read_text() == "the server account's own file" and not (tmp_path / "m" / MANIFEST).is_symlink()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to make a directory another's")
def test_a_mirror_dir_of_another_user_is_refused(tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    os.chown(foreign, 65534, 65534)
    with pytest.raises(ValueError, match=r"belongs to another user \(uid 65534\)"):
        Mirror("memory://foreign/exp", str(foreign), 1 << 30)


RANK = r"""
import sys, time
from mxboard import SummaryWriter, UploadPolicy
logdir, rank = sys.argv[1], int(sys.argv[2])
policy = UploadPolicy(max_object=3000, upload_secs=0.3)  # many parts, each point soon in the store
with SummaryWriter("%s/rank%d" % (logdir, rank), flush_secs=0.3, upload_policy=policy) as w:
    for step in range(400):
        w.add_scalar("loss", rank + step / 1000, step)
        time.sleep(0.02)
"""


def _mirror_dir(server):
    line = next(line for line in server.output if line.startswith("mirror: "))
    return line.split(" in ", 1)[1].split(" (", 1)[0]


def test_ranks_still_writing_and_a_tensorboardx_run_are_served_by_the_bundles_loader(bucket, serve):
    """Three ranks write one logdir in S3 (each event file many objects) while the bundled server
    serves it; tensorboardX writes a run into the same store. The bundle's loader, over the mirror,
    serves every point of each, as TensorBoard's Python loader reading S3 does (--load_fast=false)."""
    tbx_module = pytest.importorskip("tensorboardX")
    logdir = "s3://%s/ranks" % bucket
    server = serve(logdir)
    assert "data loader: mxboard (in-process)" in server.banner
    ranks = [subprocess.Popen([sys.executable, "-c", RANK, logdir, str(rank)]) for rank in range(3)]
    try:
        with tbx_module.SummaryWriter(logdir + "/tbx") as tbx:
            for step in range(50):
                tbx.add_scalar("loss", step / 10, step)
        during = served_losses(server, "rank0", until=lambda rows: len(rows) >= 50)
        assert 50 <= len(during) < 400 and ranks[0].poll() is None  # served while rank 0 still writes
        assert [r.wait(120) for r in ranks] == [0, 0, 0]
    finally:
        for r in ranks:
            r.kill()
    python = serve(logdir, "--load_fast", "false")
    assert "data loader: Python (--load_fast=false)" in python.banner
    for rank in range(3):
        expected = [(s, pytest.approx(rank + s / 1000)) for s in range(400)]
        assert served_losses(server, "rank%d" % rank, until=lambda rows: len(rows) == 400) == expected
        assert served_losses(python, "rank%d" % rank, until=lambda rows: len(rows) == 400) == expected
    tbx_points = [(s, pytest.approx(s / 10)) for s in range(50)]
    assert served_losses(server, "tbx", until=lambda rows: len(rows) == 50) == tbx_points
    assert served_losses(python, "tbx", until=lambda rows: len(rows) == 50) == tbx_points
    fs, _ = remote.open_filesystem(logdir)
    assert len([o for o in fs.find("%s/ranks/rank0" % bucket) if ".part" in o]) > 5  # stitched parts
    local = os.path.join(_mirror_dir(server), "rank0")
    assert len(event_files(local)) == 1  # one local file of them
    assert "refuses presigned" not in "".join(server.output)  # read with presigned requests


def test_an_outage_keeps_what_was_mirrored_served_and_the_mirror_catches_up(seaweed, bucket, serve, monkeypatch):
    """The store is down, then the server's way to it hangs (a FaultProxy: requests taken, never
    answered): what was mirrored is still served, at once, and once the store answers the points
    logged meanwhile are served too."""
    from faultproxy import FaultProxy

    policy = UploadPolicy(upload_secs=0)
    proxy = FaultProxy(seaweed.endpoint)
    try:
        logdir = "s3://%s/outage" % bucket
        writer = SummaryWriter(logdir + "/run", upload_policy=policy)
        _log(writer, range(10))
        server = serve(logdir, env=dict(os.environ, AWS_ENDPOINT_URL=proxy.endpoint))
        assert served_losses(server, "run", until=lambda rows: len(rows) == 10) == [(s, float(s)) for s in range(10)]
        seaweed.stop()
        try:
            writer.add_scalar("loss", 10.0, 10)  # kept by the writer while the store is down
            _served_at_once_for(5, server, 10)
        finally:
            seaweed.start()
        proxy.set("hang")
        _log(writer, range(11, 16))
        _served_at_once_for(5, server, 10)
        proxy.set("pass")
        _log(writer, range(16, 20))
        assert served_losses(server, "run", until=lambda rows: len(rows) == 20, timeout=60) == \
            [(s, float(s)) for s in range(20)]
        writer.close()
        output = "".join(server.output)
        assert "cannot be listed" in output and "answers again" in output, output
    finally:
        proxy.close()


def _served_at_once_for(seconds, server, points):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        start = time.monotonic()
        assert served_losses(server, "run") == [(s, float(s)) for s in range(points)]
        assert time.monotonic() - start < 2
        time.sleep(1)


def test_a_mirror_is_removed_at_exit_unless_named_and_a_named_one_resumes(bucket, serve, tmp_path, monkeypatch):
    policy = UploadPolicy(upload_secs=0)
    logdir = "s3://%s/kept" % bucket
    writer = SummaryWriter(logdir + "/run", upload_policy=policy)
    _log(writer, range(30))
    server = serve(logdir)
    temporary = _mirror_dir(server)
    assert served_losses(server, "run", until=lambda rows: len(rows) == 30)
    assert os.path.isdir(temporary) and "removed at exit" in "".join(server.output)
    server.close()
    assert not os.path.exists(temporary)

    named = str(tmp_path / "mirror")
    server = serve(logdir, "--mirror_dir", named)
    assert _mirror_dir(server) == named
    assert len(served_losses(server, "run", until=lambda rows: len(rows) == 30)) == 30
    server.close()
    before = _read_from_store(named)
    assert before == _store_bytes(logdir)
    _log(writer, range(30, 60))
    writer.close()
    server = serve(logdir, "--mirror_dir", named)
    assert served_losses(server, "run", until=lambda rows: len(rows) == 60) == [(s, float(s)) for s in range(60)]
    server.close()
    # only what was new, and the copy's last 64 bytes again where its object grew (VERIFY_BYTES)
    assert _read_from_store(named) - before == _store_bytes(logdir) - before + 64


def _read_from_store(directory):
    import json

    with open(os.path.join(directory, MANIFEST)) as f:
        return json.load(f)["bytes_read"]


@pytest.mark.parametrize("named, loader", [(True, "mxboard (in-process)"), (False, "Python")],
                         ids=["named: one tree, the bundle's loader", "unnamed: a spec, the Python loader"])
def test_a_logdir_spec_of_s3_and_a_local_directory_is_served(named, loader, bucket, serve, tmp_path, monkeypatch):
    """With every entry named, the spec becomes one local tree (the mirror and a link) that the
    bundle's loader serves; with an unnamed entry it stays a spec, as upstream reads it (the Python
    loader), its URL replaced by a mirror. Runs are named as the spec names them either way."""
    policy = UploadPolicy(upload_secs=0)
    with SummaryWriter("s3://%s/spec/run" % bucket, upload_policy=policy) as w:
        _log(w, range(5))
    with SummaryWriter(str(tmp_path / "local" / "other")) as w:
        _log(w, range(7))
    entry = ("remote:" if named else "") + "s3://%s/spec" % bucket
    server = serve(None, "--logdir_spec", "%s,here:%s" % (entry, tmp_path / "local"))
    assert "data loader: " + loader in server.banner
    assert "mirror: s3://%s/spec in " % bucket in "".join(server.output)
    run = "remote/run" if named else "run"
    assert served_losses(server, run, until=lambda rows: len(rows) == 5) == [(s, float(s)) for s in range(5)]
    assert served_losses(server, "here/other", until=lambda rows: len(rows) == 7) == [(s, float(s)) for s in range(7)]


def test_a_spec_with_a_url_whose_package_is_missing_serves_the_rest(bucket, serve, tmp_path, monkeypatch):
    """`oss://` (Alibaba's) without ossfs beside an s3:// entry and a local one: nothing here reads that entry
    (upstream's Python loader would die of it, its reloader thread and every run with it): it is
    left out, said in a line, and the others are served, by the bundle's loader (on 802362c only the
    first URL's package was looked for: a traceback)."""
    pytest.importorskip("s3fs")
    if importlib.util.find_spec("ossfs"):
        pytest.skip("ossfs is installed: oss:// has its package")
    policy = UploadPolicy(upload_secs=0)
    with SummaryWriter("s3://%s/mixed/run" % bucket, upload_policy=policy) as w:
        _log(w, range(5))
    with SummaryWriter(str(tmp_path / "local" / "other")) as w:
        _log(w, range(7))
    server = serve(None, "--logdir_spec", "remote:s3://%s/mixed,blob:oss://bucket/exp,here:%s"
                   % (bucket, tmp_path / "local"))
    printed = "".join(server.output)
    assert "note: oss://bucket/exp is left out of --logdir_spec, nothing here reads it: " in printed
    assert "Install ossfs" in printed and "data loader: mxboard (in-process)" in server.banner
    assert "mirror: s3://%s/mixed in " % bucket in printed and "Traceback" not in printed
    assert served_losses(server, "remote/run", until=lambda rows: len(rows) == 5) == [(s, float(s)) for s in range(5)]
    assert served_losses(server, "here/other", until=lambda rows: len(rows) == 7) == [(s, float(s)) for s in range(7)]


def test_a_store_refusing_presigned_requests_is_read_through_s3fs(seaweed, bucket, tmp_path, monkeypatch, caplog):
    """The mirror reads S3 with presigned requests (stores.S3Reader); a store that refuses them
    (answers 403: a FaultProxy) is read through s3fs instead, said once, and mirrored whole; once
    it takes them again, so does the mirror (it switched to s3fs for the server's life)."""
    from faultproxy import FaultProxy

    policy = UploadPolicy(upload_secs=0)
    with SummaryWriter("s3://%s/refused/run" % bucket, upload_policy=policy) as w:
        _log(w, range(12))
    proxy = FaultProxy(seaweed.endpoint)
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
        proxy.set("refuse_presigned")
        with caplog.at_level(logging.WARNING, "tensorboard_bundle"):
            mirror = Mirror("s3://%s/refused" % bucket, str(tmp_path / "m"), 1 << 30)
            mirror.sync()
            mirror.sync()
        assert caplog.text.count("refuses presigned requests") == 1
        assert _scalars(tmp_path / "m" / "run") == [("loss", s, float(s)) for s in range(12)]
        assert proxy.presigned == 0
        proxy.set("pass")
        with SummaryWriter("s3://%s/refused/run2" % bucket, upload_policy=policy) as w:
            _log(w, range(3))
        mirror.sync()
        assert proxy.presigned >= 2  # the listing and the new file's read
        assert _scalars(tmp_path / "m" / "run2") == [("loss", s, float(s)) for s in range(3)]
    finally:
        proxy.close()


@pytest.mark.slow
def test_s3_listed_in_parts_at_once_lists_every_object_once(bucket, monkeypatch):
    """S3Reader lists the parts of the key space that its last listing cut, at once (pages of 7
    keys here): objects added before, between and after the cuts, a cut's own object deleted, an
    object grown, and a part grown past two pages are listed as fsspec lists them, each once."""
    from tensorboard_bundle.mirror import stores

    monkeypatch.setattr(stores, "PAGE_KEYS", 7)
    url = "s3://%s/parts" % bucket
    fs, root = remote.open_filesystem(url)

    def put(names, data=b"x"):
        fs.pipe({"%s/%s" % (root, name): data for name in names})

    def truth():
        fs.invalidate_cache()
        return {key: info["size"] for key, info in fs.find(root, detail=True).items()}

    reader = stores.S3Reader(url)
    counted = []
    part = reader._part
    monkeypatch.setattr(reader, "_part", lambda *args: counted.append(part(*args)) or counted[-1])
    put(["run%03d/events.out.tfevents.%d" % (run, run) for run in range(0, 120, 2)] + ["a b+c/é ü", "z/last"])
    changes = [
        lambda: None,
        lambda: put(["run%03d/events.out.tfevents.%d" % (run, run) for run in range(1, 120, 10)]),
        lambda: fs.rm("%s/%s" % (root, reader._cuts[1])),
        lambda: put(["run010/events.out.tfevents.10"], b"grown"),
        lambda: put(["0first", "run050/a", "run050/b", "zz"] + ["run051/%02d" % n for n in range(20)]),
    ]
    for change in changes:
        change()
        counted.clear()
        listed = reader.listing()
        assert {key: info["size"] for key, info in listed.items()} == truth()
        assert sum(len(entries) for entries, _ in counted) == len(listed), "each object in one part"
        assert len(reader._cuts) >= 5, "listed in parts"


def test_the_launchers_mirror_flags_are_checked_and_load_fast_false_keeps_the_store():
    from tensorboard_bundle.arguments import parse
    from tensorboard_bundle.logdirs import serve_remote

    launch = parse(["tensorboard", "--logdir", "s3://bucket/exp", "--load_fast=false", "--mirror_dir", "/tmp/x"])
    assert serve_remote(launch) == (None, None)  # as given: the Python loader reads the store
    assert launch.argv("tensorboard") == ["tensorboard", "--load_fast", "false", "--logdir", "s3://bucket/exp",
                                          "--host", "127.0.0.1", "--reload_interval", "2"]
    assert serve_remote(parse(["tensorboard", "--logdir", "/local/runs"])) == (None, None)
    with pytest.raises(SystemExit, match="--mirror_interval 'soon': a number of seconds above 0"):
        parse(["tensorboard", "--logdir", "memory://flags/exp", "--mirror_interval", "soon"])
    with pytest.raises(SystemExit, match="--mirror_max_bytes '12Q': a number of bytes"):
        parse(["tensorboard", "--logdir", "memory://flags/exp", "--mirror_max_bytes=12Q"])


def test_a_kept_mirror_is_checked_on_reuse(tmp_path):
    """A reused --mirror_dir's files against its manifest: one deleted is fetched again (on
    802362c never), bytes after the last save are cut and copied again (as from the store)."""
    url = "memory://kept/exp"
    for run in ("a", "b"):
        with SummaryWriter("%s/%s" % (url, run)) as w:
            w.add_scalar("loss", 1.0, 0)
    mirror = Mirror(url, str(tmp_path / "m"), 1 << 30)
    mirror.sync()
    mirror.stop()
    del mirror
    (a,) = event_files(tmp_path / "m" / "a")
    (b,) = event_files(tmp_path / "m" / "b")
    os.remove(a)
    with open(b, "ab") as f:
        f.write(b"written after the manifest's last save")
    Mirror(url, str(tmp_path / "m"), 1 << 30).sync()
    assert _scalars(tmp_path / "m" / "a") == _scalars(tmp_path / "m" / "b") == [("loss", 0, 1.0)]


def test_event_files_are_fetched_before_other_objects(tmp_path):
    """With room for one of them, the event file (on 802362c: the checkpoint, first in key order)."""
    fs = fsspec.filesystem("memory")
    url = "memory://order/exp"
    with SummaryWriter(url + "/run") as w:
        w.add_scalar("loss", 1.0, 0)
    size = _store_bytes(url)
    fs.pipe_file("/order/exp/run/a-checkpoint.params", bytes(size))
    Mirror(url, str(tmp_path / "m"), size + 10).sync()
    assert _scalars(tmp_path / "m" / "run") == [("loss", 0, 1.0)]
    assert not (tmp_path / "m" / "run" / "a-checkpoint.params").exists()


@pytest.mark.slow
def test_the_banner_prints_the_limit_readably():
    """On 802362c a 300K limit was printed as "0.0 GB"."""
    code = ("from tensorboard_bundle import arguments, logdirs\n"
            "asked = ['tb', '--logdir', 'memory://banner/exp', '--mirror_max_bytes=300K']\n"
            "logdirs.serve_remote(arguments.parse(asked))")
    assert "at most 300.0 KiB on disk (--mirror_max_bytes)" in run_python(code).stderr
