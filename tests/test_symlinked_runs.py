"""Runs reached through symbolic links are read as TensorBoard reads them (issue 66, item 4).

On 706ab3a `logdir/linked -> elsewhere/run` was served by TensorBoard (both loaders, and so the
bundled server), and left out by `reader.table`, `python -m mxboard export` and `report`, which
walked the logdir with os.walk (links not followed). Now `_reading/listing.py` walks as
TensorBoard's fast loader does (tensorboard/data/server/disk_logdir.rs: walkdir, follow_links):
a link to a directory is a run named by the link's path below the logdir, a link to an event
file is read, a dangling link is passed over without a word, and a link to a directory the walk
is inside (a loop) is not followed, with one line said.

TensorBoard's Python loader (EventMultiplexer.AddRunsFromDirectory, tf.io.gfile.walk) follows
the same links, but never checks for a loop: it walks one loop until the kernel refuses the path
(ELOOP, 40 links deep), each run listed again at each depth, and a logdir with two loops kept it
walking for more than 5 minutes here. The bundled server's default loader walks as mxboard does,
so the loop tests compare with the server (and its fast loader), and show the Python loader's
repeats as what they are.
"""
import csv
import io
import json
import os
import re
import subprocess
import sys
import time
import warnings

import pytest

from mxboard import MXBoardWarning, SummaryWriter, reader

LOSS = {"run": 1.0, "linked": 2.0, "alias": 1.0, "solo": 3.0}  # each run's value, at steps 0, 1, 2


def _write(run_dir, value):
    with SummaryWriter(str(run_dir), flush_secs=0.2) as writer:
        for step in range(3):
            writer.add_scalar("loss", value, step)


def _linked_logdir(root):
    """A logdir whose runs are reached through links of each kind, and two dangling links. Its runs,
    as TensorBoard names them: run, linked (an absolute link to a run outside), alias (a relative
    link to the run beside it), solo (a directory holding a link to an event file outside)."""
    logdir, elsewhere = root / "logs", root / "elsewhere"
    _write(logdir / "run", LOSS["run"])
    _write(elsewhere / "run2", LOSS["linked"])
    _write(elsewhere / "lone", LOSS["solo"])
    os.symlink(str(elsewhere / "run2"), str(logdir / "linked"))
    os.symlink("run", str(logdir / "alias"))
    (logdir / "solo").mkdir()
    (lone,) = os.listdir(str(elsewhere / "lone"))
    os.symlink(str(elsewhere / "lone" / lone), str(logdir / "solo" / lone))
    os.symlink(str(root / "nowhere"), str(logdir / "dangling"))  # a directory that is not there
    # An event file's link that leads nowhere, named to sort after the run's own file: where it
    # sorts first, TensorBoard 2.21's Python loader reads none of the run's points (tried), and the
    # fast loader and mxboard pass it over.
    os.symlink("nowhere.tfevents.0", str(logdir / "run" / "events.out.tfevents.9999999999.dangling"))
    return logdir


def _loop_logdir(root, up=True):
    """A logdir of two runs (run, and linked to a run outside) and link loops: `self`, a link to
    the logdir itself; with `up`, `run/up`, a link to run's parent (the logdir); `knot1` and
    `knot2`, links to each other, which lead to nothing."""
    logdir, elsewhere = root / "logs", root / "elsewhere"
    _write(logdir / "run", LOSS["run"])
    _write(elsewhere / "run2", LOSS["linked"])
    os.symlink(str(elsewhere / "run2"), str(logdir / "linked"))
    os.symlink(str(logdir), str(logdir / "self"))
    if up:
        os.symlink("..", str(logdir / "run" / "up"))
    os.symlink("knot2", str(logdir / "knot1"))
    os.symlink("knot1", str(logdir / "knot2"))
    return logdir


def _python_loader_runs(logdir):
    """The runs TensorBoard's Python loader finds, and each run's loss as (step, value) pairs."""
    from tensorboard.backend.event_processing import plugin_event_multiplexer
    from tensorboard.util import tensor_util

    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(logdir))
    multiplexer.Reload()
    return {run: [(e.step, tensor_util.make_ndarray(e.tensor_proto).item()) for e in multiplexer.Tensors(run, "loss")]
            for run in multiplexer.Runs()}


def _read(columns):
    """{run: [(step, value)...]} of a scalars table."""
    found = {}
    for run, step, value in zip(columns["run"], columns["step"], columns["value"]):
        found.setdefault(run, []).append((int(step), float(value)))
    return found


def _command(*args, env=None):
    """`python -m mxboard ...` as a user runs it (the installed package), bounded."""
    return subprocess.run([sys.executable, "-m", "mxboard", *args], capture_output=True, text=True, timeout=120,
                          env=env)


def _exported(logdir):
    done = _command("export", str(logdir), "--csv")
    assert done.returncode == 0, done.stderr
    return done, _read({key: [row[key] for row in csv.DictReader(io.StringIO(done.stdout))]
                        for key in ("run", "step", "value")})


def _reported(logdir, out):
    """(the command's result, the report's `meta`: its runs, and what it left out, by dashboard)."""
    done = _command("report", str(logdir), "-o", str(out))
    assert done.returncode == 0, done.stderr
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', out.read_text(), re.S)
    assert found, out.read_text()[:2000]
    return done, json.loads(found.group(1))["meta"]


def test_linked_runs_are_the_runs_tensorboards_python_loader_finds(tmp_path):
    logdir = _linked_logdir(tmp_path)
    expected = {run: [(step, value) for step in range(3)] for run, value in LOSS.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the dangling links are passed over without a word, as TensorBoard does
        assert _read(reader.table(str(logdir))) == expected
        assert [os.path.relpath(os.path.dirname(p), str(logdir)) for p in reader.event_files(str(logdir))] == [
            "alias", "linked", "run", "solo"]  # name order within a directory, each run's files in name order
    assert _python_loader_runs(logdir) == expected


@pytest.mark.slow
def test_linked_runs_are_served_exported_and_reported_alike(tmp_path, serve):
    import numpy as np

    logdir = _linked_logdir(tmp_path)
    with SummaryWriter(str(tmp_path / "elsewhere" / "run2")) as writer:  # the Projector's, through the link too
        writer.add_embedding(np.arange(15.0).reshape(5, 3), metadata=list("abcde"), global_step=0)
    expected = {run: [(step, value) for step in range(3)] for run, value in LOSS.items()}
    server = serve(logdir)  # the bundle's default loader: its own
    assert "data loader: mxboard" in server.banner, server.banner
    assert sorted(server.json("/data/runs", until=lambda runs: len(runs) >= len(LOSS))) == sorted(LOSS)
    served = {run: [(s, v) for _, s, v in server.json("/data/plugin/scalars/scalars", {"run": run, "tag": "loss"},
                                                       until=lambda rows: len(rows) == 3)] for run in LOSS}
    assert served == expected
    exported, found = _exported(logdir)
    assert found == expected and exported.stderr == ""  # nothing said of the dangling links
    done, meta = _reported(logdir, tmp_path / "report.html")
    assert sorted(meta["runs"]) == sorted(LOSS), meta
    projector = server.json("/data/plugin/projector/runs", until=lambda runs: runs)
    assert projector == ["linked"]
    assert [entry["runs"] for entry in meta["left_out"] if entry["name"] == "Projector"] == [projector], meta
    assert "dangling" not in done.stderr and "nowhere" not in done.stderr, done.stderr


@pytest.mark.timeout(60)
def test_a_link_loop_is_not_followed_and_is_said_in_one_line(tmp_path):
    logdir = _loop_logdir(tmp_path)
    began = time.monotonic()
    with pytest.warns(MXBoardWarning) as said:
        columns = reader.table(str(logdir))
    assert time.monotonic() - began < 10
    assert _read(columns) == {"run": [(s, 1.0) for s in range(3)], "linked": [(s, 2.0) for s in range(3)]}
    lines = sorted(str(w.message) for w in said)
    assert lines == sorted([
        "%s: a link loop (it leads back to %s, which holds it); not followed, as TensorBoard does not follow it"
        % (logdir / "run" / "up", logdir),
        "%s: a link loop (it leads back to %s, which holds it); not followed, as TensorBoard does not follow it"
        % (logdir / "self", logdir)] + [
        "%s: a link loop (its links never lead to a file or a directory); not followed, as TensorBoard does not "
        "follow it" % (logdir / knot) for knot in ("knot1", "knot2")]), lines
    assert all("\n" not in line for line in lines)


@pytest.mark.timeout(60)
def test_tensorboards_python_loader_repeats_the_runs_at_each_depth_of_a_loop(tmp_path):
    """The one place where TensorBoard's two loaders differ: the Python loader lists each run again
    under self/, self/self/... until the kernel refuses the path, where the fast loader (and so
    mxboard) stops at the loop. One loop only: with two, the Python loader would not end."""
    logdir = _loop_logdir(tmp_path, up=False)
    with pytest.warns(MXBoardWarning):
        ours = _read(reader.table(str(logdir)))
    python_loader = _python_loader_runs(logdir)
    assert {run for run in python_loader if not run.startswith("self/")} == set(ours)
    for run, points in python_loader.items():  # each a run of ours again, below self/ some times
        assert points == ours[re.sub(r"^(self/)*", "", run)], run
    depth = max(run.count("self/") for run in python_loader)
    assert depth >= 10 and {"self/" * (depth - 1) + run for run in ours} <= set(python_loader), sorted(python_loader)


@pytest.mark.slow
def test_a_link_loop_is_served_exported_and_reported_alike_and_said_once(tmp_path, serve):
    logdir = _loop_logdir(tmp_path)
    expected = {"run": [(s, 1.0) for s in range(3)], "linked": [(s, 2.0) for s in range(3)]}
    loops = ["%s: a link loop (it leads back to %s, which holds it); not followed, as TensorBoard does not follow it"
             % (logdir / link, logdir) for link in ("self", "run/up")]
    # The bundle's default loader walks as mxboard does, and says each loop once; upstream's fast
    # loader does not follow them either, and says so in its words.
    for server in (serve(logdir), serve(logdir, "--load_fast=true")):
        assert sorted(server.json("/data/runs", until=lambda runs: len(runs) >= 2)) == sorted(expected)
        time.sleep(4)  # two more reloads of the logdir: no run appears through a loop
        assert sorted(server.json("/data/runs")) == sorted(expected)
        said = "".join(server.output)
        for link, line in zip(("self", "run/up"), loops):
            if "mxboard" in server.banner:
                assert said.count(line) == 1, said
            else:
                assert "File system loop found: %s points to an ancestor %s" % (logdir / link, logdir) in said, said
    done, exported = _exported(logdir)
    assert exported == expected
    assert done.stderr.splitlines() == [
        "mxboard export: %s: a link loop (its links never lead to a file or a directory); not followed, as "
        "TensorBoard does not follow it" % (logdir / "knot1"),
        "mxboard export: %s: a link loop (its links never lead to a file or a directory); not followed, as "
        "TensorBoard does not follow it" % (logdir / "knot2"),
        "mxboard export: " + loops[0], "mxboard export: " + loops[1]], done.stderr
    done, meta = _reported(logdir, tmp_path / "report.html")
    assert sorted(meta["runs"]) == sorted(expected), meta
    # Once each, on the terminal and in the page's notes, though the report walks the logdir twice
    # (event files, projector configs).
    for line in loops:
        assert done.stderr.count(line) == 1 and "mxboard report: note: " + line in done.stderr.splitlines(), done.stderr
        assert meta["notes"].count(line) == 1, meta["notes"]
    assert "Traceback" not in done.stderr
