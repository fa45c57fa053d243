"""Keras's own TensorBoard callback, run once with TensorFlow, kept as a fixture that
tests/test_integrations.py compares mxboard's Keras callback against (the test environment has no
TensorFlow).

    python -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu==2.21.0 keras==3.15.1
    /tmp/tf/bin/python tools/keras_fixture.py --callback keras --logdir /tmp/keras_own \
        --fixture tests/fixtures/keras_tensorboard.json

trains a small model whose weights, data and order are fixed (no random initialization, no
shuffling: the same numbers on every backend), with `keras.callbacks.TensorBoard` (histograms,
images, steps per second, `update_freq=2`, then an `evaluate`), and writes what TensorBoard's
loader reads of the logdir: for each run and tag its plugin, steps, and the values of scalars,
the counts of histograms and the sizes of images. Running it again reproduces the fixture (but
for the timings: steps per second, which the test compares by their steps only).
`--callback mxboard` trains the same with mxboard's callback (the test runs it so, on the torch
backend, with `tensorflow` unimportable: `--no-tensorflow`).
"""
import argparse
import json
import os
import sys


def train(callback, logdir):
    """The fixed training: 64 points, 48 trained in batches of 8 for 3 epochs, 16 validated."""
    import keras
    import numpy as np

    if callback == "keras":
        from keras.callbacks import TensorBoard
    else:
        from mxboard.integrations.keras import TensorBoard
    x = np.random.RandomState(0).randn(64, 4).astype("float32")
    y = x.sum(1, keepdims=True)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu", name="dense"),
                              keras.layers.Dense(1, name="dense_1")], name="net")
    weights = np.random.RandomState(1)
    model.set_weights([(weights.rand(*w.shape).astype("float32") - 0.5) for w in model.get_weights()])
    model.compile(keras.optimizers.SGD(0.02), "mse", metrics=["mae"])
    model.fit(x, y, validation_split=0.25, epochs=3, batch_size=8, shuffle=False, verbose=0,
              callbacks=[TensorBoard(logdir, histogram_freq=1, write_images=True, write_steps_per_second=True,
                                     update_freq=2)])
    model.evaluate(x, y, batch_size=8, verbose=0, callbacks=[TensorBoard(logdir)])


def summary(logdir):
    """{run: {tag: {"plugin", "steps", and "values" (scalars), "counts" (histograms) or
    "sizes" (images)}}}, as TensorBoard's loader (plugin_event_accumulator) reads the logdir."""
    import numpy as np
    from tensorboard.backend.event_processing import plugin_event_accumulator
    from tensorboard.util import tensor_util

    found = {}
    for directory, _, names in sorted(os.walk(logdir)):
        if not any("tfevents" in n for n in names):
            continue
        acc = plugin_event_accumulator.EventAccumulator(directory, size_guidance={"tensors": 0})
        acc.Reload()
        run = found[os.path.relpath(directory, logdir)] = {}
        for tag in sorted(acc.Tags()["tensors"]):
            events = acc.Tensors(tag)
            plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
            entry = run[tag] = {"plugin": plugin, "steps": [e.step for e in events]}
            arrays = [tensor_util.make_ndarray(e.tensor_proto) for e in events]
            if plugin == "scalars":
                entry["values"] = [float(a) for a in arrays]
            elif plugin == "histograms":
                entry["counts"] = [float(np.sum(a[:, 2])) if a.size else 0.0 for a in arrays]
            elif plugin == "images":
                entry["sizes"] = [[int(a[0]), int(a[1]), len(a) - 2] for a in arrays]
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--callback", choices=["keras", "mxboard"], required=True)
    parser.add_argument("--logdir", required=True)
    parser.add_argument("--fixture", help="write the logdir's summary here (JSON)")
    parser.add_argument("--no-tensorflow", action="store_true", help="make `import tensorflow` fail first")
    args = parser.parse_args()
    if args.no_tensorflow:
        sys.modules["tensorflow"] = None
    train(args.callback, args.logdir)
    found = summary(args.logdir)
    if args.fixture:
        import keras

        with open(args.fixture, "w") as f:
            json.dump({"made_with": {"keras": keras.__version__, "backend": keras.backend.backend(),
                                     "tensorflow": getattr(sys.modules.get("tensorflow"), "__version__", None)},
                       "runs": found}, f, indent=1, sort_keys=True)
            f.write("\n")
    print(json.dumps(found))


if __name__ == "__main__":
    main()
