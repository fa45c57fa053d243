"""Where a user starts: a copy of this checkout as a clone would have it (no .venv, no build
output, nothing installed), then one documented command, then a run served over HTTP by what that
command installed. The wheelhouse and the offline install are in test_offline.py.

A venv costs most of these tests' time (pip's work, on two shared cores): one fresh clone's `make
demo` on python3 (3.11, MXNet) serves that demo's test, Python 3.12's beside it in the same clone
(each Python a venv of its own), README's PyTorch section and the pandas hint; they run on one
pytest-xdist worker (`xdist_group`), Python 3.13's clone on another, the other tests on a third."""
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile

import pytest

from conftest import ROOT, authorized, banner_url

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # fresh venvs, builds, the installer

TOOLS = os.path.join(ROOT, "tools", "pip_package")
PATCHED = {"tensorboard_bundle/_patched/" + n for n in ("default.py", "gfile.py", "program.py", "projector_plugin.py")}


def fresh_clone(where):
    """The files a clone of this checkout holds (tracked, and new files not ignored: what the
    next commit would hold), copied into `where`."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in files:
        source = os.path.join(ROOT, name)
        if name and os.path.isfile(source):
            os.makedirs(os.path.dirname(os.path.join(str(where), name)), exist_ok=True)
            shutil.copy2(source, os.path.join(str(where), name))
    assert not (where / ".venv").exists() and not list((where / "tensorboard_bundle" / "_patched").glob("[!_]*.py"))
    return where


FRESH = {"MAKELEVEL": None, "MAKEFLAGS": None, "MFLAGS": None, "PYTHONPATH": None}  # as a user runs make
DEFAULT = subprocess.run(["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True).stdout.strip()  # the Python of `make` with no PYTHON=


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A fresh clone in which a user ran `make demo SERVE=0` once, with nothing set: python3's venv
    (.venv) built, the demo trained into `logdir`; (clone, logdir, what make printed)."""
    clone = fresh_clone(tmp_path_factory.mktemp("made") / "clone")
    logdir = clone.parent / "runs"
    return clone, logdir, run(["make", "demo", "SERVE=0", "LOGDIR=%s" % logdir], cwd=clone, env=FRESH)


def fresh_venv(where):
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    return where / "bin" / "python"


def run(args, cwd, timeout=900, env=None):
    env = {k: v for k, v in dict(os.environ, **(env or {})).items() if v is not None}  # None: unset
    proc = subprocess.run([str(a) for a in args], cwd=str(cwd), capture_output=True, text=True, timeout=timeout,
                          env=env)
    assert proc.returncode == 0, "%s failed (%d):\n%s\n%s" % (args, proc.returncode, proc.stdout[-3000:],
                                                             proc.stderr[-3000:])
    return proc.stdout


def serve_a_logged_run(venv, work):
    """With the venv's mxboard, log a run; with the venv's `tensorboard` command, serve it; return
    the start-up banner and the loss points served over HTTP."""
    work.mkdir(parents=True, exist_ok=True)
    logdir = work / "logs"
    run([venv / "bin" / "python", "-c", "import mxboard\n"
         "with mxboard.SummaryWriter(%r) as w:\n"
         "    [w.add_scalar('loss', 1.0 / (s + 1), s) for s in range(20)]" % str(logdir)], cwd=work)
    server = subprocess.Popen([str(venv / "bin" / "tensorboard"), "--logdir", str(logdir), "--port", "0"],
                              cwd=str(work), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=dict(os.environ, XDG_CACHE_HOME=str(work / "cache")))
    try:
        banner = next(line for line in server.stdout if banner_url(line))
        url, token = banner_url(banner)
        deadline = time.monotonic() + 60
        while True:
            try:
                page = url + "/data/plugin/scalars/scalars?run=.&tag=loss"
                with urllib.request.urlopen(authorized(page, token), timeout=10) as r:
                    points = json.loads(r.read())
                if len(points) == 20 or time.monotonic() > deadline:
                    return banner, points
            except OSError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.25)
    finally:
        server.kill()
        server.wait()
        server.stdout.close()


def _assert_serves(venv, work):
    banner, points = serve_a_logged_run(venv, work)
    assert "data loader: mxboard (in-process)" in banner and "http://127.0.0.1:" in banner
    assert [step for _, step, _ in points] == list(range(20))
    assert [value for _, _, value in points] == pytest.approx([1.0 / (s + 1) for s in range(20)])


BUILDS = pytest.mark.xdist_group("builds")  # the installer's and the build's tests, on one worker of their own


@BUILDS
def test_installer_with_the_plain_python3_then_tensorboard_serves_and_pip_install_dot_over_it(tmp_path):
    """`./installer.sh` with nothing set installs into whatever `python3` is: here, a fresh venv's
    found first on PATH (so that the test leaves the machine's own Python alone). ($PYTHON is
    the offline install's way in: test_offline.py.)"""
    clone = fresh_clone(tmp_path / "clone")
    venv = tmp_path / "venv"
    fresh_venv(venv)
    env = {"PATH": str(venv / "bin") + os.pathsep + os.environ["PATH"], "PYTHON": None}
    start = time.monotonic()
    out = run([clone / "installer.sh"], cwd=clone, env=env)
    _assert_serves(venv, tmp_path / "installed")
    print("fresh clone to a served run by installer.sh: %.0f s" % (time.monotonic() - start))
    assert "installed" in out
    assert not list((clone / "tensorboard_bundle" / "_patched").glob("[!_]*.py"))  # never the source tree
    crc = "from mxboard._format import _crc32c; print(_crc32c.IMPLEMENTATION)"
    assert run([venv / "bin" / "python", "-c", crc], cwd=tmp_path).strip() == "google-crc32c"  # a plain install's
    where = "import mxboard, tensorboard_bundle._patched.program as p; print(mxboard.__file__, p.__file__)"
    assert all(p.startswith(str(venv)) for p in run([venv / "bin" / "python", "-c", where], cwd=tmp_path).split())
    # and `pip install .` from the clone, over it
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", "."], cwd=clone)
    assert all(p.startswith(str(venv)) for p in run([venv / "bin" / "python", "-c", where], cwd=tmp_path).split())
    _assert_serves(venv, tmp_path / "reinstalled")


@BUILDS
def test_python_m_build_sdist_and_wheel_are_clean_and_alike(tmp_path):
    sys.path.insert(0, TOOLS)
    import vendor

    clone = fresh_clone(tmp_path / "clone")
    before = sorted(p.relative_to(clone) for p in clone.rglob("*") if p.is_file())
    out = tmp_path / "out"
    run([sys.executable, "-m", "build", "--outdir", out, clone], cwd=tmp_path)  # the wheel from the sdist
    (wheel,) = out.glob("mxboard-*-py3-none-any.whl")
    (sdist,) = out.glob("mxboard-*.tar.gz")
    version = run([sys.executable, "-c", "import mxboard; print(mxboard.__version__)"], cwd=tmp_path).strip()
    assert wheel.name == "mxboard-%s-py3-none-any.whl" % version and sdist.name == "mxboard-%s.tar.gz" % version
    names = set(zipfile.ZipFile(wheel).namelist())
    info = "mxboard-%s.dist-info/" % version
    # nothing from tests/, docs/, tools/
    # the .pth file (%tensorboard from any kernel, MXBOARD_PATCH) and the start-up module it imports
    assert {n.split("/")[0] for n in names} == {"mxboard", "tensorboard_bundle", info.rstrip("/"),
                                                "mxboard-tensorboard.pth", "_mxboard_startup.py"}
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".orig", ".rej"))]
    assert PATCHED <= names and vendor.check(str(wheel)) == []
    assert {info + "licenses/LICENSE", info + "licenses/NOTICE"} <= names
    assert "mxboard/proto/_descriptors.py" in names and "mxboard/demo.py" in names
    # no `tensorboard` script (pip would delete upstream's with ours), a plugin entry point instead
    entry_points = zipfile.ZipFile(wheel).read(info + "entry_points.txt").decode()
    assert "console_scripts" not in entry_points and not any(".data/scripts/" in n for n in names)
    assert "mxboard_bundle = tensorboard_bundle.handover:Handover" in entry_points
    metadata = zipfile.ZipFile(wheel).read(info + "METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata and "Version: %s" % version in metadata
    with tarfile.open(sdist) as t:
        members = {m.split("/", 1)[1] for m in t.getnames() if "/" in m}
    assert {"LICENSE", "NOTICE", "CHANGELOG.md", "tools/pip_package/vendor.py", "setup.py"} <= members
    assert not [m for m in members if m.startswith(("tests/", "docs/", "tensorboard_bundle/_patched/p"))]
    # the build wrote nothing into the source tree but setuptools' own egg-info
    after = sorted(p.relative_to(clone) for p in clone.rglob("*") if p.is_file() and ".egg-info" not in str(p))
    assert after == before
    # `pip wheel .` straight from the tree: the same files, byte for byte
    direct = tmp_path / "direct"
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", direct, clone], cwd=tmp_path)
    (other,) = direct.glob("*.whl")
    a, b = zipfile.ZipFile(wheel), zipfile.ZipFile(other)
    assert sorted(a.namelist()) == sorted(b.namelist())
    assert [n for n in a.namelist() if a.read(n) != b.read(n)] == []
    run([sys.executable, "-m", "twine", "check", "--strict", wheel, sdist], cwd=tmp_path)
    # (that wheel installed and serving: the installer's test here, the offline install's in test_offline.py)


@BUILDS
def test_a_stale_patch_fails_the_build_naming_the_patch_and_the_hunk(tmp_path):
    """The build's patch step, in this environment (its TensorBoard is [build-system]'s 2.21.0: no
    isolated environment needs making for it; the builds above make theirs)."""
    clone = fresh_clone(tmp_path / "clone")
    patch = sorted((clone / "patches").glob("*.diff"))[-1]
    lines = patch.read_text().split("\n")
    hunk = next(i for i, line in enumerate(lines) if line.startswith("@@"))
    context = next(i for i in range(hunk + 1, len(lines)) if lines[i].startswith(" ") and lines[i].strip())
    lines[context] += "  # as if upstream had changed this line"
    patch.write_text("\n".join(lines))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir",
                           str(tmp_path / "out"), str(clone)], capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and not list((tmp_path / "out").glob("*.whl"))
    assert "patches/%s no longer applies to tensorboard 2.21.0" % patch.name in proc.stdout + proc.stderr
    assert "hunk #1 (%s)" % lines[hunk].strip() in proc.stdout + proc.stderr


def _pyenv_python(version):
    """The machine's python<version> (pyenv's, where the image keeps them, else on PATH), or None."""
    import glob

    found = sorted(glob.glob(os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")), "versions",
                                          version + ".*", "bin", "python" + version)))
    return found[-1] if found else shutil.which("python" + version)


def _venv_of(version):
    """The venv `make` makes for a Python: .venv for python3's version, .venv-X.Y for another."""
    default = subprocess.run(["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True).stdout.strip()
    return ".venv" if version == default else ".venv-" + version


ON_THE_CLONE = pytest.mark.xdist_group("fresh-clone")  # the tests of `made`'s clone, on one worker


def _make(cwd, python, version, *flags, target=".base"):
    """`make` of a Python's venv (its first step by default), as a user runs it."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return subprocess.run(["make", *flags, "PYTHON=" + python, "%s/%s" % (_venv_of(version), target.replace(
        ".base", ".base-" + version))], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


@ON_THE_CLONE
def test_each_python_has_a_venv_of_its_own_and_switching_rebuilds_nothing(made, tmp_path):
    """On a92d861 every PYTHON= switch deleted and rebuilt .venv (55-103 s, and the test tools
    with it), and after a Ctrl-C during a venv's making the rerun said it was made by another
    Python, the same one. In the clone where `make demo` built python3's venv, another Python's
    venv is made beside it, and neither is made again when make switches back and forth."""
    other = next((v for v in ("3.12", "3.13", "3.10") if _venv_of(v) != ".venv" and _pyenv_python(v)), None)
    if other is None:
        pytest.skip("no second Python on this machine")
    clone = made[0]
    python = _pyenv_python(other)
    done = _make(clone, python, other)  # nothing to do where the 3.12 demo's test made it already
    assert done.returncode == 0 and (clone / _venv_of(other) / "bin" / "python").exists(), done.stderr
    version = "import sys; print('%d.%d' % sys.version_info[:2])"
    for venv, expected in ((".venv", DEFAULT), (_venv_of(other), other)):
        assert run([clone / venv / "bin" / "python", "-c", version], cwd=clone).strip() == expected
    for venv_python, version, target in ((python, other, ".base"), ("python3", DEFAULT, ".mxboard"),
                                         (python, other, ".base")):  # back and forth: nothing to do
        assert _make(clone, venv_python, version, "-q", target=target).returncode == 0, (version, target)
    # a venv whose making was cut short (no pip, no stamp), in a folder of its own
    shutil.copy(os.path.join(ROOT, "Makefile"), tmp_path)
    subprocess.run([python, "-m", "venv", "--without-pip", str(tmp_path / _venv_of(other))], check=True)
    again = _make(tmp_path, python, other)
    assert again.returncode == 0, again.stderr
    assert "was left unfinished (an interrupted make?): made again" in again.stdout, again.stdout
    assert "made by another Python" not in again.stdout


@pytest.mark.parametrize("version", [pytest.param("3.11", marks=ON_THE_CLONE), pytest.param("3.12", marks=ON_THE_CLONE),
                                     pytest.param("3.13", marks=pytest.mark.xdist_group("fresh-clone-3.13"))])
def test_a_fresh_clones_make_demo_on_each_python_fills_every_dashboard_it_says(request, tmp_path, serve, version):
    """On b621f0a `make demo` on Python 3.12 and newer built numpy 1.23.5 from source for 18 s
    and failed (pkgutil.ImpImporter), saying nothing of Python 3.11. Now it says which model it
    trains before any download: MXNet's Gluon CNN on 3.11, every dashboard; elsewhere the numpy
    CNN, every dashboard but Graphs; served by the clone's own `tensorboard`. On python3 (the
    clone's first `make demo`, with nothing set), a second demo of the same settings is a run of
    its own that differs. (3.12's venv is made in that clone, beside python3's; 3.13's in a clone
    of its own.)"""
    mxnet = version == "3.11"
    python = _pyenv_python(version)
    if python is None:
        pytest.skip("no python%s on this machine (pyenv install %s)" % (version, version))
    if version == DEFAULT:
        clone, logdir, out = request.getfixturevalue("made")
    else:
        clone = request.getfixturevalue("made")[0] if version == "3.12" else fresh_clone(tmp_path / "clone")
        logdir = tmp_path / "runs"
        out = run(["make", "demo", "SERVE=0", "LOGDIR=%s" % logdir, "PYTHON=%s" % python], cwd=clone, env=FRESH)
    said = out.splitlines()
    assert said[0].startswith("Python %s: the demo trains with MXNet 1.9.1" % version if mxnet else
                              "Python %s: MXNet 1.9.1 runs on Python <= 3.11 only, so the demo trains the same CNN "
                              "in numpy" % version), out[:2000]
    assert not any(line.startswith(("if ", "case ", ".venv")) for line in said), out[:3000]  # quiet
    # pip's 90 lines (a6ab6a5) in a log under the venv
    assert not any(line.startswith(("Collecting ", "Downloading ", "Installing collected", "Successfully installed"))
                   for line in said), out[:3000]
    assert "Successfully installed" in (clone / _venv_of(version) / "pip.log").read_text()
    assert ("training an MXNet Gluon CNN" if mxnet else "training a numpy CNN") in out and "trained in" in out
    if version == DEFAULT:  # a second demo, on the venv made
        run(["make", "demo", "SERVE=0", "LOGDIR=%s" % logdir], cwd=clone, env=FRESH)
    runs = sorted(os.listdir(logdir))
    assert len(runs) == (2 if version == DEFAULT else 1), runs
    if version == DEFAULT:
        first, second = runs
        assert first.split("_seed")[1].split("_")[0] != second.split("_seed")[1].split("_")[0]  # its own seed, named
    server = serve(logdir, command=[str(clone / _venv_of(version) / "bin" / "tensorboard")])
    listing = server.json("/data/plugins_listing", until=lambda found: found.get("projector", {}).get("enabled"))
    shown = {"scalars", "images", "audio", "histograms", "distributions", "text", "pr_curves", "projector", "mesh",
             "custom_scalars", "hparams"}
    assert {name for name in shown if not listing[name]["enabled"]} == set()
    assert listing["graphs"]["enabled"] is mxnet  # a graph is a framework's: the README says so
    losses = [[value for _, _, value in server.json("/data/plugin/scalars/scalars", {"run": run, "tag": "loss/batch"},
                                                    until=bool)] for run in runs]
    assert all(len(loss) == len(losses[0]) > 100 for loss in losses)
    assert len(losses) == 1 or losses[0] != losses[1]  # the second demo's own seed: its own curve
    assert all(loss[-1] < loss[0] / 4 for loss in losses)  # it learns: real gradients


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the caps are for Pythons where MXNet runs (numpy < 1.24)")
def test_the_demo_extra_downloads_one_scikit_learn_and_one_scipy(tmp_path):
    """With numpy < 1.24, pip tried the newest scikit-learn and scipy first, which need a newer
    numpy: on b621f0a the first `make demo` downloaded three of each (about 135 MB) and threw two
    away. The demo extra's caps leave one candidate of each."""
    out = run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-cache-dir",
               ".[demo]"], cwd=ROOT)
    fetched = [line.split()[1] for line in out.splitlines() if line.strip().startswith(("Downloading", "Processing"))]
    assert len([f for f in fetched if "scikit_learn-" in f]) == 1, out
    assert len([f for f in fetched if os.path.basename(f).startswith("scipy-")]) == 1, out


def test_notice_lists_exactly_the_files_the_patches_change():
    """A licence notice must be true: NOTICE names each TensorBoard file the wheel holds a modified
    copy of, and how many; those are the files patches/*.diff change (on a92d861 it said four,
    and missed pywrap_tensorflow.py, which patches/0008 changes)."""
    import glob
    import re

    changed = set()
    for diff in glob.glob(os.path.join(ROOT, "patches", "*.diff")):
        with open(diff) as f:
            changed |= {line[len("+++ b/"):].strip() for line in f if line.startswith("+++ b/")}
    with open(os.path.join(ROOT, "NOTICE")) as f:
        notice = f.read()
    listed = set(re.findall(r"^\s+(tensorboard/\S+\.py)\s+->\s+tensorboard_bundle/_patched/\S+\.py$", notice, re.M))
    assert listed == changed
    words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
    assert "modified copies of %s of its files" % words[len(changed)] in " ".join(notice.split())


def test_a_python_that_does_not_run_is_said_with_its_own_words(tmp_path):
    """On a6ab6a5 `PYTHON=python3.12 make demo` said only `make: python3.12 does not run: set
    PYTHON=python3.X`, which was what had been set: pyenv's reason (the shim had no such version)
    was hidden. The interpreter's own error follows make's line now."""
    shutil.copy(os.path.join(ROOT, "Makefile"), tmp_path)
    shim = tmp_path / "bin" / "python3.99"
    shim.parent.mkdir()
    shim.write_text("#!/bin/sh\necho \"pyenv: python3.99: command not found\" >&2\necho >&2\n"
                    "echo \"The \\`python3.99' command exists in these Python versions: 3.99.0\" >&2\nexit 127\n")
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}  # as a user
    env["PATH"] = str(shim.parent) + os.pathsep + env["PATH"]
    done = subprocess.run(["make", "demo", "PYTHON=python3.99"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode != 0
    said = done.stderr.splitlines()  # (after find's words on the sources this copy of the Makefile lacks)
    said = said[next((i for i, line in enumerate(said) if line.startswith("make: python3.99")), 0):]
    assert said[:4] == ["make: python3.99 does not run: set PYTHON=python3.X (or its path); it says:",
                        "  pyenv: python3.99: command not found", "  ",
                        "  The `python3.99' command exists in these Python versions: 3.99.0"], done.stderr
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".venv")]  # nothing made


def test_a_failed_install_of_make_demo_shows_pips_output_and_keeps_it(tmp_path):
    """make demo keeps pip's output in a log under the venv; when pip fails, that output is shown,
    then where it is kept. Here the venv has no pip (its making cut short)."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(os.path.join(ROOT, name), tmp_path)
    version = "%d.%d" % sys.version_info[:2]
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / ".venv")], check=True)
    (tmp_path / ".venv" / (".base-" + version)).touch()  # made: make's first step done
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}  # as a user
    done = subprocess.run(["make", "demo", "SERVE=0", "PYTHON=" + sys.executable, "VENV=.venv"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode != 0
    said = done.stderr.splitlines()
    assert said[-2:] == ["make: pip could not install the demo's packages into .venv: its output is above, and in "
                         ".venv/pip.log", said[-1]] and said[-1].startswith("make: ***"), done.stderr
    kept = (tmp_path / ".venv" / "pip.log").read_text()
    assert "No module named pip" in kept and kept.strip() in done.stderr, done.stderr


@ON_THE_CLONE
def test_a_fresh_clone_follows_the_readmes_pytorch_section(made, tmp_path):
    """README's "PyTorch users" (new since a6ab6a5), followed as written in the clone where a user
    ran `make demo`: `make torch` adds torch's CPU build to the venv make built (the same rule
    builds it from nothing: the demo's test), the example runs as a script of its own with that
    venv's Python, and its one-file report is written, holding the run's loss."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        section = f.read().split("## PyTorch users", 1)[1].split("\n## ", 1)[0]
    script = section.split("```python\n", 1)[1].split("```", 1)[0]
    commands = section.split("```sh\n", 1)[1].split("```", 1)[0].strip().split(" && ")
    assert commands[:2] == ["make torch", ".venv/bin/python train.py"], commands
    local = subprocess.run(["python3", "-m", "pip", "download", "-q", "--no-deps", "--no-index", "-d",
                            str(tmp_path / "wheel"), "torch==2.13.0"], capture_output=True)
    if local.returncode != 0:
        pytest.skip("no local CPU build of torch 2.13.0 for python3 here: make torch would download one")
    clone = made[0]
    (clone / "train.py").write_text(script)
    done = run(commands[0].split(), cwd=clone, env=FRESH)
    assert done.splitlines()[-1] == "torch 2.13.0+cpu in .venv: run your script with .venv/bin/python", done
    for command in commands[1:]:
        run(command.split(), cwd=clone, env=FRESH)
    page = (clone / "torch.html").read_text(encoding="utf-8")
    assert "loss" in page and len(page) > 10_000


@ON_THE_CLONE
def test_the_pandas_hint_keeps_an_mxnet_environment_working(made):
    """MXNet 1.9.1 needs numpy < 1.24; `pip install pandas` (the old hint) brings pandas 3, which
    upgrades numpy past what MXNet imports with. The hint's pins keep it: run as written in the
    MXNet environment a user has, the venv `make demo` built on Python 3.11."""
    from mxboard.reader import PANDAS_HINT

    python = made[0] / ".venv" / "bin" / "python"
    if subprocess.run([python, "-c", "import mxnet"], capture_output=True, timeout=120).returncode != 0:
        pytest.skip("python3's venv has no MXNet (MXNet 1.9.1 runs on Python <= 3.11)")
    command = shlex.split(PANDAS_HINT)
    assert command[:2] == ["pip", "install"]
    run([python, "-m"] + command + ["-q"], cwd=made[0], timeout=600)
    found = run([python, "-W", "ignore", "-c", "import mxnet, numpy, pandas\n"
                 "print(numpy.__version__, pandas.__version__, mxnet.nd.array([1, 2]).sum().asscalar())"], cwd=made[0])
    numpy_version, pandas_version, total = found.split()
    assert numpy_version.startswith("1.23.") and pandas_version.startswith("2.") and float(total) == 3.0


def test_the_jax_section_of_compat_md_runs_as_written(tmp_path):
    """docs/compat.md's "JAX users": the example as a script, then its report (where jax is
    installed: make gpu-check's image has it; `pip install jax` elsewhere)."""
    pytest.importorskip("jax")
    with open(os.path.join(ROOT, "docs", "compat.md"), encoding="utf-8") as f:
        section = f.read().split("## JAX users", 1)[1].split("\n## ", 1)[0]
    (tmp_path / "train.py").write_text(section.split("```python\n", 1)[1].split("```", 1)[0])
    run([sys.executable, "train.py"], cwd=tmp_path)
    run([sys.executable, "-m", "mxboard", "report", "runs/jax", "-o", "jax.html"], cwd=tmp_path)
    assert "loss" in (tmp_path / "jax.html").read_text(encoding="utf-8")
