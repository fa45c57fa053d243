"""The demo: train a small CNN on scikit-learn's bundled 8x8 handwritten digits (a UCI data set;
nothing is downloaded), log every kind of summary that TensorBoard has a dashboard for, then serve
the run with the bundled TensorBoard.

    python -m mxboard.demo [--logdir runs/demo] [--run NAME] [--epochs 10] [--no-serve] [--port 6006]

The CNN is MXNet Gluon's where MXNet runs (Python 3.11 or older), else the same kind of CNN in
numpy (demo_models.py), which logs every kind but the graph. Each demo is a run of its own below
the logdir, named by its learning rate, seed and start time, so a second demo is drawn beside the
first. Ctrl-C stops the demo at any point and says what was kept. The demo needs the `demo` extra
(scikit-learn and tqdm, and mxnet where it runs).
"""
import argparse
import math
import os
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from mxboard import SummaryWriter
    from mxboard.demo_models import GluonCNN, NumpyCNN

__all__ = ["main"]


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("%r: a whole number of 1 or more" % text)
    return value


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m mxboard.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--logdir", default="runs/demo", help="where runs are written, and served from")
    parser.add_argument("--run", default=None,
                        help="the run's name (default: lr<rate>_seed<seed>_<start time>, as "
                             "lr0.01_seed7674_20261126-174117)")
    parser.add_argument("--epochs", type=_positive, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=None,
                        help="the weights' and the batches' seed (default: from the time, so that a second demo "
                             "differs; it is in the run's name)")
    parser.add_argument("--framework", choices=("auto", "mxnet", "numpy"), default="auto",
                        help="the model's: MXNet Gluon where MXNet runs (auto), else the same CNN in numpy")
    parser.add_argument("--batches", type=int, default=None, help="at most this many batches per epoch (tests)")
    parser.add_argument("--histogram-every", type=int, default=10, help="weights and gradients, every N batches")
    parser.add_argument("--serve", action=argparse.BooleanOptionalAction, default=True,
                        help="start the bundled TensorBoard on the logdir afterwards")
    parser.add_argument("--port", type=int, default=6006, help="TensorBoard's port; a free one if it is busy (0: any)")
    return parser.parse_args(argv)


def _say_if_busy(port: int) -> None:
    """Say early when `port` is taken now, for example by a first demo that is still serving.

    TensorBoard will then serve on a free port. Only the launcher can decide that, when it binds:
    a check made now could not hold the port until then."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            print("port %d is busy (another TensorBoard still serving?): TensorBoard will serve on a free one, "
                  "printed when training ends" % port, flush=True)


# A split is (images, labels).
Split = Tuple[NDArray[np.float32], NDArray[np.float32]]


def _data(seed: int = 0) -> Tuple[Split, Split]:
    """scikit-learn's digits (1797 images, 8x8, 10 classes) as NCHW float32 in [0, 1], split
    80/20 into training and validation."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]
    labels = digits.target.astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(len(order) * 0.8)
    return (images[order[:cut]], labels[order[:cut]]), (images[order[cut:]], labels[order[cut:]])


def _loss_as_sound(losses: Sequence[float], sample_rate: int = 8000) -> NDArray[np.float32]:
    """The training loss as a falling tone: one 40 ms note per batch, the higher the loss the higher the note."""
    values = np.asarray(losses, dtype=np.float64)
    span = max(values.max() - values.min(), 1e-9)
    pitches = 220.0 + 660.0 * (values - values.min()) / span
    samples = int(sample_rate * 0.04)
    t = np.arange(samples) / sample_rate
    envelope = np.hanning(samples)
    notes = [0.5 * envelope * np.sin(2 * np.pi * f * t) for f in pitches]
    sound: NDArray[np.float32] = np.concatenate(notes).astype(np.float32)
    return sound


def _filters_as_images(weight: NDArray[Any], scale: int = 8) -> NDArray[Any]:
    """Conv filters (F, 1, h, w) as images in [0, 1], each stretched to its own range and
    enlarged `scale` times (3x3 pixels are too small to see)."""
    low = weight.min(axis=(1, 2, 3), keepdims=True)
    high = weight.max(axis=(1, 2, 3), keepdims=True)
    images = (weight - low) / np.maximum(high - low, 1e-9)
    enlarged: NDArray[Any] = images.repeat(scale, axis=2).repeat(scale, axis=3)
    return enlarged


def _model(args: argparse.Namespace, batches_per_epoch: int) -> Union["GluonCNN", "NumpyCNN"]:
    """The Gluon CNN where MXNet runs, else the same kind of CNN in numpy (demo_models.py)."""
    from mxboard.demo_models import GluonCNN, NumpyCNN, mxnet_runs

    framework = args.framework
    if framework == "auto":
        framework = "mxnet" if mxnet_runs() else "numpy"
    model = (GluonCNN if framework == "mxnet" else NumpyCNN)(args.learning_rate, batches_per_epoch, args.seed)
    if framework == "mxnet":
        print("training an MXNet Gluon CNN on scikit-learn's 8x8 digits", flush=True)
    else:
        print("training a numpy CNN on scikit-learn's 8x8 digits (MXNet 1.9.1 runs on Python <= 3.11 with numpy "
              "< 1.24 only: every dashboard but Graphs)", flush=True)
    return model


def train(args: argparse.Namespace, writer: "SummaryWriter") -> Dict[str, float]:
    """The training run, logging as it goes; returns the final metrics."""
    from tqdm import tqdm

    (x_train, y_train), (x_val, y_val) = _data()
    batches_per_epoch = math.ceil(len(y_train) / args.batch_size)
    if args.batches:
        batches_per_epoch = min(batches_per_epoch, args.batches)
    model = _model(args, batches_per_epoch)
    _log_the_set_up(args, writer, model, x_train)

    step = 0
    batch_losses: List[float] = []
    filters: List[NDArray[Any]] = []
    progress = tqdm(total=args.epochs * batches_per_epoch, unit="batch", file=sys.stdout,
                    disable=not sys.stdout.isatty())
    _Progress.epochs = args.epochs
    for epoch in range(1, args.epochs + 1):
        right = seen = 0
        loss_sum = 0.0
        order = np.random.default_rng([args.seed, epoch]).permutation(len(y_train))
        for b in range(batches_per_epoch):
            index = order[b * args.batch_size:(b + 1) * args.batch_size]
            logged, batch_loss, batch_right = model.train_step(x_train[index], y_train[index])
            step += 1
            # Gluon's loss is an NDArray: no wait for the engine.
            writer.add_scalar("loss/batch", logged, step)
            if step % args.histogram_every == 0 or step == 1:
                model.log_parameters(writer, step)
            right, seen, loss_sum = right + batch_right, seen + len(index), loss_sum + batch_loss * len(index)
            batch_losses.append(loss_sum / seen)
            progress.set_postfix(epoch=epoch, loss="%.3f" % batch_losses[-1])
            progress.update()

        val_loss, probabilities = model.evaluate(x_val, y_val)
        val_acc = float((probabilities.argmax(axis=1) == y_val).mean())
        # named values make the sub-runs accuracy/train, accuracy/validation and so on, drawn in one chart
        writer.add_scalar("accuracy", {"train": right / seen, "validation": val_acc}, epoch)
        writer.add_scalar("loss", {"train": loss_sum / seen, "validation": val_loss}, epoch)
        writer.add_scalar("learning_rate", model.learning_rate, epoch)
        filters.append(_filters_as_images(model.first_filters()))
        writer.add_images("filters/conv0", filters[-1], epoch)
        # set before the epoch's line is printed, so that a Ctrl-C after the line never names a finished epoch
        _Progress.done = epoch
        progress.write("epoch %d: train accuracy %.3f, validation accuracy %.3f, loss %.3f"
                       % (epoch, right / seen, val_acc, val_loss))
    progress.close()
    _log_the_finished_model(args, writer, model, (x_val, y_val), probabilities, filters, batch_losses)
    return {"accuracy": val_acc, "loss": float(val_loss)}


def _log_the_set_up(args: argparse.Namespace, writer: "SummaryWriter", model: Union["GluonCNN", "NumpyCNN"],
                    x_train: NDArray[np.float32]) -> None:
    """What is known before training: the settings, the first batch, the graph, the layout."""
    config = vars(args).copy()
    config.pop("serve"), config.pop("port")
    config["framework"] = model.framework
    writer.add_text("config", "| setting | value |\n|---|---|\n" +
                    "\n".join("| %s | %s |" % item for item in sorted(config.items())))
    writer.add_images("inputs/first_batch", x_train[:args.batch_size].repeat(4, axis=2).repeat(4, axis=3))
    model.log_graph(writer, args.batch_size)
    # Train and validation are sub-runs, one colour each.
    writer.add_custom_scalars({"Train vs validation": {
        "accuracy": ["Multiline", ["^accuracy$"]],
        "loss": ["Multiline", ["^loss$"]],
    }})


def _log_the_finished_model(args: argparse.Namespace, writer: "SummaryWriter",
                            model: Union["GluonCNN", "NumpyCNN"], validation: Split,
                            probabilities: NDArray[Any], filters: List[NDArray[Any]],
                            batch_losses: List[float]) -> None:
    """The finished model, seen from the validation set, and the run's summaries over training."""
    x_val, y_val = validation
    for digit in range(10):
        writer.add_pr_curve("pr/digit_%d" % digit, y_val == digit, probabilities[:, digit], num_thresholds=200,
                            global_step=args.epochs)
    # The 64-d layer before the classifier.
    features = model.features(x_val)
    writer.add_embedding("validation_features", features, labels=[str(int(y)) for y in y_val],
                         images=x_val, global_step=args.epochs)
    centered = features - features.mean(axis=0)
    # The points are a 3-D PCA.
    cloud = centered @ np.linalg.svd(centered, full_matrices=False)[2][:3].T
    colors = (np.array([[int(c) for c in np.binary_repr(int(y) * 37 % 64, 6)[:3]] for y in y_val]) * 200 + 40)
    writer.add_mesh("validation_features_pca", cloud / max(np.abs(cloud).max(), 1e-9), colors=colors,
                    global_step=args.epochs)
    writer.add_video("filters/conv0_over_training", np.stack(filters).transpose(1, 0, 2, 3, 4), fps=2,
                     global_step=args.epochs)
    writer.add_audio("loss_as_sound", _loss_as_sound(batch_losses), sample_rate=8000, global_step=args.epochs)
    # the run's own row in the HParams dashboard, with its validation curves as the metrics
    writer.add_hparams({"learning_rate": args.learning_rate, "batch_size": args.batch_size,
                        "epochs": args.epochs, "optimizer": "adam", "seed": args.seed,
                        "framework": model.framework},
                       {("accuracy", "validation"): None, ("loss", "validation"): None}, in_run=True,
                       global_step=args.epochs)


class _Progress:
    """How far the training got, for the line that a Ctrl-C prints."""

    # The epochs finished, each logged whole.
    done = 0
    epochs = 0
    logdir = ""
    # The writer closed: the run is saved whole, and TensorBoard (the launcher) takes over next.
    saved = False


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Run the demo. A Ctrl-C at any point ends it with one line that says what was kept, and exit
    status 130; once TensorBoard has taken over the process, its launcher says that line
    (tensorboard_bundle/launcher.py). A second Ctrl-C while it ends changes nothing."""
    try:
        _main(argv)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("\n" + _stopped_line(), flush=True)
        sys.exit(130)


def _stopped_line() -> str:
    """What a Ctrl-C stopped, and where what was logged is, with a command that serves it."""
    if not _Progress.logdir:
        return "stopped (Ctrl-C) before anything was logged"
    from mxboard._format.commands import serve_command

    serve = serve_command(os.path.dirname(_Progress.logdir) or ".")
    if _Progress.saved:
        return "stopped before TensorBoard started (Ctrl-C): the run is saved in %s (serve it: %s)" % (
            _Progress.logdir, serve)
    if not _Progress.epochs:
        where = "stopped before training"
    elif _Progress.done < _Progress.epochs:
        where = "stopped during epoch %d" % (_Progress.done + 1)
    else:
        where = "stopped after training, while logging the finished model"
    return "%s (Ctrl-C): everything logged so far is in %s (serve it: %s)" % (where, _Progress.logdir, serve)


def _main(argv: Optional[Sequence[str]]) -> None:
    args = _parse(sys.argv[1:] if argv is None else argv)
    # line by line even when piped, so that each line comes in order with the server's (on stderr)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    # The first run of a new venv imports MXNet, scikit-learn and mxboard for the first time, which
    # took about 35 s without a word: said now.
    print("loading the demo's libraries (mxboard, scikit-learn, MXNet where it runs): a new venv's first run "
          "takes about half a minute", flush=True)
    from mxboard import SummaryWriter

    if args.serve and args.port:
        _say_if_busy(args.port)
    start = time.time()
    if args.seed is None:
        args.seed = int(start * 1000) % 10000
    run = args.run = args.run or "lr%g_seed%d_%s" % (args.learning_rate, args.seed, time.strftime("%Y%m%d-%H%M%S"))
    _Progress.logdir = os.path.join(args.logdir, run)
    with SummaryWriter(_Progress.logdir) as writer:
        metrics = train(args, writer)
    _Progress.saved = True
    print("trained in %.0f s: validation accuracy %.3f; logs in %s"
          % (time.time() - start, metrics["accuracy"], _Progress.logdir), flush=True)
    # This process becomes the bundled server, started as a user would start it.
    if args.serve:
        print("starting TensorBoard: open the URL below (Ctrl+C stops it)", flush=True)
        python = [sys.executable] + (["-I"] if sys.flags.isolated else [])
        # The launcher names it if the port is taken.
        os.environ["MXBOARD_SAVED_RUN"] = _Progress.logdir
        os.execv(sys.executable, python + ["-m", "tensorboard_bundle", "--logdir", args.logdir,
                                           "--port", str(args.port)])


if __name__ == "__main__":
    main()
