"""On a real CUDA GPU (skipped without one): no add_* of a CUDA tensor synchronizes the device on
the caller's thread (torch's sync debug mode raises on any synchronizing operation), and what
is logged equals `.item()` and numpy's, as TensorBoard's loader reads it. Without a GPU, the
same paths are proven by test_device_capture.py (CPU tensors, a fake stream). CuPy and JAX arrays
go through every add_* on their own paths (skipped without them); the system metrics' GPU rows
are read as NVML gives them. `tools/gpu_check.py` (make gpu-check) runs these and the GPU bench."""
import os
import pathlib
import time

import numpy as np
import pytest

from conftest import plugin_accumulator, tb_events, tensor_values
from mxboard import SummaryWriter

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX beside torch: not 75% of the GPU at once
torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU (torch %s)" % torch.__version__)]

# every add_* that takes an array: the same calls for torch's tensors, CuPy's and JAX's arrays
KINDS = {
    "scalar": lambda w, a: w.add_scalar("loss", a["loss"], 0),
    "scalar 16-bit": lambda w, a: w.add_scalar("loss16", a["loss16"], 0),
    "scalars": lambda w, a: w.add_scalars("pair", {"a": a["loss"], "b": a["loss2"]}, 0),
    "histogram": lambda w, a: w.add_histogram("w", a["weights"], 0),
    "histogram 16-bit": lambda w, a: w.add_histogram("w16", a["weights16"], 0),
    "histogram 10 bins": lambda w, a: w.add_histogram("w10", a["weights"], 0, bins=10),
    "histogram edges": lambda w, a: w.add_histogram("we", a["weights"], 0, bins=[-1.0, 0.0, 1.0]),
    "image": lambda w, a: w.add_image("image", a["image"], 0),
    "images": lambda w, a: w.add_images("images", a["images"], 0),
    "video": lambda w, a: w.add_video("video", a["video"], 0),
    "pr_curve": lambda w, a: w.add_pr_curve("pr", a["labels"], a["predictions"], global_step=0, num_thresholds=5),
    "mesh": lambda w, a: w.add_mesh("mesh", a["vertices"], global_step=0),
    "embedding": lambda w, a: w.add_embedding("emb", a["embedding"], global_step=0),
}


def _tensors():
    g = torch.Generator(device="cuda").manual_seed(0)
    t = {"loss": torch.rand((), device="cuda", generator=g, requires_grad=True) * 2,
         "weights": torch.randn(512, 256, device="cuda", generator=g, requires_grad=True),
         "image": torch.rand(3, 32, 32, device="cuda", generator=g),
         "images": torch.rand(4, 3, 16, 16, device="cuda", generator=g),
         "video": torch.rand(1, 4, 3, 16, 16, device="cuda", generator=g),
         "labels": torch.randint(0, 2, (64,), device="cuda", generator=g),
         "predictions": torch.rand(64, device="cuda", generator=g),
         "vertices": torch.rand(1, 10, 3, device="cuda", generator=g)}
    t.update(loss2=t["loss"] * 2, loss16=t["loss"].bfloat16(), weights16=t["weights"].bfloat16(),
             embedding=t["weights"][:16, :4])
    return t


@pytest.mark.parametrize("kind", list(KINDS))
def test_no_add_of_a_cuda_tensor_synchronizes(logdir, kind):
    tensors = _tensors()
    heavy = torch.randn(4096, 4096, device="cuda")
    with SummaryWriter(logdir) as w:
        torch.cuda.synchronize()
        for _ in range(20):  # GPU work still queued at the call
            heavy = heavy @ heavy / 4096
        torch.cuda.set_sync_debug_mode("error")
        try:
            KINDS[kind](w, tensors)
        finally:
            torch.cuda.set_sync_debug_mode("default")


def test_values_equal_item_and_numpy_even_when_updated_in_place_after(logdir):
    loss = torch.zeros((), device="cuda")
    weights = torch.randn(1000, 100, device="cuda")
    expected_losses, expected_weights = [], []
    with SummaryWriter(logdir) as w:
        for step in range(40):
            loss.add_(0.37)  # the loop's in-place updates, on the same stream
            weights.mul_(1.01)
            w.add_scalar("loss", loss, step)
            w.add_histogram("weights", weights, step)
            expected_losses.append(loss.item())  # (the test's own syncs, after the calls)
            expected_weights.append(weights.cpu().numpy())
    acc = plugin_accumulator(logdir)
    assert [float(v) for _, v in tensor_values(acc, "loss")] == [float(np.float32(v)) for v in expected_losses]
    from tensorboard import data_compat
    from tensorboard.util import tensor_util

    from mxboard.summaries.histogram import histogram_of

    for (step, read), values in zip(tensor_values(acc, "weights"), expected_weights):
        host = tensor_util.make_ndarray(data_compat.migrate_value(histogram_of("w", values).value[0]).tensor)
        assert np.array_equal(read, host), step


# -- CuPy and JAX arrays through every add_*, on their own paths ------------------------------
def _host_arrays():
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((512, 256)).astype(np.float32)
    return {"loss": np.float32(1.25).reshape(()), "loss2": np.float32(2.5).reshape(()),
            "loss16": np.float16(0.75).reshape(()), "weights": weights, "weights16": weights.astype(np.float16),
            "image": rng.random((3, 32, 32), dtype=np.float32), "images": rng.random((4, 3, 16, 16), dtype=np.float32),
            "video": rng.random((1, 4, 3, 16, 16), dtype=np.float32), "labels": rng.integers(0, 2, 64),
            "predictions": rng.random(64, dtype=np.float32), "vertices": rng.random((1, 10, 3), dtype=np.float32),
            "embedding": np.ascontiguousarray(weights[:16, :4])}


def _heavy():
    return np.random.default_rng(1).standard_normal((8192, 8192), dtype=np.float32)


def _logged(logdir):
    """What a logdir holds, as TensorBoard's loader reads it: every value of every event (run,
    tag, step, plugin, the value as a tensor) and every other file's bytes (the projector's)."""
    from tensorboard import data_compat
    from tensorboard.util import tensor_util

    found = {}
    for path in sorted(pathlib.Path(logdir).rglob("*")):
        if not path.is_file():
            continue
        run = str(path.parent.relative_to(logdir))
        if path.name.startswith("events.out.tfevents."):
            for event in tb_events(path):
                for value in event.summary.value:
                    value = data_compat.migrate_value(value)
                    array = tensor_util.make_ndarray(value.tensor)
                    key = (run, value.tag, event.step, value.metadata.plugin_data.plugin_name)
                    content = array.tolist() if array.dtype == object else array.tobytes()  # bytes: PNG, GIF
                    found.setdefault(key, []).append((array.dtype.str, array.shape, content))
        else:
            found[str(path.relative_to(logdir))] = path.read_bytes()
    return found


def _pending_work(heavy_step, arrays, dependency):
    """The arrays, each made to depend on about a second of queued GPU work (`heavy_step`, 50
    times), their values unchanged (the work's result, times 0, is added)."""
    zero = dependency(heavy_step)
    return {name: value + zero.astype(value.dtype) for name, value in arrays.items()}


def _same_as_numpy(tmp_path, kind, arrays, still_queued, host):
    """The call with device arrays, against the same call with numpy's (`host`): what is logged
    is equal, and the call returned while the work the arrays wait on was still queued (no sync)."""
    with SummaryWriter(str(tmp_path / "device")) as w:
        KINDS[kind](w, arrays)
        assert still_queued(), "%s waited for the device" % kind
    with SummaryWriter(str(tmp_path / "host")) as w:
        KINDS[kind](w, host)
    assert _logged(tmp_path / "device") == _logged(tmp_path / "host")


@pytest.mark.parametrize("kind", list(KINDS))
def test_cupy_arrays_are_captured_on_cupys_own_path_without_a_sync(tmp_path, kind):
    cupy = pytest.importorskip("cupy")
    try:
        assert cupy.cuda.runtime.getDeviceCount() > 0
    except Exception as exc:  # noqa: BLE001 - no driver or device for CuPy: say why
        pytest.skip("CuPy sees no CUDA device: %r" % exc)
    from mxboard._api import convert
    from mxboard.frameworks import device_capture

    heavy = cupy.asarray(_heavy())
    cupy.cuda.get_current_stream().synchronize()

    def queue(h):
        for _ in range(50):
            h = h @ h / 8192
        return h[0, 0] * 0

    arrays = _pending_work(heavy, {k: cupy.asarray(v) for k, v in _host_arrays().items()}, queue)
    assert isinstance(convert.capture(arrays["weights"]), device_capture.CupySnapshot)
    _same_as_numpy(tmp_path, kind, arrays, lambda: not cupy.cuda.get_current_stream().done, _host_arrays())


@pytest.mark.parametrize("kind", list(KINDS))
def test_jax_arrays_are_captured_on_jaxs_own_path_without_a_sync(tmp_path, kind):
    jax = pytest.importorskip("jax")
    try:
        device = jax.devices("gpu")[0]
    except RuntimeError as exc:
        pytest.skip("JAX has no GPU backend: %s" % exc)
    import jax.numpy as jnp

    from mxboard._api import convert
    from mxboard.frameworks import device_capture

    host = _host_arrays()
    host["loss16"], host["weights16"] = host["loss16"].astype(jnp.bfloat16), host["weights"].astype(jnp.bfloat16)
    heavy = jax.device_put(_heavy(), device).block_until_ready()

    def queue(h):
        for _ in range(50):
            h = h @ h / 8192
        return h[0, 0] * 0

    arrays = _pending_work(heavy, {k: jax.device_put(v, device) for k, v in host.items()}, queue)
    assert isinstance(convert.capture(arrays["weights"]), device_capture.JaxSnapshot)
    waited_on = arrays["loss"]
    as_read = {k: v.astype(np.float32) if v.dtype == jnp.bfloat16 else v for k, v in host.items()}  # JaxSnapshot's
    # JAX's own guard too: no implicit transfer to the host on the caller's thread
    with jax.transfer_guard_device_to_host("disallow"):
        _same_as_numpy(tmp_path, kind, arrays, lambda: not waited_on.is_ready(), as_read)


def test_system_metrics_have_the_gpus_rows_as_nvml_reads_them(logdir):
    pytest.importorskip("psutil")
    pytest.importorskip("pynvml")
    heavy = torch.randn(8192, 8192, device="cuda")
    held_mb = torch.cuda.memory_allocated() / float(1 << 20)
    with SummaryWriter(logdir, system_metrics=0.5):
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:  # the GPU busy while it is sampled
            heavy = heavy @ heavy / 8192
            torch.cuda.synchronize()
    acc = plugin_accumulator(logdir)
    used = [float(v) for _, v in tensor_values(acc, "system/gpu0/memory_used_mb")]
    busy = [float(v) for _, v in tensor_values(acc, "system/gpu0/utilization_percent")]
    assert len(used) >= 3 and len(busy) == len(used), acc.Tags()
    assert min(used) >= held_mb  # NVML counts every process's memory, this one's tensors among it
    assert all(0 <= v <= 100 for v in busy) and max(busy) > 0
