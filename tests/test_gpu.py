"""On a real CUDA GPU (skipped without one): no add_* of a CUDA tensor synchronizes the device on
the caller's thread (torch's sync debug mode raises on any synchronizing operation), and what
is logged equals `.item()` and numpy's, as TensorBoard's loader reads it. Without a GPU, the
same paths are proven by test_device_capture.py (CPU tensors, a fake stream)."""
import numpy as np
import pytest

from conftest import plugin_accumulator, tensor_values
from mxboard import SummaryWriter

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU (torch %s)" % torch.__version__)]

KINDS = {
    "scalar": lambda w, t: w.add_scalar("loss", t["loss"], 0),
    "scalar bf16": lambda w, t: w.add_scalar("loss16", t["loss"].bfloat16(), 0),
    "scalars": lambda w, t: w.add_scalars("pair", {"a": t["loss"], "b": t["loss"] * 2}, 0),
    "histogram": lambda w, t: w.add_histogram("w", t["weights"], 0),
    "histogram bf16": lambda w, t: w.add_histogram("w16", t["weights"].bfloat16(), 0),
    "histogram 10 bins": lambda w, t: w.add_histogram("w10", t["weights"], 0, bins=10),
    "histogram edges": lambda w, t: w.add_histogram("we", t["weights"], 0, bins=[-1.0, 0.0, 1.0]),
    "image": lambda w, t: w.add_image("image", t["image"], 0),
    "images": lambda w, t: w.add_images("images", t["images"], 0),
    "video": lambda w, t: w.add_video("video", t["video"], 0),
    "pr_curve": lambda w, t: w.add_pr_curve("pr", t["labels"], t["predictions"], global_step=0, num_thresholds=5),
    "mesh": lambda w, t: w.add_mesh("mesh", t["vertices"], global_step=0),
    "embedding": lambda w, t: w.add_embedding("emb", t["weights"][:16, :4], global_step=0),
}


def _tensors():
    g = torch.Generator(device="cuda").manual_seed(0)
    return {"loss": torch.rand((), device="cuda", generator=g, requires_grad=True) * 2,
            "weights": torch.randn(512, 256, device="cuda", generator=g, requires_grad=True),
            "image": torch.rand(3, 32, 32, device="cuda", generator=g),
            "images": torch.rand(4, 3, 16, 16, device="cuda", generator=g),
            "video": torch.rand(1, 4, 3, 16, 16, device="cuda", generator=g),
            "labels": torch.randint(0, 2, (64,), device="cuda", generator=g),
            "predictions": torch.rand(64, device="cuda", generator=g),
            "vertices": torch.rand(1, 10, 3, device="cuda", generator=g)}


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
