"""make bench's rows for mxboard.integrations: what logging costs a training step with each
trainer's own TensorBoard writer and with mxboard's integration, beside no logger, in one run.

    python tools/bench_integrations.py [--rounds 3]       # make bench runs it after tools/bench.py

Each trainer trains a small model on the CPU, logging its loss every step: Lightning (an MLP,
`self.log` every step), the Hugging Face Trainer (a 2-layer BERT from a config, `logging_steps=1`),
Accelerate (an MLP, `accelerator.log` of the loss tensor every step) and Keras 3 on the torch
backend (an MLP, `update_freq="batch"`, weight histograms every epoch). Every variant runs in a
fresh interpreter (torch on one thread), the variants interleaved `--rounds` times: the best and
the median milliseconds a step (the whole fit, the writer's close included, over its steps).
Keras's own callback needs TensorFlow: where it is not importable, its row is left out, saying so.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

COMMON = """
import json, os, sys, tempfile, time, warnings
warnings.filterwarnings("ignore")
import torch
torch.set_num_threads(1)  # the model on one core, the writers' threads beside it: less noise on a small machine
VARIANT, LOGDIR = sys.argv[1], tempfile.mkdtemp(prefix="bench-integrations-")
"""

LIGHTNING = """
import torch
import lightning.pytorch as pl

class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    def training_step(self, batch, index):
        loss = torch.nn.functional.mse_loss(self.net(batch[0]), batch[1])
        self.log("train_loss", loss)
        return loss
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

if VARIANT == "own":
    from lightning.pytorch.loggers import TensorBoardLogger
elif VARIANT == "mxboard":
    from mxboard.integrations.lightning import TensorBoardLogger
x = torch.randn(4096, 32)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16)
trainer = pl.Trainer(max_epochs=2, logger=TensorBoardLogger(LOGDIR) if VARIANT != "none" else False,
                     log_every_n_steps=1, enable_progress_bar=False, enable_model_summary=False,
                     enable_checkpointing=False, accelerator="cpu", devices=1)
start = time.perf_counter()
trainer.fit(Net(), data)
print(json.dumps({"step_ms": 1000 * (time.perf_counter() - start) / trainer.global_step}))
"""

TRANSFORMERS = """
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
from mxboard.integrations.transformers import TensorBoardCallback

ids = torch.randint(1, 100, (800, 16), generator=torch.Generator().manual_seed(0))
tokens = [{"input_ids": row, "labels": int(row[0] % 2)} for row in ids]
config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=32)
args = TrainingArguments(LOGDIR, report_to="tensorboard" if VARIANT == "own" else "none", max_steps=200,
                         logging_steps=1, per_device_train_batch_size=4, save_strategy="no", use_cpu=True,
                         disable_tqdm=True)
trainer = Trainer(BertForSequenceClassification(config), args, train_dataset=tokens,
                  callbacks=[TensorBoardCallback()] if VARIANT == "mxboard" else [])
start = time.perf_counter()
trainer.train()
print(json.dumps({"step_ms": 1000 * (time.perf_counter() - start) / trainer.state.global_step}))
"""

ACCELERATE = """
import torch
from accelerate import Accelerator
from mxboard.integrations.accelerate import TensorBoardTracker

trackers = {"own": "tensorboard", "mxboard": [TensorBoardTracker("run", LOGDIR)], "none": None}[VARIANT]
accelerator = Accelerator(log_with=trackers, project_dir=LOGDIR)
accelerator.init_trackers("run")
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8192, 32)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16)
model, optimizer, data = accelerator.prepare(model, optimizer, data)
start = time.perf_counter()
for step, (inputs, targets) in enumerate(data):
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
    accelerator.log({"loss": loss.detach()}, step=step)
accelerator.end_training()
print(json.dumps({"step_ms": 1000 * (time.perf_counter() - start) / (step + 1)}))
"""

KERAS = """
import numpy as np
import keras

if VARIANT == "own":
    from keras.callbacks import TensorBoard
elif VARIANT == "mxboard":
    from mxboard.integrations.keras import TensorBoard
x = np.random.RandomState(0).randn(4096, 32).astype("float32")
model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)])
model.compile("sgd", "mse")
callbacks = [TensorBoard(LOGDIR, update_freq="batch", histogram_freq=1)] if VARIANT != "none" else []
start = time.perf_counter()
model.fit(x, x.sum(1, keepdims=True), epochs=2, batch_size=16, verbose=0, callbacks=callbacks)
print(json.dumps({"step_ms": 1000 * (time.perf_counter() - start) / int(model.optimizer.iterations.numpy())}))
"""

TRAINERS = {"lightning": ("lightning", LIGHTNING), "transformers": ("transformers", TRANSFORMERS),
            "accelerate": ("accelerate", ACCELERATE), "keras": ("keras", KERAS)}


# the installed packages (never this checkout's); Keras on torch (its default backend is TensorFlow)
ENV = dict(os.environ, PYTHONSAFEPATH="1", TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="torch")


def importable(module):
    return subprocess.run([sys.executable, "-c", "import " + module], capture_output=True, env=ENV).returncode == 0


def run(body, variant):
    """One fit in a fresh interpreter; its milliseconds a step."""
    env = ENV
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(COMMON) + textwrap.dedent(body), variant],
                          capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (variant, proc.stderr[-3000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])["step_ms"]


def main(rounds=3):
    """Print a row per trainer and variant; returns {trainer: {variant: {"step_ms", "median_ms",
    "overhead_ms"}}}."""
    results = {}
    for name, (module, body) in TRAINERS.items():
        if not importable(module):
            print("%-34s %s is not installed: pip install 'mxboard[trainers]'" % ("integrations: " + name, module))
            continue
        variants = ["none", "mxboard"]
        if module != "keras" or importable("tensorflow"):
            variants.append("own")
        else:
            print("%-34s %-24s left out: it needs TensorFlow, which is not installed" % (
                "integrations: keras", "keras's own callback"))
        times = {}
        for _ in range(rounds):
            for variant in variants:
                times.setdefault(variant, []).append(run(body, variant))
        rows = results[name] = {}
        for variant in variants:
            best, median = min(times[variant]), statistics.median(times[variant])
            rows[variant] = {"step_ms": best, "median_ms": median,
                             "overhead_ms": best - min(times["none"])}
            label = {"none": "no logger", "mxboard": "mxboard's integration", "own": name + "'s own writer"}[variant]
            print("%-34s %-24s %8.2f ms a step (median %.2f), %+.2f ms over no logger" % (
                "integrations: " + name, label, best, median, rows[variant]["overhead_ms"]))
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved runs of each variant")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    found = main(args.rounds)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(found, f, indent=2)
