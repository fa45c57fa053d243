"""Jupyter, as a user runs it: a real kernel (nbclient, ipykernel) executes a notebook that logs a
run and shows it with `%tensorboard`, which starts the bundle through upstream's `tensorboard`
command (on PATH, as in an activated venv) and waits for its info file. On 802362c it waited 60 s
and printed "ERROR: Timed out waiting for TensorBoard to start": the bundle's own flags changed
the key the notebook looks for. The server asks for a token (issue 67): the frame the notebook
shows must carry it, read from the server's info file, which only the user can read."""
import contextlib
import http.cookiejar
import json
import os
import re
import signal
import sys
import time
import urllib.error
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
# The frame upstream's notebook shows: its URL ("/" on the notebook's host, with the token), and
# the server's port, which its script sets.
FRAME_URL = re.compile(r'new URL\("/\?token=([A-Za-z0-9_-]+)", window\.location\)')
FRAME_PORT = re.compile(r"const port = (\d+);")


@contextlib.contextmanager
def _kernel(tmp_path, monkeypatch, activated=True):
    """A real kernel, its working directory tmp_path, and a function that runs a cell in it and
    returns all the cell shows; the servers it started are ended after. Activated: the venv's bin
    on PATH. Not activated: a kernel started by the venv's python (VS Code, `python -m ipykernel
    install`, nbclient) with PATH lacking it."""
    from tensorboard import manager

    bin_dir = os.path.dirname(sys.executable)
    others = [p for p in os.environ["PATH"].split(os.pathsep) if os.path.abspath(p) != os.path.abspath(bin_dir)]
    monkeypatch.setenv("PATH", os.pathsep.join(([bin_dir] if activated else []) + others))
    monkeypatch.delenv("TENSORBOARD_BINARY", raising=False)  # this process's .pth set it: the kernel's own must
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core's paths as they will be (else it warns)
    notebook = nbformat.v4.new_notebook()
    before = {info.pid for info in manager.get_all()}

    def run(source):
        notebook.cells.append(nbformat.v4.new_code_cell(source))
        client.execute_cell(notebook.cells[-1], len(notebook.cells) - 1)
        outputs = notebook.cells[-1].outputs
        shown = "".join(o.get("text", "") + "".join(o.get("data", {}).values()) for o in outputs)
        assert "ERROR" not in shown and "Timed out" not in shown and "Traceback" not in shown, shown
        return shown

    try:
        client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                                         resources={"metadata": {"path": str(tmp_path)}})
        with client.setup_kernel():  # the server lives as long as the kernel (its process group)
            yield run
    finally:
        for info in manager.get_all():
            if info.pid not in before and info.logdir == "logs":
                os.kill(info.pid, signal.SIGTERM)


def _frame(shown):
    """The port and the token of the frame a cell shows."""
    url, port = FRAME_URL.search(shown), FRAME_PORT.search(shown)
    assert url and port, shown
    return int(port.group(1)), url.group(1)


def _losses_as_the_frame_sees_them(port, token):
    """The run's losses, asked for as the frame asks: its URL first (the token, answered with a
    cookie), then the scalars route with that cookie. Without the token: 401."""
    route = "http://localhost:%d/data/plugin/scalars/scalars?run=run1&tag=loss" % port
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(route, timeout=30)
    refused.value.close()
    assert refused.value.code == 401
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    with browser.open("http://localhost:%d/?token=%s" % (port, token), timeout=30) as page:
        assert page.status == 200
    with browser.open(route, timeout=30) as response:
        return [(step, value) for _, step, value in json.loads(response.read())]


LOSSES = [(s, pytest.approx(1.0 / (s + 1))) for s in range(5)]


@pytest.mark.parametrize("venv", ["activated", "not activated"])
def test_tensorboard_magic_shows_the_run(tmp_path, monkeypatch, venv):
    """On b621f0a the magic in a kernel whose venv was not activated said at once "ERROR: Could not
    find `tensorboard`"; mxboard's .pth now names the venv's `tensorboard` in TENSORBOARD_BINARY,
    which the magic runs. The frame carries the server's token: the run is read with it."""
    with _kernel(tmp_path, monkeypatch, activated=venv == "activated") as run:
        for cell in CELLS[:-1]:
            run(cell)
        port, token = _frame(run(CELLS[-1]))
        assert _losses_as_the_frame_sees_them(port, token) == LOSSES


def test_display_and_the_reuse_of_a_running_server_carry_the_token(tmp_path, monkeypatch):
    """`tensorboard.notebook.display(port=...)`, and a second `%tensorboard` with the same
    arguments (upstream's `manager.start` then reuses the running server: "Reusing TensorBoard"),
    show frames that carry the token of that server."""
    with _kernel(tmp_path, monkeypatch) as run:
        for cell in CELLS[:-1]:
            run(cell)
        port, token = _frame(run(CELLS[-1]))
        shown = run("from tensorboard import notebook\nnotebook.display(port=%d)" % port)
        assert "Selecting TensorBoard with logdir logs" in shown and _frame(shown) == (port, token), shown
        shown = run(CELLS[-1])
        assert "Reusing TensorBoard on port %d" % port in shown and _frame(shown) == (port, token), shown
        assert _losses_as_the_frame_sees_them(port, token) == LOSSES


class _Kept:
    """A display handle that keeps what is shown in it."""

    def update(self, obj):
        self.shown = obj.data


@pytest.mark.parametrize("auth", ["token", "none"])
def test_the_frame_and_the_line_outside_a_notebook_carry_the_token_where_the_server_has_one(logdir, serve, capsys,
                                                                                            auth):
    """With --auth none (as for upstream's own server, which has no token either) the frame and
    the line are upstream's as they were; with a token both carry it."""
    from tensorboard import manager, notebook

    server = serve(logdir, "--auth", auth)
    port = int(server.url.rsplit(":", 1)[1])
    # The server writes its info file (which the notebook reads the token from) just after its banner.
    deadline = time.monotonic() + 30
    while port not in {info.port for info in manager.get_all()} and time.monotonic() < deadline:
        time.sleep(0.1)
    kept = _Kept()
    notebook._display_ipython(port=port, height=800, display_handle=kept)
    # outside a notebook: a line
    notebook.display(port=port)
    line = capsys.readouterr().out.splitlines()[-1]
    if auth == "none":
        assert server.token is None and 'new URL("/", window.location)' in kept.shown
        assert line == "Please visit http://localhost:%d in a web browser." % port
    else:
        assert _frame(kept.shown) == (port, server.token)
        assert line == "Please visit http://localhost:%d/?token=%s in a web browser." % (port, server.token)


def test_the_list_of_servers_holds_while_info_files_come_and_go():
    """upstream's get_all lists the info directory, then opens each file: a file renamed into
    place (a server starting) or removed (a server ending) in between raised FileNotFoundError out
    of `%tensorboard` and `notebook.list()`, as test_the_frame_and_the_line... once did."""
    import threading

    from tensorboard import manager

    from mxboard._format import files
    from tensorboard_bundle import info_files

    directory = info_files.info_dir()
    assert directory is not None
    stop = threading.Event()

    def churn():
        path = os.path.join(directory, "churn-%d.info" % os.getpid())
        while not stop.is_set():
            files.replace_whole(path, b"{}\n", 0o600)
            os.remove(path)

    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 5
        calls = 0
        while time.monotonic() < deadline:
            assert isinstance(manager.get_all(), list)
            calls += 1
    finally:
        stop.set()
        thread.join(10)
    assert calls > 100
