"""Every summary kind, read back through TensorBoard's plugin-aware loader (what the dashboards
read) or its HTTP API, content checked."""
import io
import json
import re
import wave

import numpy as np
import pytest
from PIL import Image

from conftest import needs, plugin_accumulator, tensor_values
from mxboard import SummaryWriter


def _png(value):
    """(width, height, PIL image) from an images-plugin tensor [width, height, png]."""
    width, height, data = value[0], value[1], value[2]
    return int(width), int(height), Image.open(io.BytesIO(data))


# -- histograms -------------------------------------------------------------------------------

def test_histogram_default_buckets_trimmed_to_the_data(logdir):
    values = np.random.default_rng(0).normal(0.5, 0.1, size=10_000).astype(np.float32)
    with SummaryWriter(logdir) as w:
        w.add_histogram("w", values, global_step=3)
    (step, buckets), = tensor_values(plugin_accumulator(logdir), "w")
    assert step == 3 and buckets.shape[1] == 3
    assert buckets[:, 2].sum() == 10_000
    assert buckets[0, 0] == pytest.approx(values.min()) and buckets[-1, 1] == pytest.approx(values.max())
    assert np.all(buckets[1:, 0] == buckets[:-1, 1])  # contiguous
    ratio = buckets[1:-1, 1] / buckets[1:-1, 0]
    assert np.allclose(ratio, 1.1)  # TensorBoard's exponential buckets
    assert len(buckets) < 40  # trimmed to the occupied range, not ~1500 buckets


def _adversarial(dtype):
    """Values where a fast path can go wrong: every edge rounded to `dtype` and its neighbours,
    ±0, subnormals, the largest and smallest values, NaN and ±Inf; and a normal sample."""
    from mxboard.summaries.histogram import default_edges

    rng = np.random.default_rng(0)
    if np.dtype(dtype).kind in "iub":
        info = np.iinfo(dtype) if np.dtype(dtype).kind != "b" else None
        if info is None:
            return np.array([True, False, True])
        return np.concatenate([rng.integers(info.min, info.max, 5000, dtype=dtype, endpoint=True),
                               np.array([info.min, info.max, 0, 1, -1 if info.min else 2], dtype=dtype)])
    with np.errstate(over="ignore"):  # float16: the outer edges become infinite, as intended
        edges = default_edges()[1:-1].astype(dtype)
    finfo = np.finfo(dtype)
    special = [0.0, -0.0, finfo.tiny, -finfo.tiny, finfo.smallest_subnormal, -finfo.smallest_subnormal,
               finfo.max, -finfo.max, np.inf, -np.inf, np.nan]
    return np.concatenate([edges, np.nextafter(edges, dtype(np.inf)), np.nextafter(edges, dtype(-np.inf)),
                           np.array(special, dtype=dtype), rng.normal(size=20000).astype(dtype),
                           (rng.normal(size=2000) * 1e-12).astype(dtype)])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int32, np.int64,
                                   np.uint64, np.bool_])
def test_default_bucket_counts_are_exactly_a_binary_search(dtype):
    from mxboard.summaries.histogram import default_bucket_counts, default_edges

    values = _adversarial(dtype)
    if len(values) > 100:  # spread over several of the blocks binned a step, in no order
        values = np.random.default_rng(1).permutation(np.tile(values, 5))
    reference = values.astype(np.float64)
    finite = reference[np.isfinite(reference)]
    edges = default_edges()
    expected = np.bincount(np.minimum(np.searchsorted(edges, finite, side="right") - 1, len(edges) - 2),
                           minlength=len(edges) - 1)
    counts, low, high, dropped = default_bucket_counts(values)
    assert counts.tolist() == expected.tolist()
    assert (low, high, dropped) == (finite.min(), finite.max(), len(reference) - len(finite))


@pytest.mark.parametrize("bins, count", [(10, 10), ("sturges", None), ([0, 1, 2, 5], 3)])
def test_histogram_bins_int_rule_and_edges(logdir, bins, count):
    values = np.array([0.5, 1.5, 1.5, 4.0, 4.5, 2.5])
    with SummaryWriter(logdir) as w:
        w.add_histogram("h", values, bins=bins)
    (_, buckets), = tensor_values(plugin_accumulator(logdir), "h")
    expected_counts, expected_edges = np.histogram(values, bins=bins)
    assert buckets[:, 2].tolist() == expected_counts.tolist()
    # the histo form, as TensorBoard's Python loader reads it: edges in float32 (as in tensorboardX's files)
    assert buckets[:, 0].tolist() == pytest.approx(expected_edges[:-1].tolist(), rel=1e-7)
    if count:
        assert len(buckets) == count


def test_histogram_of_constant_and_of_lists_and_ints(logdir):
    with SummaryWriter(logdir) as w:
        w.add_histogram("zeros", np.zeros(7))
        w.add_histogram("list", [1, 2, 3, 3])
    acc = plugin_accumulator(logdir)
    assert tensor_values(acc, "zeros")[0][1][:, 2].sum() == 7
    assert tensor_values(acc, "list")[0][1][:, 2].sum() == 4


def test_histogram_drops_nan_and_inf_with_one_warning(logdir):
    values = np.array([1.0, np.nan, 2.0, np.inf, -np.inf, 3.0])
    with pytest.warns(RuntimeWarning, match="'h'.*NaN or infinite"):
        with SummaryWriter(logdir) as w:
            w.add_histogram("h", values, 0)
            w.add_histogram("h", values, 1)
            w.flush()
    counts = [b[:, 2].sum() for _, b in tensor_values(plugin_accumulator(logdir), "h")]
    assert counts == [3, 3]


def test_a_histogram_counted_already_is_read_back_as_given(logdir):
    with SummaryWriter(logdir) as w:
        w.add_histogram_raw("raw", min=0.0, max=3.0, num=6, sum=9.0, sum_squares=17.0,
                            bucket_limits=[1.0, 2.0, 3.0], bucket_counts=[1, 2, 3], global_step=2)
    (step, buckets), = tensor_values(plugin_accumulator(logdir), "raw")
    assert step == 2 and buckets.tolist() == [[0, 1, 1], [1, 2, 2], [2, 3, 3]]


# -- images and videos ------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dataformats, size, mode", [
    ((3, 20, 30), "CHW", (30, 20), "RGB"),
    ((20, 30, 3), "HWC", (30, 20), "RGB"),
    ((20, 30), "HW", (30, 20), "L"),
    ((20, 30), "CHW", (30, 20), "L"),  # mxboard took HW too
    ((1, 20, 30), "CHW", (30, 20), "L"),
    ((4, 20, 30), "CHW", (30, 20), "RGBA"),
    ((20, 30, 4), "HWC", (30, 20), "RGBA"),
])
def test_image_formats_and_channels(logdir, shape, dataformats, size, mode):
    with SummaryWriter(logdir) as w:
        w.add_image("img", np.full(shape, 0.5, dtype=np.float32), 1, dataformats=dataformats)
    (step, value), = tensor_values(plugin_accumulator(logdir), "img")
    width, height, picture = _png(value)
    assert step == 1 and (width, height) == picture.size == size and picture.mode == mode
    assert np.all(np.asarray(picture) == 128)


def test_image_floats_are_clipped_never_wrapped_and_uint8_kept(logdir):
    pixels = np.array([[[-1.0, 0.0, 0.25, 1.0, 1.5, 300.0]]], dtype=np.float32)  # CHW 1x1x6
    with SummaryWriter(logdir) as w:
        with pytest.warns(UserWarning, match="float pixels are read in"):  # written all the same
            w.add_image("f", pixels)
        w.add_image("u", np.array([[[0, 7, 128, 255]]], dtype=np.uint8))
    acc = plugin_accumulator(logdir)
    assert np.asarray(_png(tensor_values(acc, "f")[0][1])[2]).ravel().tolist() == [0, 0, 64, 255, 255, 255]
    assert np.asarray(_png(tensor_values(acc, "u")[0][1])[2]).ravel().tolist() == [0, 7, 128, 255]


def test_batches_become_grids_in_order(logdir):
    batch = np.stack([np.full((1, 4, 4), i * 20, dtype=np.uint8) for i in range(10)])  # NCHW
    with SummaryWriter(logdir) as w:
        w.add_image("nchw", batch)  # mxboard: 4-D add_image is a grid
        w.add_images("nhwc", batch.transpose(0, 2, 3, 1), dataformats="NHWC")
    acc = plugin_accumulator(logdir)
    for tag in ("nchw", "nhwc"):
        width, height, picture = _png(tensor_values(acc, tag)[0][1])
        assert (width, height) == (8 * 6 + 2, 2 * 6 + 2)  # 8 a row, 2 px padding
        pixels = np.asarray(picture)
        assert [pixels[2, 2 + 6 * i] for i in range(8)] == [i * 20 for i in range(8)]
        assert [pixels[8, 2 + 6 * i] for i in range(2)] == [160, 180]


def test_video_is_an_animated_gif(logdir):
    frames = np.zeros((2, 5, 3, 8, 10), dtype=np.float32)
    for t in range(5):
        frames[:, t] = t / 4.0
    with SummaryWriter(logdir) as w:
        w.add_video("vid", frames, 1, fps=10)
    (_, value), = tensor_values(plugin_accumulator(logdir), "vid")
    gif = Image.open(io.BytesIO(value[2]))
    assert gif.format == "GIF" and gif.n_frames == 5 and gif.size == (2 * 12 + 2, 12)
    assert gif.info["duration"] == 100


@pytest.mark.slow  # matplotlib runs fc-list the first time it looks for fonts
def test_figure(logdir):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(2, 1), dpi=50)
    plt.plot([0, 1], [1, 0])
    with SummaryWriter(logdir) as w:
        w.add_figure("fig", figure)
    (_, value), = tensor_values(plugin_accumulator(logdir), "fig")
    assert _png(value)[:2] == (100, 50)
    assert not plt.get_fignums()  # closed


# -- audio ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(800,), (800, 1), (800, 2), (2, 800)])
def test_audio_is_16_bit_wav(logdir, shape):
    t = np.arange(800) / 8000.0
    mono = np.sin(2 * np.pi * 440 * t) * 0.5
    audio = mono if len(shape) == 1 else np.stack([mono] * max(shape[0] if shape[0] < 3 else shape[1], 1), axis=1)
    if shape == (2, 800):
        audio = audio.T
    with SummaryWriter(logdir) as w:
        w.add_audio("snd", audio, sample_rate=8000, global_step=2)
    (step, value), = tensor_values(plugin_accumulator(logdir), "snd")
    with wave.open(io.BytesIO(value.reshape(-1)[0])) as wav:
        assert wav.getframerate() == 8000 and wav.getsampwidth() == 2
        assert wav.getnchannels() == (1 if len(shape) == 1 or 1 in shape else 2)
        assert wav.getnframes() == 800
        pcm = np.frombuffer(wav.readframes(800), "<i2").reshape(800, -1)
    assert np.abs(pcm[:, 0] / 32767.0 - mono).max() < 1e-4


def test_audio_clips_out_of_range_samples(logdir):
    with SummaryWriter(logdir) as w, pytest.warns(UserWarning, match=r"samples are read in \[-1, 1\]"):
        w.add_audio("loud", np.array([-3.0, -1.0, 0.0, 1.0, 3.0]), sample_rate=100)
    (_, value), = tensor_values(plugin_accumulator(logdir), "loud")
    with wave.open(io.BytesIO(value.reshape(-1)[0])) as wav:
        assert np.frombuffer(wav.readframes(5), "<i2").tolist() == [-32767, -32767, 0, 32767, 32767]


# -- text -------------------------------------------------------------------------------------

def test_text_markdown_and_tables_keep_the_tag(logdir):
    with SummaryWriter(logdir) as w:
        w.add_text("notes/run", "**bold** text", 1)
        w.add_text("table", [["a", "b"], ["c", "d"]], 1)
        w.add_text("list", ["x", "y", "z"], 1)
    acc = plugin_accumulator(logdir)
    assert set(acc.PluginTagToContent("text")) == {"notes/run", "table", "list"}
    assert tensor_values(acc, "notes/run")[0][1] == b"**bold** text"
    assert tensor_values(acc, "table")[0][1].tolist() == [[b"a", b"b"], [b"c", b"d"]]
    assert tensor_values(acc, "list")[0][1].tolist() == [b"x", b"y", b"z"]


# -- PR curves --------------------------------------------------------------------------------

def test_pr_curve_counts_by_hand(logdir):
    labels = [1, 0, 1, 1]
    predictions = [0.9, 0.8, 0.3, 0.1]
    with SummaryWriter(logdir) as w:
        with pytest.warns(UserWarning, match="mxboard 0.1.0's order"):  # tensorboardX takes the step fourth
            w.add_pr_curve("pr", labels, predictions, 3, 5)  # mxboard's positional order
    (step, data), = tensor_values(plugin_accumulator(logdir), "pr")
    # thresholds 0, 0.5, 1: predictions >= t are positive
    tp, fp, tn, fn, precision, recall = data
    assert step == 5 and data.shape == (6, 3)
    assert tp.tolist() == [3, 1, 0] and fp.tolist() == [1, 1, 0]
    assert tn.tolist() == [0, 0, 1] and fn.tolist() == [0, 2, 3]
    assert precision.tolist() == pytest.approx([0.75, 0.5, 0.0]) and recall.tolist() == pytest.approx([1, 1 / 3, 0])


def test_pr_curve_with_many_thresholds_and_weights(logdir):
    rng = np.random.default_rng(1)
    labels = rng.random(1000) > 0.5
    predictions = rng.random(1000)
    with SummaryWriter(logdir) as w:
        w.add_pr_curve("pr", labels, predictions, num_thresholds=500, weights=np.full(1000, 2.0))
        w.add_pr_curve_raw("raw", [3, 1, 0], [1, 1, 0], [0, 0, 1], [0, 2, 3], [0.75, 0.5, 0], [1, 0.3, 0],
                           num_thresholds=3)
    acc = plugin_accumulator(logdir)
    data = tensor_values(acc, "pr")[0][1]
    assert data.shape == (6, 500) and data[0, 0] == 2 * labels.sum()
    assert tensor_values(acc, "raw")[0][1][0].tolist() == [3, 1, 0]
    from tensorboard.plugins.pr_curve import plugin_data_pb2

    content = acc.PluginTagToContent("pr_curves")["pr"]
    assert plugin_data_pb2.PrCurvePluginData.FromString(content).num_thresholds == 500


# -- mesh, custom scalars ---------------------------------------------------------------------

def test_mesh(logdir):
    vertices = np.random.default_rng(2).random((5, 3))
    with SummaryWriter(logdir) as w:
        w.add_mesh("pc", vertices, colors=np.full((5, 3), 200), faces=[[0, 1, 2], [2, 3, 4]],
                   config_dict={"camera": {"cls": "PerspectiveCamera"}})
    acc = plugin_accumulator(logdir)
    from tensorboard.plugins.mesh import plugin_data_pb2

    contents = acc.PluginTagToContent("mesh")
    assert set(contents) == {"pc_VERTEX", "pc_FACE", "pc_COLOR"}
    meta = plugin_data_pb2.MeshPluginData.FromString(contents["pc_VERTEX"])
    assert meta.name == "pc" and list(meta.shape) == [1, 5, 3] and meta.components == 0b1110
    assert json.loads(meta.json_config)["camera"]["cls"] == "PerspectiveCamera"
    assert np.allclose(tensor_values(acc, "pc_VERTEX")[0][1][0], vertices.astype(np.float32))
    assert tensor_values(acc, "pc_FACE")[0][1].tolist() == [[[0, 1, 2], [2, 3, 4]]]


def test_custom_scalars_layout(logdir):
    with SummaryWriter(logdir) as w:
        w.add_custom_scalars({"Training": {"loss": ["Multiline", ["loss/train", "loss/val"]],
                                           "acc": ["Margin", ["acc", "acc_lo", "acc_hi"]]}})
    acc = plugin_accumulator(logdir)
    from tensorboard.plugins.custom_scalar import layout_pb2

    (_, data), = tensor_values(acc, "custom_scalars__config__")
    layout = layout_pb2.Layout.FromString(data.item())
    charts = {c.title: c for c in layout.category[0].chart}
    assert layout.category[0].title == "Training"
    assert list(charts["loss"].multiline.tag) == ["loss/train", "loss/val"]
    assert charts["acc"].margin.series[0].upper == "acc_hi"


def test_one_writers_layout_call_waiting_never_holds_another_writers(tmp_path):
    """On b621f0a the layout lock was a class attribute: a layout call of one writer waiting for
    room in its queue (it holds the lock while it queues) held every writer's in the process.
    Each writer has its own now."""
    import threading

    first, second = SummaryWriter(str(tmp_path / "a")), SummaryWriter(str(tmp_path / "b"))
    with first._core._layout_lock:  # as a call of the first writer, blocked in its full queue, holds it
        done = threading.Event()
        threading.Thread(target=lambda: (second.add_custom_scalars({"c": {"x": ["Multiline", ["x"]]}}), done.set()),
                         daemon=True).start()
        assert done.wait(10), "the second writer's layout call waited for the first writer's"
    first.close()
    second.close()
    from tensorboard.plugins.custom_scalar import layout_pb2

    (_, data), = tensor_values(plugin_accumulator(str(tmp_path / "b")), "custom_scalars__config__")
    (category,) = layout_pb2.Layout.FromString(data.item()).category  # as TensorBoard reads it
    assert category.title == "c" and list(category.chart[0].multiline.tag) == ["x"]


@needs("chromium")
def test_images_as_served_are_decoded_by_chromium_pixel_for_pixel(logdir, serve, tmp_path):
    # mxboard writes PNGs of its own (Up filter, zlib RLE): the browser must decode them as drawn
    import subprocess

    rng = np.random.default_rng(7)
    picture = np.zeros((48, 80, 3), dtype=np.uint8)
    picture[:, :40] = (230, 40, 20)
    picture[:, 40:] = (20, 60, 240)
    picture[16:32, 20:60] = rng.integers(0, 256, (16, 40, 3), dtype=np.uint8)  # noise: every filter byte
    with SummaryWriter(logdir) as w:
        w.add_image("photo", picture, 0, dataformats="HWC")
    server = serve(logdir)
    entries = server.json("/data/plugin/images/images", {"run": ".", "tag": "photo"}, until=lambda e: e)
    # Chromium opens the image's own URL, its token in it as in the printed URL (the server trades
    # it for a cookie): a page of another origin (file:) could not send that cookie for an <img>.
    # Chromium shows an image alone in the middle of its window.
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--hide-scrollbars", "--force-device-scale-factor=1", "--user-data-dir=" + str(tmp_path / "chrome"),
                    "--window-size=400,300", "--virtual-time-budget=10000", "--screenshot=" + str(shot),
                    server.browser_url("/data/plugin/images/individualImage?" + entries[0]["query"])],
                   capture_output=True, timeout=120, check=True)
    top, left = (300 - 48) // 2, (400 - 80) // 2
    drawn = np.asarray(Image.open(shot).convert("RGB"))[top:top + 48, left:left + 80]
    assert np.array_equal(drawn, picture)  # (a window under ~300 px high is cut short by headless Chromium)


def test_config_dict_is_copied_at_the_call(logdir):
    import json

    from conftest import plugin_accumulator

    config = {"camera": {"fov": 75}}
    with SummaryWriter(logdir, flush_secs=3600) as w:
        w.add_mesh("m", np.ones((4, 3)), config_dict=config)
        config["camera"]["fov"] = 10  # after the call
    content = plugin_accumulator(logdir).SummaryMetadata("m_VERTEX").plugin_data.content
    from tensorboard.plugins.mesh import plugin_data_pb2

    assert json.loads(plugin_data_pb2.MeshPluginData.FromString(content).json_config) == {"camera": {"fov": 75}}


# -- NaN and Inf in every kind (docs/guarantees.md's table) ----------------------------------

_NAN_PIXELS = np.array([[0.5, np.nan], [np.inf, -np.inf]], dtype=np.float32)  # drawn 128, 0, 255, 0
_PIXEL_SHAPES = {"add_image": (1, 2, 2), "add_images": (2, 1, 2, 2), "add_video": (2, 3, 1, 2, 2)}


def _one_warning_a_tag(caught, expected):
    """The warnings `caught`, as {message: (filename, lineno)}, must be `expected`: one
    RuntimeWarning a tag, each at the test's own call line, and nothing else (no "pixels above
    1" for an Inf)."""
    assert len(caught) == len(expected), [str(c.message) for c in caught]
    assert {str(c.message): (c.filename, c.lineno) for c in caught} == expected
    assert all(c.category is RuntimeWarning for c in caught)


def _first_picture(method, value):
    """The first image's 2x2 pixels as TensorBoard's images plugin has them (a PNG, a grid of
    PNG, a GIF's first frame: the first image sits after the grid's 2 px padding)."""
    if method == "add_video":
        return np.asarray(Image.open(io.BytesIO(value[2])).convert("L"))[2:4, 2:4]
    picture = np.asarray(_png(value)[2])
    return picture if method == "add_image" else picture[2:4, 2:4]


@pytest.mark.parametrize("method", sorted(_PIXEL_SHAPES))
def test_nan_and_inf_pixels_are_drawn_black_and_white_with_one_warning_a_tag(logdir, method):
    """TensorBoard cannot draw a NaN pixel: NaN and -Inf are drawn black, +Inf white (a float
    image's x255 clipped to the range's ends), and said once a tag at the user's line, naming the
    step where it first happened (on a6ab6a5 silently)."""
    import sys
    import warnings

    shape = _PIXEL_SHAPES[method]
    bad, good = np.broadcast_to(_NAN_PIXELS, shape), np.zeros(shape, np.float32)
    with SummaryWriter(logdir) as w, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            getattr(w, method)("late", bad if step else good, step); late = sys._getframe().f_lineno  # noqa: E702
            getattr(w, method)("early", bad, step); early = sys._getframe().f_lineno  # noqa: E702
    how = "NaN or infinite pixels were drawn black (NaN, -Inf) or white (+Inf)"
    _one_warning_a_tag(caught, {"%s('late'): %s at step 1; said once for this tag" % (method, how): (__file__, late),
                                "%s('early'): %s at step 0; said once for this tag" % (method, how): (__file__, early)})
    acc = plugin_accumulator(logdir)
    assert [_first_picture(method, value).tolist() for _, value in tensor_values(acc, "late")] == [
        [[0, 0], [0, 0]], [[128, 0], [255, 0]], [[128, 0], [255, 0]]]


def test_nan_pixels_of_a_boxed_image_and_of_embedding_thumbnails_are_said_once_a_tag(logdir):
    """The other kinds that take pixels follow the same policy (on a6ab6a5 silently)."""
    import sys
    import warnings

    thumbnails = np.zeros((2, 1, 2, 2), np.float32)
    thumbnails[1, 0, 0, 0] = np.nan
    with SummaryWriter(logdir) as w, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(2):
            w.add_image_with_boxes("b", np.full((1, 8, 8), np.inf), [[0, 0, 2, 2]], step); boxed = sys._getframe().f_lineno  # noqa: E702,E501
            w.add_embedding("e", np.eye(2), images=thumbnails, global_step=step); embedded = sys._getframe().f_lineno  # noqa: E702
    how = "NaN or infinite pixels were drawn black (NaN, -Inf) or white (+Inf)"
    _one_warning_a_tag(caught, {
        "add_image_with_boxes('b'): %s at step 0; said once for this tag" % how: (__file__, boxed),
        "add_embedding('e'): %s at step 0; said once for this tag" % how: (__file__, embedded)})
    picture = np.asarray(_png(tensor_values(plugin_accumulator(logdir), "b")[0][1])[2].convert("RGB"))
    assert picture[7, 7].tolist() == [255, 255, 255]  # +Inf: white, outside the red box


def test_nan_and_inf_audio_is_silence_and_full_scale_with_one_warning_a_tag(logdir):
    import sys
    import warnings

    with SummaryWriter(logdir) as w, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            samples = np.array([0.5, np.nan, np.inf, -np.inf])
            w.add_audio("a", samples, sample_rate=8000, global_step=step); line = sys._getframe().f_lineno  # noqa: E702
            w.add_audio("fine", np.array([0.5, 0.25]), sample_rate=8000, global_step=step)
    _one_warning_a_tag(caught, {"add_audio('a'): NaN or infinite samples were written as silence (NaN) or full scale "
                                "(+-Inf) at step 0; said once for this tag": (__file__, line)})
    for _, value in tensor_values(plugin_accumulator(logdir), "a"):
        with wave.open(io.BytesIO(value.reshape(-1)[0])) as wav:
            assert np.frombuffer(wav.readframes(4), "<i2").tolist() == [16384, 0, 32767, -32767]


@pytest.mark.parametrize("bad", [np.nan, np.inf, 1e300], ids=["nan", "inf", "beyond-float32"])
def test_a_mesh_vertex_that_is_not_finite_is_refused_naming_its_index(logdir, bad):
    """TensorBoard's mesh viewer cannot place a NaN or infinite vertex (nor a float64 one that is
    infinite as the float32 it is sent as): the call refuses it (on a6ab6a5 written as given)."""
    vertices = np.zeros((2, 4, 3))
    vertices[1, 2, 0] = bad
    with SummaryWriter(logdir) as w:
        with pytest.raises(ValueError, match=r"vertices must be finite float32 numbers .*; vertices\[1, 2, 0\] is "
                                             + re.escape(repr(float(bad)))):
            w.add_mesh("m", vertices)
        w.add_mesh("ok", vertices[0])
    assert set(plugin_accumulator(logdir).PluginTagToContent("mesh")) == {"ok_VERTEX"}


def test_nan_and_inf_hparams_are_logged_as_given_with_one_warning_a_name(logdir):
    """Metrics are scalars: logged as given, as add_scalar logs them; so are float hparams. Said
    once a name, at the user's line (on a6ab6a5 silently)."""
    import os
    import sys
    import warnings

    from tensorboard.plugins.hparams import plugin_data_pb2

    with SummaryWriter(logdir) as w, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(2):
            hparams = {"lr": float("nan"), "b": 2}
            metrics = {"acc": float("inf"), "loss": float("nan") if step else 1.0}
            w.add_hparams(hparams, metrics, run_name="r%d" % step, global_step=step); line = sys._getframe().f_lineno  # noqa: E702
    _one_warning_a_tag(caught, {
        "add_hparams(hparam_dict['lr']): nan was logged as given; said once for this tag": (__file__, line),
        "add_hparams(metric_dict['acc']): inf was logged as given at step 0; said once for this tag": (__file__, line),
        "add_hparams(metric_dict['loss']): nan was logged as given at step 1; said once for this tag":
            (__file__, line)})
    for step in range(2):
        acc = plugin_accumulator(os.path.join(logdir, "r%d" % step))
        assert tensor_values(acc, "acc")[0][1] == np.inf
        assert np.isnan(tensor_values(acc, "loss")[0][1]) == bool(step)
        start = plugin_data_pb2.HParamsPluginData.FromString(
            acc.PluginTagToContent("hparams")["_hparams_/session_start_info"]).session_start_info
        assert np.isnan(start.hparams["lr"].number_value) and start.hparams["b"].number_value == 2


# -- what torch's and tensorboardX's code passes, read back beside the peer's own output ---------

def test_complex_tensors_are_written_as_torchs_writer_writes_them(tmp_path):
    """torch's add_tensor writes complex64 and complex128 as DT_COMPLEX64 and DT_COMPLEX128, which
    TensorBoard's make_ndarray reads; mxboard writes the same dtypes, read back equal to torch's
    (on 706ab3a the call returned and the next one raised "no TensorBoard dtype for complex64").
    torch's complex32, which TensorBoard has no dtype for, is taken as complex64."""
    torch = pytest.importorskip("torch")
    from tensorboard.util import tensor_util
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from conftest import accumulator

    values = {"c64": torch.tensor([[1 + 2j, -3.5 - 4j], [0.25j, 7]], dtype=torch.complex64),
              "c128": torch.tensor([1e-300 + 2j, -1 / 3 + 1e300j], dtype=torch.complex128)}
    with TorchWriter(str(tmp_path / "torch")) as w:
        for tag, value in values.items():
            w.add_tensor(tag, value, 3)
    with SummaryWriter(str(tmp_path / "mxb")) as w:
        for tag, value in values.items():
            w.add_tensor(tag, value, 3)
            w.add_tensor(tag + "_numpy", value.numpy(), 3)
        with pytest.warns(UserWarning, match="ComplexHalf"):
            half = torch.tensor([1.5 + 2j, -0.5j], dtype=torch.complex32)
        w.add_tensor("c32", half, 3)
        w.add_scalar("after", 1.0, 3)  # the call after: nothing deferred to it
        w.flush()
    theirs, ours = accumulator(tmp_path / "torch"), accumulator(tmp_path / "mxb")
    for tag, value in values.items():
        (peer,) = theirs.Tensors(tag)
        for mine in (ours.Tensors(tag)[0], ours.Tensors(tag + "_numpy")[0]):
            assert mine.tensor_proto.dtype == peer.tensor_proto.dtype == {"c64": 8, "c128": 18}[tag]
            read, expected = tensor_util.make_ndarray(mine.tensor_proto), tensor_util.make_ndarray(peer.tensor_proto)
            assert read.dtype == expected.dtype == value.numpy().dtype and read.shape == expected.shape
            assert np.array_equal(read, expected) and np.array_equal(read, value.numpy()) and mine.step == peer.step
    (c32,) = ours.Tensors("c32")
    assert tensor_util.make_ndarray(c32.tensor_proto).tolist() == [1.5 + 2j, -0.5j]
    assert [e.value for e in ours.Scalars("after")] == [1.0]


@pytest.mark.parametrize("value", [
    np.array([1.0, 2.0], dtype=np.longdouble), np.array([1 + 1j], dtype=np.clongdouble),
    np.array(["2024-01-01"], dtype="datetime64[D]"), np.array([1], dtype="timedelta64[s]"),
    np.zeros(2, dtype=[("a", np.int32), ("b", np.float32)]),
], ids=["longdouble", "clongdouble", "datetime64", "timedelta64", "structured"])
def test_a_tensor_of_a_dtype_tensorboard_lacks_is_refused_at_the_call(logdir, value):
    """An error deferred to the next call costs that call its data: a dtype TensorBoard has none
    for is refused by add_tensor itself, naming the argument and the dtype, and the writer goes
    on (on 706ab3a the call returned, and the next raised). A big-endian array is taken."""
    if value.dtype.itemsize == {"f": 8, "c": 16}.get(value.dtype.kind):
        pytest.skip("long double is double on this platform")
    with SummaryWriter(logdir) as w:
        with pytest.raises(TypeError, match=r"^tensor has dtype %s, which TensorBoard has no dtype for: a tensor "
                                            r"holds bool, .*complex64, complex128, str or bytes"
                                            % re.escape(str(value.dtype))):
            w.add_tensor("bad", value)
        w.add_tensor("big_endian", np.array([1, -2, 3], dtype=">i4"), 1)
        w.flush()
    acc = plugin_accumulator(logdir)
    assert "bad" not in acc.Tags()["tensors"]
    assert [(s, v.tolist()) for s, v in tensor_values(acc, "big_endian")] == [(1, [1, -2, 3])]


@pytest.mark.parametrize("count", [1, 2, 5])
def test_a_batch_of_images_is_drawn_pixel_for_pixel_as_tensorboardx_draws_it(tmp_path, count):
    """A batch of one is drawn as it is, as tensorboardX, torch and mxboard 0.1.0 draw it (on
    706ab3a with a 2 px black border). A batch of several: each image the same pixels as in
    tensorboardX's grid, 8 a row; mxboard puts 2 px of black between them (docs/compat.md), where
    tensorboardX packs them."""
    tensorboardx = pytest.importorskip("tensorboardX")
    batch = np.random.default_rng(count).integers(0, 256, size=(count, 3, 8, 8), dtype=np.uint8)
    grey = batch[:, :1]
    for module, run in ((tensorboardx, "tbx"), (__import__("mxboard"), "mxb")):
        with module.SummaryWriter(str(tmp_path / run)) as w:
            w.add_images("rgb", batch, 0)
            w.add_images("grey", grey, 0)
    (peer, ours) = (plugin_accumulator(tmp_path / run) for run in ("tbx", "mxb"))
    for tag, images in (("rgb", batch), ("grey", grey)):
        theirs = np.asarray(_png(tensor_values(peer, tag)[0][1])[2].convert("RGB"))
        width, height, picture = _png(tensor_values(ours, tag)[0][1])
        mine = np.asarray(picture.convert("RGB"))
        columns, rows = min(count, 8), -(-count // 8)
        if count == 1:
            assert (width, height) == (8, 8) and np.array_equal(mine, theirs)
            assert np.array_equal(mine, np.repeat(images[0], 3 // images.shape[1], axis=0).transpose(1, 2, 0))
            continue
        assert theirs.shape == (8 * rows, 8 * columns, 3) and mine.shape == (10 * rows + 2, 10 * columns + 2, 3)
        border = np.ones(mine.shape[:2], bool)
        for i in range(count):
            row, column = divmod(i, columns)
            cell = mine[2 + 10 * row:10 + 10 * row, 2 + 10 * column:10 + 10 * column]
            assert np.array_equal(cell, theirs[8 * row:8 * row + 8, 8 * column:8 * column + 8]), (tag, i)
            border[2 + 10 * row:10 + 10 * row, 2 + 10 * column:10 + 10 * column] = False
        assert not mine[border].any()


def _hparams_data(run):
    """The hparams plugin's experiment and session start of a run, parsed by TensorBoard's hparams
    plugin from the summary metadata its dashboard reads."""
    from tensorboard.plugins.hparams import metadata

    content = plugin_accumulator(run).PluginTagToContent(metadata.PLUGIN_NAME)
    return (metadata.parse_experiment_plugin_data(content[metadata.EXPERIMENT_TAG]),
            metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG]))


def test_hparams_of_none_are_left_out_as_torchs_writer_leaves_them(tmp_path):
    """torch's and tensorboardX's hparams() skip a None value (`if v is None: continue`), and
    Accelerate's init_trackers(config=...) passes some (on 706ab3a a TypeError). The dashboard's
    data, as TensorBoard's hparams plugin reads it, is the peer's for the same call: the same
    hparams, types, domains and metrics, and no trace of the None ones. (A bool is compared with
    tensorboardX's alone: torch's writer stores it as the number 0 or 1.)"""
    pytest.importorskip("torch")
    tensorboardx = pytest.importorskip("tensorboardX")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    config = {"lr": 0.01, "epochs": 3, "optimizer": "adam", "seed": None, "resume_from": None}
    metrics = {"hparam/accuracy": 0.75}
    domains = {"optimizer": ["adam", "sgd"], "seed": [None]}
    for writer, run in ((TorchWriter, "torch"), (SummaryWriter, "mxb")):
        with writer(str(tmp_path / run)) as w:
            w.add_hparams(config, metrics, hparam_domain_discrete=domains, run_name="hp")
            w.add_hparams({"lr": 0.1, "scheduler": None}, metrics, run_name="no_domains")
    flagged = dict(config, fp16=False)
    for writer, run in ((tensorboardx.SummaryWriter, "tbx"), (SummaryWriter, "mxb")):
        with writer(str(tmp_path / run)) as w:
            w.add_hparams(flagged, metrics, "flagged")  # tensorboardX's order: a str third is the run's name
    for peer, name in (("torch", "hp"), ("torch", "no_domains"), ("tbx", "flagged")):
        (peer_experiment, peer_start), (experiment, start) = (_hparams_data(tmp_path / run / name)
                                                              for run in (peer, "mxb"))
        assert list(experiment.hparam_infos) == list(peer_experiment.hparam_infos), name
        assert list(experiment.metric_infos) == list(peer_experiment.metric_infos), name
        assert dict(start.hparams) == dict(peer_start.hparams), name
    assert sorted(start.hparams) == ["epochs", "fp16", "lr", "optimizer"]
    (experiment, _) = _hparams_data(tmp_path / "mxb" / "hp")
    assert [(h.name, len(h.domain_discrete.values)) for h in experiment.hparam_infos] == [
        ("lr", 0), ("epochs", 0), ("optimizer", 2)]
