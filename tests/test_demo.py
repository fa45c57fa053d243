"""The demo: a real (short) training run fills every dashboard, checked through TensorBoard's
own loaders; `make demo SERVE=0 LOGDIR=...` and the serving path."""
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, authorized, banner_url, plugin_accumulator, projector_config, stress, tensor_values
from mxboard import SummaryWriter
from mxboard._format.commands import SERVE_HINT

pytest.importorskip("mxnet")
pytest.importorskip("sklearn")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # a training run (MXNet) first


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    logdir = str(tmp_path_factory.mktemp("demo") / "runs")
    subprocess.run([sys.executable, "-m", "mxboard.demo", "--logdir", logdir, "--run", "cnn", "--epochs", "2",
                    "--batches", "3", "--histogram-every", "2", "--no-serve"], check=True, timeout=300)
    return os.path.join(logdir, "cnn")


def test_every_dashboard_has_data(demo_run):
    acc = plugin_accumulator(demo_run)
    tags = lambda plugin: set(acc.PluginTagToContent(plugin))  # noqa: E731
    steps = lambda tag: [e.step for e in acc.Tensors(tag)]  # noqa: E731
    assert steps("loss/batch") == [1, 2, 3, 4, 5, 6] and steps("learning_rate") == [1, 2]
    for tag in ("accuracy", "loss"):  # train and validation: sub-runs of the run, a colour each
        for name in ("train", "validation"):
            assert [e.step for e in plugin_accumulator(os.path.join(demo_run, tag, name)).Tensors(tag)] == [1, 2]
    assert "weights/digits_conv0_weight" in tags("histograms")
    assert steps("gradients/digits_dense1_weight") == [1, 2, 4, 6]
    assert {"inputs/first_batch", "filters/conv0", "filters/conv0_over_training"} <= tags("images")
    assert steps("filters/conv0") == [1, 2]
    assert tags("audio") == {"loss_as_sound"} and tags("text") == {"config"}
    assert tags("pr_curves") == {"pr/digit_%d" % d for d in range(10)}
    assert tensor_values(acc, "pr/digit_3")[0][1].shape == (6, 200)
    assert {"validation_features_pca_VERTEX", "validation_features_pca_COLOR"} <= tags("mesh")
    assert tags("custom_scalars") == {"custom_scalars__config__"}
    graph = {node.name: node for node in acc.Graph().node}
    assert graph["digits/conv0/fwd"].op == "Convolution"
    assert [d.size for d in graph["digits/pool0/fwd"].attr["_output_shapes"].list.shape[0].dim] == [64, 16, 4, 4]
    assert set(acc.PluginTagToContent("hparams")) == {  # in the run itself: one row, its own curves the metrics
        "_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info"}
    assert not os.path.exists(os.path.join(demo_run, "hparams")) and "hparam/accuracy" not in tags("scalars")
    for tag in ("filters/conv0_over_training", "loss_as_sound", "validation_features_pca_VERTEX"):
        assert steps(tag) == [2], tag  # the end of training's summaries at its last step
    (embedding,) = projector_config(demo_run).embeddings
    assert embedding.tensor_name == "validation_features:2" and list(embedding.tensor_shape) == [360, 64]
    assert list(embedding.sprite.single_image_dim) == [8, 8]
    with open(os.path.join(demo_run, "validation_features_000002", "metadata.tsv")) as f:
        assert len(f.read().split()) == 360  # one label a validation digit


def test_make_demo_without_serving(tmp_path):
    logdir = str(tmp_path / "made")
    # -o: the venv is what it is (make would reinstall mxboard under the other tests' feet after an edit)
    base = ".base-%d.%d" % sys.version_info[:2]
    keep = [arg for stamp in (base, ".demo", ".mxboard") for arg in ("-o", os.path.join(".venv", stamp))]
    proc = subprocess.run(["make", "-s", "-C", ROOT] + keep + ["demo", "SERVE=0", "LOGDIR=" + logdir,
                                                                "PY=" + sys.executable],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"trained in \d+ s: validation accuracy 0\.(9\d|8\d)", proc.stdout)
    (run,) = os.listdir(logdir)  # named by its learning rate and start time
    assert re.fullmatch(r"lr0\.01_seed\d+_\d{8}-\d{6}", run), run
    validation = plugin_accumulator(os.path.join(logdir, run, "accuracy", "validation")).Tensors("accuracy")
    assert [e.step for e in validation] == list(range(1, 11))


def test_the_demo_serves_its_run_and_prints_the_url_on_a_free_port(tmp_path):
    """A second demo while the first still serves (its port taken): on 802362c it trained, then
    failed to bind and ended in `make: *** Error 255`. It finds the port busy before training and
    serves on a free one."""
    import socket

    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "mxboard.demo", "--logdir", str(tmp_path / "run"),
                             "--epochs", "1", "--batches", "2", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, found = [], threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            if "http://127.0.0.1:" in line:
                found.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert found.wait(120), "".join(lines)
        import json
        import urllib.request

        printed = "".join(lines)
        url, token = banner_url(next(line for line in lines if "http://127.0.0.1:" in line))
        assert url.startswith("http://127.0.0.1:") and url != "http://127.0.0.1:%d" % port
        assert printed.index("port %d is busy" % port) < printed.index("epoch 1:") < printed.index(url)  # in order
        with urllib.request.urlopen(authorized(url + "/data/runs", token), timeout=30) as response:
            runs = json.loads(response.read())
        assert any(re.fullmatch(r"lr0\.01_seed\d+_\d{8}-\d{6}", run) for run in runs), runs  # a run with a name
    finally:
        busy.close()
        proc.terminate()
        proc.wait(30)
        proc.stdout.close()


def test_the_demo_says_what_it_wants_of_a_bad_epochs():
    """On 802362c `--epochs 0` ended in an UnboundLocalError traceback, and --help stopped
    mid-sentence."""
    done = subprocess.run([sys.executable, "-m", "mxboard.demo", "--epochs", "0"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "argument --epochs: '0': a whole number of 1 or more" in done.stderr
    assert "Traceback" not in done.stderr
    shown = subprocess.run([sys.executable, "-m", "mxboard.demo", "--help"], capture_output=True, text=True,
                           timeout=120).stdout
    assert "(a UCI data set; nothing is downloaded)" in " ".join(shown.split())


def _demo(*args, **popen):
    return subprocess.Popen([sys.executable, "-m", "mxboard.demo"] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **popen)


def test_gradients_of_the_two_cnns_are_alike(tmp_path):
    """The MXNet and the numpy CNN log the same quantity: the gradient of the batch's mean loss
    (on a92d861 the MXNet one logged the sum over the batch: 64 times larger, histograms that
    looked unrelated side by side). Eight batches of each: a 64-fold difference shows in the first."""
    spreads = {}
    for framework in ("mxnet", "numpy"):
        logdir = str(tmp_path / framework)
        subprocess.run([sys.executable, "-m", "mxboard.demo", "--logdir", logdir, "--run", "r", "--epochs", "1",
                        "--batches", "8", "--histogram-every", "1", "--framework", framework, "--seed", "3",
                        "--no-serve"],
                       check=True, timeout=300, capture_output=True)
        acc = plugin_accumulator(os.path.join(logdir, "r"))
        for tag in ("gradients/digits_conv0_bias", "gradients/digits_dense1_bias", "gradients/digits_dense1_weight"):
            buckets = [values for _, values in tensor_values(acc, tag)]
            spreads[framework, tag] = max(max(abs(b[0, 0]), abs(b[-1, 1])) for b in buckets)  # the widest |gradient|
    for tag in ("gradients/digits_conv0_bias", "gradients/digits_dense1_bias", "gradients/digits_dense1_weight"):
        ratio = spreads["mxnet", tag] / spreads["numpy", tag]
        assert 1 / 4 < ratio < 4, (tag, spreads)


def test_ctrl_c_during_training_says_what_was_kept_in_one_line(tmp_path):
    """On a92d861 a Ctrl-C printed a 20-line KeyboardInterrupt traceback ending inside mxboard, and
    nothing said that everything up to then was saved."""
    proc = _demo("--logdir", str(tmp_path), "--run", "r", "--epochs", "1000", "--framework", "numpy", "--no-serve")
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("epoch 2:"):
            proc.send_signal(signal.SIGINT)
            break
    rest, _ = proc.communicate(timeout=60)
    said = "".join(lines) + rest
    assert proc.returncode == 130, said
    assert "Traceback" not in said and "KeyboardInterrupt" not in said, said
    (stop,) = [line for line in rest.splitlines() if "Ctrl-C" in line]
    epoch = int(re.search(r"stopped during epoch (\d+) \(Ctrl-C\)", stop).group(1))
    assert epoch >= 3 and "everything logged so far is in %s" % os.path.join(str(tmp_path), "r") in stop
    acc = plugin_accumulator(os.path.join(str(tmp_path), "r"))
    assert len(acc.Tensors("loss/batch")) >= 2 * 23  # every batch up to the stop was written


@pytest.mark.timeout(stress(240, 900))
def test_two_demos_started_together_both_serve_on_ports_of_their_own(tmp_path):
    """Started in the same second, on one port: on a92d861 the second trained, then failed with
    upstream's double message and `make: *** Error 255` (or said "pass another --port" to a make
    user). Both serve now, on different ports; the one that fell back says so in make's terms."""
    import json
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(os.environ, MXBOARD_PORT_HINT="make demo PORT=N")
    for attempt in range(PAIRS):
        demos = [_demo("--logdir", str(tmp_path / str(attempt)), "--epochs", "1", "--batches", "1", "--framework",
                       "numpy", "--port", str(port), env=env) for _ in range(2)]
        said = ["", ""]
        try:
            urls = []
            for i, demo in enumerate(demos):
                for line in demo.stdout:
                    said[i] += line
                    found = banner_url(line) if "http://127.0.0.1:" in line else None
                    if found:
                        urls.append(found)
                        break
                assert found, said[i]
            assert len({url for url, _ in urls}) == 2, said
            for url, token in urls:
                with urllib.request.urlopen(authorized(url + "/data/runs", token), timeout=30) as response:
                    assert json.loads(response.read())
            moved = [s for s in said if "is in use" in s]
            assert len(moved) == 1 and "(to choose: make demo PORT=N)" in moved[0], said
            assert "a TensorBoard already serving its logdir shows it too" in moved[0]
        finally:
            for demo in demos:
                demo.terminate()
                demo.wait(30)
                demo.stdout.close()


PAIRS = stress(3, 20)  # a pair takes 5 s on a quiet machine, 7-25 s beside a busy load


def _stop_at_the_first_epoch(proc, kill):
    """Ctrl-C once the first epoch is logged; (every line said, the exit status)."""
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("epoch 1:"):
            kill(signal.SIGINT)
            break
    rest, _ = proc.communicate(timeout=120)
    return "".join(lines) + rest, proc.returncode


def _served(args, cwd, env):
    """The run names that the server started by `args` serves (it is stopped after)."""
    import json
    import urllib.request

    proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            served = banner_url(line)
            if served:
                url, token = served
                with urllib.request.urlopen(authorized(url + "/data/runs", token), timeout=30) as answer:
                    return json.loads(answer.read())
        raise AssertionError("no server: %s" % "".join(lines))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=60)


def test_the_ctrl_c_hint_of_make_demo_names_a_make_target_that_serves_the_run(tmp_path):
    """On a6ab6a5 the line said `serve it: tensorboard --logdir DIR`, and `tensorboard` is not on a
    make user's PATH (it is in the venv make built). It names `make tensorboard LOGDIR=DIR`, which serves."""
    base = ".base-%d.%d" % sys.version_info[:2]
    keep = [arg for stamp in (base, ".demo", ".mxboard") for arg in ("-o", os.path.join(".venv", stamp))]
    make = ["make", "-s", "-C", ROOT] + keep + ["PY=" + sys.executable]
    env = dict(os.environ, PATH="/usr/local/bin:/usr/bin:/bin")  # as a user's shell: the venv not activated
    proc = subprocess.Popen(make + ["demo", "SERVE=0", "LOGDIR=" + str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    said, status = _stop_at_the_first_epoch(proc, lambda sig: os.killpg(proc.pid, sig))  # a terminal's Ctrl-C
    (stop,) = [line for line in said.splitlines() if "Ctrl-C" in line]
    assert stop.endswith("(serve it: make tensorboard LOGDIR=%s)" % tmp_path), said
    # make, interrupted itself, ends by the signal and adds no "make: *** [demo] Interrupt"
    assert "make: ***" not in said and status == -signal.SIGINT, (status, said)
    (run,) = os.listdir(tmp_path)
    assert run in _served(make + ["tensorboard", "LOGDIR=" + str(tmp_path), "PORT=0"], ROOT, env)


def test_the_ctrl_c_hint_of_the_demo_names_the_venvs_own_tensorboard(tmp_path):
    """`python -m mxboard.demo` with the venv's Python by its path, from the checkout's root (the
    venv not activated): the hint names the venv's `tensorboard` by its path, and it serves."""
    env = dict(os.environ, PATH="/usr/local/bin:/usr/bin:/bin")
    env.pop(SERVE_HINT, None)
    proc = _demo("--logdir", str(tmp_path), "--run", "r", "--epochs", "100", "--framework", "numpy", "--no-serve",
                 cwd=ROOT, env=env)
    said, status = _stop_at_the_first_epoch(proc, proc.send_signal)
    assert status == 130, said
    (stop,) = [line for line in said.splitlines() if "Ctrl-C" in line]
    command = re.search(r"\(serve it: (.*)\)$", stop).group(1)
    venv_tensorboard = os.path.relpath(os.path.join(os.path.dirname(sys.executable), "tensorboard"), ROOT)
    assert command == "%s --logdir %s" % (venv_tensorboard, tmp_path), said
    assert "r" in _served(shlex.split(command) + ["--port", "0"], ROOT, env)


def test_the_demo_run_from_the_checkouts_root_serves_with_the_installed_bundle(tmp_path):
    """On a6ab6a5 `python -m mxboard.demo` run from the checkout's root (a venv with mxboard
    installed, no PYTHONSAFEPATH) trained, then failed at serving: `-m` put the working directory
    first on sys.path, and the checkout's unbuilt tensorboard_bundle/ shadowed the installed one."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "PYTHONPATH", SERVE_HINT)}
    args = [sys.executable, "-m", "mxboard.demo", "--logdir", str(tmp_path), "--run", "r", "--epochs", "1",
            "--batches", "2", "--framework", "numpy", "--port", "0"]
    assert "r" in _served(args, ROOT, env)


# As the Makefile's demo target runs it: its hints in the environment, -I, the installed bundle.
AS_MAKE_RUNS_IT = {"MXBOARD_PORT_HINT": "make demo PORT=N", "MXBOARD_SERVE_HINT": "make tensorboard LOGDIR={}"}


def _in_the_launchers_main(pid):
    """Whether the process `pid` has become the bundle's TensorBoard (the demo's exec) and runs
    the launcher's main(): numpy's core, which only main()'s imports load after the exec, is in
    its memory. TensorBoard's start-up has seconds to go then (its plugins, the data server)."""
    try:
        with open("/proc/%d/cmdline" % pid) as f:
            command = f.read()
        with open("/proc/%d/maps" % pid) as f:
            return "tensorboard_bundle" in command and "_multiarray_umath" in f.read()
    except OSError:
        return False


def _ctrl_c_at(phase, command, cwd):
    """Run `command` (the demo, serving) in a session of its own, and send its process group a
    Ctrl-C (SIGINT, as a terminal does: the data server gets it too) once it reaches `phase`:
    "start-up" (TensorBoard's, after the exec) or "serving" (its URL said). Returns (every line
    it said, the lines after the phase began, the exit status)."""
    env = dict(os.environ, **AS_MAKE_RUNS_IT)
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if phase == "start-up" and line.startswith("starting TensorBoard"):
                deadline = time.monotonic() + 60
                while not _in_the_launchers_main(proc.pid):
                    assert proc.poll() is None and time.monotonic() < deadline, "".join(lines)
                    time.sleep(0.002)
                break
            if phase == "serving" and "http://127.0.0.1:" in line:
                break
        began = len(lines)
        os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    said = "".join(lines) + rest
    return said, [line for line in said.splitlines()[began:] if line.strip()], proc.returncode


@pytest.mark.parametrize("phase", ["start-up", "serving"])
def test_ctrl_c_while_tensorboard_starts_or_serves_says_what_was_kept_in_one_line(tmp_path, phase):
    """Issue 69: a Ctrl-C during TensorBoard's start-up printed a 40-line KeyboardInterrupt
    traceback through launcher.py and dataclasses; while serving, nothing at all (werkzeug took
    the KeyboardInterrupt), and under make only make's "Interrupt". Each says one line now: what
    stopped, where the run is saved and how to serve it again; the exit status is 130."""
    command = [sys.executable, "-I", "-m", "mxboard.demo", "--logdir", str(tmp_path), "--epochs", "1", "--batches",
               "1", "--framework", "numpy", "--port", "0"]
    said, after, status = _ctrl_c_at(phase, command, str(tmp_path))
    assert "Traceback" not in said and "KeyboardInterrupt" not in said, said
    (run,) = os.listdir(tmp_path)
    what = "TensorBoard stopped" if phase == "serving" else "stopped while TensorBoard started"
    # nothing after it but that one line: no note of the data server's end, no traceback
    assert after == ["%s (Ctrl-C): the run is saved in %s (serve it: make tensorboard LOGDIR=%s)"
                     % (what, os.path.join(str(tmp_path), run), tmp_path)], said
    assert status == 130, said
    if phase == "start-up":
        assert "http://" not in said, said  # stopped before it served


def test_ctrl_c_while_make_demo_serves_says_one_line_and_make_nothing(tmp_path):
    """`make demo`, serving: on a6ab6a5 the only line was `make: *** [Makefile:116: demo]
    Interrupt`. The demo's line now, and nothing of make's: make ends by the signal, as a
    terminal's Ctrl-C ends it."""
    base = ".base-%d.%d" % sys.version_info[:2]
    keep = [arg for stamp in (base, ".demo", ".mxboard") for arg in ("-o", os.path.join(".venv", stamp))]
    command = ["make", "-s", "-C", ROOT] + keep + ["PY=" + sys.executable, "demo", "LOGDIR=" + str(tmp_path),
                                                   "PORT=0"]
    said, after, status = _ctrl_c_at("serving", command, ROOT)
    (run,) = os.listdir(tmp_path)
    assert after == ["TensorBoard stopped (Ctrl-C): the run is saved in %s (serve it: make tensorboard LOGDIR=%s)"
                     % (os.path.join(str(tmp_path), run), tmp_path)], said
    assert status == -signal.SIGINT, said


def test_ctrl_c_while_make_tensorboard_serves_ends_without_makes_interrupt_line(tmp_path):
    """`make tensorboard`, serving, ended a Ctrl-C with make's `make: *** [Makefile:...: tensorboard]
    Interrupt` (where `make demo` ended clean): TensorBoard's own line now, and nothing of make's."""
    with SummaryWriter(str(tmp_path / "run")) as writer:
        writer.add_scalar("loss", 1.0, 0)
    base = ".base-%d.%d" % sys.version_info[:2]
    keep = [arg for stamp in (base, ".demo", ".mxboard") for arg in ("-o", os.path.join(".venv", stamp))]
    command = ["make", "-s", "-C", ROOT] + keep + ["tensorboard", "LOGDIR=" + str(tmp_path), "PORT=0"]
    said, after, status = _ctrl_c_at("serving", command, ROOT)
    assert "make: ***" not in said and "Traceback" not in said and "KeyboardInterrupt" not in said, said
    assert len(after) == 1 and after[0].startswith("TensorBoard stopped (Ctrl-C)"), said
    assert status == -signal.SIGINT, said
