"""The logdir on local disk (storage/local.py, _format/names.py): a logdir that vanishes or is
read-only raises at the call, in bounded time; hostile tags and names never leave it, and a tag
that is no text is refused clearly."""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ROOT
from mxboard import SummaryWriter
from mxboard.reader import read_events


def test_a_vanished_logdir_raises_within_bounded_time_and_close_returns(logdir):
    writer = SummaryWriter(logdir, flush_secs=0.2)
    writer.add_scalar("x", 1.0, 0)
    writer.flush()
    shutil.rmtree(logdir)
    start = time.monotonic()
    with pytest.raises(FileNotFoundError, match="deleted"):
        for step in range(1, 100_000):
            writer.add_scalar("x", 1.0, step)
            if step % 1000 == 0:
                writer.flush()
    assert time.monotonic() - start < 10
    writer.close()


@pytest.mark.plain
@pytest.mark.slow
def test_a_read_only_logdir_raises_at_the_call(tmp_path):
    if os.geteuid() == 0:
        # root ignores permissions: a read-only bind mount is the honest test
        if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
            pytest.skip("root without mount namespaces: cannot make a read-only directory")
        readonly = tmp_path / "ro"
        readonly.mkdir()
        out = subprocess.run(
            ["unshare", "-m", "sh", "-c", "mount --bind {0} {0} && mount -o remount,ro,bind {0} && "
             "PYTHONPATH={1} {2} -c \"import mxboard; mxboard.SummaryWriter('{0}/logs')\"".format(
                 readonly, os.path.join(ROOT, "python"), sys.executable)],
            capture_output=True, text=True)
        assert out.returncode != 0 and "Read-only file system" in out.stderr
    else:
        readonly = tmp_path / "ro"
        readonly.mkdir(mode=0o500)
        with pytest.raises(PermissionError):
            SummaryWriter(str(readonly / "logs"))


HOSTILE = ["../../escape", "/etc/passwd", "..\\..\\win", "a/../../../b", "nul\x00byte", "x" * 10_000,
           "/".join(["deep"] * 5000), ".", "..", " ", "con:aux?*<>|", "é/ü/日本"]


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_tags_and_names_never_leave_the_logdir_and_are_kept(tmp_path, name):
    logdir = tmp_path / "inside" / "logs"
    with SummaryWriter(str(logdir)) as w:
        w.add_scalar(name, {name: 1.0}, 1)  # tag and name become directories
        w.add_scalar(name, 2.0, 1)
        w.add_embedding(name, np.ones((2, 2)))
        w.add_hparams({"lr": 0.1}, {"m": 1.0}, run_name=name)
    inside = os.path.realpath(str(tmp_path / "inside"))
    for directory, subdirs, names in os.walk(str(tmp_path)):
        for entry in subdirs + names:
            path = os.path.realpath(os.path.join(directory, entry))
            assert path == inside or path.startswith(inside + os.sep), path
    assert sorted(os.listdir(str(tmp_path))) == ["inside"]
    tags = {v.tag for e in read_events(str(logdir)) for v in e.summary.value}
    assert name in tags  # the text itself is kept in the events


def test_tags_that_are_not_unicode_are_refused_clearly(logdir):
    with SummaryWriter(logdir) as w:
        for tag in ("bad\udcff", b"bytes"):
            with pytest.raises((ValueError, TypeError), match="tag"):
                w.add_scalar(tag, 1.0)
        w.add_scalar("ok", 1.0)
