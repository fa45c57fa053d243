"""Jupyter, as a user runs it: a real kernel (nbclient, ipykernel) executes a notebook that logs a
run and shows it with `%tensorboard`, which starts the bundle through upstream's `tensorboard`
command (on PATH, as in an activated venv) and waits for its info file. On 802362c it waited 60 s
and printed "ERROR: Timed out waiting for TensorBoard to start": the bundle's own flags changed
the key the notebook looks for."""
import json
import os
import re
import signal
import sys
import urllib.request

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

pytestmark = pytest.mark.slow

CELLS = [
    "from mxboard import SummaryWriter\n"
    "with SummaryWriter('logs/run1') as writer:\n"
    "    for step in range(5):\n"
    "        writer.add_scalar('loss', 1.0 / (step + 1), step)",
    "%load_ext tensorboard",
    "%tensorboard --logdir logs",
]


@pytest.mark.parametrize("venv", ["activated", "not activated"])
def test_tensorboard_magic_shows_the_run(tmp_path, monkeypatch, venv):
    """Activated: the venv's bin on PATH. Not activated: a kernel started by the venv's python
    (VS Code, `python -m ipykernel install`, nbclient) with PATH lacking it. On b621f0a the magic
    then said at once "ERROR: Could not find `tensorboard`"; mxboard's .pth now names the venv's
    `tensorboard` in TENSORBOARD_BINARY, which the magic runs."""
    from tensorboard import manager

    bin_dir = os.path.dirname(sys.executable)
    others = [p for p in os.environ["PATH"].split(os.pathsep) if os.path.abspath(p) != os.path.abspath(bin_dir)]
    monkeypatch.setenv("PATH", os.pathsep.join(([bin_dir] if venv == "activated" else []) + others))
    monkeypatch.delenv("TENSORBOARD_BINARY", raising=False)  # this process's .pth set it: the kernel's own must
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core's paths as they will be (else it warns)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    before = {info.pid for info in manager.get_all()}
    try:
        client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                                         resources={"metadata": {"path": str(tmp_path)}})
        with client.setup_kernel():  # the server lives as long as the kernel (its process group)
            for index, cell in enumerate(notebook.cells):
                client.execute_cell(cell, index)
            outputs = notebook.cells[-1].outputs
            shown = "".join(o.get("text", "") + "".join(o.get("data", {}).values()) for o in outputs)
            assert "ERROR" not in shown and "Timed out" not in shown, shown
            port = int(re.search(r"const port = (\d+);", shown).group(1))
            url = "http://localhost:%d/data/plugin/scalars/scalars?run=run1&tag=loss" % port
            with urllib.request.urlopen(url, timeout=30) as response:
                rows = json.loads(response.read())
        assert [(step, value) for _, step, value in rows] == [(s, pytest.approx(1.0 / (s + 1))) for s in range(5)]
    finally:
        for info in manager.get_all():
            if info.pid not in before and info.logdir == "logs":
                os.kill(info.pid, signal.SIGTERM)
