"""MXNet first-class, on real MXNet 1.9.1 (CPU): NDArrays logged without waiting for the engine,
histograms counted on the array's device, graphs, and training hooks."""
import os
import sys
import threading

import numpy as np
import pytest

from conftest import event_files, plugin_accumulator, tb_scalars, tensor_values
from mxboard import SummaryWriter

mx = pytest.importorskip("mxnet")
nd = mx.nd

GATES = {}


class _Gate(mx.operator.CustomOp):
    """Identity that waits for a gate to open: its output stays pending on MXNet's engine."""

    def __init__(self, gate):
        self.gate = gate

    def forward(self, is_train, req, in_data, out_data, aux):
        GATES[self.gate].wait(30)
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register("mxboard_test_gate")
class _GateProp(mx.operator.CustomOpProp):
    def __init__(self, gate):
        super().__init__(need_top_grad=True)
        self.gate = gate

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Gate(self.gate)


def _pending(array, name):
    """`array` behind a closed gate; returns (pending copy, the gate to open)."""
    GATES[name] = threading.Event()
    return nd.Custom(array, gate=name, op_type="mxboard_test_gate"), GATES[name]


def _call_returns_while_pending(call, gate):
    """Run `call` in a thread; True if it returned while the gate was still closed."""
    done = threading.Event()
    thread = threading.Thread(target=lambda: (call(), done.set()))
    thread.start()
    returned = done.wait(10)
    gate.set()
    thread.join(30)
    return returned


@pytest.mark.parametrize("kind", ["scalar", "histogram", "image", "audio", "pr_curve", "scalar-dict"])
def test_add_returns_without_waiting_for_the_engine(logdir, kind):
    with SummaryWriter(logdir) as w:
        base = nd.array(np.linspace(0.1, 0.9, 48).reshape(3, 4, 4))
        value, gate = _pending(base, "g-" + kind)
        calls = {
            "scalar": lambda: w.add_scalar("s", value.mean(), 1),
            "scalar-dict": lambda: w.add_scalar("d", {"a": value.mean()}, 1),
            "histogram": lambda: w.add_histogram("h", value, 1),
            "image": lambda: w.add_image("i", value, 1),
            "audio": lambda: w.add_audio("a", value.reshape(-1), sample_rate=100, global_step=1),
            "pr_curve": lambda: w.add_pr_curve("p", value > 0.5, value, num_thresholds=10, global_step=1),
        }
        assert _call_returns_while_pending(calls[kind], gate), "the call waited for the engine"
    acc = plugin_accumulator(logdir)
    if kind == "scalar":
        assert tb_scalars(event_files(logdir)[0]) == [("s", 1, pytest.approx(0.5))]
    elif kind == "scalar-dict":
        assert tb_scalars(event_files(os.path.join(logdir, "d", "a"))[0]) == [("d", 1, pytest.approx(0.5))]
    elif kind == "histogram":
        assert tensor_values(acc, "h")[0][1][:, 2].sum() == 48
    else:
        assert len(acc.Tensors({"image": "i", "audio": "a", "pr_curve": "p"}[kind])) == 1


def test_an_ndarray_embedding_returns_with_its_files_written(logdir):
    """add_embedding returns with its files in place (as tensorboardX and torch do: the projector
    reads them, and torch's own test removes the logdir right after the call), so an NDArray embedding waits
    for the engine: the one call that does; it is called rarely."""
    with SummaryWriter(logdir) as w:
        value, gate = _pending(nd.array(np.linspace(0.1, 0.9, 48).reshape(3, 16)), "g-embedding")
        threading.Timer(0.5, gate.set).start()
        w.add_embedding("e", value, labels=nd.array([1, 2, 3]))
        with open(os.path.join(logdir, "e", "metadata.tsv")) as f:
            assert f.read().split() == ["1.0", "2.0", "3.0"]
        assert np.loadtxt(os.path.join(logdir, "e", "tensors.tsv")).shape == (3, 16)


def test_a_value_overwritten_after_the_call_is_logged_as_it_was(logdir):
    with SummaryWriter(logdir) as w:
        x = nd.ones((4,))
        slow, gate = _pending(x, "overwrite")
        w.add_histogram("h", slow, 0)
        w.add_scalar("s", slow.sum(), 0)
        slow[:] = 100.0  # in place, right after the calls, while the value is still pending
        x += 7
        gate.set()
    acc = plugin_accumulator(logdir)
    (_, buckets), = tensor_values(acc, "h")
    assert buckets[:, 2].sum() == 4 and buckets[-1, 1] == pytest.approx(1.5)  # the ones, not 100
    assert tb_scalars(event_files(logdir)[0]) == [("s", 0, 4.0)]


def test_a_0d_ndarray_is_logged_as_its_number_in_every_kind_that_takes_one(logdir):
    """A 0-d NDArray (`reshape(())`, or mxnet.np's 0-d arrays) is one number. On e1226c8 the
    legacy one failed in MXNet's `_copyto` ("inferring shapes failed") at add_scalar."""
    legacy = nd.array([2.5]).reshape(())
    assert legacy.shape == ()
    numpy_style = mx.np.array(3.5)  # mxnet.np: 0-d without set_np()
    with SummaryWriter(logdir) as w:
        w.add_scalar("legacy", legacy, 0)
        w.add_scalar("np", numpy_style, 0)
        w.add_scalars("named", {"a": legacy, "b": numpy_style}, 0)
        w.add_histogram("h", legacy, 0)
    assert sorted(tb_scalars(event_files(logdir)[0])) == [("legacy", 0, 2.5), ("np", 0, 3.5)]
    for name, value in (("a", 2.5), ("b", 3.5)):
        assert tb_scalars(event_files(os.path.join(logdir, "named", name))[0]) == [("named", 0, value)]
    (_, buckets), = tensor_values(plugin_accumulator(logdir), "h")
    assert buckets[:, 2].sum() == 1 and buckets[0, 0] <= 2.5 <= buckets[-1, 1]


def test_ndarray_scalars_past_one_ring_of_slots_are_served_as_they_were_at_each_call(logdir, serve):
    # one NDArray rewritten in place after every call (each call must copy it), in four dtypes,
    # 2500 calls: more than one ring of slots (1024), and slots freed and reused
    dtypes = ["float32", "float64", "float16", "int32"]
    buffers = {dtype: nd.zeros((1,), dtype=dtype) for dtype in dtypes}
    with SummaryWriter(logdir, flush_secs=3600) as w:
        for step in range(2500):
            buffer = buffers[dtypes[step % 4]]
            buffer[:] = step % 1000  # exact in every dtype (float16 up to 2048)
            w.add_scalar("loss", buffer, step)
    server = serve(logdir, "--samples_per_plugin", "scalars=5000")  # every point, not a sample of 1000
    assert "data loader: mxboard (in-process)" in server.banner
    points = server.json("/data/plugin/scalars/scalars", {"run": ".", "tag": "loss"},
                         until=lambda p: isinstance(p, list) and len(p) >= 2500)
    assert [(step, value) for _, step, value in points] == [(step, float(step % 1000)) for step in range(2500)]


def test_logging_inside_autograd_recording_leaves_gradients_alone(logdir):
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with SummaryWriter(logdir) as w:
        with mx.autograd.record():
            y = (x * x).sum()
            w.add_scalar("y", y, 0)
            w.add_histogram("x", x, 0)
        y.backward()
    assert x.grad.asnumpy().tolist() == [2.0, 4.0, 6.0]
    assert tb_scalars(event_files(logdir)[0]) == [("y", 0, 14.0)]


def _on_device(values, bins="default"):
    """The GPU path (mxnet_capture.MxnetHistogram), run with MXNet's operators on the CPU (no GPU
    here: SummaryWriter bins CPU arrays on the host) and built into buckets as the writer does."""
    from tensorboard import data_compat
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.util import tensor_util

    from mxboard.frameworks.mxnet_capture import MxnetHistogram
    from mxboard.summaries.histogram import histogram_of

    summary = histogram_of("device", MxnetHistogram(nd.array(values, dtype=values.dtype), bins).result(), bins)
    value = summary_pb2.Summary.FromString(summary.SerializeToString()).value[0]  # TensorBoard's reading
    return tensor_util.make_ndarray(data_compat.migrate_value(value).tensor)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
@pytest.mark.parametrize("bins", ["default", 7, [-3.0, -1.0, 0.0, 0.5, 2.0, 3.0]])
def test_device_histograms_match_the_host_ones(logdir, dtype, bins):
    values = np.random.default_rng(3).normal(size=2000) * (1 if dtype != "int32" else 3)
    values = values.astype(dtype)
    with SummaryWriter(logdir) as w:
        w.add_histogram("cpu-ndarray", nd.array(values, dtype=dtype), 0, bins=bins)  # on the host
        w.add_histogram("host", values, 0, bins=bins)
    acc = plugin_accumulator(logdir)
    cpu, host = tensor_values(acc, "cpu-ndarray")[0][1], tensor_values(acc, "host")[0][1]
    assert np.array_equal(cpu, host)
    device = _on_device(values, bins)
    assert device[:, 2].sum() == host[:, 2].sum()
    assert device.shape == host.shape
    assert np.allclose(device, host, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_device_histograms_put_values_on_an_edge_in_the_edges_bucket(logdir, dtype):
    from mxboard.summaries.histogram import default_bucket_limits

    limits = default_bucket_limits()[::37]  # edges across the range, both signs
    near = limits.astype(dtype)  # each edge rounded to the dtype: on it, or just beside it
    values = np.concatenate([near, np.nextafter(near, np.inf), np.nextafter(near, -np.inf), [0.0, -0.0]]).astype(dtype)
    with SummaryWriter(logdir) as w:
        w.add_histogram("host", values, 0)
    host = tensor_values(plugin_accumulator(logdir), "host")[0][1]
    assert np.array_equal(_on_device(values), host)  # edges and counts, bucket for bucket


def test_device_histogram_drops_nan_and_inf_with_a_warning(logdir):
    values = nd.array([1.0, float("nan"), 2.0, float("inf"), 3.0])
    with pytest.warns(RuntimeWarning, match="NaN or infinite"):
        with SummaryWriter(logdir) as w:
            w.add_histogram("h", values, 0)
            w.flush()
    (_, buckets), = tensor_values(plugin_accumulator(logdir), "h")
    assert buckets[:, 2].sum() == 3 and buckets[0, 0] == 1.0 and buckets[-1, 1] == 3.0


def _small_net():
    net = mx.gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(mx.gluon.nn.Conv2D(4, 3, activation="relu"), mx.gluon.nn.MaxPool2D(),
                mx.gluon.nn.Flatten(), mx.gluon.nn.Dense(10))
    net.initialize()
    return net


def _graph(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(logdir)
    acc.Reload()
    return {node.name: node for node in acc.Graph().node}


@pytest.mark.parametrize("how", ["hybridized-and-run", "traced"])
def test_graph_of_a_hybrid_block_with_scopes_ops_and_shapes(logdir, how):
    net = _small_net()
    if how == "hybridized-and-run":
        net.hybridize()
        net(nd.ones((2, 1, 8, 8)))
    with SummaryWriter(logdir) as w:
        w.add_graph(net, input_shape=(2, 1, 8, 8))
    nodes = _graph(logdir)
    scope = net.prefix.rstrip("_")  # hybridsequential<N>: Gluon counts instances per process
    conv = nodes[scope + "/conv0/fwd"]
    assert conv.op == "Convolution" and conv.attr["kernel"].s == b"(3, 3)"
    assert list(conv.input) == ["data", scope + "/conv0/weight", scope + "/conv0/bias"]
    assert nodes["data"].op == "Placeholder" and nodes[scope + "/dense0/weight"].op == "Variable"
    shape = nodes[scope + "/pool0/fwd"].attr["_output_shapes"].list.shape[0]
    assert [d.size for d in shape.dim] == [2, 4, 3, 3]
    assert [d.size for d in nodes[scope + "/dense0/weight"].attr["_output_shapes"].list.shape[0].dim] == [10, 36]


def test_graph_of_a_symbol(logdir):
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=5, name="fc1")
    out = mx.sym.SoftmaxOutput(mx.sym.Activation(fc, act_type="relu", name="relu1"), name="softmax")
    with SummaryWriter(logdir) as w:
        w.add_graph(out)
    nodes = _graph(logdir)
    assert nodes["fc1/fc1"].op == "FullyConnected"
    assert list(nodes["fc1/fc1"].input) == ["data", "fc1/weight", "fc1/bias"]
    assert nodes["softmax"].op == "SoftmaxOutput" and nodes["softmax_label"].op == "Placeholder"


def test_graph_of_a_plain_block_is_refused_clearly(logdir):
    class Plain(mx.gluon.nn.Block):
        def forward(self, x):
            return x

    with SummaryWriter(logdir) as w:
        with pytest.raises(TypeError, match="needs a HybridBlock"):
            w.add_graph(Plain())
        with pytest.raises(TypeError, match="Symbol or a gluon.HybridBlock"):
            w.add_graph(object())


def _batches(count=8, size=16):
    rng = np.random.default_rng(0)
    data = rng.random((count * size, 1, 8, 8)).astype(np.float32)
    labels = (data.reshape(len(data), -1).mean(axis=1) > 0.5).astype(np.float32)
    return mx.gluon.data.DataLoader(mx.gluon.data.ArrayDataset(data, labels), batch_size=size)


def test_estimator_handler_logs_metrics_learning_rate_and_histograms(logdir):
    from mxnet.gluon.contrib.estimator import Estimator

    from mxboard.callbacks import SummaryHandler

    net = _small_net()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    est = Estimator(net, mx.gluon.loss.SoftmaxCrossEntropyLoss(), train_metrics=mx.metric.Accuracy(),
                    trainer=trainer)
    with SummaryWriter(logdir) as w:
        est.fit(_batches(), val_data=_batches(2), epochs=2,
                event_handlers=[SummaryHandler(w, log_every=1, histogram_every=4)])
    acc = plugin_accumulator(logdir)
    steps = {tag: [e.step for e in acc.Tensors(tag)] for tag in acc.Tags()["tensors"]}
    assert steps["loss/batch"] == list(range(1, 17))
    assert steps["accuracy/train"] == steps["accuracy/validation"] == steps["learning_rate"] == [1, 2]
    assert tensor_values(acc, "learning_rate")[0][1] == pytest.approx(0.1)
    assert steps["weights/%sconv0_weight" % net.prefix] == [4, 8, 12, 16]
    assert steps["gradients/%sdense0_bias" % net.prefix] == [4, 8, 12, 16]


def test_module_callbacks(logdir):
    from mxboard.callbacks import ModuleLogger

    data = mx.sym.var("data")
    out = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=2, name="fc1"), name="softmax")
    x = np.random.default_rng(0).random((64, 4)).astype(np.float32)
    y = (x.sum(axis=1) > 2).astype(np.float32)
    train = mx.io.NDArrayIter(x, y, batch_size=16, label_name="softmax_label")
    module = mx.mod.Module(out, data_names=["data"], label_names=["softmax_label"])
    with SummaryWriter(logdir) as w:
        logger = ModuleLogger(w, log_every=1, histogram_every=2)
        module.fit(train, num_epoch=2, optimizer="sgd", optimizer_params={"learning_rate": 0.05},
                   eval_metric="acc", batch_end_callback=logger.batch_end, epoch_end_callback=logger.epoch_end)
    acc = plugin_accumulator(logdir)
    assert [e.step for e in acc.Tensors("accuracy/train")] == list(range(1, 9))
    assert tensor_values(acc, "learning_rate")[0][1] == pytest.approx(0.05)
    assert [e.step for e in acc.Tensors("gradients/fc1_weight")] == [2, 4, 6, 8]
    assert sorted(e.step for e in acc.Tensors("weights/fc1_weight")) == [1, 2, 2, 4, 6, 8]  # + epochs 1, 2


@pytest.mark.parametrize("form", ["plain", "display_name", "named", "peer keywords", "described named"])
def test_every_form_of_add_scalar_refuses_a_non_scalar_ndarray_at_the_call(logdir, form):
    """One capture path, one shape check. On b621f0a the `display_name` form took an NDArray of 3
    elements, and the next, unrelated call raised numpy's "cannot reshape array of size 3"."""
    three = nd.array([1.0, 2.0, 3.0])
    calls = {
        "plain": lambda w: w.add_scalar("t", three, 0),
        "display_name": lambda w: w.add_scalar("t", three, 0, display_name="D"),
        "named": lambda w: w.add_scalar("t", {"a": three}, 0),
        "peer keywords": lambda w: w.add_scalar(tag="t", scalar_value=three, global_step=0),
        "described named": lambda w: w.add_scalar("t", three, 0, display_name="D", summary_description="d"),
    }
    with SummaryWriter(logdir) as w:
        with pytest.raises(ValueError, match=r"must be a single number; got an NDArray of shape \(3,\)"):
            calls[form](w)
        w.add_scalar("next", nd.array([4.0]), 1)  # the next call is neither refused nor lost
        w.add_scalar("shown", nd.array([5.0]), 2, display_name="D")
        w.flush()
    assert sorted((t, s) for t, s, _ in tb_scalars(event_files(logdir)[0])) == [("next", 1), ("shown", 2)]


def test_a_float_ndarray_image_above_one_warns_at_the_users_line(logdir):
    """Its pixels are checked on the writer thread (the engine computes them): on b621f0a the
    warning pointed at threading.py; numpy images warned at the user's line."""
    import warnings

    with SummaryWriter(logdir) as w, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w.add_image("i", nd.full((3, 4, 4), 200.0)); line = sys._getframe().f_lineno  # noqa: E702
        w.flush()
    (warning,) = [c for c in caught if "float pixels are read in [0, 1]" in str(c.message)]
    assert (warning.filename, warning.lineno) == (__file__, line)


def test_ndarray_pixels_and_samples_say_nan_once_a_tag_at_the_users_line(logdir):
    """An NDArray's values are checked when the engine has them, on the writer thread: a NaN or
    Inf there is said by a later call, once a tag, at the user's line, naming the step (on
    a6ab6a5 silently)."""
    import warnings

    with SummaryWriter(logdir) as w, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            w.add_image("i", nd.full((1, 2, 2), float("nan")), step); image = sys._getframe().f_lineno  # noqa: E702
            w.add_audio("a", nd.array([0.5, float("inf")]), 8000, step); audio = sys._getframe().f_lineno  # noqa: E702
            w.flush()
    said = {str(c.message): (c.filename, c.lineno, c.category) for c in caught if c.category is not DeprecationWarning}
    assert said == {
        "add_image('i'): NaN or infinite pixels were drawn black (NaN, -Inf) or white (+Inf) at step 0; "
        "said once for this tag": (__file__, image, RuntimeWarning),
        "add_audio('a'): NaN or infinite samples were written as silence (NaN) or full scale (+-Inf) at step 0; "
        "said once for this tag": (__file__, audio, RuntimeWarning)}
