"""Who can read the runs on disk (docs/server.md, "The runs on disk"): mxboard follows the umask,
as TensorBoard's writer does, for every file and directory it makes in a logdir (the event files,
sub-runs, the Projector's files) and for the report. Under umask 077 nothing is readable by
another user; under the usual 022 the files are 0644, as the docs say."""
import os
import stat
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

WRITE = textwrap.dedent("""
    import os, sys
    import numpy as np
    os.umask(int(sys.argv[2], 8))
    from mxboard import SummaryWriter
    import mxboard.report
    logdir = sys.argv[1]
    with SummaryWriter(os.path.join(logdir, "run")) as sw:
        sw.add_scalar("loss", 1.0, 0)
        sw.add_scalar("acc", {"train": 0.5, "val": 0.4}, 0)
        sw.add_histogram("w", np.arange(10.0), 0)
        sw.add_image("img", np.zeros((3, 4, 4)), 0)
        sw.add_text("note", "hello", 0)
        sw.add_embedding(np.eye(4), metadata=["a", "b", "c", "d"], global_step=0)
        sw.add_hparams({"lr": 0.1}, {"acc": 0.5}, in_run=True)
    mxboard.report.write(logdir, os.path.join(logdir, "report.html"))
""")


def _modes(top):
    found = {}
    for directory, folders, files in os.walk(top):
        for name in folders + files:
            path = os.path.join(directory, name)
            found[os.path.relpath(path, top)] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


@pytest.mark.parametrize("umask, file_mode, directory_mode", [("077", 0o600, 0o700), ("022", 0o644, 0o755)])
def test_every_file_mxboard_makes_in_a_logdir_follows_the_umask(tmp_path, umask, file_mode, directory_mode):
    logdir = tmp_path / "logs"
    done = subprocess.run([sys.executable, "-c", WRITE, str(logdir), umask], capture_output=True, text=True,
                          timeout=150)
    assert done.returncode == 0, done.stderr[-3000:]
    modes = _modes(str(logdir))
    # every kind made a file: the main event file, a sub-run's, the projector's, the report
    assert "report.html" in modes and "run/projector_config.pbtxt" in modes, sorted(modes)
    assert any(name.startswith("run/acc/val/") and "tfevents" in name for name in modes), sorted(modes)
    wrong = {name: "%03o" % mode for name, mode in modes.items()
             if mode != (directory_mode if os.path.isdir(os.path.join(str(logdir), name)) else file_mode)}
    assert not wrong, (umask, wrong)
