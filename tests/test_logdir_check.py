"""One check of a logdir for every writer, reader, command and the bundled server
(storage.checked_logdir): `~` is the home directory in a local path; a `file://` URL is a local
path; a scheme in upper case or with one slash is refused with the logdir named and its likely
fix, an unknown scheme names the known ones, a store without its client package names the extra;
a reader's local logdir that does not exist is an error naming it; the commands say it in one line.

On a6ab6a5 `SummaryWriter("file:///tmp/x/run")` made `./file:/tmp/x/run`, `SummaryWriter("s3:/bucket/x")`
made `./s3:/bucket/x/`, both silently; `S3://` said `Protocol not known: S3`, and the report
printed a traceback. On 706ab3a (issue 66, item 5) the writer expanded `~` and the readers did
not: `reader.table("~/runs/exp")` read nothing, without an error, where `SummaryWriter("~/runs/exp")`
had written; and a missing logdir gave the reader 0 rows, where its docstring promised ValueError."""
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import ROOT, Server, event_files, tb_scalars
from mxboard import SummaryWriter, reader, report

TYPOS = [("S3://bucket/x", "URL schemes are lower case: did you mean s3://bucket/x?"),
         ("s3:/bucket/x", "a URL has two slashes after its scheme: did you mean s3://bucket/x?"),
         ("Gs:/bucket/x", "did you mean gs://bucket/x?"),
         ("file:/tmp/x", "did you mean file:///tmp/x?"),
         ("s4://x/y", "unknown URL scheme s4:// (known: s3://, gs://, az://, file:// for a local path")]


def test_a_file_url_is_the_local_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "logs" / "run"
    with SummaryWriter("file://" + str(run), flush_secs=0.2) as writer:
        writer.add_scalar("loss", 0.5, 3)
    assert os.listdir(tmp_path) == ["logs"]  # no ./file:/... below the working directory
    assert tb_scalars(event_files(str(run))[0]) == [("loss", 3, 0.5)]
    columns = reader.table("file://" + str(tmp_path / "logs"))
    assert (columns["run"], columns["value"]) == (["run"], [0.5])


@pytest.mark.parametrize("logdir,words", TYPOS, ids=[t[0] for t in TYPOS])
def test_a_mistyped_scheme_is_refused_by_the_writer_and_the_reader_with_its_fix(tmp_path, monkeypatch, logdir,
                                                                               words):
    monkeypatch.chdir(tmp_path)
    for call in (SummaryWriter, reader.table, reader.event_files):
        with pytest.raises(ValueError) as raised:
            call(logdir)
        assert str(raised.value).startswith("logdir %r: " % logdir) and words in str(raised.value), raised.value
    assert os.listdir(tmp_path) == []  # nothing made


def test_a_store_without_its_package_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "gcsfs", None)  # not installed, as after a plain pip install mxboard
    for call in (SummaryWriter, reader.table):
        with pytest.raises(ImportError, match=r"logdir 'gs://bucket/x' is in Google Cloud Storage, whose client "
                                              r"package \(gcsfs\) is not installed: pip install 'mxboard\[gcs\]'"):
            call("gs://bucket/x")
    assert os.listdir(tmp_path) == []


def _command(args, cwd, env=None):
    full = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    full.update(env or {})
    return subprocess.run(args, cwd=str(cwd), env=full, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["report", "export"])
def test_the_commands_say_a_mistyped_logdir_in_one_line(tmp_path, command):
    extra = ["--csv"] if command == "export" else ["-o", str(tmp_path / "r.html")]
    for logdir, words in TYPOS:
        done = _command([sys.executable, "-m", "mxboard", command, logdir] + extra, tmp_path)
        assert done.returncode == 1, done
        assert done.stderr.startswith("mxboard %s: logdir %r: " % (command, logdir)), done.stderr
        assert words in done.stderr and done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
    missing = "import sys, runpy; sys.modules['gcsfs'] = None; runpy.run_module('mxboard', run_name='__main__')"
    done = _command([sys.executable, "-c", missing, command, "gs://bucket/x"] + extra, tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "pip install 'mxboard[gcs]'" in done.stderr, done.stderr
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.slow
def test_the_commands_read_a_file_url(tmp_path):
    with SummaryWriter(str(tmp_path / "logs" / "run")) as writer:
        writer.add_scalar("loss", 0.25, 1)
    url = "file://" + str(tmp_path / "logs")
    done = _command([sys.executable, "-m", "mxboard", "export", url, "--csv"], tmp_path)
    assert done.returncode == 0 and done.stdout.splitlines()[1].startswith("run,loss,1,"), done
    done = _command([sys.executable, "-m", "mxboard", "report", url, "-o", str(tmp_path / "r.html")], tmp_path)
    assert done.returncode == 0 and (tmp_path / "r.html").stat().st_size > 1000, done


TENSORBOARD = os.path.join(os.path.dirname(sys.executable), "tensorboard")  # the command the user runs


@pytest.mark.slow
def test_the_bundled_tensorboard_refuses_a_mistyped_logdir_in_one_line(tmp_path):
    for logdir, words in TYPOS:
        done = _command([TENSORBOARD, "--logdir", logdir, "--port", "0"], tmp_path, {"PYTHONPATH": ""})
        assert done.returncode == 1, done
        last = done.stderr.splitlines()[-1]
        assert last.startswith("Error: logdir %r: " % logdir) and words in last, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
    done = _command([TENSORBOARD, "--logdir_spec", "mine:/tmp,theirs:S3://bucket/x", "--port", "0"], tmp_path,
                    {"PYTHONPATH": ""})
    assert done.returncode == 1 and done.stderr == (
        "Error: logdir 'S3://bucket/x': URL schemes are lower case: did you mean s3://bucket/x?\n"), done.stderr
    # an entry without a group name and one slash: TensorBoard reads it as the group "s3" of the
    # local directory /bucket/x (on 53780db served, empty, without a word)
    for spec, logdir in [("mine:/tmp,s3:/bucket/x", "s3:/bucket/x"), ("GS:/bucket/x", "GS:/bucket/x")]:
        done = _command([TENSORBOARD, "--logdir_spec", spec, "--port", "0"], tmp_path, {"PYTHONPATH": ""})
        assert done.returncode == 1 and done.stderr.startswith("Error: logdir %r: " % logdir), done.stderr
        assert "did you mean %s://bucket/x?" % logdir[:2].lower() in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.slow
def test_the_bundled_tensorboard_serves_a_file_url(tmp_path):
    with SummaryWriter(str(tmp_path / "logs" / "run"), flush_secs=0.2) as writer:
        writer.add_scalar("loss", 0.25, 1)
    server = Server("file://" + str(tmp_path / "logs"), command=[TENSORBOARD])
    try:
        assert server.json("/data/runs", until=lambda runs: runs == ["run"]) == ["run"]
    finally:
        server.close()


def test_a_logdir_under_home_is_read_where_the_writer_wrote_it(tmp_path, monkeypatch):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    with SummaryWriter("~/runs/exp", flush_secs=0.2) as writer:
        writer.add_scalar("loss", 0.5, 3)
    assert writer.logdir == str(home / "runs" / "exp") and os.listdir(cwd) == []  # no ./~ made
    (path,) = reader.event_files("~/runs/exp")
    assert os.path.dirname(path) == str(home / "runs" / "exp")
    columns = reader.table("~/runs")
    assert (columns["run"], columns["step"], columns["value"]) == (["exp"], [3], [0.5])
    assert reader.table(pathlib.Path("~/runs/exp"))["value"] == [0.5]
    if importlib.util.find_spec("pandas") is not None:
        assert reader.scalars("~/runs")["value"].tolist() == [0.5]
    assert [e.step for e in reader.read_events("~/runs/exp") if e.HasField("summary")] == [3]
    one_file = os.path.join("~", os.path.relpath(path, str(home)))
    assert list(reader.read_records(one_file)) == list(reader.read_records(path))
    assert reader.table(one_file)["run"] == ["."]


def test_a_missing_logdir_is_a_value_error_naming_it_for_every_reader(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "missing"
    os.symlink(str(missing), str(tmp_path / "dangling"))
    readers = [reader.event_files, reader.table, reader.scalars, lambda d: reader.table(d, "text"),
               lambda d: list(reader.read_events(d)), lambda d: report.write(d, str(tmp_path / "r.html"))]
    for call in readers:
        for logdir, words in [(str(missing), "logdir %r does not exist" % str(missing)),
                              ("~/missing", "logdir '~/missing' does not exist (%s)" % missing),
                              ("file://" + str(missing), "logdir 'file://%s' does not exist (%s)" % (missing, missing)),
                              ("dangling", "logdir 'dangling' does not exist")]:
            with pytest.raises(ValueError, match="^%s$" % re.escape(words)):
                call(logdir)
    assert sorted(os.listdir(tmp_path)) == ["dangling"]  # nothing made, no report written
    with SummaryWriter("~/missing/run", flush_secs=0.2):  # the writer makes its logdir
        pass
    assert os.path.isdir(str(missing / "run"))


@pytest.mark.slow
def test_the_commands_and_the_server_read_a_logdir_under_home(tmp_path, serve):
    home = tmp_path / "home"
    with SummaryWriter(str(home / "runs" / "exp"), flush_secs=0.2) as writer:
        writer.add_scalar("loss", 0.25, 1)
    env = {"HOME": str(home)}
    # "~/runs" reaches each command as written, as it does quoted in a shell
    done = _command([sys.executable, "-m", "mxboard", "export", "~/runs", "--csv"], tmp_path, env)
    assert done.returncode == 0 and done.stdout.splitlines()[1].startswith("exp,loss,1,"), done
    out = tmp_path / "r.html"
    done = _command([sys.executable, "-m", "mxboard", "report", "~/runs", "-o", str(out)], tmp_path, env)
    assert done.returncode == 0 and '"runs":["exp"]' in out.read_text(), done
    assert sorted(os.listdir(tmp_path)) == ["home", "r.html"]  # no ./~ made
    # --logdir=~/runs: the shell leaves this `~` as it is
    server = serve(None, "--logdir=~/runs", command=[TENSORBOARD], env=dict(os.environ, PYTHONPATH="", **env))
    assert server.json("/data/runs", until=lambda runs: runs == ["exp"]) == ["exp"]
    assert "logdir: %s" % (home / "runs") in server.banner and "does not exist" not in "".join(server.output)


@pytest.mark.slow
def test_the_commands_and_the_server_say_a_missing_logdir_in_one_line(tmp_path, serve):
    env = {"HOME": str(tmp_path)}
    for command, extra in [("export", ["--csv"]), ("report", ["-o", str(tmp_path / "r.html")])]:
        for logdir, named in [("~/missing", "'~/missing' does not exist (%s)" % (tmp_path / "missing")),
                              (str(tmp_path / "gone"), "%r does not exist" % str(tmp_path / "gone"))]:
            done = _command([sys.executable, "-m", "mxboard", command, logdir] + extra, tmp_path, env)
            assert (done.returncode, done.stdout, done.stderr) == (1, "", "mxboard %s: logdir %s\n" % (command, named))
    assert os.listdir(tmp_path) == []
    # the server waits for it, as TensorBoard does, and says so at once
    server = serve(None, "--logdir=~/missing", command=[TENSORBOARD], env=dict(os.environ, PYTHONPATH="", **env))
    assert "note: --logdir %s does not exist (yet): its runs are shown once they appear there" % (
        tmp_path / "missing") in "".join(server.output)
