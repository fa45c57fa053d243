"""mxboard's integrations (mxboard/integrations/) in real, tiny trainings, each side by side with
the framework's own TensorBoard writer on the same seeded run: the same runs, tags, kinds, steps
and values, as TensorBoard's loader reads them. The trainings run one after another in one child
Python (the frameworks' imports and warnings stay out of the test process, and are paid once: six
children took 45-75 s each beside a busy load), each script in a folder of its own, which holds the
framework's logdir and mxboard's; each test checks its own script's."""
import importlib.util
import json
import os
import re
import textwrap

import pytest
from tensorboard.plugins.hparams import plugin_data_pb2

from conftest import ROOT, accumulator, event_files, run_python, tb_events

# the first test waits for every training; the file's tests on one worker, handed out first (tests/scheduling.py)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.xdist_group("trainings")]


def needs(*modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(bool(missing), reason="%s not installed (pip install 'mxboard[trainers]')"
                              % ", ".join(missing))


def runs(root, name=lambda run: run):
    """{name(run): its directory} of every run below root (a directory of event files, as
    TensorBoard finds runs; `run` its path below root)."""
    found = {}
    for directory, _, names in os.walk(str(root)):
        if any("tfevents" in n for n in names):
            found[name(os.path.relpath(directory, str(root)))] = directory
    return found


def hparams_of(run):
    """The run's hyperparameters and metric tags, from the hparams plugin's data in its events."""
    values, metrics = {}, set()
    for path in event_files(run):
        for event in tb_events(path):
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name != "hparams":
                    continue
                data = plugin_data_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
                if data.HasField("session_start_info"):
                    for name, v in data.session_start_info.hparams.items():
                        values[name] = v.WhichOneof("kind") and getattr(v, v.WhichOneof("kind"))
                if data.HasField("experiment"):
                    metrics |= {m.name.tag for m in data.experiment.metric_infos}
    return values, metrics


KINDS = ("scalars", "histograms", "images", "tensors", "graph")


def tensor_tags(tags):
    """Texts and other tensors' tags, as the dashboards name them: torch's writer tags a text
    `<tag>/text_summary` (TensorFlow 1's name), mxboard `<tag>`; the hparams' three summaries
    (which TensorBoard's loader shows only where they hold a tensor, as mxboard's do) are
    compared by hparams_of instead."""
    return sorted(t[:-len("/text_summary")] if t.endswith("/text_summary") else t
                  for t in tags if not t.startswith("_hparams_/"))


def assert_same_logdirs(theirs, ours, rel=1e-5, skip_tags=(), timed=(), name=lambda run: run):
    """The two logdirs as TensorBoard reads them: the same runs (their paths as `name` gives
    them); in each, the same tags of each kind with the same steps and values (scalars within
    `rel`, histograms' count, sum and range, images' sizes), the same graph presence and
    hyperparameters. A scalar whose tag contains one of `timed` (a duration, a rate) is compared
    by its steps only. Returns the runs' tags."""
    their_runs, our_runs = runs(theirs, name), runs(ours, name)
    assert sorted(our_runs) == sorted(their_runs)
    seen = {}
    for run in their_runs:
        a, b = accumulator(their_runs[run]), accumulator(our_runs[run])
        ta, tb = a.Tags(), b.Tags()
        for kind in KINDS:
            if kind == "graph":
                assert tb[kind] == ta[kind], run
            elif kind == "tensors":
                assert tensor_tags(tb[kind]) == tensor_tags(ta[kind]), run
            else:
                assert sorted(set(tb[kind]) - set(skip_tags)) == sorted(set(ta[kind]) - set(skip_tags)), (run, kind)
        for tag in set(ta["scalars"]) - set(skip_tags):
            sa, sb = a.Scalars(tag), b.Scalars(tag)
            assert [e.step for e in sb] == [e.step for e in sa], (run, tag)
            if not any(word in tag for word in timed):
                assert [e.value for e in sb] == pytest.approx([e.value for e in sa], rel=rel, abs=1e-6), (run, tag)
        for tag in set(ta["histograms"]) - set(skip_tags):
            ha, hb = a.Histograms(tag), b.Histograms(tag)
            assert [e.step for e in hb] == [e.step for e in ha], (run, tag)
            for ea, eb in zip(ha, hb):
                va, vb = ea.histogram_value, eb.histogram_value
                assert (vb.num, vb.min, vb.max, vb.sum) == pytest.approx((va.num, va.min, va.max, va.sum),
                                                                         rel=rel, abs=1e-5), (run, tag)
        for tag in set(ta["images"]) - set(skip_tags):
            ia, ib = a.Images(tag), b.Images(tag)
            assert [(e.step, e.width, e.height) for e in ib] == [(e.step, e.width, e.height) for e in ia], (run, tag)
        assert hparams_of(our_runs[run]) == hparams_of(their_runs[run]), run
        seen[run] = {kind: sorted(tb[kind]) for kind in KINDS if kind != "graph"}
        seen[run]["tensors"] = tensor_tags(tb["tensors"])
    return seen


RUNNER = """
import contextlib, io, json, os, runpy, sys, traceback
saved = dict(os.environ)
for path, out, env in json.loads(os.environ["SCRIPTS"]):
    os.environ.clear()  # each script's environment its own (one sets TENSORBOARD_LOGGING_DIR)
    os.environ.update(saved, **env, OUT=out)
    os.chdir(out)  # the docs page's examples write where they run
    if "keras" in sys.modules:  # Keras names layers once a process (dense, dense_1...): afresh, as a process would
        sys.modules["keras"].backend.clear_session()
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said):
            runpy.run_path(path, run_name="__main__")
        error = None
    except BaseException:  # one script's failure is its test's; the others still run
        error = traceback.format_exc()
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump({"stdout": said.getvalue(), "error": error}, f)
"""


@pytest.fixture(scope="module")
def trainings(request, tmp_path_factory):
    """Every training script of the tests selected in this module whose frameworks are installed,
    run in one child Python (Keras's first: `import tensorflow` fails from its start); returns
    {script's name: its folder}, its result.json the script's printed output or its traceback."""
    selected = {item.function.__name__ for item in request.session.items if item.module is request.module}
    chosen = [(name, script, env) for name, (test, script, modules, env) in SCRIPTS.items()
              if test.__name__ in selected and all(importlib.util.find_spec(m) for m in modules)]
    found, plan = {}, []
    for name, script, env in chosen:
        if name == "store":
            try:
                seaweed = request.getfixturevalue("seaweed")  # its variables set for this process and the child
            except pytest.skip.Exception:
                continue
            env = dict(env, URL="s3://" + seaweed.bucket("integrations-%d" % os.getpid()))
        out = tmp_path_factory.mktemp(name)
        (out / "script.py").write_text(textwrap.dedent(script))
        plan.append([str(out / "script.py"), str(out), env])
        found[name] = out
    if plan:
        # Keras's backend torch, whatever this process's environment says (the JAX test has its own child)
        run_python(RUNNER, env={"PYTHONWARNINGS": "ignore", "KERAS_BACKEND": "torch", "SCRIPTS": json.dumps(plan)},
                   timeout=540)
    return found


def train(trainings, name):
    """The script's folder and the JSON line it printed last (its traceback fails the test)."""
    out = trainings[name]
    with open(out / "result.json") as f:
        result = json.load(f)
    assert result["error"] is None, result["error"]
    return out, json.loads(result["stdout"].strip().splitlines()[-1])


# -- PyTorch Lightning -----------------------------------------------------------------------------

LIGHTNING = """
import json, os, sys
import torch
import lightning.pytorch as pl
from lightning.pytorch.loggers import TensorBoardLogger as Theirs
from lightning.pytorch.utilities.rank_zero import rank_zero_only
from mxboard.integrations.lightning import TensorBoardLogger as Ours
tmp = os.environ["OUT"]

class Net(pl.LightningModule):
    def __init__(self, lr=0.05, hidden=8, fail_at=None):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
        self.example_input_array = torch.zeros(2, 4)
    def forward(self, x):
        return self.net(x)
    def training_step(self, batch, i):
        if self.global_step == self.hparams.fail_at:
            raise RuntimeError("a failing step")
        loss = torch.nn.functional.mse_loss(self(batch[0]), batch[1])
        self.log("train_loss", loss)
        self.logger.experiment.add_histogram("weights", self.net[0].weight, self.global_step)
        return loss
    def validation_step(self, batch, i):
        self.log("val_loss", torch.nn.functional.mse_loss(self(batch[0]), batch[1]), prog_bar=True)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

def data():
    x = torch.randn(64, 4, generator=torch.Generator().manual_seed(1))
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)

def fit(logger, **hparams):
    pl.seed_everything(0, verbose=False)
    trainer = pl.Trainer(max_epochs=2, logger=logger, log_every_n_steps=2, enable_progress_bar=False,
                         enable_model_summary=False, enable_checkpointing=False, accelerator="cpu", devices=1)
    trainer.fit(Net(**hparams), data(), data())
    return trainer

for cls, where in ((Theirs, "theirs"), (Ours, "ours")):
    fit(cls(os.path.join(tmp, where), log_graph=True))
    fit(cls(os.path.join(tmp, where), name="tuned", version="best", prefix="p", default_hp_metric=False),
        lr=0.01)
ours = Ours(os.path.join(tmp, "failed"))
try:
    fit(ours, fail_at=5)
except RuntimeError:
    closed = ours._experiment.closed  # Lightning's finalize("failed") on its way out
# another rank than zero: nothing is made
rank_zero_only.rank = 1
other = Ours(os.path.join(tmp, "rank1"))
other.log_hyperparams({"a": 1}, {"m": 2.0})
other.log_metrics({"loss": 1.0}, 3)
other.experiment.add_scalar("x", 1.0, 0)
other.finalize("success")
rank_zero_only.rank = 0  # the child Python's next scripts are rank zero again
try:
    Ours(tmp, flush_sec=1)  # a misspelled writer argument
except TypeError as error:
    misspelled = str(error)
Ours(tmp, "named", flush_secs=1)  # Lightning's arguments and the writer's are taken
print(json.dumps({"closed": closed, "failed_dir": ours.log_dir, "misspelled": misspelled,
                  "rank1": os.path.exists(os.path.join(tmp, "rank1")), "type": type(ours._experiment).__module__}))
"""


@needs("lightning")
def test_lightning_logger_side_by_side(trainings):
    """Lightning's TensorBoardLogger and mxboard's, in the same seeded fits (a default logger with
    the graph, one with a name, a str version, a prefix, no hp_metric): the same directories and
    hparams.yaml, the same runs, tags, steps and values (the user's own add_histogram included);
    a fit ended by an exception closes mxboard's writer with every point in its file; on another rank
    than zero nothing is written."""
    out, found = train(trainings, "lightning")
    assert found["type"] == "mxboard._api.writer"
    for run in ("lightning_logs/version_0", "tuned/best"):
        with open(out / "theirs" / run / "hparams.yaml") as a, open(out / "ours" / run / "hparams.yaml") as b:
            assert b.read() == a.read()
    seen = assert_same_logdirs(out / "theirs", out / "ours")
    assert seen["lightning_logs/version_0"]["scalars"] == ["epoch", "hp_metric", "train_loss", "val_loss"]
    assert seen["lightning_logs/version_0"]["histograms"] == ["weights"]
    assert seen["tuned/best"]["scalars"] == ["p-epoch", "p-train_loss", "p-val_loss"]
    assert hparams_of(out / "ours" / "lightning_logs/version_0") == (
        {"lr": 0.05, "hidden": 8.0, "fail_at": "None"}, {"hp_metric"})
    assert accumulator(out / "ours" / "lightning_logs/version_0").Tags()["graph"]
    # an exception at step 5: the writer was closed by Lightning's finalize, steps 1 and 3 in the file
    assert found["closed"]
    assert found["failed_dir"] == str(out / "failed" / "lightning_logs" / "version_0")
    assert [e.step for e in accumulator(found["failed_dir"]).Scalars("train_loss")] == [1, 3]
    assert not found["rank1"]
    assert found["misspelled"] == (
        "mxboard.integrations.lightning.TensorBoardLogger() got an unexpected keyword argument 'flush_sec'. Did you "
        "mean 'flush_secs'? It takes its own arguments and mxboard.SummaryWriter's.")


# -- Hugging Face Trainer --------------------------------------------------------------------------

TRANSFORMERS = """
import json, os, socket
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments, set_seed
from transformers.integrations import TensorBoardCallback as Theirs
from transformers.trainer_callback import TrainerControl, TrainerState
from mxboard.integrations.transformers import TensorBoardCallback as Ours
tmp = os.environ["OUT"]

class Data(torch.utils.data.Dataset):  # token ids, the label their first one's parity
    def __init__(self, n):
        self.x = torch.randint(1, 50, (n, 8), generator=torch.Generator().manual_seed(n))
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return {"input_ids": self.x[i], "attention_mask": torch.ones(8, dtype=torch.long),
                "labels": int(self.x[i, 0] % 2)}

def train(callback, where):
    set_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, num_labels=2)
    args = TrainingArguments(os.path.join(tmp, where), report_to="none", logging_steps=2, max_steps=8,
                             eval_strategy="steps", eval_steps=4, per_device_train_batch_size=4, seed=0,
                             use_cpu=True, save_strategy="no", disable_tqdm=True)
    trainer = Trainer(BertForSequenceClassification(config), args, train_dataset=Data(32), eval_dataset=Data(8),
                      callbacks=[callback])
    trainer.train()
    closed = callback.tb_writer is None  # on_train_end closed it
    trainer.evaluate(Data(8), metric_key_prefix="test")  # after training: a writer again, as transformers'
    return args, closed

train(Theirs(), "theirs")
args, closed = train(Ours(), "ours")
# another process than rank zero: nothing is made
other = Ours()
state = TrainerState(is_world_process_zero=False)
args.output_dir = os.path.join(tmp, "rank1")
other.on_train_begin(args, state, TrainerControl())
other.on_log(args, state, TrainerControl(), logs={"loss": 1.0})
try:
    Ours(flush_sec=1)  # a misspelled writer argument
except TypeError as error:
    misspelled = str(error)
print(json.dumps({"closed": closed, "host": socket.gethostname(), "rank1": os.path.exists(args.output_dir),
                  "misspelled": misspelled}))
"""


@needs("transformers")
def test_transformers_callback_side_by_side(trainings):
    """transformers' TensorBoardCallback and mxboard's, each the only callback of the same seeded
    Trainer (a 2-layer BERT from a config, training with evaluations, then a test evaluation):
    the same logdir below output_dir (runs/<date>_<host>), the same tags and steps, equal values
    but for durations and rates, the same model_config text; the writer closed at the end of
    training; on another process than rank zero nothing is made."""
    out, found = train(trainings, "transformers")
    (theirs,), (ours,) = os.listdir(out / "theirs" / "runs"), os.listdir(out / "ours" / "runs")
    assert ours.endswith("_" + found["host"])
    seen = assert_same_logdirs(out / "theirs" / "runs" / theirs, out / "ours" / "runs" / ours,
                               timed=("runtime", "per_second"))
    assert {"train/loss", "train/grad_norm", "train/learning_rate", "train/epoch", "eval/loss", "test/loss",
            "train/train_loss"} <= set(seen["."]["scalars"])
    assert seen["."]["tensors"] == ["args", "model_config"]
    texts = [accumulator(out / where / "runs" / run).Tensors(tag)[0].tensor_proto.string_val
             for where, run, tag in (("theirs", theirs, "model_config/text_summary"), ("ours", ours, "model_config"))]
    assert texts[1] == texts[0] and b'"num_hidden_layers": 2' in texts[0][0]
    assert found["closed"] and not found["rank1"]
    assert found["misspelled"].startswith("mxboard.integrations.transformers.TensorBoardCallback() got an unexpected "
                                          "keyword argument 'flush_sec'. Did you mean 'flush_secs'?")


# -- Accelerate ------------------------------------------------------------------------------------

ACCELERATE = """
import json, os
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from mxboard.integrations.accelerate import TensorBoardTracker as Ours
tmp = os.environ["OUT"]

def train(accelerator):
    set_seed(0)
    accelerator.init_trackers("run", config={"lr": 0.1, "layers": 2, "name": "tiny", "shuffle": True})
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    x = torch.randn(64, 4, generator=torch.Generator().manual_seed(1))
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, data = accelerator.prepare(model, optimizer, data)
    for step, (inputs, targets) in enumerate(data):
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        accelerator.log({"loss": loss.detach(), "lr": 0.1, "step_kind": "sgd", "pair": {"a": step, "b": -step}},
                        step=step)
    tracker = accelerator.get_tracker("tensorboard", unwrap=False)
    accelerator.end_training()
    return tracker

train(Accelerator(log_with="tensorboard", project_dir=os.path.join(tmp, "theirs")))
tracker = train(Accelerator(log_with=[Ours("run", os.path.join(tmp, "ours"))]))
try:
    Ours("run", tmp, flush_sec=1)  # a misspelled writer argument
except TypeError as error:
    misspelled = str(error)
print(json.dumps({"name": tracker.name, "directory": tracker.requires_logging_directory,
                  "closed": tracker.tracker.closed, "type": type(tracker.tracker).__module__,
                  "misspelled": misspelled}))
"""


@needs("accelerate")
def test_accelerate_tracker_side_by_side(trainings):
    """Accelerate's TensorBoardTracker (log_with="tensorboard") and mxboard's (log_with=[it]) in
    the same seeded loop: the same runs (the run, its hparams' sub-run, hparams.yml), tags, steps
    and values of numbers, a loss tensor, a text and a dict of lines; the writer closed by
    end_training."""
    out, found = train(trainings, "accelerate")
    assert found.pop("misspelled").startswith("mxboard.integrations.accelerate.TensorBoardTracker() got an unexpected "
                                              "keyword argument 'flush_sec'. Did you mean 'flush_secs'?")
    assert found == {"name": "tensorboard", "directory": True, "closed": True, "type": "mxboard._api.writer"}

    def name(run):  # the hparams' sub-run is named by the time; torch names a line <tag>_<name>, mxboard <tag>/<name>
        return re.sub(r"^run/[0-9.]+$", "run/<time>", run).replace("pair/", "pair_")

    seen = assert_same_logdirs(out / "theirs", out / "ours", name=name)
    assert sorted(seen) == ["run", "run/<time>", "run/pair_a", "run/pair_b"]
    assert seen["run"]["scalars"] == ["loss", "lr"] and seen["run"]["tensors"] == ["step_kind"]
    assert hparams_of(runs(out / "ours", name)["run/<time>"])[0] == {
        "lr": 0.1, "layers": 2.0, "name": "tiny", "shuffle": True}
    (yml,) = [os.path.join(d, "hparams.yml") for d, _, files in os.walk(out / "ours") if "hparams.yml" in files]
    with open(yml) as f:
        assert "name: tiny" in f.read()


# -- Keras 3 ---------------------------------------------------------------------------------------

KERAS = """
import json, os, sys
sys.modules["tensorflow"] = None  # import tensorflow fails, as where it is not installed
os.environ.setdefault("KERAS_BACKEND", "torch")  # the test on JAX sets "jax"
import numpy as np
import keras
from mxboard.integrations.keras import TensorBoard
tmp = os.environ["OUT"]
found = {"backend": keras.backend.backend()}
try:
    keras.callbacks.TensorBoard(os.path.join(tmp, "keras_own")).set_model(keras.Sequential([keras.Input((1,))]))
except ImportError as error:
    found["keras_own"] = repr(error)

keras.utils.set_random_seed(0)
x = np.random.RandomState(0).randn(64, 4).astype("float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)],
                         name="net")
model.compile(keras.optimizers.SGD(0.02), "mse", metrics=["mae"])
history = model.fit(x, x.sum(1, keepdims=True), validation_split=0.25, epochs=3, batch_size=8, verbose=0,
                    callbacks=[TensorBoard(os.path.join(tmp, "fit"), histogram_freq=1, write_images=True,
                                           write_steps_per_second=True, update_freq=2)])
found["evaluate"] = model.evaluate(x, x.sum(1, keepdims=True), verbose=0, return_dict=True,
                                   callbacks=[TensorBoard(os.path.join(tmp, "fit"))])
found["history"] = history.history
found["weights"] = {w.path: [float(w.numpy().min()), float(w.numpy().max()), int(w.numpy().size)]
                    for w in model.weights}
found["json"] = model.to_json()
found["iterations"] = int(model.optimizer.iterations.numpy())

# embeddings with a labels file (one column) for the Projector
with open(os.path.join(tmp, "labels.tsv"), "w") as f:
    f.write("\\n".join("word%d" % i for i in range(10)))
words = keras.Sequential([keras.Input((3,), dtype="int32"), keras.layers.Embedding(10, 4, name="words"),
                          keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)])
words.compile("sgd", "mse")
words.fit(np.arange(30).reshape(10, 3) % 10, np.ones(10), epochs=2, verbose=0,
          callbacks=[TensorBoard(os.path.join(tmp, "words"), embeddings_freq=1,
                                 embeddings_metadata={"words": os.path.join(tmp, "labels.tsv")})])
found["embedding"] = words.get_layer("words").embeddings.numpy().tolist()
errors = []
for bad in ({"profile_batch": 2}, {"profile_batch": "1,3"}, {"update_freq": 0}, {"update_freq": "step"}):
    try:
        TensorBoard(tmp, **bad)
    except ValueError as error:
        errors.append(str(error))
found["errors"] = errors
# a misspelled argument, of the callback's or of the writer's, is refused at construction
misspelled = []
for bad in ({"histogram_frq": 1}, {"flush_sec": 1}, {"logdir": tmp}):
    try:
        TensorBoard(tmp, **bad)
    except TypeError as error:
        misspelled.append(str(error))
found["misspelled"] = misspelled
TensorBoard(tmp, flush_secs=1, max_queue=5)  # the writer's arguments are taken

# the op graph of a Functional model: two inputs, a layer called on each, a nested Sequential
a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
shared = keras.layers.Dense(4, name="shared")
inner = keras.Sequential([keras.layers.Dense(3, name="inside")], name="inner")
joined = keras.layers.Concatenate(name="joined")([shared(a), inner(shared(b))])
functional = keras.Model([a, b], keras.layers.Dense(1, activation="relu", name="out")(joined), name="two_inputs")
functional.compile("sgd", "mse")
functional.fit([x, x], x.sum(1, keepdims=True), epochs=1, batch_size=32, verbose=0,
               callbacks=[TensorBoard(os.path.join(tmp, "functional"))])
# the fixed training of tools/keras_fixture.py, which made the fixture with Keras's own callback
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tools"))
import keras_fixture
keras_fixture.train("mxboard", os.path.join(tmp, "fixed"))
print(json.dumps(found))
"""


@needs("keras")
def test_keras_callback_without_tensorflow(trainings, serve):
    """mxboard's Keras callback on the torch backend in a process where `import tensorflow` fails
    (Keras's own callback cannot run there): a fit with validation, histograms, images, steps per
    second and update_freq=2, then an evaluation, write Keras's runs, tags and steps with the values
    Keras reported (History, evaluate), the final weights' histograms, the model's conceptual graph
    and an op graph of its layers, which the bundled server's Graphs dashboard serves (a Functional
    model's too: two inputs, a shared layer, a nested model); embeddings reach the Projector with
    their labels; profile_batch, a bad update_freq and a misspelled argument are errors at
    construction, naming the alternatives. And a fixed training logs what Keras's own callback
    logged with TensorFlow (tests/fixtures/keras_tensorboard.json, from tools/keras_fixture.py):
    the same runs, tags, plugins, steps and values."""
    check_keras_training(*train(trainings, "keras"), serve, "torch")


@needs("keras", "jax")
def test_keras_callback_on_jax(keras_on_jax, serve):
    """The same on the JAX backend (its own child Python: a process has one Keras backend): the
    same runs, tags, steps and values as Keras reported, the graphs served, the fixed training
    the same as Keras's own callback's with TensorFlow."""
    check_keras_training(*train(keras_on_jax, "keras"), serve, "jax")


@pytest.fixture(scope="module")
def keras_on_jax(tmp_path_factory):
    """The Keras script run with KERAS_BACKEND=jax, in a child Python of its own; returns
    {"keras": its folder}."""
    out = tmp_path_factory.mktemp("keras_jax")
    (out / "script.py").write_text(textwrap.dedent(KERAS))
    plan = [[str(out / "script.py"), str(out), {"ROOT": ROOT, "KERAS_BACKEND": "jax"}]]
    run_python(RUNNER, env={"PYTHONWARNINGS": "ignore", "SCRIPTS": json.dumps(plan)}, timeout=400)
    return {"keras": out}


def served_op_graph(server, run):
    """{node: (op, inputs, output shapes)} of the run's op graph, as the Graphs dashboard gets it
    (pbtxt, parsed by TensorBoard's own GraphDef); Keras's numbered input layer names without
    their number."""
    from google.protobuf import text_format
    from tensorboard.compat.proto import graph_pb2

    _, text = server.get("/data/plugin/graphs/graph", {"run": run, "conceptual": "false"})
    graph = text_format.Parse(text.decode(), graph_pb2.GraphDef())

    def name(node):
        return re.sub(r"input_layer_\d+", "input_layer", node)

    return {name(node.name): (node.op, [name(i) for i in node.input],
                              [[d.size for d in shape.dim] for shape in node.attr["_output_shapes"].list.shape])
            for node in graph.node}


def check_keras_training(out, found, serve, backend):
    """What test_keras_callback_without_tensorflow says, of the Keras script's folder `out` and
    what it printed, `found`, on `backend`."""
    from conftest import projector_config

    assert found["backend"] == backend
    assert "tensorflow" in found["keras_own"]
    history, iterations = found["history"], found["iterations"]
    assert iterations == 18  # 48 training samples, batches of 8, 3 epochs
    train_run, validation = accumulator(out / "fit" / "train"), accumulator(out / "fit" / "validation")
    assert sorted(runs(out / "fit")) == ["train", "validation"]
    kernels = ["net/dense/kernel", "net/dense/bias", "net/dense_1/kernel", "net/dense_1/bias"]
    assert sorted(train_run.Tags()["scalars"]) == sorted(
        ["batch_loss", "batch_mae", "batch_steps_per_second", "epoch_loss", "epoch_mae", "epoch_learning_rate",
         "epoch_steps_per_second"])
    assert sorted(train_run.Tags()["histograms"]) == sorted(k + "/histogram" for k in kernels)
    # the images of Keras's rule: kernels and the hidden bias (the output's bias squeezes to a number)
    assert sorted(train_run.Tags()["images"]) == sorted(k + "/image" for k in kernels[:3])
    assert sorted(validation.Tags()["scalars"]) == sorted(
        ["epoch_loss", "epoch_mae", "evaluation_loss_vs_iterations", "evaluation_mae_vs_iterations"])

    def points(acc, tag):
        return [e.step for e in acc.Scalars(tag)], [e.value for e in acc.Scalars(tag)]

    for metric in ("loss", "mae"):
        assert points(train_run, "epoch_" + metric) == ([0, 1, 2], pytest.approx(history[metric], rel=1e-6))
        assert points(validation, "epoch_" + metric) == ([0, 1, 2], pytest.approx(history["val_" + metric], rel=1e-6))
        steps, values = points(validation, "evaluation_%s_vs_iterations" % metric)
        assert steps == [6, 12, 18, 18]  # after each epoch's validation, then evaluate()
        assert values == pytest.approx(history["val_" + metric] + [found["evaluate"][metric]], rel=1e-6)
        assert points(train_run, "batch_" + metric)[0] == list(range(2, 19, 2))
        assert points(train_run, "batch_" + metric)[1][2::3] == pytest.approx(history[metric], rel=1e-6)
    assert points(train_run, "epoch_learning_rate") == ([0, 1, 2], pytest.approx([0.02] * 3))
    assert all(v > 0 for v in points(train_run, "epoch_steps_per_second")[1])
    for kernel in kernels:
        (last, *_) = train_run.Histograms(kernel + "/histogram")[-1:]
        low, high, size = found["weights"][kernel]
        assert last.step == 2 and last.histogram_value.num == size
        if size > 1:  # one value: a bucket of width 1 around it, as TensorBoard draws one
            assert (last.histogram_value.min, last.histogram_value.max) == pytest.approx((low, high), rel=1e-6)
    image = train_run.Images("net/dense/kernel/image")[-1]
    assert (image.step, image.width, image.height) == (2, 8, 4)  # the (4, 8) kernel: 4 rows of 8
    (graph,) = {e.tensor_proto.string_val[0] for e in train_run.Tensors("keras")}
    assert json.loads(graph) == json.loads(found["json"])
    assert train_run.SummaryMetadata("keras").plugin_data.plugin_name == "graph_keras_model"
    # the Projector: the last epoch's embedding, with its labels
    config = projector_config(out / "words" / "train")
    assert [e.tensor_name for e in config.embeddings] == ["words:0", "words:1"]
    last = out / "words" / "train" / os.path.dirname(config.embeddings[1].tensor_path)
    with open(out / "words" / "train" / config.embeddings[1].tensor_path) as f:
        rows = [[float(v) for v in line.split("\t")] for line in f.read().splitlines()]
    assert sum(rows, []) == pytest.approx(sum(found["embedding"], []), rel=1e-6)
    with open(last / os.path.basename(config.embeddings[1].metadata_path)) as f:
        assert f.read().splitlines() == ["word%d" % i for i in range(10)]
    profile, profile_range, zero, step = found["errors"]
    assert "profile_batch=2" in profile and "torch.profiler" in profile and "jax.profiler" in profile
    assert "profile_batch='1,3'" in profile_range
    assert "update_freq" in zero and "'step'" in step
    # a misspelled argument: Python's own words, naming the callback and the closest name
    frq, sec, logdir = found["misspelled"]
    assert frq == ("mxboard.integrations.keras.TensorBoard() got an unexpected keyword argument 'histogram_frq'. "
                   "Did you mean 'histogram_freq'? It takes its own arguments and mxboard.SummaryWriter's.")
    assert "'flush_sec'. Did you mean 'flush_secs'?" in sec and "'logdir'. Did you mean 'log_dir'" in logdir
    # the Graphs dashboard: each run with a graph has the op graph it opens on, and the conceptual
    # graph; the op graph a node for each layer, its inputs the edges, its output shape
    server = serve(out)
    graphs = server.json("/data/plugin/graphs/info", until=lambda info: {"fit/train", "functional/train"} <= set(info))
    for run in ("fit/train", "functional/train"):
        assert graphs[run]["run_graph"] and graphs[run]["tags"]["keras"]["conceptual_graph"], graphs[run]
    assert served_op_graph(server, "fit/train") == {
        "net/input_layer": ("InputLayer", [], [[-1, 4]]),
        "net/dense": ("Dense", ["net/input_layer"], [[-1, 8]]),
        "net/dense_1": ("Dense", ["net/dense"], [[-1, 1]])}
    assert served_op_graph(server, "functional/train") == {
        "two_inputs/a": ("InputLayer", [], [[-1, 4]]),
        "two_inputs/b": ("InputLayer", [], [[-1, 4]]),
        "two_inputs/shared": ("Dense", ["two_inputs/a", "two_inputs/b"], [[-1, 4]]),
        "two_inputs/inner/input_layer": ("InputLayer", ["two_inputs/shared"], [[-1, 4]]),
        "two_inputs/inner/inside": ("Dense", ["two_inputs/inner/input_layer"], [[-1, 3]]),
        "two_inputs/joined": ("Concatenate", ["two_inputs/shared", "two_inputs/inner/inside"], [[-1, 7]]),
        "two_inputs/out": ("Dense", ["two_inputs/joined"], [[-1, 1]])}
    _, text = server.get("/data/plugin/graphs/graph", {"run": "fit/train", "conceptual": "false"})
    assert 'key: "activation"' in text.decode() and 's: "relu"' in text.decode()  # the config's values
    _, text = server.get("/data/plugin/graphs/graph", {"run": "fit/train", "tag": "keras", "conceptual": "true"})
    assert 'name: "net/dense"' in text.decode()
    # side by side with Keras's own callback (TensorFlow's writer), kept in the fixture
    # tools/keras_fixture.py made: the same runs, tags, plugins, steps, values, counts and sizes
    spec = importlib.util.spec_from_file_location("keras_fixture", os.path.join(ROOT, "tools", "keras_fixture.py"))
    keras_fixture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(keras_fixture)
    with open(os.path.join(ROOT, "tests", "fixtures", "keras_tensorboard.json")) as f:
        theirs = json.load(f)["runs"]
    ours = keras_fixture.summary(str(out / "fixed"))
    # Keras's own callback writes no op graph under Keras 3 (its train_function is no tf.function
    # of its own); mxboard's writes one of the layers, as the Graphs dashboard opens on it.
    assert ours["train"].pop("__run_graph__") == {"plugin": "graphs", "steps": [0, 0]}  # fit's, evaluate's
    assert sorted(ours) == sorted(theirs) == ["train", "validation"]
    for run in theirs:
        assert sorted(ours[run]) == sorted(theirs[run]), run
        for tag, entry in theirs[run].items():
            mine = ours[run][tag]
            assert (mine["plugin"], mine["steps"]) == (entry["plugin"], entry["steps"]), (run, tag)
            assert mine.get("counts") == entry.get("counts") and mine.get("sizes") == entry.get("sizes"), (run, tag)
            if "values" in entry and "steps_per_second" not in tag:  # a rate is the machine's
                assert mine["values"] == pytest.approx(entry["values"], rel=1e-4), (run, tag)


# -- a trainer that is missing ---------------------------------------------------------------------

IMPORT = """
import json, os, sys
for name in filter(None, os.environ["BLOCK"].split(",")):
    sys.modules[name] = None  # its import fails, as where it is not installed
try:
    __import__(os.environ["MODULE"])
except ImportError as error:
    print(json.dumps({"type": type(error).__name__, "name": error.name, "message": str(error)}))
"""


def test_a_missing_trainer_names_the_integration_and_what_to_install():
    """Importing an integration whose trainer is missing (its import made to fail, as where it is
    not installed) raises one ModuleNotFoundError line naming the integration, the package and what
    to install: the trainers extra, or the package alone; torch, for CPU or GPU; Keras's backend,
    where KERAS_BACKEND is left at TensorFlow's."""
    def missing(module, block, **env):
        proc = run_python(IMPORT, env=dict(env, MODULE="mxboard.integrations." + module, BLOCK=",".join(block)))
        found = json.loads(proc.stdout)
        assert found["type"] == "ModuleNotFoundError" and "\n" not in found["message"], found
        assert found["message"].startswith("mxboard.integrations.%s needs " % module), found
        return found

    for module, package, block in (("lightning", "lightning", ["lightning", "lightning_fabric"]),
                                   ("transformers", "transformers", ["transformers"]),
                                   ("accelerate", "accelerate", ["accelerate"]),
                                   ("keras", "keras", ["keras"])):
        found = missing(module, block)
        assert found["name"] == package
        assert ("needs %s, which is not installed here" % package) in found["message"], found
        assert "pip install 'mxboard[trainers]'" in found["message"], found
        assert ("pip install '%s" % package) in found["message"], found
    for module in ("lightning", "accelerate"):  # transformers' callback imports without torch
        if importlib.util.find_spec(module):  # its import reaches torch's
            found = missing(module, ["torch"])
            assert found["name"] == "torch" and "needs torch, which is not installed here" in found["message"]
            assert "--index-url https://download.pytorch.org/whl/cpu" in found["message"], found
    if importlib.util.find_spec("keras"):
        found = missing("keras", ["tensorflow"], KERAS_BACKEND="tensorflow")
        assert found["name"] == "tensorflow", found
        assert "needs Keras's backend, tensorflow" in found["message"], found
        assert "Set KERAS_BACKEND=torch or KERAS_BACKEND=jax before keras is imported" in found["message"], found


# -- docs/integrations.md --------------------------------------------------------------------------

DOCS_PAGE = os.path.join(ROOT, "docs", "integrations.md")

RUN_BLOCKS = """
import json, os, re, runpy
with open(os.environ["PAGE"]) as f:
    blocks = re.findall(r"```python\\n(.*?)```", f.read(), re.S)
for number, block in enumerate(blocks):
    path = os.path.join(os.getcwd(), "block%d.py" % number)
    with open(path, "w") as f:
        f.write(block)
    runpy.run_path(path, run_name="__main__")  # as `python blockN.py` runs it
print(json.dumps(len(blocks)))
"""


@needs("lightning", "transformers", "accelerate", "keras")
def test_every_example_of_the_integrations_page_runs(trainings):
    """Each Python block of docs/integrations.md runs as written (in a fresh working directory,
    in the page's order, first in its child Python: nothing imported before it), and writes the
    logdir it says, with what it logs."""
    out, blocks = train(trainings, "docs")
    assert blocks == 4
    lightning = accumulator(out / "tb_logs" / "regression" / "version_0")
    assert "train_loss" in lightning.Tags()["scalars"] and lightning.Tags()["histograms"] == ["weight"]
    assert (out / "tb_logs" / "regression" / "version_0" / "hparams.yaml").exists()
    (hf_run,) = runs(out / "hf_out" / "runs").values()
    assert {"train/loss", "eval/loss"} <= set(accumulator(hf_run).Tags()["scalars"])
    assert accumulator(out / "accelerate_logs" / "run1").Tags()["scalars"] == ["loss"]
    assert "epoch_loss" in accumulator(out / "keras_logs" / "validation").Tags()["scalars"]
    assert accumulator(out / "keras_logs" / "train").Tags()["images"]


# -- object stores ---------------------------------------------------------------------------------

TO_A_STORE = """
import json, os, sys
sys.modules["tensorflow"] = None
os.environ["KERAS_BACKEND"] = "torch"
import numpy as np
import keras
import lightning.pytorch as pl
import torch
from mxboard.integrations.keras import TensorBoard
from mxboard.integrations.lightning import TensorBoardLogger
url = os.environ["URL"]

x = np.random.RandomState(0).randn(32, 4).astype("float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
history = model.fit(x, x.sum(1, keepdims=True), validation_split=0.25, epochs=2, batch_size=8, verbose=0,
                    callbacks=[TensorBoard(url + "/keras", histogram_freq=1)])

class Net(pl.LightningModule):
    def __init__(self, lr=0.1):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Linear(4, 1)
    def training_step(self, batch, i):
        loss = torch.nn.functional.mse_loss(self.net(batch[0]), batch[1])
        self.log("train_loss", loss)
        return loss
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

t = torch.from_numpy(x)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(t, t.sum(1, keepdim=True)), batch_size=8)
logger = TensorBoardLogger(url + "/lightning")
pl.Trainer(max_epochs=2, logger=logger, log_every_n_steps=1, enable_progress_bar=False, enable_model_summary=False,
           enable_checkpointing=False, accelerator="cpu").fit(Net(), data)

from accelerate import Accelerator
from mxboard.integrations.accelerate import TensorBoardTracker
accelerator = Accelerator(log_with=[TensorBoardTracker("run", url + "/accelerate")])
accelerator.init_trackers("run", config={"lr": 0.1})
accelerator.log({"loss": torch.tensor(0.5)}, step=3)
accelerator.end_training()

from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
from mxboard.integrations.transformers import TensorBoardCallback
os.environ["TENSORBOARD_LOGGING_DIR"] = url + "/transformers"
ids = torch.randint(1, 50, (8, 8), generator=torch.Generator().manual_seed(0))
tokens = [{"input_ids": row, "labels": int(row[0] % 2)} for row in ids]
config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                    max_position_embeddings=16)
args = TrainingArguments(os.path.join(os.environ["OUT"], "hf"), report_to="none", max_steps=2, logging_steps=1,
                         per_device_train_batch_size=4, save_strategy="no", use_cpu=True, disable_tqdm=True)
Trainer(BertForSequenceClassification(config), args, train_dataset=tokens, callbacks=[TensorBoardCallback()]).train()
print(json.dumps({"history": history.history, "log_dir": logger.log_dir, "url": url}))
"""


@needs("keras", "lightning", "accelerate", "transformers")
def test_every_integration_logs_to_an_object_store(seaweed, trainings):
    """Keras (no TensorFlow importable), Lightning, Accelerate and the Hugging Face Trainer log to
    `s3://` on a real S3 server: the runs, tags and values are in the bucket, with Lightning's
    version directory and hparams.yaml, Accelerate's hparams sub-run and hparams.yml."""
    out, found = train(trainings, "store")
    bucket = found["url"][len("s3://"):]
    assert found["log_dir"] == "s3://%s/lightning/lightning_logs/version_0" % bucket
    seaweed.filesystem().get(bucket, str(out / "copy"), recursive=True)
    keras_runs = out / "copy" / "keras"
    assert sorted(runs(keras_runs)) == ["train", "validation"]
    train_run = accumulator(keras_runs / "train")
    assert [e.value for e in train_run.Scalars("epoch_loss")] == pytest.approx(found["history"]["loss"], rel=1e-6)
    assert [e.value for e in accumulator(keras_runs / "validation").Scalars("epoch_loss")] == pytest.approx(
        found["history"]["val_loss"], rel=1e-6)
    assert train_run.Tags()["histograms"]
    version = out / "copy" / "lightning" / "lightning_logs" / "version_0"
    assert [e.step for e in accumulator(version).Scalars("train_loss")] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert "lr: 0.1" in (version / "hparams.yaml").read_text()
    accelerate = runs(out / "copy" / "accelerate", lambda run: re.sub(r"^run/[0-9.]+$", "run/<time>", run))
    assert sorted(accelerate) == ["run", "run/<time>"]
    assert [(e.step, e.value) for e in accumulator(accelerate["run"]).Scalars("loss")] == [(3, 0.5)]
    assert hparams_of(accelerate["run/<time>"])[0] == {"lr": 0.1}
    (yml,) = [os.path.join(d, "hparams.yml") for d, _, names in os.walk(out / "copy" / "accelerate")
              if "hparams.yml" in names]
    with open(yml) as f:
        assert f.read() == "lr: 0.1\n"
    assert [e.step for e in accumulator(out / "copy" / "transformers").Scalars("train/loss")] == [1, 2]


# what the `trainings` fixture runs, in this order (the docs page first: nothing imported before it;
# then Keras's scripts, `import tensorflow` failing from there on): {name: (the test that checks
# it, its script, the modules it needs, its environment)}
SCRIPTS = {
    "docs": (test_every_example_of_the_integrations_page_runs, RUN_BLOCKS,
             ("lightning", "transformers", "accelerate", "keras"), {"PAGE": DOCS_PAGE}),
    "keras": (test_keras_callback_without_tensorflow, KERAS, ("keras",), {"ROOT": ROOT}),
    "store": (test_every_integration_logs_to_an_object_store, TO_A_STORE,
              ("keras", "lightning", "accelerate", "transformers"), {}),
    "lightning": (test_lightning_logger_side_by_side, LIGHTNING, ("lightning",), {}),
    "transformers": (test_transformers_callback_side_by_side, TRANSFORMERS, ("transformers",), {}),
    "accelerate": (test_accelerate_tracker_side_by_side, ACCELERATE, ("accelerate",), {}),
}
