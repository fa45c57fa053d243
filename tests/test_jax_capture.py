"""JAX arrays logged as they were at the call, also when the loop's jitted step donates them
afterwards (`jax.jit(step, donate_argnums=...)`, as Keras's JAX trainer and optax loops do): a
donated array is deleted, so the capture (frameworks/device_capture.py's JaxSnapshot) queues a
copy on the array's device at the call and the writer thread reads that copy. Each read on the
writer thread waits until the step has donated the array, so that no read comes before its
donation. What a user sees is read back by TensorBoard's own loaders. On a GPU, that the call
does not wait for the device: test_gpu.py."""
import glob
import os
import threading
import time

import numpy as np
import pytest

from conftest import plugin_accumulator, tb_scalars, tensor_values
from mxboard import SummaryWriter
from mxboard._api import convert
from mxboard.frameworks import device_capture

jax = pytest.importorskip("jax", reason="jax is not installed (`.venv/bin/python -m pip install jax`)")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture
def reads_after_donation(monkeypatch):
    """Every JaxSnapshot read on the writer thread waits until the step has donated the array it
    was taken of (deleted it), so that no read can come before the donation. A call that itself
    waits for the writer thread (add_scalars at a name's first use, add_embedding) has its own
    values read before it returns: those reads wait 0.25 s at most. A read on the test's thread
    (an argument read at the call, as bin edges are) does not wait."""
    init, result = device_capture.JaxSnapshot.__init__, device_capture.JaxSnapshot.result
    caller = threading.current_thread()

    def remembered(self, array, check=None):
        init(self, array, check)
        self.taken_of = array

    def held(self):
        deadline = time.monotonic() + 0.25
        if threading.current_thread() is not caller:
            while not self.taken_of.is_deleted() and time.monotonic() < deadline:
                time.sleep(0.001)
        return result(self)

    monkeypatch.setattr(device_capture.JaxSnapshot, "__init__", remembered)
    monkeypatch.setattr(device_capture.JaxSnapshot, "result", held)


def _donating(array):
    """The loop's step: `array` donated to a jitted computation that writes zeros into its
    buffer (the donated array is deleted; its memory now holds the step's output)."""
    out = _ZEROS(array)
    assert array.is_deleted(), "jax did not donate %s's buffer" % (array.shape,)
    return out


# The step that donates: its output has the array's shape and dtype, so XLA writes it into the
# donated buffer (CPU JAX 0.4.30 donates no bfloat16 buffer, and none that the output does not use).
_ZEROS = jax.jit(lambda array: array * 0, donate_argnums=0)


def test_the_reproduction_logs_each_steps_value_though_the_step_donates_it(tmp_path, reads_after_donation):
    step = jax.jit(lambda w: w - 0.1, donate_argnums=0)
    w, loss, image = jnp.ones((8, 1)), jnp.ones(()), jnp.ones((1, 2, 4))
    expected = [np.ones((8, 1), np.float32)]
    with SummaryWriter(str(tmp_path / "jax")) as sw:
        for i in range(3):
            sw.add_histogram("w", w, i)
            sw.add_scalar("s", w[0, 0], i)
            sw.add_scalar("loss", loss, i)
            sw.add_image("image", image, i)
            given = w, loss, image
            w, loss, image = step(w), step(loss), step(image)
            assert all(array.is_deleted() for array in given)
            expected.append(expected[-1] - np.float32(0.1))
    with SummaryWriter(str(tmp_path / "numpy")) as sw:
        for i in range(3):
            sw.add_histogram("w", expected[i], i)
            sw.add_scalar("s", expected[i][0, 0], i)
            sw.add_scalar("loss", expected[i][0, 0], i)
            sw.add_image("image", expected[i].reshape(1, 2, 4), i)
    read = _what_tensorboard_reads(str(tmp_path / "jax"))
    assert read["scalars"] == sorted((tag, i, pytest.approx(float(expected[i][0, 0])))
                                     for tag in ("loss", "s") for i in range(3))
    _same(read, _what_tensorboard_reads(str(tmp_path / "numpy")))


def _every_kind(w, make, step):
    """Every add_* that takes arrays, each from `make(numpy array)`, with values of `step`."""
    rng = np.random.default_rng(step)
    w.add_scalars("pair", {"a": make(np.array(1.5 + step)), "b": make(np.array([2.5 - step]))}, global_step=step)
    w.add_scalar("loss", make(np.array(0.25 * step, np.float32)), global_step=step)
    w.add_scalar("loss1", make(np.array([0.5 + step], np.float32)), global_step=step)
    w.add_histogram("weights", make(rng.normal(size=(30, 7)).astype(np.float32)), global_step=step)
    w.add_histogram("edges", make(rng.normal(size=500).astype(np.float32)), global_step=step,
                   bins=make(np.array([-1.0, 0.0, 0.5, 1.0])))
    w.add_histogram("ten", make(rng.normal(size=500).astype(np.float32)), global_step=step, bins=10)
    w.add_image("image", make(rng.random((3, 8, 6), dtype=np.float32)), global_step=step)
    w.add_images("images", make((rng.random((2, 3, 5, 4)) * 255).astype(np.uint8)), global_step=step)
    w.add_pr_curve("pr", make(np.array([1, 0, 1, 1, 0])), make(rng.random(5, dtype=np.float32)),
                   global_step=step, num_thresholds=5)
    w.add_mesh("mesh", make(rng.random((1, 4, 3), dtype=np.float32)), global_step=step,
               faces=make(np.array([[[0, 1, 2], [1, 2, 3]]], np.int32)))
    w.add_video("video", make(rng.random((1, 3, 3, 8, 8), dtype=np.float32)), global_step=step)
    w.add_embedding("emb", make(rng.normal(size=(6, 3)).astype(np.float32)), labels=list("abcdef"), global_step=step)
    w.add_audio("audio", make((rng.random(800) - 0.5).astype(np.float32)), global_step=step, sample_rate=8000)
    w.add_image_with_boxes("boxed", make(rng.random((3, 16, 16), dtype=np.float32)),
                           make(np.array([[1.0, 2.0, 9.0, 12.0]], np.float32)), global_step=step)
    w.add_tensor("tensor", make(rng.normal(size=(2, 3)).astype(np.float32)), global_step=step)


class _DonatingAfterEachCall:
    """A writer whose every call is followed by the loop's step, which donates each JAX array
    the call was given."""

    def __init__(self, writer, arrays):
        self._writer, self._arrays = writer, arrays

    def __getattr__(self, name):
        # The call's arguments are made after the method is looked up: they are the arrays from here on.
        given = len(self._arrays)

        def call(*args, **kwargs):
            getattr(self._writer, name)(*args, **kwargs)
            for array in self._arrays[given:]:
                _donating(array)
        return call


def test_every_add_of_a_jax_array_logs_its_value_at_the_call_though_a_step_donates_it(tmp_path, reads_after_donation):
    arrays = []

    def make(array):
        arrays.append(jnp.asarray(array))
        return arrays[-1]

    with SummaryWriter(str(tmp_path / "jax")) as w:
        for step in range(2):
            _every_kind(_DonatingAfterEachCall(w, arrays), make, step)
    assert len(arrays) == 2 * 20 and all(a.is_deleted() for a in arrays)
    with SummaryWriter(str(tmp_path / "numpy")) as w:
        for step in range(2):
            _every_kind(w, lambda a: a, step)
    _same(_what_tensorboard_reads(str(tmp_path / "jax")), _what_tensorboard_reads(str(tmp_path / "numpy")))


def test_a_snapshot_holds_a_copy_the_step_cannot_take_and_reads_it_as_it_was():
    w = jnp.arange(6, dtype=jnp.float32).reshape(2, 3) + 1
    snapshot, scalar = convert.capture(w), convert.scalar_alone(w[1, 2])
    assert isinstance(snapshot, device_capture.JaxSnapshot) and isinstance(scalar, device_capture.JaxSnapshot)
    zeros = _donating(w)
    assert np.array_equal(snapshot.result(), np.arange(1, 7, dtype=np.float32).reshape(2, 3))
    assert float(scalar.result()) == 6.0 and not np.asarray(zeros).any()


def test_a_bfloat16_array_is_read_as_float32():
    snapshot = convert.capture(jnp.arange(6, dtype=jnp.bfloat16).reshape(2, 3))
    assert (snapshot.shape, snapshot.dtype, snapshot.size) == ((2, 3), np.float32, 6)
    read = snapshot.result()
    assert read.dtype == np.float32 and np.array_equal(read, np.arange(6, dtype=np.float32).reshape(2, 3))


class _ShardedAcrossProcesses:
    """A global array of multi-host JAX as one process sees it: its shard here, `local`, holds
    the whole value where the array is replicated; the process cannot read the array itself."""

    def __init__(self, local, replicated):
        self.shape, self.dtype, self._local = local.shape, local.dtype, local
        self.is_fully_addressable, self.is_fully_replicated = False, replicated

    def addressable_data(self, index):
        return self._local

    def copy_to_host_async(self):
        pass

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("Fetching value for `jax.Array` that spans non-addressable devices is not possible.")


def test_an_array_sharded_across_processes_is_copied_through_its_shard_here_or_not_jitted():
    """A jitted copy of a global array is a program every process must run: a process logging
    alone (process 0, as loops do) copies its own shard of a replicated array, and passes any
    other to JAX unjitted (which cannot read it: said on the writer's next call)."""
    local = jnp.arange(4, dtype=jnp.float32) + 1
    replicated = device_capture.JaxSnapshot(_ShardedAcrossProcesses(local, replicated=True))
    _donating(local)
    assert np.array_equal(replicated.result(), [1, 2, 3, 4])
    split = device_capture.JaxSnapshot(_ShardedAcrossProcesses(jnp.ones(4), replicated=False))
    with pytest.raises(RuntimeError, match="non-addressable"):
        split.result()


def _what_tensorboard_reads(logdir):
    acc = plugin_accumulator(logdir)
    read = {tag: [v for _, v in tensor_values(acc, tag)] for tag in acc.Tags()["tensors"]}
    read["scalars"] = sorted((tag, step, value)
                             for path in glob.glob(logdir + "/**/events.out.tfevents.*", recursive=True)
                             for tag, step, value in tb_scalars(path))
    # The projector reads an embedding's matrix from its tensors.tsv.
    for path in glob.glob(logdir + "/**/tensors.tsv", recursive=True):
        read[os.path.relpath(path, logdir)] = [np.loadtxt(path, ndmin=2)]
    return read


def _same(a, b):
    assert a.keys() == b.keys()
    scalars_a, scalars_b = a.pop("scalars"), b.pop("scalars")
    assert [row[:2] for row in scalars_a] == [row[:2] for row in scalars_b]
    assert np.allclose([row[2] for row in scalars_a], [row[2] for row in scalars_b], rtol=1e-6)
    for tag in a:
        assert len(a[tag]) == len(b[tag]), tag
        for x, y in zip(a[tag], b[tag]):
            x, y = np.asarray(x), np.asarray(y)
            # Images and video are encoded bytes: compared exactly.
            if x.dtype == object:
                assert x.tolist() == y.tolist(), tag
            else:
                assert np.allclose(x, y, rtol=1e-5), tag
