"""GPU arrays logged without a device sync (frameworks/device_capture.py), proven without a GPU:
the device histogram's counting runs on CPU tensors through the same code and equals the host
path bucket for bucket; the stream/event seam is driven by a fake stream (fake_cuda.py) that
runs only when waited on; CuPy-like arrays (refusing `__array__`, speaking DLPack) work in every
add_*. What a user sees is read back by TensorBoard's own loaders. On a real GPU: test_gpu.py."""
import glob
import os
import sys
import threading
import warnings

import numpy as np
import pytest
from fake_cuda import FakeCuda
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import plugin_accumulator, tb_scalars, tensor_values
from mxboard import SummaryWriter

torch = pytest.importorskip("torch")
try:
    import mxnet  # (its import starts a process: at collection, not in a test)
except ImportError:
    mxnet = None

from mxboard._api import convert  # noqa: E402 - after the skip
from mxboard.frameworks import device_capture  # noqa: E402
from mxboard.summaries.histogram import default_edges, histogram_of  # noqa: E402


def _buckets(values, bins):
    """What TensorBoard reads of a histogram summary: (k, 3) [left, right, count], and (min,
    max, num, sum, sum of squares)."""
    from tensorboard import data_compat
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.util import tensor_util

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN dropped: said once a tag, tested elsewhere
        summary = histogram_of("h", values, bins, warn=lambda message: None)
    value = summary_pb2.Summary.FromString(summary.SerializeToString()).value[0]
    histo = value.histo
    return (tensor_util.make_ndarray(data_compat.migrate_value(value).tensor),
            (histo.min, histo.max, histo.num, histo.sum, histo.sum_squares))


_EDGES = default_edges()
_SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324, -5e-324, 1e-45, 1.4e-45, 1e-38, 1e38, -3e38, 1e300, -1e300]


@st.composite
def _values(draw):
    """Values that probe the buckets: default edges exactly and one ulp either side (ties),
    ±0, denormals, huge values, NaN and ±Inf, and ordinary ones; in a dtype torch has."""
    dtype = draw(st.sampled_from(["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"]))
    picks = draw(st.lists(st.one_of(
        st.sampled_from(_SPECIAL),
        st.integers(0, len(_EDGES) - 1).map(lambda i: float(_EDGES[i])),
        st.tuples(st.integers(1, len(_EDGES) - 2), st.sampled_from([-1, 1])).map(
            lambda p: float(np.nextafter(_EDGES[p[0]], np.inf * p[1]))),
        st.floats(-1e6, 1e6), st.floats(-1e-3, 1e-3)), min_size=1, max_size=60))
    with np.errstate(all="ignore"):
        if dtype in ("int32", "int64", "uint8"):
            info = np.iinfo(dtype)
            picks = [int(np.clip(np.nan_to_num(p), max(info.min, -2**31), min(info.max, 2**31 - 1))) for p in picks]
            return torch.tensor(np.array(picks, dtype=dtype))
        if dtype == "bfloat16":
            return torch.tensor(picks, dtype=torch.float64).to(torch.bfloat16)
        return torch.from_numpy(np.array(picks, dtype=np.float64).astype(dtype))


_BINS = st.one_of(st.just("default"), st.integers(1, 40),
                  st.lists(st.floats(-1e4, 1e4), min_size=2, max_size=12, unique=True).map(sorted))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(tensor=_values(), bins=_BINS)
def test_the_device_histogram_equals_the_host_ones_bucket_for_bucket(tensor, bins):
    host = device_capture.read_host(tensor)  # what the host path bins (bfloat16 read as float32)
    if not isinstance(bins, str) and np.isfinite(host.astype(np.float64)).any():
        finite = host[np.isfinite(host.astype(np.float64))].astype(np.float64)
        if finite.max() - finite.min() > 1e300:  # numpy's equal-width edges overflow: not a case of ours
            return
        if finite.min() == finite.max() and abs(finite[0]) > 2**52:  # numpy fails on (v - 0.5, v + 0.5) == v
            return
    counted = device_capture.TorchHistogram(tensor, bins, cuda=device_capture.HOST).result()
    device, device_facts = _buckets(counted, bins)
    expected, host_facts = _buckets(host, bins)
    assert np.array_equal(device, expected), (device, expected)
    if host_facts[2]:  # (nothing counted: TensorBoard reads the same empty histogram)
        assert device_facts[:3] == host_facts[:3]  # min, max, num
        if np.isfinite(host_facts[3:]).all():  # the host sums float32 in float32: it may overflow, float64 not
            assert np.allclose(device_facts[3:], host_facts[3:], rtol=1e-5)


def test_a_histogram_of_values_all_nan_or_inf_is_empty_and_drops_them():
    edges, counts, low, high, dropped, sums = device_capture.TorchHistogram(
        torch.tensor([np.nan, np.inf, -np.inf]), "default", cuda=device_capture.HOST).result()
    assert counts.sum() == 0 and dropped == 3 and (low, high) == (0.0, 0.0) and sums == (0.0, 0.0)


def test_a_snapshot_is_the_value_at_the_call_and_is_read_only_when_waited_for():
    cuda = FakeCuda()
    weights = torch.ones(3, 4, requires_grad=True)
    value = weights * 2
    shot = device_capture.TorchSnapshot(value, cuda=cuda)
    cuda.stream.enqueue(lambda: value.data.add_(100))  # the loop's next in-place update, same stream
    assert cuda.stream.done == 0 and not cuda.stream.waiters  # the call queued; nothing waited
    assert not shot._host.requires_grad and shot._host.grad_fn is None  # outside autograd
    assert np.array_equal(shot.result(), np.full((3, 4), 2.0, np.float32))
    assert cuda.stream.waiters == [threading.current_thread()] and cuda.stream.done == 1  # the copy only


def test_scalar_slots_are_reused_and_read_in_call_order():
    cuda = FakeCuda()
    slots = device_capture.TorchScalarSlots(size=8, cuda=cuda)
    loss = torch.zeros((), dtype=torch.bfloat16)
    for round_ in range(50):
        held = []
        for i in range(8):
            loss.fill_(i + round_)  # (the host stands in for the device: the copy runs when waited on)
            held.append(slots.hold(loss.clone()))
        assert slots.read(held) == [float(i + round_) for i in range(8)]
    assert cuda.buffers == 1 and len(cuda.events) == 8  # one ring, one event a slot: 400 captures
    assert all(event.records == 50 for event in cuda.events)


@pytest.fixture
def fake_gpu(monkeypatch):
    """torch tensors taken for CUDA ones, behind the fake stream: the writer's own paths run."""
    cuda = FakeCuda()
    monkeypatch.setattr(device_capture, "CUDA", cuda)
    monkeypatch.setattr(convert, "is_cuda_tensor", lambda tensor: True)
    return cuda


def _every_kind(w, make, step=0):
    """Every add_* that takes arrays, each from `make(numpy array)`."""
    rng = np.random.default_rng(5)
    w.add_scalar("loss", make(np.array(0.25, np.float32)), global_step=step)
    w.add_scalars("pair", {"a": make(np.array(1.5)), "b": make(np.array([2.5]))}, global_step=step)
    w.add_histogram("weights", make(rng.normal(size=(30, 7)).astype(np.float32)), global_step=step)
    w.add_histogram("edges", make(rng.normal(size=500)), global_step=step, bins=[-1.0, 0.0, 0.5, 1.0])
    w.add_histogram("ten", make(rng.normal(size=500)), global_step=step, bins=10)
    w.add_image("image", make(rng.random((3, 8, 6), dtype=np.float32)), global_step=step)
    w.add_images("images", make((rng.random((2, 3, 5, 4)) * 255).astype(np.uint8)), global_step=step)
    w.add_pr_curve("pr", make(np.array([1, 0, 1, 1, 0])), make(np.array([0.9, 0.2, 0.6, 0.4, 0.3])),
                   global_step=step, num_thresholds=5)
    w.add_mesh("mesh", make(rng.random((1, 4, 3), dtype=np.float32)), global_step=step,
               faces=make(np.array([[[0, 1, 2], [1, 2, 3]]], np.int32)))
    w.add_video("video", make(rng.random((1, 3, 3, 8, 8), dtype=np.float32)), global_step=step)
    w.add_embedding("emb", make(rng.normal(size=(6, 3)).astype(np.float32)), labels=list("abcdef"), global_step=step)
    w.add_audio("audio", make((rng.random(800) - 0.5).astype(np.float32)), global_step=step, sample_rate=8000)
    w.add_image_with_boxes("boxed", make(rng.random((3, 16, 16), dtype=np.float32)),
                           make(np.array([[1.0, 2.0, 9.0, 12.0]])), global_step=step)


def _what_tensorboard_reads(logdir):
    acc = plugin_accumulator(logdir)
    read = {tag: [v for _, v in tensor_values(acc, tag)] for tags in acc.Tags()["tensors"] for tag in [tags]}
    read["scalars"] = sorted((tag, value) for path in glob.glob(logdir + "/**/events.out.tfevents.*", recursive=True)
                             for tag, _, value in tb_scalars(path))
    for path in glob.glob(logdir + "/**/tensors.tsv", recursive=True):  # the projector's
        read[os.path.relpath(path, logdir)] = [np.loadtxt(path, ndmin=2)]
    return read


def _same(a, b):
    assert a.keys() == b.keys()
    scalars_a, scalars_b = a.pop("scalars"), b.pop("scalars")
    assert [tag for tag, _ in scalars_a] == [tag for tag, _ in scalars_b]
    assert np.allclose([v for _, v in scalars_a], [v for _, v in scalars_b], rtol=1e-6)
    for tag in a:
        for x, y in zip(a[tag], b[tag]):
            x, y = np.asarray(x), np.asarray(y)
            if x.dtype == object:  # images and video: encoded bytes
                assert x.tolist() == y.tolist(), tag
            else:
                assert np.allclose(x, y, rtol=1e-5), tag


class _UpdatedAfterEachCall:
    """A writer whose every call is followed, on the fake stream, by an in-place update of each
    tensor it was given (the loop's next step, queued on the same stream)."""

    def __init__(self, writer, cuda, tensors):
        self._writer, self._cuda, self._tensors = writer, cuda, tensors

    def __getattr__(self, name):
        given = len(self._tensors)  # (the arguments are made after the method is looked up)

        def call(*args, **kwargs):
            getattr(self._writer, name)(*args, **kwargs)
            assert threading.current_thread() not in self._cuda.stream.waiters, name  # the call waited
            for tensor in self._tensors[given:]:
                self._cuda.stream.enqueue(lambda t=tensor: t.add_(1))
        return call


def test_every_add_of_a_device_tensor_queues_and_the_writer_thread_alone_waits(tmp_path, fake_gpu):
    """Through SummaryWriter: a call of every kind queues its copy and records an event, and
    never waits; the writer thread waits; an in-place update queued after each call does not
    change what it logged; what TensorBoard reads equals the numpy run's."""
    tensors = []

    def device(array):
        tensor = torch.from_numpy(np.array(array))
        tensors.append(tensor)
        return tensor

    with SummaryWriter(str(tmp_path / "numpy")) as w:
        _every_kind(w, np.array)
    with SummaryWriter(str(tmp_path / "device")) as w:
        _every_kind(_UpdatedAfterEachCall(w, fake_gpu, tensors), device)
    assert len(fake_gpu.stream.queue) > 2 * len(tensors) - 3  # a copy of each (the histograms': their counts)
    assert fake_gpu.stream.waiters and threading.current_thread() not in fake_gpu.stream.waiters
    _same(_what_tensorboard_reads(str(tmp_path / "device")), _what_tensorboard_reads(str(tmp_path / "numpy")))


class CupyLike:
    """An array as CuPy presents one: `__array__` refuses (an implicit copy to the host is not
    allowed), DLPack is spoken (here from host memory: no GPU)."""

    def __init__(self, data):
        self._data = np.ascontiguousarray(data)
        self.shape, self.dtype = self._data.shape, self._data.dtype

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()`")

    def __dlpack__(self, **kwargs):
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()


def test_arrays_that_refuse_array_but_speak_dlpack_work_in_every_add(tmp_path):
    with SummaryWriter(str(tmp_path / "numpy")) as w:
        _every_kind(w, np.array)
    with SummaryWriter(str(tmp_path / "dlpack")) as w:
        _every_kind(w, CupyLike)
    _same(_what_tensorboard_reads(str(tmp_path / "dlpack")), _what_tensorboard_reads(str(tmp_path / "numpy")))


class CudaOnly(CupyLike):
    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA


def test_a_device_array_without_torch_or_cupy_is_a_clear_type_error(logdir, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not imported
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    with SummaryWriter(logdir) as w:
        for call in (lambda: w.add_scalar("s", CudaOnly(np.ones(1))),
                     lambda: w.add_histogram("h", CudaOnly(np.ones(3))),
                     lambda: w.add_image("i", CudaOnly(np.ones((3, 2, 2))))):
            with pytest.raises(TypeError, match="CudaOnly is an array in device memory.*torch or cupy"):
                call()
        w.add_scalar("s", 1.0)  # usable after


def test_device_arrays_are_refused_at_the_call_for_their_shape_and_dtype(logdir, fake_gpu):
    with SummaryWriter(logdir) as w:
        with pytest.raises(ValueError, match="value must be a single number; got a Tensor of shape \\(2,\\)"):
            w.add_scalar("s", torch.ones(2))
        with pytest.raises(TypeError, match="real number; got dtype complex64"):
            w.add_scalar("s", torch.ones(1, dtype=torch.complex64))
        with pytest.raises(ValueError, match="values is empty"):
            w.add_histogram("h", torch.ones(0))
        with pytest.raises(TypeError, match="real numbers; got dtype complex"):
            w.add_image("i", torch.ones((3, 2, 2), dtype=torch.complex64))
    assert fake_gpu.stream.queue == []  # nothing refused was queued


def test_a_device_scalars_nan_is_logged_with_one_warning_at_the_users_line(logdir, fake_gpu):
    """Found on the writer thread (the value is not read at the call), said at the call's line
    by a later call, once a tag, naming the first step."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with SummaryWriter(logdir) as w:
            for step, value in enumerate([1.0, float("nan"), float("nan"), 2.0]):
                w.add_scalar("loss", torch.tensor(value), step)
            w.flush()
            w.add_scalar("lr", 0.1, 9)  # shows what the writer thread found
    said = [c for c in caught if "loss" in str(c.message)]
    assert [str(c.message) for c in said] == [
        "add_scalar('loss'): nan at step 1, logged as given (TensorBoard marks it on the curve); "
        "said once for this tag"]
    assert said[0].filename == __file__ and said[0].category is RuntimeWarning
    from conftest import event_files

    logged = [v for tag, _, v in tb_scalars(event_files(logdir)[0]) if tag == "loss"]
    assert logged[0] == 1.0 and np.isnan(logged[1]) and np.isnan(logged[2]) and logged[3] == 2.0


def test_device_pixels_and_samples_say_nan_once_a_tag_at_the_users_line_and_vertices_are_refused(logdir, fake_gpu):
    """A GPU array's values are read on the writer thread: a NaN or Inf it finds in an image, a
    video or a clip is said by a later call (as a device scalar's), once a tag, at the line of
    the call that logged it, naming its step; a NaN vertex is refused by the next call (on
    a6ab6a5 all silently)."""
    nan = float("nan")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with SummaryWriter(logdir) as w:
            for step in range(3):
                pixels = torch.full((1, 2, 2), nan if step else 0.5)
                w.add_image("i", pixels, step); image = sys._getframe().f_lineno  # noqa: E702
                w.add_video("v", pixels.expand(2, 1, 2, 2) * float("inf"), step); video = sys._getframe().f_lineno  # noqa: E702
                w.add_audio("a", torch.tensor([0.5, -float("inf")]), 8000, step); audio = sys._getframe().f_lineno  # noqa: E702
                w.flush()
            w.add_mesh("m", torch.tensor([[0.0, 0.0, 0.0], [1.0, nan, 0.0]]))
            with pytest.raises(ValueError, match=r"vertices must be finite .*; vertices\[1, 1\] is nan"):
                w.flush()
    said = {str(c.message): (c.filename, c.lineno, c.category) for c in caught}
    assert said == {
        "add_image('i'): NaN or infinite pixels were drawn black (NaN, -Inf) or white (+Inf) at step 1; "
        "said once for this tag": (__file__, image, RuntimeWarning),
        "add_video('v'): NaN or infinite pixels were drawn black (NaN, -Inf) or white (+Inf) at step 0; "
        "said once for this tag": (__file__, video, RuntimeWarning),
        "add_audio('a'): NaN or infinite samples were written as silence (NaN) or full scale (+-Inf) at step 0; "
        "said once for this tag": (__file__, audio, RuntimeWarning)}
    acc = plugin_accumulator(logdir)
    assert [len(acc.Tensors(tag)) for tag in ("i", "v", "a")] == [3, 3, 3]
    assert "m_VERTEX" not in acc.Tags()["tensors"]


def test_scalars_held_from_many_threads_at_once_each_read_their_own_value(fake_gpu):
    """The slots are made with the writer, and their rings grow under a lock: threads whose first
    calls meet (each growing a ring) never share a slot, nor read another ring's."""
    from mxboard.frameworks.pending import Kind
    from mxboard.frameworks.scalar_slots import DeviceScalarSlots

    slots = DeviceScalarSlots(size=4)  # a ring a few calls: growth all the time
    torch_slots = slots.by_kind[Kind.TORCH_CUDA]
    held, start = [], threading.Barrier(8)

    def log(first):
        start.wait()
        for i in range(50):
            value = float(first * 1000 + i)
            held.append(((torch_slots, torch_slots.hold(torch.tensor(value))), value))

    threads = [threading.Thread(target=log, args=(n,)) for n in range(8)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between any two lines
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        sys.setswitchinterval(switch)
    assert len(held) == 400
    assert slots.read([slot for slot, _ in held]) == [value for _, value in held]


def test_a_device_scalar_crosses_at_most_ten_files_on_the_callers_thread():
    """tools/count_hops.py: the files one add_scalar of a torch CUDA scalar runs in on the caller's
    thread, counted with sys.setprofile. Its kind is decided once (convert.py) and the scalar goes
    from the call to the writer thread's queue in 10 hops over 6 files (a6ab6a5: 26 over 9)."""
    import importlib.util

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("count_hops", os.path.join(root, "tools", "count_hops.py"))
    count_hops = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(count_hops)
    ours, _ = count_hops.device_scalar_files()
    names = [os.path.basename(path) for path in ours]
    assert names[0] == names[-1] == "writer.py" and "writer_thread.py" in names, names  # the call, to the queue
    assert len(ours) - 1 <= 10, names
    assert names.count("convert.py") == 1, names  # its kind asked once


def test_scalars_of_every_kind_are_read_in_call_order(logdir, fake_gpu):
    """Floats, torch CUDA scalars (their slots), MXNet scalars of shape (1,) (theirs) and of shape
    (1, 1) (captured alone), interleaved on one tag and with display names: the writer thread reads
    each kind's slots in one batch, and TensorBoard's loader reads every value at its step, in call
    order; the caller's thread never waited on the stream."""
    if mxnet is None:
        pytest.skip("mxnet is not installed")
    nd = mxnet.nd
    from conftest import event_files

    forms = [float, torch.tensor, lambda v: torch.tensor([v], dtype=torch.bfloat16),
             lambda v: nd.array([v]), lambda v: nd.array([[v]])]
    with SummaryWriter(logdir) as w:
        for step in range(40):
            value = float(step % 7)
            w.add_scalar("mixed", forms[step % len(forms)](value), step)
            if step % 10 == 3:
                w.add_scalar("described", forms[step % len(forms)](value), step, display_name="D")
    assert threading.current_thread() not in fake_gpu.stream.waiters and fake_gpu.stream.waiters
    read = tb_scalars(event_files(logdir)[0])
    assert [(step, value) for tag, step, value in read if tag == "mixed"] == [(s, float(s % 7)) for s in range(40)]
    assert [(step, value) for tag, step, value in read if tag == "described"] == [(s, float(s % 7))
                                                                                  for s in (3, 13, 23, 33)]


def test_a_patched_torch_add_scalars_of_cuda_tensors_is_read_by_the_writer_thread_alone(logdir, fake_gpu):
    """torch's stand-in (what `mxboard.patch()` puts in torch's place) writes `add_scalars`
    through mxboard's own scalar path: each CUDA tensor is copied into its slot at the call and
    read by the writer thread, never on the caller's, in torch's runs `<main_tag>_<name>`; an
    in-place update queued after a call does not change what it logged."""
    from mxboard._patch.stand_ins import TorchSummaryWriter

    a, b = torch.zeros(()), torch.zeros(1, dtype=torch.float64)
    with TorchSummaryWriter(logdir) as w:
        for step in range(6):
            # The loop computes this step's values on the stream, logs them, then updates them in place.
            fake_gpu.stream.enqueue(lambda s=step: (a.fill_(s * 0.5), b.fill_(-s)))
            w.add_scalars("run/pair", {"a": a, "b": b}, step)
            assert threading.current_thread() not in fake_gpu.stream.waiters, step
            fake_gpu.stream.enqueue(lambda: (a.add_(100), b.add_(100)))
    assert fake_gpu.stream.waiters and threading.current_thread() not in fake_gpu.stream.waiters
    assert {name for name in os.listdir(logdir) if "tfevents" not in name} == {"run_pair_a", "run_pair_b"}
    from conftest import event_files

    read = {run: tb_scalars(event_files(os.path.join(logdir, run))[0]) for run in ("run_pair_a", "run_pair_b")}
    assert read == {"run_pair_a": [("run/pair", s, s * 0.5) for s in range(6)],
                    "run_pair_b": [("run/pair", s, float(-s)) for s in range(6)]}
