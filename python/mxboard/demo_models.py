"""The demo's two versions of one small CNN for 8x8 digits, behind one interface for demo.py.

GluonCNN is an MXNet Gluon network, used where MXNet runs (Python 3.11 or older, numpy older than
1.24). NumpyCNN is the same kind of network in numpy, with backpropagation and Adam written out,
so that a newcomer on a current Python still sees every dashboard but Graphs, which needs a
framework's graph.

Both have `train_step(x, y)`, which returns the loss to log, the batch's mean loss and how many
were right; `evaluate(x, y)`, which returns the mean loss and the probabilities; `features(x)`,
the 64-wide layer before the classifier; `first_filters()`, the first layer's 3x3 filters;
`learning_rate`; `log_parameters(writer, step)`; and `log_graph(writer, batch_size)`.
"""
import math
from typing import TYPE_CHECKING, Any, Dict, Tuple

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from mxboard import SummaryWriter

__all__ = ["GluonCNN", "NumpyCNN", "mxnet_runs"]

Array = NDArray[Any]


def mxnet_runs() -> bool:
    """Whether MXNet 1.9.1 imports here (it needs numpy < 1.24: Python 3.11 or older)."""
    try:
        import mxnet  # noqa: F401
    # An ImportError, or an AttributeError (np.bool) on numpy 1.24 or later.
    except Exception:  # noqa: BLE001
        return False
    return True


def _schedule(base_lr: float, step: int, batches_per_epoch: int) -> float:
    """The learning rate halves every 3 epochs (Gluon's FactorScheduler, as the Gluon model uses)."""
    return base_lr * 0.5 ** (step // max(batches_per_epoch * 3, 1))


class GluonCNN:
    """conv 16 - pool - conv 32 - pool - dense 64 - dense 10, trained by Gluon with Adam."""

    framework = "MXNet Gluon"

    def __init__(self, learning_rate: float, batches_per_epoch: int, seed: int) -> None:
        import mxnet as mx

        self.mx = mx
        mx.random.seed(seed)
        net = self.net = mx.gluon.nn.HybridSequential(prefix="digits_")
        with net.name_scope():
            net.add(mx.gluon.nn.Conv2D(16, kernel_size=3, padding=1, activation="relu"),
                    mx.gluon.nn.MaxPool2D(),
                    mx.gluon.nn.Conv2D(32, kernel_size=3, padding=1, activation="relu"),
                    mx.gluon.nn.MaxPool2D(),
                    mx.gluon.nn.Flatten(),
                    # The features shown in the projector.
                    mx.gluon.nn.Dense(64, activation="relu"),
                    mx.gluon.nn.Dense(10))
        net.initialize(mx.init.Xavier())
        net.hybridize()
        schedule = mx.lr_scheduler.FactorScheduler(step=max(batches_per_epoch * 3, 1), factor=0.5,
                                                   base_lr=learning_rate)
        self.trainer = mx.gluon.Trainer(net.collect_params(), "adam",
                                        {"learning_rate": learning_rate, "lr_scheduler": schedule})
        self.loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()

    @property
    def learning_rate(self) -> float:
        return float(self.trainer.learning_rate)

    def log_graph(self, writer: "SummaryWriter", batch_size: int) -> None:
        writer.add_graph(self.net, input_shape=(batch_size, 1, 8, 8))

    def train_step(self, x: Array, y: Array) -> Tuple[Any, float, int]:
        mx = self.mx
        data, label = mx.nd.array(x), mx.nd.array(y)
        with mx.autograd.record():
            output = self.net(data)
            # An NDArray: add_scalar does not wait for the engine.
            mean = self.loss_fn(output, label).mean()
        # Back-propagate the batch's mean loss, so that the gradients logged are those of the mean,
        # as in the numpy model. A per-example loss's backward sums them instead: 64 times larger,
        # and rescaled only inside step().
        mean.backward()
        self.trainer.step(1)
        return mean, float(mean.asscalar()), int((output.argmax(axis=1).asnumpy() == y).sum())

    def log_parameters(self, writer: "SummaryWriter", step: int) -> None:
        from mxboard.callbacks import log_parameters

        log_parameters(writer, self.net.collect_params(), step)

    def evaluate(self, x: Array, y: Array) -> Tuple[float, Array]:
        output = self.net(self.mx.nd.array(x))
        loss = float(self.loss_fn(output, self.mx.nd.array(y)).mean().asscalar())
        return loss, self.mx.nd.softmax(output).asnumpy()

    def features(self, x: Array) -> Array:
        return np.asarray(self.net[:6](self.mx.nd.array(x)).asnumpy())

    def first_filters(self) -> Array:
        return np.asarray(self.net[0].weight.data().asnumpy())


class NumpyCNN:
    """conv 16 (3x3) - ReLU - 2x2 max pool - dense 64 - ReLU - dense 10, in numpy, with the forward
    pass, backpropagation and Adam written out. Its parameters have the names Gluon gives the
    other model's (digits_conv0_weight and so on)."""

    framework = "numpy"

    def __init__(self, learning_rate: float, batches_per_epoch: int, seed: int) -> None:
        rng = np.random.default_rng(seed)

        def xavier(shape: Tuple[int, ...], fan_in: int, fan_out: int) -> Array:
            bound = math.sqrt(6.0 / (fan_in + fan_out))
            return rng.uniform(-bound, bound, shape).astype(np.float32)

        self.params: Dict[str, Array] = {
            "digits_conv0_weight": xavier((16, 1, 3, 3), 9, 16 * 9), "digits_conv0_bias": np.zeros(16, np.float32),
            "digits_dense0_weight": xavier((256, 64), 256, 64), "digits_dense0_bias": np.zeros(64, np.float32),
            "digits_dense1_weight": xavier((64, 10), 64, 10), "digits_dense1_bias": np.zeros(10, np.float32),
        }
        self.grads = {name: np.zeros_like(p) for name, p in self.params.items()}
        self._moments = {name: (np.zeros_like(p), np.zeros_like(p)) for name, p in self.params.items()}
        self._base_lr, self._batches_per_epoch, self._updates = learning_rate, batches_per_epoch, 0

    @property
    def learning_rate(self) -> float:
        return _schedule(self._base_lr, self._updates, self._batches_per_epoch)

    def log_graph(self, writer: "SummaryWriter", batch_size: int) -> None:
        """Log nothing: a graph comes from a framework (MXNet's symbol, torch's trace)."""

    def _forward(self, x: Array) -> Tuple[Tuple[Array, ...], Array]:
        p = self.params
        n = len(x)
        padded = np.pad(x[:, 0], ((0, 0), (1, 1), (1, 1)))
        cols = np.lib.stride_tricks.sliding_window_view(padded, (1, 3, 3)).reshape(n, 8, 8, 9)
        # The shape is (n, 8, 8, 16).
        z = cols @ p["digits_conv0_weight"].reshape(16, 9).T + p["digits_conv0_bias"]
        a = np.maximum(z, 0)
        blocks = a.reshape(n, 4, 2, 4, 2, 16)
        pooled = blocks.max(axis=(2, 4))
        h0 = pooled.reshape(n, 256)
        z1 = h0 @ p["digits_dense0_weight"] + p["digits_dense0_bias"]
        h1 = np.maximum(z1, 0)
        logits = h1 @ p["digits_dense1_weight"] + p["digits_dense1_bias"]
        shifted = logits - logits.max(axis=1, keepdims=True)
        probabilities = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        return (cols, z, blocks, pooled, h0, z1, h1), probabilities

    def _loss(self, probabilities: Array, y: Array) -> Array:
        losses: Array = -np.log(np.maximum(probabilities[np.arange(len(y)), y.astype(int)], 1e-12))
        return losses

    def train_step(self, x: Array, y: Array) -> Tuple[Any, float, int]:
        (cols, z, blocks, pooled, h0, z1, h1), probabilities = self._forward(x)
        losses = self._loss(probabilities, y)
        n, p, g = len(y), self.params, self.grads
        d_logits = probabilities.copy()
        d_logits[np.arange(n), y.astype(int)] -= 1
        d_logits /= n
        g["digits_dense1_weight"][...] = h1.T @ d_logits
        g["digits_dense1_bias"][...] = d_logits.sum(axis=0)
        d_z1 = (d_logits @ p["digits_dense1_weight"].T) * (z1 > 0)
        g["digits_dense0_weight"][...] = h0.T @ d_z1
        g["digits_dense0_bias"][...] = d_z1.sum(axis=0)
        d_pooled = (d_z1 @ p["digits_dense0_weight"].T).reshape(n, 4, 4, 16)
        # The max of each 2x2 block.
        winners = blocks == pooled[:, :, None, :, None, :]
        d_a = (winners * d_pooled[:, :, None, :, None, :]).reshape(n, 8, 8, 16)
        d_z = d_a * (z > 0)
        g["digits_conv0_weight"][...] = (d_z.reshape(-1, 16).T @ cols.reshape(-1, 9)).reshape(16, 1, 3, 3)
        g["digits_conv0_bias"][...] = d_z.sum(axis=(0, 1, 2))
        self._adam()
        loss = float(losses.mean())
        return loss, loss, int((probabilities.argmax(axis=1) == y).sum())

    def _adam(self, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> None:
        lr = self.learning_rate
        self._updates += 1
        t = self._updates
        for name, param in self.params.items():
            m, v = self._moments[name]
            grad = self.grads[name]
            m[...] = beta1 * m + (1 - beta1) * grad
            v[...] = beta2 * v + (1 - beta2) * grad * grad
            param -= (lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps)).astype(param.dtype)

    def log_parameters(self, writer: "SummaryWriter", step: int) -> None:
        for name in self.params:
            writer.add_histogram("weights/" + name, self.params[name], step)
            writer.add_histogram("gradients/" + name, self.grads[name], step)

    def evaluate(self, x: Array, y: Array) -> Tuple[float, Array]:
        _, probabilities = self._forward(x)
        return float(self._loss(probabilities, y).mean()), probabilities

    def features(self, x: Array) -> Array:
        hidden, _ = self._forward(x)
        return hidden[6]

    def first_filters(self) -> Array:
        return self.params["digits_conv0_weight"].copy()
