"""Inputs of every kind, converted in one place; bad input refused at the call, the writer usable
after; mxboard 0.1.0 scripts unchanged."""

import re

import numpy as np
import pytest

from conftest import event_files, plugin_accumulator, run_python, tb_scalars, tensor_values
from mxboard import SummaryWriter


class ArrayLike:
    """Anything with __array__."""

    def __init__(self, data):
        self.data = np.asarray(data)

    def __array__(self, dtype=None, copy=None):
        return self.data


class DLPackOnly:
    """Anything with only __dlpack__ (as jax arrays and others offer)."""

    def __init__(self, data):
        self.data = np.asarray(data)

    def __dlpack__(self, **kwargs):
        return self.data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.data.__dlpack_device__()


@pytest.mark.parametrize("make", [
    np.array, list, ArrayLike, DLPackOnly, lambda d: [list(r) if hasattr(r, "__len__") else r for r in d],
], ids=["numpy", "list", "__array__", "__dlpack__", "nested-list"])
def test_every_input_kind_converts(logdir, make):
    values = np.arange(12, dtype=np.float32).reshape(3, 4) / 12
    with SummaryWriter(logdir) as w:
        w.add_histogram("h", make(values))
        w.add_image("i", make(values), dataformats="HW")
        one = make(np.array([0.5]))
        w.add_scalar("s", 0.5 if isinstance(one, list) else one)  # a list would be (name, value)
    acc = plugin_accumulator(logdir)
    assert tensor_values(acc, "h")[0][1][:, 2].sum() == 12
    assert "i" in acc.PluginTagToContent("images")
    assert [v for _, _, v in tb_scalars(event_files(logdir)[0])] == [0.5]


def test_torch_tensors_even_with_grad(logdir):
    torch = pytest.importorskip("torch")
    weights = torch.ones(3, 4, requires_grad=True) * 0.5
    with SummaryWriter(logdir) as w:
        w.add_histogram("w", weights)
        w.add_scalar("loss", weights.sum())
    acc = plugin_accumulator(logdir)
    assert tensor_values(acc, "w")[0][1][:, 2].sum() == 12
    assert [v for _, _, v in tb_scalars(event_files(logdir)[0])] == [6.0]


def test_arrays_are_captured_at_the_call(logdir):
    values = np.ones(10)
    with SummaryWriter(logdir, flush_secs=3600) as w:
        w.add_histogram("h", values)
        values[:] = 100.0  # after the call: must not change what is logged
    (_, buckets), = tensor_values(plugin_accumulator(logdir), "h")
    assert buckets[:, 2].sum() == 10 and buckets[-1, 1] < 2.0


@pytest.mark.parametrize("shape", [(200_000,), (200_000, 1), (1, 200_000), (200_000, 2), (2, 200_000), (1, 200_000, 2)])
def test_long_clips_at_a_high_rate_are_taken_in_every_layout(logdir, shape):
    with SummaryWriter(logdir) as w:  # the WAV byte-rate limit counts channels, not frames
        w.add_audio("a", np.zeros(shape, dtype=np.float32), sample_rate=192_000)
    assert len(tensor_values(plugin_accumulator(logdir), "a")) == 1


@pytest.mark.slow
def test_mxnet_is_never_imported(tmp_path):
    out = run_python("LOGDIR = %r\n" % str(tmp_path) + r"""
import sys
import re

import numpy as np
import mxboard
with mxboard.SummaryWriter(LOGDIR) as w:
    w.add_scalar("s", 1.0)
    w.add_histogram("h", np.ones(3))
    w.add_image("i", np.ones((3, 2, 2)))
    w.add_audio("a", np.zeros(10), sample_rate=100)
    w.add_text("t", "x")
    w.add_pr_curve("p", [1, 0], [0.5, 0.5], 3)
    w.add_embedding("e", np.ones((2, 2)))
print("mxnet" in sys.modules, "torch" in sys.modules)
""").stdout.split()
    assert out == ["False", "False"]


BAD = [
    ("add_histogram", ("h", "abc"), TypeError, "values must be a number or an array"),
    ("add_histogram", ("h", np.array(["a"])), TypeError, "values must hold real numbers; got dtype <U1"),
    ("add_histogram", ("h", []), ValueError, "values is empty"),
    ("add_histogram", ("h", np.ones(3)), {"bins": "nope"}, ValueError, "bins must be 'default'"),
    ("add_histogram", ("h", np.ones(3)), {"bins": 0}, ValueError, "bins must be between 1 and"),
    ("add_histogram", ("h", np.ones(3)), {"bins": 10**9}, ValueError, "bins must be between 1 and 65536"),
    ("add_histogram", ("h", np.ones(3)), {"bins": [3, 2, 1]}, ValueError, "increasing"),
    ("add_histogram", (3, np.ones(3)), TypeError, "tag must be a str"),
    ("add_histogram", ("h", object()), TypeError, "values must be a number or an array"),
    ("add_image", ("i", np.ones((2, 4, 4))), ValueError, "1, 3 or 4 channels .* got 2"),
    ("add_image", ("i", np.ones((4, 4, 3, 1, 1))), ValueError, "must have 3 dimensions"),
    ("add_image", ("i", np.ones((3, 4, 4))), {"dataformats": "XYZ"}, ValueError, "dataformats must be one of"),
    ("add_image", ("i", np.ones((3, 0, 4))), ValueError, "empty"),
    ("add_image", ("i", np.array([[[300]]], dtype=np.int32)), ValueError, r"image: integer pixels .*got \[300, 300\]"),
    ("add_image", ("i", np.array([[[-1]]], dtype=np.int64)), ValueError, r"lie in \[0, 255\]"),
    ("add_video", ("v", np.ones((2, 3, 4, 4))), {"fps": 1e-9}, ValueError, "fps must be a finite number"),
    ("add_video", ("v", np.ones((2, 3, 4, 4))), {"fps": float("nan")}, ValueError, "fps must be"),
    ("add_audio", ("a", np.ones(100)), {"sample_rate": 2**40}, ValueError, "too large for a WAV"),
    ("add_text", ("t", "lone \ud800 surrogate"), ValueError, "text must be valid Unicode"),
    ("add_text", ("t", ["ok", "\udfff"]), ValueError, "text must be valid Unicode"),
    ("add_pr_curve", ("p", [1, 0], [0.5, float("nan")]), ValueError, "predictions must be finite"),
    ("add_mesh", ("m", np.ones((4, 3))), {"config_dict": {"f": object()}}, TypeError, "config_dict must be JSON"),
    ("add_mesh", ("m", np.ones((4, 3))), {"faces": [[0, 1, 2.7]]}, TypeError, "faces must be integer"),
    ("add_scalar", ("s", 1.0), {"walltime": float("inf")}, ValueError, "walltime must be finite"),
    ("add_text", ("t", "x"), {"walltime": float("nan")}, ValueError, "walltime must be finite"),
    ("add_images", ("i", np.ones((3, 4, 4))), ValueError, "must have 4 dimensions"),
    ("add_audio", ("a", np.ones((3, 100))), ValueError, "1 or 2 channels"),
    ("add_audio", ("a", np.ones(100)), {"sample_rate": -1}, ValueError, "sample_rate"),
    ("add_audio", ("a", np.ones(100)), {"sample_rate": 44.1}, ValueError, "whole number"),
    ("add_text", ("t", 3), TypeError, "text must be a str"),
    ("add_text", ("t", b"x"), TypeError, "decode bytes"),
    ("add_text", ("t", [["a"], ["b", "c"]]), ValueError, "equal lengths"),
    ("add_text", ("t", []), TypeError, "non-empty"),
    ("add_pr_curve", ("p", [1, 0, 1], [0.5, 0.5]), ValueError, "one shape"),
    ("add_pr_curve", ("p", [1, 0], [0.5, 0.5]), {"num_thresholds": 1}, ValueError, "num_thresholds must be between 2"),
    ("add_pr_curve", ("p", [1, 0], [0.5, 0.5]), {"weights": [1, 2, 3]}, ValueError, "do not broadcast"),
    ("add_pr_curve_raw", ("p", [1], [1], [1], [1], [1], [1]), {"num_thresholds": 3}, ValueError,
     "true_positive_counts must have num_thresholds"),
    ("add_histogram_raw", ("r", 0, 1, 1, 1, 1, [1, 2], [1]), ValueError, "same length"),
    ("add_mesh", ("m", np.ones((4, 2))), ValueError, r"vertices must be \(B, N, 3\)"),
    ("add_mesh", ("m", np.ones((4, 3))), {"faces": [[0, 1, 9]]}, ValueError, "faces must index"),
    ("add_video", ("v", np.ones((3, 8, 8))), ValueError, "vid_tensor must be"),
    ("add_hparams", ({}, {}), TypeError, "hparam_dict"),
    ("add_hparams", ({"lr": [1, 2]}, {}), TypeError, "hparam 'lr' must be a bool, number or str"),
    ("add_hparams", ({"lr": 1}, {"m": "x"}), TypeError, r"metric_dict\['m'\] must be a number"),
    ("add_custom_scalars", ({"c": {"t": ["Pie", ["a"]]}},), ValueError, "Multiline"),
    ("add_custom_scalars", ({},), TypeError, "non-empty dict"),
    ("add_figure", ("f", np.ones(3)), TypeError, "matplotlib Figure"),
    # accepted at the call before, and failing on the writer thread or written wrong:
    ("add_image_with_boxes", ("b", np.zeros((3, 8, 8)), [[5, 5, 1, 1]]), ValueError,
     r"box_tensor\[0\] is \[5.0, 5.0, 1.0, 1.0\]: .* xmin <= xmax"),
    ("add_image_with_boxes", ("b", np.zeros((3, 8, 8)), [[0, 0, 1, 1], [1, 6, 2, 5]]), ValueError, r"box_tensor\[1\]"),
    ("add_image_with_boxes", ("b", np.zeros((3, 8, 8)), [[0, 0, 1, 1]]), {"rescale": 1e6}, ValueError,
     "rescale=1000000.0 makes the 8x8 image 8000000x8000000"),
    ("add_pr_curve", ("p", [5, 0], [0.5, 0.5]), ValueError, "labels must be 0 or 1 .*got 5"),
    ("add_pr_curve", ("p", [float("nan"), 1.0], [0.5, 0.5]), ValueError, "labels must be 0 or 1 .*got nan"),
    ("add_mesh", ("m", np.ones((2, 3))), {"colors": [[300, 0, 0], [0, 0, 0]]}, ValueError,
     r"colors must be in \[0, 255\]; got values from 0 to 300"),
    ("add_mesh", ("m", np.ones((2, 3))), {"colors": [[-1, 0, 0], [0, 0, 0]]}, ValueError, "colors must be in"),
    ("add_mesh", ("m", np.ones((2, 3))), {"colors": np.full((2, 3), 0.5)}, ValueError,
     r"colors must be integers in \[0, 255\] .*got 0.5"),
    ("add_histogram_raw", ("r", 0, 1, 1, 1, 1, [1, float("nan")], [1, 1]), ValueError,
     "bucket_limits must be numbers; got NaN"),
    ("add_histogram_raw", ("r", 0, 1, 1, 1, 1, [1, 2], [1, -1]), ValueError,
     "bucket_counts must be finite counts >= 0; got -1.0 at index 1"),
    ("add_histogram_raw", ("r", 0, 1, 1, 1, 1, [1, 2], [1, float("inf")]), ValueError, "bucket_counts must be finite"),
    ("add_histogram_raw", ("r", float("nan"), 1, 1, 1, 1, [1, 2], [1, 1]), ValueError, "min must be a number"),
    # surely wrong, passed silently on 802362c:
    ("add_pr_curve", ("p", [1, 0], [0.5, 1.5]), ValueError, r"predictions must be probabilities in \[0, 1\]; got 1.5"),
    ("add_pr_curve", ("p", [1, 0], [-2.0, 0.5]), ValueError, r"got -2.0 \(scores\? apply a sigmoid or softmax first\)"),
    ("add_audio", ("a", np.ones(100)), {"sample_rate": 0}, ValueError, "sample_rate must be a positive whole number"),
    ("add_hparams", ({"lr": 1}, {"m": None}), TypeError, r"metric_dict\['m'\] must be a number"),  # but in_run
    ("add_hparams", ({"lr": 1}, {("loss", "val"): None}), ValueError,
     r"metric_dict key \('loss', 'val'\): a \(tag, name\) pair names the run's own add_scalar\(tag, \{name"),
    ("add_hparams", ({"lr": 1}, {("loss", "val"): 1.0}), {"in_run": True}, ValueError, r"only with in_run=True and "
     "the value None"),
    # accepted at the call on b621f0a, failing at a later call ([process]):
    ("add_tensor", ("t", np.array(["ok", "lone \udc80 surrogate"])), ValueError, "tensor's text must be valid Unicode"),
    ("add_tensor", ("t", np.array(["\ud800"], dtype=object)), ValueError, "tensor's text must be valid Unicode"),
    # a number for a curve the run logs ("before"): a point at step 0 would hide the curve's others
    ("add_hparams", ({"lr": 1}, {"before": 0.5}), {"in_run": True}, ValueError,
     r"metric_dict\['before'\] is a number, but this run logs 'before' .* Give \{'before': None\}"),
    # an HWC image with the default format: the hint names the format that takes it
    ("add_image", ("i", np.ones((32, 24, 3))), ValueError, r"got 32 in shape \(32, 24, 3\); channels last\? pass "
     "dataformats='HWC'"),
    ("add_images", ("i", np.ones((2, 32, 24, 4))), ValueError, r"channels last\? pass dataformats='NHWC'"),
    # unclear before: the internal ScalarCalls._add_scalar_peer(), a mixin's ImageCalls.add_image()
    ("add_scalar", ("s", 1.0), {"bogus": 1}, TypeError, r"^SummaryWriter\.add_scalar\(\) got an unexpected keyword "
     "argument 'bogus'$"),
    ("add_image", ("i", np.ones((3, 4, 4))), {"bogus": 1}, TypeError,  # Python 3.9 says add_image() alone
     r"^(SummaryWriter\.)?add_image\(\) got an unexpected keyword argument 'bogus'$"),
]


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), True, "often", None, np.ones(2)])
def test_a_positive_number_is_checked_one_way_for_every_argument_that_is_one(tmp_path, bad):
    """flush_secs, system_metrics and rescale were checked three ways (bools, infinities and
    arrays passed one and not another); convert.positive checks them all, naming the argument
    (an array of two: "must be a single number")."""
    with pytest.raises(ValueError, match=r"^flush_secs must be (a finite number > 0|a single number); got "):
        SummaryWriter(str(tmp_path), flush_secs=bad)
    metrics = r"^system_metrics must be (True, False or a number of seconds > 0|a single number); got "
    if bad is not True and bad is not None:  # True: the default interval; None: no metrics
        with pytest.raises(ValueError, match=metrics):
            SummaryWriter(str(tmp_path), system_metrics=bad)
    rescale = r"^rescale must be (a finite number > 0|a single number); "
    with SummaryWriter(str(tmp_path)) as w, pytest.raises(ValueError, match=rescale):
        w.add_image_with_boxes("b", np.zeros((3, 8, 8)), [[0, 0, 1, 1]], rescale=bad)


def _case(entry):
    if len(entry) == 4:
        method, args, error, message = entry
        kwargs = {}
    else:
        method, args, kwargs, error, message = entry
    return method, args, kwargs or {}, error, message


@pytest.mark.parametrize("entry", BAD, ids=["%s-%d" % (b[0], i) for i, b in enumerate(BAD)])
def test_bad_input_raises_at_the_call_naming_it_and_the_writer_stays_usable(logdir, entry):
    method, args, kwargs, error, message = _case(entry)
    with SummaryWriter(logdir) as w:
        w.add_scalar("before", 1.0, 0)
        with pytest.raises(error, match=message):
            getattr(w, method)(*args, **kwargs)
        w.add_scalar("still-ok", 1.0, 1)  # the next call is neither refused nor lost
        w.flush()
    assert sorted((t, s) for t, s, _ in tb_scalars(event_files(logdir)[0])) == [("before", 0), ("still-ok", 1)]


MXBOARD_0_1_0_SCRIPT = r"""
import re

import numpy as np
from mxboard import SummaryWriter
sw = SummaryWriter(logdir=LOGDIR, max_queue=10, flush_secs=120, filename_suffix='', verbose=False)
for step in range(3):
    sw.add_scalar(tag='loss', value=1.0 / (step + 1), global_step=step)
    sw.add_scalar('acc', ('train', 0.5 + step / 10), global_step=step)
    sw.add_scalar('acc', {'val': 0.4 + step / 10, 'test': 0.3}, step)
    sw.add_histogram(tag='weights', values=np.random.normal(size=1000), global_step=step, bins=100)
    sw.add_histogram('grads', np.random.normal(size=1000), step)   # bins='default'
sw.add_image('batch', np.random.uniform(size=(4, 3, 8, 8)))        # NCHW grid
sw.add_image('one', np.random.uniform(size=(8, 8)))                 # HW
sw.add_audio('sound', np.sin(np.arange(4410) / 10.0), sample_rate=44100, global_step=0)
sw.add_text('config', 'lr: 0.1')
sw.add_embedding('features', np.random.normal(size=(10, 4)), labels=list(range(10)),
                 images=np.random.uniform(size=(10, 1, 4, 4)), global_step=7)
sw.add_pr_curve('pr', np.random.randint(0, 2, 50), np.random.uniform(size=50), 100, 1, None)
sw.flush()
sw.export_scalars(LOGDIR + '/scalars.json')
sw.close()
sw.reopen()
sw.add_scalar('loss', 0.1, 3)
sw.close()
"""


@pytest.mark.slow
def test_an_mxboard_0_1_0_script_runs_unchanged(tmp_path):
    import json

    run_python("LOGDIR = %r\n" % str(tmp_path) + MXBOARD_0_1_0_SCRIPT)
    acc = plugin_accumulator(tmp_path)
    assert [e.step for e in acc.Tensors("loss")] == [0, 1, 2, 3]
    assert {"weights", "grads"} <= set(acc.PluginTagToContent("histograms"))
    assert {"batch", "one"} <= set(acc.PluginTagToContent("images"))
    assert "sound" in acc.PluginTagToContent("audio") and "config" in acc.PluginTagToContent("text")
    assert tensor_values(acc, "pr")[0][0] == 1 and tensor_values(acc, "pr")[0][1].shape == (6, 100)
    assert len(plugin_accumulator(tmp_path / "acc" / "val").Tensors("acc")) == 3
    exported = json.loads((tmp_path / "scalars.json").read_text())
    assert sorted(exported) == sorted("%s/%s" % (tmp_path, k) for k in ("loss", "acc/train", "acc/val", "acc/test"))
    assert [row[1:] for row in exported["%s/loss" % tmp_path]] == [[0, 1.0], [1, 0.5], [2, pytest.approx(1 / 3)]]
    from PIL import Image

    with Image.open(tmp_path / "features_000007" / "sprite.png") as opened:  # mxboard's folder name
        sprite = opened.copy()
    assert sprite.size == (4 * 4, 4 * 4)  # ten 4x4 thumbnails in a 4 x 4 grid


def test_the_bounds_of_the_new_checks_are_taken(logdir):
    """What the new checks let through is written: a flat box, whole-float and uint8 colors,
    boolean labels, an infinite last bucket limit, a rescale within the bounds."""
    with SummaryWriter(logdir) as w:
        w.add_image_with_boxes("b", np.zeros((3, 8, 8)), [[2, 2, 2, 6]], rescale=100)
        w.add_mesh("m", np.ones((2, 3)), colors=np.array([[255.0, 0, 0], [0, 128, 0]]))
        w.add_mesh("u", np.ones((2, 3)), colors=np.array([[255, 0, 0], [0, 128, 0]], dtype=np.uint8))
        w.add_pr_curve("p", np.array([True, False]), [0.9, 0.1])
        w.add_histogram_raw("r", 0, 1, 2, 1, 1, [1, float("inf")], [1, 1])
    acc = plugin_accumulator(logdir)
    assert {"b"} <= set(acc.PluginTagToContent("images")) and {"p"} <= set(acc.PluginTagToContent("pr_curves"))
    assert tensor_values(acc, "m_COLOR")[0][1].tolist() == [[[255, 0, 0], [0, 128, 0]]]
    assert tensor_values(acc, "r")[0][1][:, 2].tolist() == [1, 1]


def test_a_logdir_with_a_tilde_is_the_home_one_and_a_file_is_said_plainly(tmp_path, monkeypatch):
    """On 802362c SummaryWriter("~/x") made a directory literally named `~`, and a logdir that
    is a file raised a bare FileExistsError."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    with SummaryWriter("~/runs/a") as writer:
        writer.add_scalar("loss", 1.0, 0)
    assert writer.logdir == str(tmp_path / "home" / "runs" / "a")
    assert tb_scalars(event_files(tmp_path / "home" / "runs" / "a")[0]) == [("loss", 0, 1.0)]
    assert not (tmp_path / "~").exists()
    (tmp_path / "a-file").write_text("not a directory")
    with pytest.raises(NotADirectoryError, match="logdir '.*a-file' is a file: a logdir is a directory"):
        SummaryWriter(str(tmp_path / "a-file"))


PROBABLY_WRONG = [
    ("add_image", ("i", np.full((3, 4, 4), 200.0)),
     "(image|img_tensor): float pixels are read in \\[0, 1\\], and some are above 1"),
    ("add_images", ("i", np.full((2, 3, 4, 4), 2.0)), "img_tensor: float pixels are read in \\[0, 1\\]"),
    ("add_audio", ("a", np.full(100, 3.0)), "audio: samples are read in \\[-1, 1\\], and some are beyond"),
    # found on the writer thread, shown at the call's line by the next call (on 802362c: at mxboard/output.py)
    ("add_histogram", ("h", np.array([1.0, np.nan])), "add_histogram\\('h'\\): NaN or infinite values were dropped"),
]


@pytest.mark.parametrize("method, args, message", PROBABLY_WRONG, ids=[p[0] for p in PROBABLY_WRONG])
def test_probably_wrong_input_warns_once_at_the_users_line(logdir, method, args, message):
    """Float images above 1 and audio beyond [-1, 1] are written (clipped), with a warning that
    points at the call in the user's file, once there (on 802362c: nothing)."""
    import warnings

    with SummaryWriter(logdir) as w, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            getattr(w, method)(*args)
            w.flush()
    (warning,) = caught
    assert warning.filename == __file__ and re.search(message, str(warning.message))


def test_nan_and_inf_scalars_are_logged_as_given_with_one_warning_a_tag_naming_the_step(logdir):
    """A NaN loss is what a curve most needs to show: logged as given, said once a tag, with the
    step where it first happened (on a92d861 silently; histograms warned, without the step)."""
    import warnings

    with SummaryWriter(logdir) as w, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step, value in enumerate([1.0, float("nan"), float("inf"), 2.0, float("-inf")]):
            w.add_scalar("loss", value, step)
            w.add_scalar("lr", 0.1, step)
            w.add_scalars("pair", {"a": np.float32(value), "b": 1.0}, step)
    said = [str(c.message) for c in caught]
    assert said == ["add_scalar('loss'): nan at step 1, logged as given (TensorBoard marks it on the curve); "
                    "said once for this tag",
                    "add_scalar('pair/a'): nan at step 1, logged as given (TensorBoard marks it on the curve); "
                    "said once for this tag"]
    assert all(c.filename == __file__ and c.category is RuntimeWarning for c in caught)
    logged = [v for tag, _, v in tb_scalars(event_files(logdir)[0]) if tag == "loss"]
    assert logged[0] == 1.0 and np.isnan(logged[1]) and logged[2:] == [np.inf, 2.0, -np.inf]


def test_a_histogram_drops_nan_and_inf_with_one_warning_a_tag_naming_the_first_step(logdir):
    import warnings

    with SummaryWriter(logdir) as w, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(4):
            w.add_histogram("w", np.array([1.0, np.nan if step >= 2 else 0.5, 3.0]), step)
            w.add_histogram("v", np.array([np.inf, 1.0]), step)
            w.flush()
    assert sorted(str(c.message) for c in caught) == [
        "add_histogram('v'): NaN or infinite values were dropped (they cannot be binned) at step 0; "
        "said once for this tag",
        "add_histogram('w'): NaN or infinite values were dropped (they cannot be binned) at step 2; "
        "said once for this tag"]
    assert [values[:, 2].sum() for _, values in tensor_values(plugin_accumulator(logdir), "w")] == [3, 3, 2, 2]


def test_an_array_calls_warning_line_is_found_once_a_tag_not_at_every_call(logdir):
    """The NaN and Inf warning's line (WriterCore.said_once) is the user's line of a tag's first
    call, found by one walk of the stack; later calls of that tag walk none (a6ab6a5 walked at
    every array call). sys.setprofile counts the walks."""
    import sys

    from mxboard._writer import callsite

    walks = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is callsite.call_site.__code__:
            walks.append(frame.f_back.f_code.co_name)

    data = np.ones(8)
    with SummaryWriter(logdir) as w:
        w.add_histogram("h", data, 0)
        before = sys.getprofile()
        sys.setprofile(profile)
        try:
            for step in range(1, 20):
                w.add_histogram("h", data, step)
                w.add_histogram("g", data, step)
        finally:
            sys.setprofile(before)
    assert walks == ["said_once"]  # the first call of "g"
