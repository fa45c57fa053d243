"""`python -m mxboard run` and `mxboard.patch()` (mxboard/_patch/) with the libraries people train
with: each script runs twice in a child Python, once with the library's own writer (`python
script.py`) and once under `python -m mxboard run` (or with `mxboard.patch()`). The writer must be
mxboard's in the second, and the runs, tags, steps and values (but for durations and rates) the
same as TensorBoard's loader reads them. Then what `run` must keep as Python has it: the exit
status, the traceback, child Pythons (spawn, forkserver, subprocess), Python's messages for bad
input. The children import the installed mxboard, whose .pth file patches child Pythons."""
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
from test_integrations import assert_same_logdirs, hparams_of

from conftest import accumulator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def needs(*modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(bool(missing), reason="%s not installed (make libraries)"
                                                    % ", ".join(missing))


def python(*args, cwd, timeout=240):
    """`python ARGS` in `cwd`, with this environment but MXBOARD_PATCH; the CompletedProcess."""
    env = {k: v for k, v in os.environ.items() if k != "MXBOARD_PATCH"}
    return subprocess.run([sys.executable, *args], cwd=str(cwd), env=env, capture_output=True, text=True,
                          timeout=timeout)


def side_by_side(tmp_path, script, run=("-m", "mxboard", "run"), timeout=240):
    """The script run with its library's writer (logdir `own/`), then under `run` (`ours/`),
    each within `timeout` seconds; returns (own folder, our folder, what each printed last as JSON)."""
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    printed = []
    for name, prefix in (("own", ()), ("ours", run)):
        done = python(*prefix, str(path), str(tmp_path / name), cwd=tmp_path, timeout=timeout)
        assert done.returncode == 0, (name, done.stdout[-3000:], done.stderr[-3000:])
        printed.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return tmp_path / "own", tmp_path / "ours", printed


# -- Stable-Baselines3 ------------------------------------------------------------------------------

SB3 = """
import json, sys
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import HParam

torch.set_num_threads(1)
if sys.argv[2:] == ["patch"]:  # after SB3 bound torch's SummaryWriter in its logger module
    import mxboard
    mxboard.patch()


class Extras(BaseCallback):
    # SB3's own ways to log beyond its scalars: hparams (through file_writer.add_summary) and text
    def _on_training_start(self):
        only = ("stdout", "log", "json", "csv")
        self.logger.record("hparams", HParam({"algorithm": "PPO", "n_steps": 256}, {"rollout/ep_len_mean": 0.0}),
                           exclude=only)
        self.logger.record("notes", "CartPole, seeded", exclude=only)

    def _on_step(self):
        return True


model = PPO("MlpPolicy", "CartPole-v1", n_steps=256, batch_size=64, n_epochs=2, seed=0, device="cpu",
            tensorboard_log=sys.argv[1])
model.learn(total_timesteps=2048, callback=Extras())
(output,) = [f for f in model.logger.output_formats if type(f).__name__ == "TensorBoardOutputFormat"]
print(json.dumps({"writer": type(output.writer).__module__}))
"""

# SB3's durations and rates differ from run to run
TIMED = ("fps", "time_elapsed")


@needs("torch", "stable_baselines3", "gymnasium")
def test_stable_baselines3_ppo_under_run_writes_what_its_own_writer_does(tmp_path):
    own, ours, (theirs, mine) = side_by_side(tmp_path, SB3)
    assert theirs["writer"] == "torch.utils.tensorboard.writer"
    assert mine["writer"] == "mxboard._patch.stand_ins"
    tags = assert_same_logdirs(own, ours, timed=TIMED)
    assert list(tags) == ["PPO_1"] and "rollout/ep_rew_mean" in tags["PPO_1"]["scalars"]
    assert tags["PPO_1"]["tensors"] == ["notes"]  # `notes/text_summary` in both


@needs("torch", "stable_baselines3", "gymnasium")
def test_stable_baselines3_with_patch_called_after_its_import_writes_through_mxboard(tmp_path):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(SB3))
    done = python(str(path), str(tmp_path / "own"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    done = python(str(path), str(tmp_path / "ours"), "patch", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["writer"] == "mxboard._patch.stand_ins"
    assert_same_logdirs(tmp_path / "own", tmp_path / "ours", timed=TIMED)


# -- PyTorch Ignite ---------------------------------------------------------------------------------

IGNITE = """
import json, sys
import torch
from ignite.engine import Events, create_supervised_evaluator, create_supervised_trainer
from ignite.handlers.tensorboard_logger import (GradsHistHandler, GradsScalarHandler, TensorboardLogger,
                                                WeightsHistHandler, WeightsScalarHandler, global_step_from_engine)
from ignite.metrics import Loss, MeanAbsoluteError

torch.manual_seed(0)
torch.set_num_threads(1)
x = torch.randn(256, 8)
y = x @ torch.randn(8, 1) + 0.1 * torch.randn(256, 1)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
trainer = create_supervised_trainer(model, optimizer, torch.nn.MSELoss())
evaluator = create_supervised_evaluator(model, metrics={"mse": Loss(torch.nn.MSELoss()), "mae": MeanAbsoluteError()})
trainer.add_event_handler(Events.EPOCH_COMPLETED, lambda engine: evaluator.run(data))

logger = TensorboardLogger(log_dir=sys.argv[1])  # tensorboardX's writer where it is installed, else torch's
logger.attach_output_handler(trainer, event_name=Events.ITERATION_COMPLETED(every=2), tag="training",
                             output_transform=lambda loss: {"batchloss": loss})
logger.attach_output_handler(evaluator, event_name=Events.EPOCH_COMPLETED, tag="validation",
                             metric_names=["mse", "mae"], global_step_transform=global_step_from_engine(trainer))
logger.attach_opt_params_handler(trainer, event_name=Events.ITERATION_STARTED(every=4), optimizer=optimizer)
for handler in (WeightsScalarHandler, WeightsHistHandler, GradsScalarHandler, GradsHistHandler):
    logger.attach(trainer, log_handler=handler(model), event_name=Events.EPOCH_COMPLETED)
trainer.run(data, max_epochs=3)
logger.close()
print(json.dumps({"writer": type(logger.writer).__module__}))
"""


@needs("torch", "ignite")
def test_ignite_tensorboard_logger_under_run_writes_what_its_own_writer_does(tmp_path):
    own, ours, (theirs, mine) = side_by_side(tmp_path, IGNITE)
    assert theirs["writer"] == "tensorboardX.writer"
    assert mine["writer"] == "mxboard._patch.stand_ins"
    # The last layer's bias is one number: mxboard draws a histogram of one value as a bucket of
    # width 1 around it (its min and max half a unit out), tensorboardX as a point.
    alone = ("weights/2/bias", "grads/2/bias")
    tags = assert_same_logdirs(own, ours, skip_tags=alone)
    assert "validation/mse" in tags["."]["scalars"] and "weights/0/weight" in tags["."]["histograms"]
    a, b = accumulator(own), accumulator(ours)
    for tag in alone:
        ha, hb = a.Histograms(tag), b.Histograms(tag)
        assert [(e.step, e.histogram_value.num) for e in hb] == [(e.step, e.histogram_value.num) for e in ha]
        assert [e.histogram_value.sum for e in hb] == pytest.approx([e.histogram_value.sum for e in ha], rel=1e-6)


# -- skorch -----------------------------------------------------------------------------------------

SKORCH = """
import json, sys
import numpy as np
import torch
from sklearn.datasets import make_classification
from skorch import NeuralNetClassifier
from skorch.callbacks import TensorBoard
from torch.utils.tensorboard import SummaryWriter

torch.manual_seed(0)
torch.set_num_threads(1)
x, y = make_classification(n_samples=400, n_features=10, n_informative=6, random_state=0)
x, y = x.astype(np.float32), y.astype(np.int64)


class Histograms(TensorBoard):
    # skorch's documented way to log more than its history: the callback's writer, at each epoch's end.
    def on_epoch_end(self, net, **kwargs):
        epoch = net.history[-1, "epoch"]
        self.writer.add_histogram("weights/first", net.module_[0].weight, global_step=epoch)
        self.writer.add_text("notes", "epoch %d" % epoch, global_step=epoch)
        super().on_epoch_end(net, **kwargs)


# The writer is the script's own, made as skorch's docs make it; skorch's callback closes it after training.
writer = SummaryWriter(log_dir=sys.argv[1])
module = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
net = NeuralNetClassifier(module, criterion=torch.nn.CrossEntropyLoss, max_epochs=5, lr=0.1, batch_size=32,
                          iterator_train__shuffle=True, callbacks=[Histograms(writer)], verbose=0)
net.fit(x, y)
print(json.dumps({"writer": type(writer).__module__}))
"""


@needs("torch", "skorch", "sklearn")
@pytest.mark.timeout(120)
def test_skorch_tensorboard_callback_under_run_writes_what_its_own_writer_does(tmp_path):
    own, ours, (theirs, mine) = side_by_side(tmp_path, SKORCH, timeout=90)
    assert theirs["writer"] == "torch.utils.tensorboard.writer"
    assert mine["writer"] == "mxboard._patch.stand_ins"
    # Each epoch's duration (`dur`) differs from run to run; the losses and accuracy are seeded.
    tags = assert_same_logdirs(own, ours, timed=("dur",))
    assert tags == {".": {"scalars": ["Loss/train_loss", "Loss/valid_acc", "Loss/valid_loss", "dur"],
                          "histograms": ["weights/first"], "images": [], "tensors": ["notes"]}}
    steps = [e.step for e in accumulator(ours).Scalars("Loss/valid_loss")]
    assert steps == [1, 2, 3, 4, 5]


# -- Ray Tune ---------------------------------------------------------------------------------------

RAY_TUNE = """
import json, os, shutil, sys, tempfile

# No token file in the home folder, and no usage report over the network.
os.environ.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
import numpy as np
import ray
from ray import tune
from ray.tune.logger import TBXLoggerCallback

root = os.path.abspath(sys.argv[1])


def trainable(config):
    # A linear regression fitted by gradient descent on data made from a seed. This runs in a Ray
    # worker, a Python the raylet starts (no fork of this one), whose own tensorboardX writer is
    # mxboard's only through MXBOARD_PATCH=1 and the wheel's .pth file.
    from tensorboardX import SummaryWriter

    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 4))
    y = x @ np.array([1.0, -2.0, 0.5, 3.0]) + 0.1 * rng.normal(size=128)
    w = np.zeros(4)
    with SummaryWriter(os.path.join(root, "worker", "lr=%g" % config["lr"])) as writer:
        for step in range(1, 6):
            w = w - config["lr"] * 2 * x.T @ (x @ w - y) / len(y)
            loss = float(np.mean((x @ w - y) ** 2))
            writer.add_scalar("loss", loss, step)
            # Tune's TBXLoggerCallback, in the driver, writes a number as a scalar, a list as a
            # histogram and an array of three dimensions as an image.
            tune.report({"loss": loss, "w": w.tolist(), "image": np.full((3, 4, 4), step / 5.0),
                         "writer": type(writer).__module__, "patch": os.environ.get("MXBOARD_PATCH")})


# Ray's sockets live in its temporary folder, whose path must stay short (a socket path has at most
# 107 bytes): one of its own in /tmp, removed at the end, rather than the test's.
temp = tempfile.mkdtemp(prefix="ray")
try:
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, _temp_dir=temp)
    callback = TBXLoggerCallback()
    # One worker runs both trials in turn (reuse_actors): one worker's start, not two.
    tuner = tune.Tuner(trainable, param_space={"lr": tune.grid_search([0.05, 0.1])},
                       tune_config=tune.TuneConfig(reuse_actors=True,
                                                   trial_dirname_creator=lambda trial: "lr=%g" % trial.config["lr"]),
                       run_config=tune.RunConfig(name="tune", storage_path=os.path.join(root, "storage"),
                                                callbacks=[callback], verbose=0))
    results = tuner.fit()
    ray.shutdown()
finally:
    shutil.rmtree(temp, ignore_errors=True)
print(json.dumps({"driver": callback._summary_writer_cls.__module__, "errors": len(results.errors),
                  "worker": sorted({r.metrics["writer"] for r in results}),
                  "patch": sorted({str(r.metrics["patch"]) for r in results}),
                  "apart": all(r.metrics["pid"] != os.getpid() for r in results)}))
"""


@needs("ray", "pyarrow", "tensorboardX")
@pytest.mark.timeout(150)
def test_ray_tune_under_run_writes_what_its_own_writers_do_in_the_driver_and_its_workers(tmp_path):
    """Tune's TBXLoggerCallback in the driver (patched by `run`) and a tensorboardX writer in the
    trainable, in a Ray worker process (patched through MXBOARD_PATCH=1, which `run` sets)."""
    own, ours, (theirs, mine) = side_by_side(tmp_path, RAY_TUNE, timeout=120)
    assert theirs == {"driver": "tensorboardX.writer", "errors": 0, "worker": ["tensorboardX.writer"],
                      "patch": ["None"], "apart": True}
    assert mine == {"driver": "mxboard._patch.stand_ins", "errors": 0, "worker": ["mxboard._patch.stand_ins"],
                    "patch": ["1"], "apart": True}
    # Tune's `time_this_iter_s` and `time_since_restore` differ from run to run; the rest is seeded.
    tags = assert_same_logdirs(own, ours, timed=("time_",))
    assert sorted(tags) == ["storage/tune/lr=0.05", "storage/tune/lr=0.1", "worker/lr=0.05", "worker/lr=0.1"]
    trial = tags["storage/tune/lr=0.1"]
    assert "ray/tune/loss" in trial["scalars"] and trial["histograms"] == ["ray/tune/w"]
    assert trial["images"] == ["ray/tune/image"] and tags["worker/lr=0.1"]["scalars"] == ["loss"]
    # The trial's hyperparameters, through file_writer.add_summary of tensorboardX's hparams() summaries.
    assert hparams_of(ours / "storage/tune/lr=0.1")[0] == {"lr": 0.1}
    assert [e.step for e in accumulator(ours / "storage/tune/lr=0.1").Scalars("ray/tune/loss")] == [1, 2, 3, 4, 5]


# -- Plain scripts of tensorboardX and torch ------------------------------------------------------

TENSORBOARDX = """
import json, os, sys
import numpy as np
from tensorboardX import FileWriter, GlobalSummaryWriter, SummaryWriter
from tensorboardX.summary import scalar

root = sys.argv[1]
rng = np.random.default_rng(0)
writer = SummaryWriter(os.path.join(root, "main"), flush_secs=30)
for step in range(20):
    writer.add_scalar("loss", 1.0 / (step + 1), step)
    writer.add_scalars("pair", {"a": step * 0.5, "b": -step * 0.25}, step)
    if step % 5 == 0:
        writer.add_histogram("weights", rng.normal(size=1000) + step, step)
        writer.add_image("image", rng.random((3, 8, 8)), step)
        writer.add_text("note", "step %d" % step, step)
writer.add_hparams({"lr": 0.1, "opt": "sgd"}, {"hparam/score": 0.5}, name="hp")
writer.file_writer.add_summary(scalar("raw", 3.0), 7)
writer._get_file_writer().add_summary(scalar("raw2", 4.0), 8)
logdir = writer.file_writer.get_logdir()
writer.flush()
writer.export_scalars_to_json(os.path.join(root, "scalars.json"))
writer.close()
files = FileWriter(os.path.join(root, "filewriter"))
files.add_summary(scalar("fw", 1.5), 3)
files.close()
shared = GlobalSummaryWriter(os.path.join(root, "global"))
for i in range(3):
    shared.add_scalar("g", float(i))
shared.close()
print(json.dumps({"writer": type(writer).__module__, "file_writer": type(files).__module__,
                  "logdir": os.path.relpath(logdir, root)}))
"""


def test_a_tensorboardx_script_under_run_writes_what_tensorboardx_does(tmp_path):
    own, ours, (theirs, mine) = side_by_side(tmp_path, TENSORBOARDX)
    assert theirs == {"writer": "tensorboardX.writer", "file_writer": "tensorboardX.writer", "logdir": "main"}
    assert mine == {"writer": "mxboard._patch.stand_ins", "file_writer": "mxboard._patch.stand_ins", "logdir": "main"}
    tags = assert_same_logdirs(own, ours)
    assert sorted(tags) == ["filewriter", "global", "main", "main/hp", "main/pair/a", "main/pair/b"]
    assert tags["main"]["scalars"] == ["loss", "raw", "raw2"] and tags["main"]["tensors"] == ["note"]
    exported = []
    for root in (own, ours):
        with open(root / "scalars.json") as f:
            exported.append({os.path.relpath(key, str(root)) for key in json.load(f)})
    assert exported[0] == {"main/pair/a", "main/pair/b"}  # tensorboardX's: add_scalars' only
    assert exported[1] == exported[0] | {"main/loss", "main/raw", "main/raw2", "main/hp/hparam/score"}  # every one


TORCH = """
import json, os, sys
import torch
from torch.utils.tensorboard import SummaryWriter
from torch.utils.tensorboard.summary import scalar

root = sys.argv[1]
torch.manual_seed(0)
writer = SummaryWriter(log_dir=os.path.join(root, "main"))
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
writer.add_graph(model, torch.zeros(2, 4))
for step in range(10):
    writer.add_scalar("loss/train", torch.tensor(1.0 / (step + 1)), step)
    writer.add_scalars("run/pair", {"a": step * 0.5, "b": torch.tensor(-step * 0.25)}, step)
    writer.add_histogram("w", model[0].weight, step)
writer.add_text("notes", "hello", 0)
writer.add_hparams({"lr": 0.1, "bs": 4}, {"hparam/acc": 0.9}, run_name="hp")
writer.add_hparams({"lr": 0.2, "bs": 8}, {"hparam/acc": 0.8})  # its run named by the time
writer._get_file_writer().add_summary(scalar("raw", 2.0), 3)
writer.file_writer.add_summary(scalar("raw2", 2.0), 4)
same = writer.get_logdir() == writer.log_dir == writer.file_writer.get_logdir()
writer.flush()
writer.close()
print(json.dumps({"writer": type(writer).__module__, "same_logdir": same}))
"""


@needs("torch")
def test_a_torch_script_under_run_writes_torchs_runs_and_tags(tmp_path):
    """torch's own layout: add_scalars' runs `<main_tag>_<name>` (a `/` written `_`), text under
    `<tag>/text_summary`, add_hparams' run the time unless named."""
    own, ours, (theirs, mine) = side_by_side(tmp_path, TORCH)
    assert theirs == {"writer": "torch.utils.tensorboard.writer", "same_logdir": True}
    assert mine == {"writer": "mxboard._patch.stand_ins", "same_logdir": True}
    tags = assert_same_logdirs(own, ours, name=lambda run: re.sub(r"^main/\d+\.\d+$", "main/<time>", run))
    assert sorted(tags) == ["main", "main/<time>", "main/hp", "main/run_pair_a", "main/run_pair_b"]
    assert tags["main/run_pair_a"]["scalars"] == ["run/pair"] and tags["main"]["tensors"] == ["notes"]


# -- The process, as Python has it ------------------------------------------------------------------

def test_a_program_keeps_its_exit_status_its_atexit_hooks_and_its_traceback_under_run(tmp_path):
    (tmp_path / "exits.py").write_text(textwrap.dedent("""
        import atexit, sys
        atexit.register(print, "atexit ran")
        print(sys.argv, __name__)
        sys.exit(3)
    """))
    done = python("-m", "mxboard", "run", "exits.py", "a", "--b", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (3, "['exits.py', 'a', '--b'] __main__\natexit ran\n")
    (tmp_path / "raises.py").write_text(textwrap.dedent("""
        import warnings
        warnings.warn("shown at this line", UserWarning)
        def f():
            raise ValueError("from the program")
        f()
    """))
    theirs = python("raises.py", cwd=tmp_path)
    ours = python("-m", "mxboard", "run", "raises.py", cwd=tmp_path)
    assert theirs.returncode == ours.returncode == 1
    assert ours.stderr == theirs.stderr  # the warning's file and line, the traceback's frames: the program's
    assert "mxboard" not in ours.stderr and "runpy" not in ours.stderr


def test_bad_input_to_run_gets_pythons_message_and_status(tmp_path):
    (tmp_path / "broken.py").write_text("x = (\n")
    for args in (["missing.py"], ["broken.py"], ["-m", "no_such_module"], ["-m", "json.no_such"], ["-m", "email"]):
        theirs = python(*args, cwd=tmp_path)
        ours = python("-m", "mxboard", "run", *args, cwd=tmp_path)
        assert (ours.returncode, ours.stderr) == (theirs.returncode, theirs.stderr), args
        assert theirs.returncode in (1, 2) and theirs.stderr
    done = python("-m", "mxboard", "run", cwd=tmp_path)
    assert done.returncode == 2 and "python -m mxboard run: error:" in done.stderr
    done = python("-m", "mxboard", "run", "-m", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("Argument expected for the -m option\n")


CHILDREN = """
import json, multiprocessing, os, subprocess, sys

def writer_in_child(queue):
    from torch.utils.tensorboard import SummaryWriter
    import tensorboardX
    writer = SummaryWriter(os.path.join(sys.argv[1], "pid%d" % os.getpid()))
    queue.put([type(writer).__module__, tensorboardX.SummaryWriter.__module__])
    writer.close()

class Writers:
    # A data set whose item is the module of a writer made in the DataLoader's worker.
    def __len__(self):
        return 1

    def __getitem__(self, i):
        from torch.utils.tensorboard import SummaryWriter
        writer = SummaryWriter(os.path.join(sys.argv[1], "worker%d" % os.getpid()))
        writer.close()
        return type(writer).__module__

def as_list(items):
    return items

if __name__ == "__main__":
    import torch
    loader = torch.utils.data.DataLoader(Writers(), num_workers=1, multiprocessing_context="spawn",
                                         collate_fn=as_list)
    found = {"DataLoader worker": next(iter(loader))}
    for method in ("spawn", "forkserver", "fork"):
        context = multiprocessing.get_context(method)
        queue = context.Queue()
        child = context.Process(target=writer_in_child, args=(queue,))
        child.start()
        found[method] = queue.get(timeout=120)
        child.join()
    code = "import sys, tensorboardX; print(tensorboardX.SummaryWriter.__module__, 'mxboard' in sys.modules)"
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    found["subprocess"] = said.stdout.split()
    code = "import sys; print('mxboard' in sys.modules, 'numpy' in sys.modules)"
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    found["imports nothing"] = said.stdout.split()
    print(json.dumps(found))
"""


@needs("torch")
def test_a_writer_made_in_a_child_python_is_mxboards(tmp_path):
    """A DataLoader's spawned worker, multiprocessing's spawn and forkserver, fork, and a subprocess
    of sys.executable; a child that imports neither library imports nothing of mxboard's (the
    wheel's .pth file waits for the import)."""
    (tmp_path / "children.py").write_text(textwrap.dedent(CHILDREN))
    done = python("-m", "mxboard", "run", "children.py", str(tmp_path / "runs"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    ours = ["mxboard._patch.stand_ins", "mxboard._patch.stand_ins"]
    assert found == {"DataLoader worker": ["mxboard._patch.stand_ins"], "spawn": ours, "forkserver": ours, "fork": ours,
                     "subprocess": ["mxboard._patch.stand_ins", "True"], "imports nothing": ["False", "False"]}
    assert len(os.listdir(tmp_path / "runs")) == 4


PATCHING = """
import sys, threading
import _mxboard_startup
import mxboard
from mxboard import _patch

threads = [threading.Thread(target=mxboard.patch) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
# one finder, the start-up module's, and one hook of each target, whatever the threads did
assert sum(f is _mxboard_startup._FINDER for f in sys.meta_path) == 1 and "tensorboardX" not in sys.modules
assert all(len(_mxboard_startup._HOOKS.after(name)) == 1 for name in _patch.TARGETS)
import tensorboardX
from tensorboardX import SummaryWriter
from tensorboardX.writer import FileWriter
assert SummaryWriter.__module__ == FileWriter.__module__ == "mxboard._patch.stand_ins"
assert issubclass(SummaryWriter, mxboard.SummaryWriter)
writer = SummaryWriter(sys.argv[1])
try:
    writer.default_bins
except AttributeError as exc:
    said = str(exc)
writer.close()
threads = [threading.Thread(target=mxboard.unpatch) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
assert not any(_mxboard_startup._HOOKS.after(name) for name in _patch.TARGETS) and not _patch.patched()
# every name bound to a stand-in while patched, this module's own among them, is the original again
assert SummaryWriter.__module__ == FileWriter.__module__ == "tensorboardX.writer"
assert tensorboardX.SummaryWriter.__module__ == "tensorboardX.writer"
mxboard.patch()  # after the import: replaced at once, wherever bound
assert SummaryWriter.__module__ == tensorboardX.writer.SummaryWriter.__module__ == "mxboard._patch.stand_ins"
mxboard.unpatch()
print(said)
"""


def test_patch_and_unpatch_are_idempotent_thread_safe_and_reach_names_bound_already(tmp_path):
    (tmp_path / "patching.py").write_text(textwrap.dedent(PATCHING))
    done = python("patching.py", str(tmp_path / "runs"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stdout.strip()
    assert said.startswith("'TensorboardXSummaryWriter' object has no attribute 'default_bins': ")
    assert "docs/any-library.md" in said and "\n" not in said


SWITCHED = """
import json, sys
import tensorboardX
print(json.dumps([tensorboardX.SummaryWriter.__module__, "mxboard" in sys.modules]))
"""


@needs("tensorboardX")
@pytest.mark.parametrize("value, patched", [("1", True), ("true", True), ("Yes", True), (" on ", True),
                                            ("0", False), ("false", False), ("off", False), ("", False)])
def test_mxboard_patch_is_read_as_every_switch_is(tmp_path, value, patched):
    """MXBOARD_PATCH=true was ignored (only 1 counted) where every other switch of mxboard's takes 1,
    true, yes and on (any case): the wheel's .pth file reads it by that rule now, and an off word
    imports nothing of mxboard's."""
    env = {k: v for k, v in os.environ.items() if k != "MXBOARD_PATCH"}
    env["MXBOARD_PATCH"] = value
    done = subprocess.run([sys.executable, "-c", SWITCHED], cwd=str(tmp_path), env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    module, imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert (module == "mxboard._patch.stand_ins") is patched and imported is patched, (value, module, imported)
