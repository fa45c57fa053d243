"""The GPU bench: what logging costs a training loop on a CUDA GPU, mxboard beside its peers and
beside the limit (values kept on the device, never read), in one run; ratios printed.

    make bench-gpu                  # or: python tools/bench_gpu.py [--rounds 3] [--json PATH]

The loop: a transformer of about 85M parameters (12 layers, d=768, 12 heads) in bfloat16
autocast, batches of 16 x 512 tokens, AdamW. Two schedules:
- S1: the loss tensor every step (`add_scalar("loss", loss, step)`), 300 steps;
- S2: S1, plus a histogram of every parameter every 25 steps, 100 steps.
Each logger (none, the limit, torch.utils.tensorboard, tensorboardX, mxboard) runs each schedule
once a round, interleaved, in one process; a run's time is its steps' wall time between two
device synchronizations, divided by the steps; a figure is the median over the rounds.

Then it checks what mxboard logged, as TensorBoard's loader reads it: every loss point equals
`.item()` of the loss at its step, and every histogram's counts equal those of numpy's values of
the parameter at its step (mxboard's host path, numpy-exact). Without a CUDA GPU it says so and
exits 0; `--cpu` runs a tiny version on the CPU, to check this script itself.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model(torch, size, device):
    layers, width, vocab = size
    layer = torch.nn.TransformerEncoderLayer(width, width // 64, 4 * width, batch_first=True, norm_first=True)
    net = torch.nn.Sequential()
    net.embed = torch.nn.Embedding(vocab, width)
    net.body = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    net.head = torch.nn.Linear(width, vocab)
    return net.to(device)


class Limit:
    """Values kept on the device, never read: what logging costs at best."""

    def __init__(self, torch):
        self.torch, self.kept = torch, []

    def add_scalar(self, tag, value, step):
        self.kept.append(value.detach())

    def add_histogram(self, tag, values, step):
        self.kept.append(self.torch.histc(values.detach().float(), 30))

    def close(self):
        self.kept.clear()


def writer(name, torch, logdir):
    if name == "no logger":
        return None
    if name == "limit (kept on the device)":
        return Limit(torch)
    if name == "torch.utils.tensorboard":
        from torch.utils.tensorboard import SummaryWriter
    elif name == "tensorboardX":
        from tensorboardX import SummaryWriter
    else:
        from mxboard import SummaryWriter
    return SummaryWriter(logdir)


def run(torch, net, opt, data, steps, every, log, keep=None):
    """`steps` training steps logging into `log` (or nothing): seconds a step. `keep`: a dict that
    gets each step's loss and each logged step's parameters (the check's, not timed)."""
    params = list(net.named_parameters())
    torch.cuda.synchronize() if data.is_cuda else None
    start = time.perf_counter()
    for step in range(steps):
        with torch.autocast(data.device.type, dtype=torch.bfloat16):
            out = net(data[:, :-1])
            loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]).float(), data[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if log is not None:
            log.add_scalar("loss", loss, step)
            if every and step % every == 0:
                for name, p in params:
                    log.add_histogram(name, p, step)
        if keep is not None:
            keep.setdefault("loss", []).append(loss.detach().clone())
            if every and step % every == 0:
                keep[step] = {name: p.detach().float().cpu().numpy().copy() for name, p in params}
    torch.cuda.synchronize() if data.is_cuda else None
    seconds = (time.perf_counter() - start) / steps
    if log is not None:
        log.close()
    return seconds


def check(logdir, keep):
    """What mxboard logged, as TensorBoard's plugin loader reads it, against the values."""
    import numpy as np
    from tensorboard import data_compat
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea
    from tensorboard.util import tensor_util

    from mxboard.summaries.histogram import histogram_of

    acc = pea.EventAccumulator(logdir, size_guidance={"tensors": 0})
    acc.Reload()
    losses = [float(t.item()) for t in keep["loss"]]
    logged = [float(tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors("loss")]
    assert logged == [float(np.float32(v)) for v in losses], "loss points differ from .item()"
    histograms = 0
    for step, params in ((s, p) for s, p in keep.items() if s != "loss"):
        for name, values in params.items():
            (event,) = [e for e in acc.Tensors(name) if e.step == step]
            read = tensor_util.make_ndarray(event.tensor_proto)
            expected = histogram_of(name, values).value[0]
            expected = tensor_util.make_ndarray(data_compat.migrate_value(expected).tensor)
            assert np.array_equal(read[:, 2], expected[:, 2]), "histogram %s at step %d: counts differ" % (name, step)
            histograms += 1
    return {"loss_points": len(logged), "histograms": histograms}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", action="store_true", help="a tiny model on the CPU: checks this script")
    parser.add_argument("--json", default=os.path.join(ROOT, "dist", "bench-gpu.json"))
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("bench-gpu: torch is not installed: nothing to measure")
        return 0
    if not args.cpu and not torch.cuda.is_available():
        if torch.version.cuda is None and shutil.which("nvidia-smi"):
            print("bench-gpu: this torch (%s) is a CPU build, and the machine has an NVIDIA GPU: install "
                  "a CUDA build into this venv (%s -m pip install torch)" % (torch.__version__, sys.executable))
            return 1
        print("bench-gpu: no CUDA GPU here (torch %s): nothing to measure; the GPU figures are "
              "to be measured on a machine with one" % torch.__version__)
        return 0
    device = "cpu" if args.cpu else "cuda"
    size, batch, s1, s2 = ((2, 64, 256), (2, 33), 6, 4) if args.cpu else ((12, 768, 8192), (16, 513), 300, 100)
    torch.manual_seed(0)
    net = model(torch, size, device)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=device == "cuda")
    data = torch.randint(0, size[2], batch, device=device)
    card = torch.cuda.get_device_name() if device == "cuda" else "CPU (--cpu: a check of this script)"
    import tensorboardX

    import mxboard
    versions = {"torch": torch.__version__, "tensorboardX": tensorboardX.__version__, "mxboard": mxboard.__version__}
    print("bench-gpu on %s, %s; %d parameters" % (card, versions, sum(p.numel() for p in net.parameters())))
    names = ["no logger", "limit (kept on the device)", "torch.utils.tensorboard", "tensorboardX", "mxboard"]
    schedules = {"S1: the loss every step": (s1, 0), "S2: S1 + every parameter's histogram every 25 steps": (s2, 25)}
    run(torch, net, opt, data, 3, 0, None)  # warm up: kernels, the allocator
    times = {(s, n): [] for s in schedules for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for schedule, (steps, every) in schedules.items():
                for name in names:
                    logdir = os.path.join(tmp, "%d-%d-%s" % (round_, len(times[schedule, name]), name.split()[0]))
                    times[schedule, name].append(run(torch, net, opt, data, steps, every,
                                                     writer(name, torch, logdir)))
        keep = {}
        logdir = os.path.join(tmp, "check")
        run(torch, net, opt, data, 26, 25, writer("mxboard", torch, logdir), keep)
        checked = check(logdir, keep)
    report = {"card": card, "versions": versions, "rounds": args.rounds, "checked": checked, "schedules": {}}
    for schedule in schedules:
        base = statistics.median(times[schedule, "no logger"])
        print("\n%s (median of %d rounds)" % (schedule, args.rounds))
        rows = report["schedules"][schedule] = {}
        for name in names:
            median = statistics.median(times[schedule, name])
            rows[name] = {"step_ms": median * 1e3, "over_no_logger_percent": (median / base - 1) * 100}
            print("  %-28s %8.2f ms a step  %+6.1f%%" % (name, median * 1e3, (median / base - 1) * 100))
        ours = rows["mxboard"]["step_ms"]
        print("  peers / mxboard: " + ", ".join("%s %.2fx" % (n, rows[n]["step_ms"] / ours) for n in names[2:4]))
    print("\nchecked: %(loss_points)d loss points equal .item(), %(histograms)d histograms' counts equal numpy's "
          "(read by TensorBoard's loader)" % checked)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as out:
        json.dump(report, out, indent=1)
    print("report: %s" % args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
