"""The demo: train a small Gluon CNN on scikit-learn's bundled 8x8 handwritten digits (a UCI data
set; nothing is downloaded), log every summary kind TensorBoard has a dashboard for, then serve
the run with the bundled TensorBoard.

    python -m mxboard.demo [--logdir runs/demo] [--run NAME] [--epochs 10] [--no-serve] [--port 6006]
    make demo [SERVE=0] [LOGDIR=...] [PORT=...]

Each demo is a run of its own below the logdir (named by its learning rate and start time), so a
second demo is drawn beside the first. Train and validation curves are sub-runs of the run (one
colour each). A busy port (a first demo still serving) is found before training, and a free one used. Needs
the `demo` extra (mxnet, scikit-learn, tqdm).
"""
import argparse
import math
import os
import socket
import sys
import time

import numpy as np

__all__ = ["main"]


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("%r: a whole number of 1 or more" % text)
    return value


def _parse(argv):
    parser = argparse.ArgumentParser(prog="python -m mxboard.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--logdir", default="runs/demo", help="where runs are written, and served from")
    parser.add_argument("--run", default=None, help="the run's name (default: lr<rate>_<start time>)")
    parser.add_argument("--epochs", type=_positive, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--batches", type=int, default=None, help="at most this many batches an epoch (tests)")
    parser.add_argument("--histogram-every", type=int, default=10, help="weights and gradients, every N batches")
    parser.add_argument("--serve", action=argparse.BooleanOptionalAction, default=True,
                        help="start the bundled TensorBoard on the logdir afterwards")
    parser.add_argument("--port", type=int, default=6006, help="TensorBoard's port; a free one if it is busy (0: any)")
    return parser.parse_args(argv)


def _free_port(port):
    """`port` if it can be bound on 127.0.0.1 now, else one that can (said)."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
            return port
        except OSError:
            probe.bind(("127.0.0.1", 0))
            free = probe.getsockname()[1]
    print("port %d is busy (another TensorBoard still serving?): TensorBoard will use %d" % (port, free), flush=True)
    return free


def _data(seed=0):
    """scikit-learn's digits (1797 images, 8x8, 10 classes) as NCHW float32 in [0, 1], split
    80/20 into training and validation."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]
    labels = digits.target.astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(len(order) * 0.8)
    return (images[order[:cut]], labels[order[:cut]]), (images[order[cut:]], labels[order[cut:]])


def _network(mx):
    net = mx.gluon.nn.HybridSequential(prefix="digits_")
    with net.name_scope():
        net.add(mx.gluon.nn.Conv2D(16, kernel_size=3, padding=1, activation="relu"),
                mx.gluon.nn.MaxPool2D(),
                mx.gluon.nn.Conv2D(32, kernel_size=3, padding=1, activation="relu"),
                mx.gluon.nn.MaxPool2D(),
                mx.gluon.nn.Flatten(),
                mx.gluon.nn.Dense(64, activation="relu"),  # the features shown in the projector
                mx.gluon.nn.Dense(10))
    return net


def _loss_as_sound(losses, sample_rate=8000):
    """The training loss as a falling tone: one 40 ms note a batch, higher pitch for higher loss."""
    losses = np.asarray(losses, dtype=np.float64)
    span = max(losses.max() - losses.min(), 1e-9)
    pitches = 220.0 + 660.0 * (losses - losses.min()) / span
    samples = int(sample_rate * 0.04)
    t = np.arange(samples) / sample_rate
    envelope = np.hanning(samples)
    return np.concatenate([0.5 * envelope * np.sin(2 * np.pi * f * t) for f in pitches]).astype(np.float32)


def _filters_as_images(weight, scale=8):
    """Conv filters (F, 1, h, w) as images in [0, 1], each stretched to its own range and
    enlarged `scale` times (3x3 pixels are too small to see)."""
    low = weight.min(axis=(1, 2, 3), keepdims=True)
    high = weight.max(axis=(1, 2, 3), keepdims=True)
    images = (weight - low) / np.maximum(high - low, 1e-9)
    return images.repeat(scale, axis=2).repeat(scale, axis=3)


def train(args, writer):
    """The training run, logging as it goes; returns the final metrics."""
    import mxnet as mx
    from tqdm import tqdm

    from mxboard.callbacks import log_parameters

    mx.random.seed(0)
    (x_train, y_train), (x_val, y_val) = _data()
    net = _network(mx)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    batches_per_epoch = math.ceil(len(y_train) / args.batch_size)
    if args.batches:
        batches_per_epoch = min(batches_per_epoch, args.batches)
    schedule = mx.lr_scheduler.FactorScheduler(step=max(batches_per_epoch * 3, 1), factor=0.5,
                                               base_lr=args.learning_rate)
    trainer = mx.gluon.Trainer(net.collect_params(), "adam",
                               {"learning_rate": args.learning_rate, "lr_scheduler": schedule})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    config = vars(args).copy()
    config.pop("serve"), config.pop("port")

    writer.add_text("config", "| setting | value |\n|---|---|\n" +
                    "\n".join("| %s | %s |" % item for item in sorted(config.items())))
    writer.add_images("inputs/first_batch", x_train[:args.batch_size].repeat(4, axis=2).repeat(4, axis=3))
    writer.add_graph(net, input_shape=(args.batch_size, 1, 8, 8))
    writer.add_custom_scalars({"Train vs validation": {  # each a sub-run: a colour each
        "accuracy": ["Multiline", ["^accuracy$"]],
        "loss": ["Multiline", ["^loss$"]],
    }})

    step, batch_losses, filters = 0, [], []
    progress = tqdm(total=args.epochs * batches_per_epoch, unit="batch", file=sys.stdout,
                    disable=not sys.stdout.isatty())
    for epoch in range(1, args.epochs + 1):
        train_acc, train_loss = mx.metric.Accuracy(), mx.metric.Loss()
        order = np.random.default_rng(epoch).permutation(len(y_train))
        for b in range(batches_per_epoch):
            index = order[b * args.batch_size:(b + 1) * args.batch_size]
            data, label = mx.nd.array(x_train[index]), mx.nd.array(y_train[index])
            with mx.autograd.record():
                output = net(data)
                loss = loss_fn(output, label)
            loss.backward()
            trainer.step(len(index))
            step += 1
            writer.add_scalar("loss/batch", loss.mean(), step)  # an NDArray: no wait for the engine
            if step % args.histogram_every == 0 or step == 1:
                log_parameters(writer, net.collect_params(), step)
            train_acc.update(label, output)
            train_loss.update(None, loss)
            batch_losses.append(train_loss.get()[1])
            progress.set_postfix(epoch=epoch, loss="%.3f" % batch_losses[-1])
            progress.update()

        val_output = net(mx.nd.array(x_val))
        val_loss = loss_fn(val_output, mx.nd.array(y_val)).mean().asscalar()
        val_acc = float((val_output.argmax(axis=1).asnumpy() == y_val).mean())
        # named values: the sub-runs accuracy/train, accuracy/validation..., drawn in one chart
        writer.add_scalar("accuracy", {"train": train_acc.get()[1], "validation": val_acc}, epoch)
        writer.add_scalar("loss", {"train": train_loss.get()[1], "validation": val_loss}, epoch)
        writer.add_scalar("learning_rate", trainer.learning_rate, epoch)
        first_layer = net[0].weight.data().asnumpy()
        filters.append(_filters_as_images(first_layer))
        writer.add_images("filters/conv0", filters[-1], epoch)
        progress.write("epoch %d: train accuracy %.3f, validation accuracy %.3f, loss %.3f"
                       % (epoch, train_acc.get()[1], val_acc, val_loss))
    progress.close()

    # The finished model, seen from the validation set.
    probabilities = mx.nd.softmax(val_output).asnumpy()
    for digit in range(10):
        writer.add_pr_curve("pr/digit_%d" % digit, y_val == digit, probabilities[:, digit], num_thresholds=200,
                            global_step=args.epochs)
    features = net[:6](mx.nd.array(x_val)).asnumpy()  # the 64-d layer before the classifier
    writer.add_embedding("validation_features", features, labels=[str(int(y)) for y in y_val],
                         images=x_val, global_step=args.epochs)
    centered = features - features.mean(axis=0)
    cloud = centered @ np.linalg.svd(centered, full_matrices=False)[2][:3].T  # 3-D PCA
    colors = (np.array([[int(c) for c in np.binary_repr(int(y) * 37 % 64, 6)[:3]] for y in y_val]) * 200 + 40)
    writer.add_mesh("validation_features_pca", cloud / np.abs(cloud).max(), colors=colors, global_step=args.epochs)
    writer.add_video("filters/conv0_over_training", np.stack(filters).transpose(1, 0, 2, 3, 4), fps=2,
                     global_step=args.epochs)
    writer.add_audio("loss_as_sound", _loss_as_sound(batch_losses), sample_rate=8000, global_step=args.epochs)
    # on the run's own row in the HParams dashboard, its validation curves the metrics
    writer.add_hparams({"learning_rate": args.learning_rate, "batch_size": args.batch_size,
                        "epochs": args.epochs, "optimizer": "adam"},
                       {("accuracy", "validation"): None, ("loss", "validation"): None}, in_run=True,
                       global_step=args.epochs)
    return {"accuracy": val_acc, "loss": float(val_loss)}


def main(argv=None):
    args = _parse(sys.argv[1:] if argv is None else argv)
    if hasattr(sys.stdout, "reconfigure"):  # piped too, each line in order with the server's (stderr)
        sys.stdout.reconfigure(line_buffering=True)
    from mxboard import SummaryWriter

    port = _free_port(args.port) if args.serve and args.port else args.port
    start = time.time()
    run = args.run = args.run or "lr%g_%s" % (args.learning_rate, time.strftime("%Y%m%d-%H%M%S"))
    with SummaryWriter(os.path.join(args.logdir, run)) as writer:
        metrics = train(args, writer)
    print("trained in %.0f s: validation accuracy %.3f; logs in %s"
          % (time.time() - start, metrics["accuracy"], os.path.join(args.logdir, run)), flush=True)
    if args.serve:
        from tensorboard_bundle.launcher import main as tensorboard

        print("starting TensorBoard: open the URL below (Ctrl+C stops it)", flush=True)
        tensorboard(["tensorboard", "--logdir", args.logdir, "--port", str(port)])


if __name__ == "__main__":
    main()
