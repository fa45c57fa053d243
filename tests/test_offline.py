"""One wheel, offline: a fresh clone's `make wheelhouse` installs into a fresh venv with no index; in a network
namespace with no network at all, the venv's `tensorboard` (handing over to the bundle) serves what mxboard
wrote, and headless Chromium draws the curve. The same from a zipped install."""
import json
import os
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest
from PIL import Image
from test_release import fresh_clone

from conftest import ROOT, needs

pytestmark = [pytest.mark.slow, needs("unshare", "ip", "chromium"), pytest.mark.timeout(900),  # a wheelhouse made
              pytest.mark.xdist_group("offline"),  # handed out first (tests/scheduling.py)
              pytest.mark.skipif(subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0,
                                 reason="needs unshare -n (root, or user namespaces)")]


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    """A fresh clone runs `make wheelhouse`; a new venv installs from that wheelhouse with no index."""
    work = tmp_path_factory.mktemp("offline")
    clone = fresh_clone(work / "clone")
    start = time.monotonic()
    subprocess.run(["make", "-s", "-C", str(clone), "wheelhouse"], check=True, capture_output=True, timeout=900,
                   env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")})
    wheelhouse = clone / "dist" / "wheelhouse"
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([str(clone / "installer.sh"), "--offline", str(wheelhouse)],
                   env=dict(os.environ, PYTHON=python, PIP_CONFIG_FILE=os.devnull), check=True,
                   capture_output=True)
    print("fresh clone to an offline install by make wheelhouse + installer.sh --offline: %.0f s"
          % (time.monotonic() - start))
    return venv


def _serve_offline(tensorboard, work, env=None):
    work.mkdir()
    python = env.pop("PYTHON") if env else None
    proc = subprocess.run(["unshare", "-n", python or sys.executable, os.path.join(ROOT, "tests", "offline_check.py"),
                           tensorboard, str(work)], capture_output=True, text=True, cwd=str(work),
                          env=dict(os.environ, **(env or {})), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _assert_served_and_drawn(report):
    assert report["network"].startswith("unreachable")
    assert "data loader: mxboard (in-process)" in report["banner"]
    assert (report["scalars"], report["histograms"], report["images"]) == (50, 50, 1)
    assert report["text"] == "<p>offline run</p>" and report["projector"] == ["points"]
    pixels = np.asarray(Image.open(report["screenshot"]).convert("RGB")).astype(int)
    content = pixels[180:, 300:]  # right of the side panel, below the header
    red, green, blue = content[..., 0], content[..., 1], content[..., 2]
    ys, xs = np.nonzero((red > 200) & (green > 60) & (green < 160) & (blue < 120))  # the run's colour
    assert len(xs) > 200, "no curve drawn"
    assert xs.max() - xs.min() > 150
    left, right = ys[xs < xs.min() + 30].mean(), ys[xs > xs.max() - 30].mean()
    assert right - left > 50  # the loss falls: the curve runs down from left to right


def test_the_fresh_venvs_tensorboard_is_upstreams_handing_over_to_the_bundle(fresh_venv):
    script = (fresh_venv / "bin" / "tensorboard").read_text()
    assert "from tensorboard.main import run_main" in script  # upstream's: mxboard ships none
    entry_points = next((fresh_venv / "lib").glob("python*/site-packages/mxboard-*.dist-info/entry_points.txt"))
    assert "tensorboard_bundle.handover:Handover" in entry_points.read_text()


def test_serves_offline_in_a_network_namespace(fresh_venv, tmp_path):
    report = _serve_offline(str(fresh_venv / "bin" / "tensorboard"), tmp_path / "work",
                            {"PYTHON": str(fresh_venv / "bin" / "python")})
    assert report["mxboard"].startswith(str(fresh_venv))
    _assert_served_and_drawn(report)


def test_serves_offline_from_a_zipped_install(fresh_venv, tmp_path):
    site = next((fresh_venv / "lib").glob("python*/site-packages"))
    archive = tmp_path / "site.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for package in ("mxboard", "tensorboard", "tensorboard_bundle", "tensorboard_data_server"):
            for path in (site / package).rglob("*"):
                if path.is_file() and "__pycache__" not in path.parts:
                    z.write(path, path.relative_to(site))
    python = str(fresh_venv / "bin" / "python")
    report = _serve_offline(python + " -m tensorboard_bundle", tmp_path / "work",
                            {"PYTHON": python, "PYTHONPATH": str(archive)})
    assert report["mxboard"].startswith(str(archive))
    _assert_served_and_drawn(report)
