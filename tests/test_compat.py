"""Code written for tensorboardX, torch.utils.tensorboard or mxboard 0.1.0 runs unchanged: peer
scripts are run twice, once as written and once with mxboard imported instead, and the bundled
TensorBoard (its fast Rust loader, over HTTP) must serve the same thing for both."""
import io
import json
import os
import re
import subprocess
import sys
import threading
import urllib.parse
import warnings
import wave

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT, Server, event_files, run_python, tb_scalars
from mxboard import GlobalSummaryWriter, SummaryWriter

# tensorboardX's own demo, trimmed: keyword names, bins='tensorflow', tensorboardX's positional
# order of add_embedding and add_hparams, add_image_with_boxes, the chart shorthands
TENSORBOARDX_SCRIPT = r'''
import sys
import numpy as np
from tensorboardX import SummaryWriter

logdir = sys.argv[1]
rng = np.random.default_rng(0)
writer = SummaryWriter(log_dir=logdir, comment="ignored when log_dir is given")
for n_iter in range(20):
    writer.add_scalar("data/scalar1", rng.random(), n_iter)
    writer.add_scalar("data/scalar2", scalar_value=n_iter * 0.5, global_step=n_iter)
    writer.add_scalars("data/scalar_group", {"xsinx": n_iter * np.sin(n_iter),
                                             "xcosx": n_iter * np.cos(n_iter)}, n_iter)
    if n_iter % 10 == 0:
        x = rng.random((3, 32, 32))
        writer.add_image("Image", img_tensor=x, global_step=n_iter)
        writer.add_images("Images", rng.random((4, 3, 8, 8)), n_iter)
        writer.add_image_with_boxes("Boxes", x, np.array([[2, 2, 20, 20], [4, 8, 30, 30]]), n_iter,
                                    labels=["a", "b"])
        writer.add_audio("myAudio", snd_tensor=np.sin(np.arange(44100) / 10.0), global_step=n_iter,
                         sample_rate=44100)
        writer.add_text("Text", text_string="text logged at step:" + str(n_iter), global_step=n_iter)
        writer.add_histogram("hist", rng.normal(size=1000), n_iter, bins="tensorflow")
        writer.add_pr_curve("xoxo", rng.integers(2, size=100), rng.random(100), global_step=n_iter)
writer.add_embedding(rng.random((20, 5)), metadata=[str(i) for i in range(20)],
                     label_img=rng.random((20, 3, 8, 8)), global_step=3, tag="features")
writer.add_hparams({"lr": 0.1, "bsize": 1}, {"hparam/accuracy": 10.0}, "hp", 7)
writer.add_custom_scalars_multilinechart(["data/scalar1", "data/scalar2"], title="both")
writer.export_scalars_to_json(logdir + "/all_scalars.json")
writer.close()
'''

# torch.utils.tensorboard's tutorial style: no logdir (runs/<date>_<host><comment>), float steps
TORCH_SCRIPT = r'''
import numpy as np
from torch.utils.tensorboard import SummaryWriter

writer = SummaryWriter(comment="_lr0.1")
print(writer.log_dir)
for epoch in np.arange(0.0, 3.0, 0.5):
    writer.add_scalar("Loss/train", 1.0 / (1.0 + epoch), epoch * 100)
    writer.add_scalar("Loss/test", 2.0 / (1.0 + epoch), np.float64(epoch * 100))
writer.add_hparams({"lr": 0.1, "optimizer": "sgd"}, {"hparam/loss": 0.25}, run_name="hp")
writer.add_custom_scalars_marginchart(["Loss/train", "Loss/test", "Loss/train"], title="band")
writer.close()
'''


# tensorboardX's own examples/demo.py, call for call (lanpa/tensorboardX): torchvision's pieces
# (make_grid, resnet18, MNIST, which needs a download) replaced by tensors of the same shapes
TENSORBOARDX_DEMO = r'''
import sys
import numpy as np
import torch
from tensorboardX import SummaryWriter

torch.manual_seed(0)
resnet18 = torch.nn.Sequential()
resnet18.add_module("conv1", torch.nn.Conv2d(3, 8, 3))
resnet18.add_module("bn1", torch.nn.BatchNorm2d(8))
resnet18.add_module("fc", torch.nn.Linear(8, 10))
writer = SummaryWriter(sys.argv[1])
sample_rate = 44100
freqs = [262, 294, 330, 349, 392, 440, 440, 440, 440, 440, 440]

true_positive_counts = [75, 64, 21, 5, 0]
false_positive_counts = [150, 105, 18, 0, 0]
true_negative_counts = [0, 45, 132, 150, 150]
false_negative_counts = [0, 11, 54, 70, 75]
precision = [0.3333333, 0.3786982, 0.5384616, 1.0, 0.0]
recall = [1.0, 0.8533334, 0.28, 0.0666667, 0.0]

for n_iter in range(100):
    s1 = torch.rand(1)
    s2 = torch.rand(1)
    writer.add_scalar('data/scalar_systemtime', s1[0], n_iter)
    writer.add_scalar('data/scalar_customtime', s1[0], n_iter, walltime=n_iter)
    writer.add_scalars('data/scalar_group', {"xsinx": n_iter * np.sin(n_iter),
                                             "xcosx": n_iter * np.cos(n_iter),
                                             "arctanx": np.arctan(n_iter)}, n_iter)
    x = torch.rand(32, 3, 64, 64)
    if n_iter % 10 == 0:
        x = torch.rand(3, 274, 546)  # vutils.make_grid(x, normalize=True, scale_each=True)
        writer.add_image('Image', x, n_iter)
        writer.add_image_with_boxes('imagebox', x, torch.Tensor([[10, 10, 40, 40], [40, 40, 60, 60]]), n_iter)
        x = torch.zeros(sample_rate * 2)
        x[:] = torch.cos(freqs[n_iter // 10] * np.pi * torch.arange(x.size(0), dtype=torch.float64) / sample_rate)
        writer.add_audio('myAudio', x, n_iter)
        writer.add_text('Text', 'text logged at step:' + str(n_iter), n_iter)
        writer.add_text('markdown Text', 'a|b\n-|-\nc|d', n_iter)
        for name, param in resnet18.named_parameters():
            if 'bn' not in name:
                writer.add_histogram(name, param, n_iter)
        writer.add_pr_curve('xoxo', np.random.randint(2, size=100), np.random.rand(
            100), n_iter)
        writer.add_pr_curve_raw('prcurve with raw data', true_positive_counts,
                                false_positive_counts,
                                true_negative_counts,
                                false_negative_counts,
                                precision,
                                recall, n_iter)
writer.export_scalars_to_json(sys.argv[1] + "/all_scalars.json")

test_data = torch.randint(0, 256, (100, 28, 28), dtype=torch.uint8)  # dataset.test_data[:100]
images = test_data[:100].float()
label = torch.randint(0, 10, (100,))
features = images.view(100, 784)
writer.add_embedding(features, metadata=label, label_img=images.unsqueeze(1))
writer.add_embedding(features, global_step=1, tag='noMetadata')
train_data = torch.randint(0, 256, (16 * 48, 28, 28), dtype=torch.uint8)  # dataset.train_data
images_train = train_data[:100].float()
labels_train = torch.randint(0, 10, (100,))
features_train = images_train.view(100, 784)

all_features = torch.cat((features, features_train))
all_labels = torch.cat((label, labels_train))
all_images = torch.cat((images, images_train))
dataset_label = ['test'] * 100 + ['train'] * 100
all_labels = list(zip(all_labels, dataset_label))

writer.add_embedding(all_features, metadata=all_labels, label_img=all_images.unsqueeze(1),
                     metadata_header=['digit', 'dataset'], global_step=2)

vid_images = train_data[:16 * 48]
vid = vid_images.view(16, 48, 1, 28, 28)  # BxTxCxHxW

writer.add_video('video', vid_tensor=vid)
writer.add_video('video_1_fps', vid_tensor=vid, fps=1)

writer.close()
'''

def _run_script(script, library, cwd, *args):
    """Run a peer script as written ('peer') or with mxboard imported in its place ('mxboard')."""
    if library == "mxboard":
        script = (script.replace("from tensorboardX import SummaryWriter", "from mxboard import SummaryWriter")
                  .replace("from torch.utils.tensorboard import SummaryWriter", "from mxboard import SummaryWriter"))
        assert "from mxboard import SummaryWriter" in script
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    proc = subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The tensorboardX script's run by tensorboardX (run `tbx`) and by mxboard (run `mxb`), served
    by the bundled TensorBoard with its default loader."""
    root = tmp_path_factory.mktemp("compat")
    _run_script(TENSORBOARDX_SCRIPT, "peer", str(root), str(root / "tbx"))
    _run_script(TENSORBOARDX_SCRIPT, "mxboard", str(root), str(root / "mxb"))
    server = Server(root)
    try:
        assert "data loader: mxboard (in-process)" in server.banner
        server.json("/data/runs", until=lambda runs: {"tbx/hp", "mxb/hp", "tbx/data/scalar_group/xsinx",
                                                       "mxb/data/scalar_group/xsinx"} <= set(runs))
        yield root, server
    finally:
        server.close()


def _both(server, path, tag, extra=None):
    return [server.json(path, dict({"run": run, "tag": tag}, **(extra or {}))) for run in ("tbx", "mxb")]


def test_the_same_runs_and_tags_as_tensorboardx(served):
    _, server = served
    runs = server.json("/data/runs")
    assert sorted(r[4:] for r in runs if r.startswith("tbx")) == sorted(r[4:] for r in runs if r.startswith("mxb"))
    for plugin in ("scalars", "images", "audio", "histograms", "text", "pr_curves"):
        tags = server.json("/data/plugin/%s/tags" % plugin)
        # tensorboardX writes text under `<tag>/text_summary` (TensorFlow 1's name); mxboard
        # under the tag given, as torch does
        peer = {t.replace("/text_summary", "") for t in tags.get("tbx", {})}
        assert peer == set(tags.get("mxb", {})) != set(), plugin


@pytest.mark.parametrize("run, tag", [("", "data/scalar1"), ("", "data/scalar2"),
                                      ("/data/scalar_group/xsinx", "data/scalar_group"),
                                      ("/data/scalar_group/xcosx", "data/scalar_group"),
                                      ("/hp", "hparam/accuracy")])
def test_scalars_are_served_alike(served, run, tag):
    _, server = served
    peer, ours = (server.json("/data/plugin/scalars/scalars", {"run": lib + run, "tag": tag})
                  for lib in ("tbx", "mxb"))
    assert [(s, pytest.approx(v, rel=1e-6)) for _, s, v in peer] == [(s, v) for _, s, v in ours]
    assert len(ours) == (1 if tag.startswith("hparam") else 20)


@pytest.mark.parametrize("plugin, tag", [("images", "Image"), ("images", "Images"), ("images", "Boxes"),
                                         ("audio", "myAudio")])
def test_images_and_audio_are_served_alike(served, plugin, tag):
    _, server = served
    peer, ours = _both(server, "/data/plugin/%s/%s" % (plugin, plugin), tag)
    assert [e["step"] for e in peer] == [e["step"] for e in ours] == [0, 10]
    decoded = []
    for entry in peer + ours:
        content_type, data = server.get("/data/plugin/%s/individual%s?%s"
                                        % (plugin, "Image" if plugin == "images" else "Audio", entry["query"]))
        if entry in ours:  # tensorboardX's audio is served as application/octet-stream
            assert content_type == ("image/png" if plugin == "images" else "audio/wav")
        if plugin == "images":
            decoded.append(Image.open(io.BytesIO(data)).size)
        else:
            with wave.open(io.BytesIO(data)) as wav:
                decoded.append((wav.getframerate(), wav.getnframes(), wav.getnchannels()))
    if tag == "Images":  # a grid: tensorboardX packs it without padding; mxboard pads 2 px as
        assert decoded == [(32, 8)] * 2 + [(42, 12)] * 2  # torchvision and mxboard 0.1.0 did
    else:
        assert decoded[:2] == decoded[2:]


def test_histograms_text_and_pr_curves_are_served_alike(served):
    _, server = served
    peer, ours = _both(server, "/data/plugin/histograms/histograms", "hist")
    assert [e[1] for e in peer] == [e[1] for e in ours] == [0, 10]
    assert [sum(b[2] for b in e[2]) for e in ours] == [1000, 1000]
    peer = server.json("/data/plugin/text/text", {"run": "tbx", "tag": "Text/text_summary"})
    ours = server.json("/data/plugin/text/text", {"run": "mxb", "tag": "Text"})
    # tensorboardX writes a 1-element vector, shown as a one-cell table; mxboard a paragraph
    assert [(e["step"], re.sub("<[^>]+>|\n", "", e["text"])) for e in peer] == \
        [(e["step"], re.sub("<[^>]+>|\n", "", e["text"])) for e in ours] == \
        [(0, "text logged at step:0"), (10, "text logged at step:10")]
    peer, ours = _both(server, "/data/plugin/pr_curves/pr_curves", "xoxo")
    # 127 thresholds each; the plugin leaves out the last, where nothing is predicted positive
    assert [(e["step"], len(e["precision"])) for e in peer["tbx"]] == \
        [(e["step"], len(e["precision"])) for e in ours["mxb"]] == [(0, 126), (10, 126)]


def test_embedding_in_tensorboardx_order_reaches_the_projector(served):
    _, server = served
    for run in ("tbx", "mxb"):
        server.json("/data/plugin/projector/runs", until=lambda runs, run=run: run in runs)
        (embedding,) = server.json("/data/plugin/projector/info", {"run": run})["embeddings"]
        assert embedding["tensorShape"] == [20, 5] and embedding["tensorName"].startswith("features")
        _, metadata = server.get("/data/plugin/projector/metadata?" + urllib.parse.urlencode(
            {"run": run, "name": embedding["tensorName"]}))
        assert metadata.decode().split() == [str(i) for i in range(20)]


def test_hparams_in_tensorboardx_order(served):
    _, server = served
    groups = server.post_json("/data/plugin/hparams/session_groups", {
        "experimentName": "", "allowedStatuses": ["STATUS_SUCCESS", "STATUS_UNKNOWN"],
        "colParams": [{"hparam": "lr"}, {"metric": {"tag": "hparam/accuracy"}}], "startIndex": 0, "sliceSize": 10})
    sessions = {group["name"]: group for group in groups["sessionGroups"]}
    assert {"tbx/hp", "mxb/hp"} <= set(sessions)
    assert sessions["mxb/hp"]["hparams"] == sessions["tbx/hp"]["hparams"] == {"lr": 0.1, "bsize": 1}


def test_export_scalars_to_json_has_tensorboardxs_keys(served):
    root, _ = served
    exported = {}
    for lib in ("tbx", "mxb"):
        with open(os.path.join(root, lib, "all_scalars.json")) as f:
            exported[lib] = {key[len(str(root / lib)):]: len(points) for key, points in json.load(f).items()}
    # tensorboardX exports what add_scalars logged; mxboard every scalar, with the same keys
    assert {key: exported["mxb"][key] for key in exported["tbx"]} == exported["tbx"]
    assert exported["mxb"]["/data/scalar1"] == 20 and exported["mxb"]["/data/scalar_group/xsinx"] == 20


def test_torch_style_script_default_logdir_float_steps_and_charts(tmp_path, serve):
    printed = _run_script(TORCH_SCRIPT, "mxboard", str(tmp_path)).stdout.split()
    (logdir,) = printed
    assert logdir.startswith("runs" + os.sep) and logdir.endswith("_lr0.1")
    server = serve(tmp_path / "runs")
    run = os.path.basename(logdir)
    server.json("/data/runs", until=lambda runs: run + "/hp" in runs)
    rows = server.json("/data/plugin/scalars/scalars", {"run": run, "tag": "Loss/test"})
    assert [(s, pytest.approx(v)) for _, s, v in rows] == [(int(e * 100), 2.0 / (1 + e)) for e in np.arange(0, 3, 0.5)]
    layout = server.json("/data/plugin/custom_scalars/layout")
    margin = layout["category"][0]["chart"][0]["margin"]["series"]
    assert [(m["value"], m["lower"], m["upper"]) for m in margin] == [("Loss/train", "Loss/test", "Loss/train")]


def test_purge_step_hides_the_crashed_runs_later_steps(tmp_path, serve):
    """A run crashes after step 9 having checkpointed at step 5; the resumed run logs from step 5
    with purge_step=5. TensorBoard's Python loader hides every step >= 5 of before; the fast
    loader drops a tag's later points when the tag is logged again at an earlier step."""
    from tensorboard.backend.event_processing import plugin_event_multiplexer

    logdir = str(tmp_path / "run")
    with SummaryWriter(logdir) as w:
        for step in range(10):
            w.add_scalar("loss", float(step), step)
            w.add_scalar("eval", float(step), step)
    with SummaryWriter(logdir, purge_step=5) as w:
        for step in range(5, 8):
            w.add_scalar("loss", 100.0 + step, step)
        w.add_scalar("eval", 100.0, 12)
    python_loader = plugin_event_multiplexer.EventMultiplexer()
    python_loader.AddRunsFromDirectory(str(tmp_path))
    python_loader.Reload()
    assert [e.step for e in python_loader.Tensors("run", "loss")] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert [e.step for e in python_loader.Tensors("run", "eval")] == [0, 1, 2, 3, 4, 12]
    server = serve(tmp_path)
    served = server.json("/data/plugin/scalars/scalars", {"run": "run", "tag": "loss"},
                         until=lambda rows: rows and rows[-1][1] == 7 and len(rows) == 8)
    assert [(s, v) for _, s, v in served] == [(s, float(s)) for s in range(5)] + [(s, 100.0 + s) for s in range(5, 8)]


def test_purge_step_is_checked():
    with pytest.raises(ValueError, match="purge_step must be >= 0"):
        SummaryWriter(os.devnull + "-never", purge_step=-1)
    with pytest.raises(TypeError, match="purge_step must be a number"):
        SummaryWriter(os.devnull + "-never", purge_step="5")


def test_write_to_disk_false_checks_everything_and_writes_nothing(tmp_path):
    logdir = tmp_path / "never"
    with SummaryWriter(logdir, write_to_disk=False) as w:
        w.add_scalar("x", 1.0, 0)
        w.add_histogram("h", np.arange(10), 0)
        w.add_embedding(np.eye(3), ["a", "b", "c"])
        with pytest.raises(ValueError, match="integer pixels"):
            w.add_image("i", np.full((1, 2, 2), 300))
        w.flush()
        assert w.logdir == w.log_dir == str(logdir)
    assert not logdir.exists()


def test_tensorboardx_and_torchs_constructor_order_and_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(None, "_x") as w:  # tensorboardX's (logdir, comment)
        assert w.logdir.startswith(os.path.join("runs", "")) and w.logdir.endswith("_x")
    with SummaryWriter(log_dir="a", flush_secs=1, filename_suffix=".v1") as w:
        assert w.log_dir == "a"
    assert os.listdir("a")[0].endswith(".v1")
    with SummaryWriter("b", 5, 1) as w:  # mxboard 0.1.0's (logdir, max_queue, flush_secs)
        assert w.logdir == "b"
    with pytest.raises(TypeError, match="'logdir' and 'log_dir'"):
        SummaryWriter("c", log_dir="d")


def test_positional_arguments_that_cannot_mean_mxboards_order(logdir):
    with SummaryWriter(logdir) as w:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            w.add_audio("a", np.zeros(100), 5)  # tensorboardX's order: step 5, no warning
            w.add_audio("a", np.zeros(100), 16000, 6)  # a usual rate: mxboard's order
            w.add_audio("a", np.zeros(100), sample_rate=500)  # a low rate, by keyword, is taken
        with pytest.warns(UserWarning, match="no usual audio rate is read as global_step"):
            w.add_audio("a", np.zeros(100), 1500)
        with pytest.warns(UserWarning, match="lone fourth positional argument is read as global_step"):
            w.add_pr_curve("p", [0, 1], [0.2, 0.8], 10)
        with pytest.warns(UserWarning, match=r"positional \(num_thresholds, global_step\), mxboard 0.1.0's"):
            w.add_pr_curve("p", [0, 1], [0.2, 0.8], 10, 3)
        with pytest.warns(UserWarning, match=r"positional \(global_step, num_thresholds\): the fourth, below 2"):
            w.add_pr_curve("p", [0, 1], [0.2, 0.8], 1, 50)
        with pytest.raises(TypeError, match="'value' and 'scalar_value'"):
            w.add_scalar("x", 1.0, scalar_value=2.0)
        with pytest.raises(TypeError, match="unexpected keyword"):
            w.add_scalar("x", 1.0, colour="red")  # no peer has it


def test_keyword_names_show_in_the_signature():
    import inspect

    assert {"mat", "metadata", "label_img"} <= set(inspect.signature(SummaryWriter.add_embedding).parameters)
    assert "snd_tensor" in inspect.signature(SummaryWriter.add_audio).parameters
    assert {"log_dir", "comment", "purge_step", "write_to_disk"} <= set(inspect.signature(SummaryWriter).parameters)


def test_global_summary_writer_counts_steps_per_tag_across_threads(tmp_path, serve):
    logdir = str(tmp_path / "global")
    writer = GlobalSummaryWriter(logdir)
    turn = threading.Barrier(4)

    def work():
        turn.wait()
        for _ in range(250):
            writer.add_scalar("shared", 1.0)
        writer.add_text("note", "from a thread")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    assert GlobalSummaryWriter.getSummaryWriter() is GlobalSummaryWriter.getSummaryWriter()
    server = serve(tmp_path)
    rows = server.json("/data/plugin/scalars/scalars", {"run": "global", "tag": "shared"},
                       until=lambda rows: len(rows) == 1000)
    assert [s for _, s, _ in rows] == list(range(1000))
    assert [e["step"] for e in server.json("/data/plugin/text/text", {"run": "global", "tag": "note"})] == [0, 1, 2, 3]


def test_onnx_graph_is_drawn(tmp_path, serve):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    weights = helper.make_tensor("W", TensorProto.FLOAT, [4, 2], np.ones(8, np.float32).tolist())
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Relu", ["h"], ["y"]),
         helper.make_node("Softmax", ["y"], ["z"], axis=1)], "net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [None, 2])], [weights])
    path = str(tmp_path / "net.onnx")
    onnx.save(helper.make_model(graph), path)
    with SummaryWriter(str(tmp_path / "onnx")) as w:
        w.add_onnx_graph(path)
    with SummaryWriter(str(tmp_path / "prototxt")) as w:
        w.add_onnx_graph(prototxt=path)  # torch's keyword
    server = serve(tmp_path)
    server.json("/data/runs", until=lambda runs: {"onnx", "prototxt"} <= set(runs))
    _, pbtxt = server.get("/data/plugin/graphs/graph", {"run": "onnx"})
    assert server.get("/data/plugin/graphs/graph", {"run": "prototxt"})[1] == pbtxt
    text = pbtxt.decode()
    for expected in ('name: "x"', 'op: "Placeholder"', 'name: "W"', 'op: "MatMul"', 'input: "h"',
                     'op: "Softmax"', 'key: "axis"'):
        assert expected in text, expected


@pytest.mark.slow
def test_mxboard_010_docstring_example_with_float_steps(logdir):
    """mxboard 0.1.0's own example: `sw.add_scalar('curves', ..., x * 100)` with float x."""
    code = (
        "import numpy as np\nfrom mxboard import SummaryWriter\n"
        "x_vals = np.arange(start=0, stop=2 * np.pi, step=0.01)\n"
        "y_sin, y_cos = np.sin(x_vals), np.cos(x_vals)\n"
        "with SummaryWriter(logdir=%r) as sw:\n"
        "    for x, y in zip(x_vals, y_sin):\n"
        "        sw.add_scalar('curves', {'sin': y, 'cos': np.cos(x)}, x * 100)\n" % logdir)
    run_python(code)
    from conftest import accumulator

    steps = [e.step for e in accumulator(os.path.join(logdir, "curves", "sin")).Scalars("curves")]
    assert steps == [int(x * 100) for x in np.arange(start=0, stop=2 * np.pi, step=0.01)]


def test_reader_tables_hold_what_the_server_serves_for_both_libraries(served):
    """mxboard.reader as tbparse is used: DataFrames of any writer's files, checked against
    what TensorBoard serves."""
    from mxboard import reader

    pytest.importorskip("pandas")  # the tables as DataFrames (mxboard[pandas]); reader.table needs none
    root, server = served
    scalars = reader.scalars(root)
    for run in ("tbx", "mxb", "mxb/data/scalar_group/xsinx"):
        tag = "data/scalar_group" if "/" in run else "data/scalar1"
        rows = server.json("/data/plugin/scalars/scalars", {"run": run, "tag": tag})
        table = scalars[(scalars.run == run) & (scalars.tag == tag)]
        assert list(zip(table.step, table.value)) == [(s, pytest.approx(v, rel=1e-6)) for _, s, v in rows]
    histograms = reader.histograms(root)
    for run in ("tbx", "mxb"):
        served_counts = [sum(b[2] for b in e[2]) for e in server.json(
            "/data/plugin/histograms/histograms", {"run": run, "tag": "hist"})]
        assert [c.sum() for c in histograms[histograms.run == run].counts] == served_counts == [1000, 1000]
    text = reader.text(root)
    assert list(text[text.run == "mxb"].text) == list(text[text.run == "tbx"].text) == [
        "text logged at step:0", "text logged at step:10"]
    hparams = reader.hparams(root).set_index("run")
    assert hparams.loc["mxb/hp"].to_dict() == hparams.loc["tbx/hp"].to_dict() == {"lr": 0.1, "bsize": 1}


def test_export_command_writes_csv_and_json(served, tmp_path):
    import csv

    root, server = served
    out = tmp_path / "scalars.csv"
    run_python("from mxboard.__main__ import main; main(%r)" % (["export", str(root), "--csv", "-o", str(out)],))
    with open(out) as f:
        rows = [r for r in csv.DictReader(f) if r["run"] == "mxb" and r["tag"] == "data/scalar2"]
    served_rows = server.json("/data/plugin/scalars/scalars", {"run": "mxb", "tag": "data/scalar2"})
    assert [(int(r["step"]), float(r["value"])) for r in rows] == [(s, v) for _, s, v in served_rows]
    printed = subprocess.run([sys.executable, "-m", "mxboard", "export", str(root), "--json", "--kind", "hparams"],
                             env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")), capture_output=True,
                             text=True, timeout=120, check=True).stdout
    assert sorted((r["run"], r["lr"]) for r in json.loads(printed)) == [("mxb/hp", 0.1), ("tbx/hp", 0.1)]
    usage = subprocess.run([sys.executable, "-m", "mxboard", "export", str(root)], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")), timeout=120)
    assert usage.returncode == 2 and "--csv" in usage.stderr


def _peer_calls(module, logdir):
    """The same calls, as tensorboardX users write them, with `module`'s SummaryWriter."""
    rng = np.random.default_rng(0)
    writer = module.SummaryWriter(logdir)
    writer.add_scalar("epoch0", 1.5, 0, walltime=0)  # walltime 0: tensorboardX and torch take it
    writer.add_images("list", [rng.random((3, 8, 8)) for _ in range(4)], 2, dataformats="CHW")
    counts = [[5, 4, 3, 2, 1], [5, 3, 2, 1, 0], [0, 2, 3, 4, 5], [0, 1, 2, 3, 4],
              [0.5, 0.57, 0.6, 0.67, 1.0], [1.0, 0.8, 0.6, 0.4, 0.2]]
    writer.add_pr_curve_raw("raw", *counts, global_step=3)  # no num_thresholds: 5, from the data
    labels, predictions = rng.integers(2, size=50), rng.random(50)
    with writer.use_metadata(global_step=5, walltime=1000.0):  # tensorboardX's defaults for the calls within
        writer.add_scalar("defaulted", 3.0)
        writer.add_histogram("defaulted_h", np.arange(10.0))
    writer.add_scalar("defaulted", 4.0, 6)
    writer.add_pr_curve("pr_thresholds", labels, predictions, num_thresholds=10)  # mxboard 0.1.0's reading
    writer.add_pr_curve("pr_step", labels, predictions, global_step=10)  # tensorboardX's and torch's reading
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mxboard says which reading it took
        writer.add_pr_curve("pr_positional", labels, predictions, 10)  # tensorboardX's demo: the step
    writer.close()


def _reopen_calls(module, logdir):
    """Logging after close(): the next call reopens the writer, with a new event file."""
    writer = module.SummaryWriter(logdir)
    writer.add_scalar("before_close", 1.5, 0)
    writer.close()
    writer.add_scalar("after_close", 2.5, 4)
    writer.add_histogram("after_close_h", np.arange(10.0), 4)
    writer.close()


def _bfloat16_calls(writer_class, logdir):
    """torch tensors of a dtype numpy lacks, which torch's writer takes (tensorboardX does not)."""
    import torch

    writer = writer_class(logdir)
    writer.add_scalar("bf16", torch.tensor(0.25, dtype=torch.bfloat16), 1)
    writer.add_histogram("bf16h", torch.arange(8, dtype=torch.bfloat16), 1)
    writer.close()


@pytest.mark.slow
def test_calls_tensorboardx_and_torch_take_are_served_like_theirs(tmp_path, serve):
    """walltime=0, add_images of a list of CHW images, add_pr_curve_raw without num_thresholds,
    use_metadata, both readings of add_pr_curve and calls after close() (run by tensorboardX and
    by mxboard), torch bfloat16 tensors (run by torch's
    writer and by mxboard): served alike."""
    tensorboardx = pytest.importorskip("tensorboardX")
    pytest.importorskip("torch")
    from torch.utils import tensorboard as torch_tensorboard

    import mxboard

    _peer_calls(tensorboardx, str(tmp_path / "tbx"))
    _peer_calls(mxboard, str(tmp_path / "mxb"))
    _reopen_calls(tensorboardx, str(tmp_path / "tbx_reopened"))
    _reopen_calls(mxboard, str(tmp_path / "mxb_reopened"))
    _bfloat16_calls(torch_tensorboard.SummaryWriter, str(tmp_path / "torch"))
    _bfloat16_calls(mxboard.SummaryWriter, str(tmp_path / "mxb16"))
    server = serve(tmp_path)
    server.json("/data/runs", until=lambda runs: {"tbx", "mxb", "torch", "mxb16", "mxb_reopened"} <= set(runs))

    def both(plugin, tag, runs=("tbx", "mxb")):
        return [server.json("/data/plugin/%s/%s" % (plugin, plugin), {"run": run, "tag": tag}, until=bool)
                for run in runs]

    peer, ours = both("scalars", "epoch0")
    assert peer == ours == [[0.0, 0, 1.5]]
    reopened = ("tbx_reopened", "mxb_reopened")
    peer, ours = both("scalars", "after_close", reopened)
    assert [p[1:] for p in peer] == [o[1:] for o in ours] == [[4, 2.5]]
    peer, ours = both("histograms", "after_close_h", reopened)
    assert sum(b[2] for b in peer[0][2]) == sum(b[2] for b in ours[0][2]) == 10
    # mxboard's reopened file has a name of its own; tensorboardX's, reopened within the same
    # second, has its first file's name and replaces it
    assert [o[1:] for o in both("scalars", "before_close", ["mxb_reopened"])[0]] == [[0, 1.5]]
    peer, ours = both("scalars", "bf16", ("torch", "mxb16"))
    assert [p[1:] for p in peer] == [o[1:] for o in ours] == [[1, 0.25]]
    peer, ours = both("histograms", "bf16h", ("torch", "mxb16"))
    assert sum(b[2] for b in peer[0][2]) == sum(b[2] for b in ours[0][2]) == 8
    images = both("images", "list")
    sizes = [Image.open(io.BytesIO(server.get("/data/plugin/images/individualImage?" + e[0]["query"])[1])).size
             for e in images]
    # a grid of the four 8x8 images, not one (mxboard pads it by 2 px, as docs/compat.md says)
    assert sizes[0] == (32, 8) and sizes[1] == (4 * 8 + 5 * 2, 8 + 2 * 2), sizes
    peer, ours = both("pr_curves", "raw")
    pick = lambda entries: [(e["step"], e["precision"], e["recall"], e["true_positives"])  # noqa: E731
                            for e in entries]
    # 5 thresholds, taken from the data
    assert pick(peer["tbx"]) == pick(ours["mxb"]) and len(pick(ours["mxb"])[0][1]) == 5
    peer, ours = both("scalars", "defaulted")
    assert [p[1:] for p in peer] == [p[1:] for p in ours] == [[5, 3.0], [6, 4.0]]
    assert peer[0][0] == ours[0][0] == 1000.0 and ours[1][0] > 1000.0
    peer, ours = both("histograms", "defaulted_h")
    assert [p[:2] for p in peer] == [p[:2] for p in ours] == [[1000.0, 5]]
    lengths = {}
    for tag, step in (("pr_thresholds", 0), ("pr_step", 10), ("pr_positional", 10)):
        peer, ours = both("pr_curves", tag)
        assert pick(peer["tbx"]) == pick(ours["mxb"]) and [e[0] for e in pick(ours["mxb"])] == [step]
        lengths[tag] = len(pick(ours["mxb"])[0][1])
    assert lengths["pr_thresholds"] < lengths["pr_step"] == lengths["pr_positional"]  # 10 thresholds, 127


@pytest.mark.slow
def test_tensorboardx_and_torchs_other_names_work_or_say_why(tmp_path, serve):
    """tensorboardX's display_name, summary_description, max_bins, add_video(dataformats=) and
    comet_config, torch's add_tensor; add_openvino_graph says why it cannot."""
    tensorboardx = pytest.importorskip("tensorboardX")
    from tensorboard.util import tensor_util

    import mxboard
    from conftest import accumulator

    values = np.random.default_rng(0).normal(size=1000)
    for module, run in ((tensorboardx, "tbx"), (mxboard, "mxb")):
        with module.SummaryWriter(str(tmp_path / run), comet_config={"disabled": True}) as w:
            w.add_scalar("described", 0.5, 1, display_name="The loss", summary_description="lower is better")
            w.add_histogram("capped", values, 1, bins="tensorflow", max_bins=10)
    with mxboard.SummaryWriter(str(tmp_path / "mxb2")) as w:
        w.add_video("clip", np.random.default_rng(1).random((1, 3, 8, 6, 3)), 0, dataformats="NTHWC")
        w.add_tensor("table", np.arange(6, dtype=np.int64).reshape(2, 3), 4)
        with pytest.raises(NotImplementedError, match="add_onnx_graph"):
            w.add_openvino_graph("model.xml")
    with pytest.raises(ValueError, match="not to Comet"):
        mxboard.SummaryWriter(str(tmp_path / "comet"), comet_config={"api_key": "k"})
    server = serve(tmp_path)
    server.json("/data/runs", until=lambda runs: {"tbx", "mxb", "mxb2"} <= set(runs))
    tags = server.json("/data/plugin/scalars/tags", until=lambda t: "described" in t.get("mxb", {}))
    assert tags["mxb"]["described"] == tags["tbx"]["described"]  # served alike (the fast loader drops both)
    written = [accumulator(tmp_path / run).SummaryMetadata("described") for run in ("tbx", "mxb")]
    assert [(m.display_name, m.summary_description) for m in written] == [("The loss", "lower is better")] * 2
    peer, ours = (server.json("/data/plugin/histograms/histograms", {"run": run, "tag": "capped"}, until=bool)
                  for run in ("tbx", "mxb"))
    for served in (peer, ours):
        assert 1 <= len(served[0][2]) <= 10 and sum(b[2] for b in served[0][2]) == 1000
    clip = server.json("/data/plugin/images/images", {"run": "mxb2", "tag": "clip"}, until=bool)
    gif = Image.open(io.BytesIO(server.get("/data/plugin/images/individualImage?" + clip[0]["query"])[1]))
    assert (gif.size, gif.n_frames) == ((6, 8), 3)  # W x H (one video: no border, as tensorboardX), T frames
    (event,) = accumulator(tmp_path / "mxb2").Tensors("table")  # TensorBoard's loader keeps it
    assert event.step == 4 and tensor_util.make_ndarray(event.tensor_proto).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_add_summary_writes_a_summary_as_the_peers_file_writer_does(tmp_path):
    """`SummaryWriter.add_summary` is the peers' `FileWriter.add_summary`: a Summary of mxboard's,
    tensorboardX's or TensorBoard's protos is written in an event of its own, at its step and
    walltime, copied at the call, and TensorBoard's loader reads what tensorboardX's writer
    wrote for the same call. Bytes, other messages and values without a tag are refused at the
    call, naming the argument, and write nothing."""
    tensorboardx = pytest.importorskip("tensorboardX")
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.util import tensor_util
    from tensorboardX import summary as tensorboardx_summary

    from conftest import accumulator
    from mxboard.proto import DataType, Event, Summary, SummaryMetadata, TensorProto, TensorShapeProto

    with tensorboardx.SummaryWriter(str(tmp_path / "tbx")) as w:
        w.file_writer.add_summary(tensorboardx_summary.scalar("loss", 0.5), 3, 100.0)
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)])
    ours = Summary(value=[Summary.Value(tag="plugin", tensor=TensorProto(dtype=DataType.DT_FLOAT, tensor_shape=shape,
                                                                         float_val=[2.5]),
                                        metadata=SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
                                            plugin_name="mine", content=b"v1")))])
    with SummaryWriter(str(tmp_path / "mxb")) as w:
        w.add_summary(tensorboardx_summary.scalar("loss", 0.5), 3, 100.0)
        w.add_summary(ours, global_step=4.0, walltime=101)
        ours.value[0].tensor.float_val[0] = 9.0  # after the call: not what is written
        w.add_summary(summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="torch", simple_value=1.5)]))
        for bad, error, message in (
                (ours.SerializeToString(), TypeError, r"summary must be a Summary protocol buffer .*got bytes: parse "
                                                      r"serialized bytes first, with mxboard.proto.Summary.FromString"),
                (Event(), TypeError, r"summary must be a Summary protocol buffer .*got mxboard.Event$"),
                ({"loss": 0.5}, TypeError, r"summary must be a Summary protocol buffer .*got dict$"),
                (Summary(value=[Summary.Value(tag="a", simple_value=1), Summary.Value(simple_value=2)]), ValueError,
                 r"summary.value\[1\] has no tag")):
            with pytest.raises(error, match=message):
                w.add_summary(bad, 5)
        with pytest.raises(ValueError, match="walltime must be finite"):
            w.add_summary(ours, 5, float("nan"))
    theirs, mine = accumulator(tmp_path / "tbx"), accumulator(tmp_path / "mxb")
    assert [(e.step, e.wall_time, e.value) for e in mine.Scalars("loss")] == \
        [(e.step, e.wall_time, e.value) for e in theirs.Scalars("loss")] == [(3, 100.0, 0.5)]
    (plugin,) = mine.Tensors("plugin")
    assert (plugin.step, plugin.wall_time, tensor_util.make_ndarray(plugin.tensor_proto).tolist()) == (4, 101.0, [2.5])
    assert mine.SummaryMetadata("plugin").plugin_data.content == b"v1"
    assert [(e.step, e.value) for e in mine.Scalars("torch")] == [(0, 1.5)]
    assert sorted(mine.Tags()["scalars"] + mine.Tags()["tensors"]) == ["loss", "plugin", "torch"]


def _runs_scalars(logdir):
    """{run: [(tag, step, value), ...]} of every run under `logdir` (its own files: ".")."""
    found = {}
    for folder, _, names in os.walk(logdir):
        for name in sorted(n for n in names if "tfevents" in n):
            found.setdefault(os.path.relpath(folder, logdir), []).extend(tb_scalars(os.path.join(folder, name)))
    return {run: scalars for run, scalars in found.items() if scalars}


def test_add_event_writes_an_event_as_the_peers_file_writer_does(tmp_path):
    """`SummaryWriter.add_event` is the peers' `FileWriter.add_event` (tensorboardX's and torch's),
    and the stand-ins' `file_writer.add_event` is it: an Event of any of the protos written as it
    is, at its own step unless one is given, at the walltime given; a file-version event is left
    out (the file has one). Anything but an Event is refused at the call, naming the argument."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from conftest import tb_events
    from mxboard._patch.stand_ins import TensorboardXSummaryWriter
    from mxboard.proto import Event, GraphDef, NodeDef, Summary

    def calls(add_event):
        def loss(value):
            return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="loss", simple_value=value)])

        add_event(event_pb2.Event(step=3, summary=loss(0.5)), walltime=100.0)
        add_event(event_pb2.Event(step=3, summary=loss(0.25)), 7, 101.0)
        add_event(Event(step=9, summary=Summary(value=[Summary.Value(tag="loss", simple_value=2.0)])), walltime=102.0)

    with SummaryWriter(str(tmp_path / "mxb")) as w:
        calls(w.add_event)
        w.add_event(Event(file_version="brain.Event:2"))
        refused = [(Event().SerializeToString(), r"got bytes: parse serialized bytes first, with "
                                                 r"mxboard.proto.Event.FromString\(data\)$"),
                   (Summary(), r"got mxboard.Summary$"), (summary_pb2.Summary(), r"got tensorboard.Summary$")]
        for bad, message in refused:
            with pytest.raises(TypeError, match=r"event must be an Event protocol buffer .*" + message):
                w.add_event(bad)
    with TensorboardXSummaryWriter(str(tmp_path / "stand_in")) as w:
        calls(w.file_writer.add_event)
        # The peers' (GraphDef, RunMetadata) pair: the graph, in an event of its own (through add_event).
        w.file_writer.add_graph((GraphDef(node=[NodeDef(name="x", op="Placeholder")]), None))
    # As tensorboardX's FileWriter.add_event writes them: the step given replaces the event's own.
    expected = {".": [("loss", 3, 0.5), ("loss", 7, 0.25), ("loss", 9, 2.0)]}
    assert _runs_scalars(tmp_path / "mxb") == _runs_scalars(tmp_path / "stand_in") == expected
    (written,) = event_files(str(tmp_path / "mxb"))
    assert [e.wall_time for e in tb_events(written) if e.HasField("summary")] == [100.0, 101.0, 102.0]
    assert sum(e.HasField("file_version") for e in tb_events(written)) == 1
    (graph,) = [e for path in event_files(str(tmp_path / "stand_in")) for e in tb_events(path) if e.graph_def]
    assert GraphDef.FromString(graph.graph_def).node[0].name == "x" and graph.step == 0


def test_add_scalars_writes_torchs_runs_with_runs_torch_as_the_torch_stand_in_does(tmp_path):
    """`add_scalars(..., runs="torch")` writes torch's runs, `<main_tag>_<name>` (a `/` written
    `_`), each under the tag `main_tag`, as torch's own writer does; torch's stand-in is that call.
    The default is tensorboardX's `<main_tag>/<name>`; a bad `runs` or `main_tag` is refused."""
    # The plain environments have no torch.
    pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from mxboard._patch.stand_ins import TorchSummaryWriter

    def calls(w):
        w.add_scalars("run/pair", {"a": 1.0, "b": np.float32(2.0)}, 3)
        w.add_scalars("run/pair", {"a": 1.5, "c": -1}, 4)
        w.add_scalars("loss", {"train": 0.5}, 4)

    torch_writer = TorchWriter(str(tmp_path / "torch"))
    calls(torch_writer)
    torch_writer.close()
    with TorchSummaryWriter(str(tmp_path / "stand_in")) as w:
        calls(w)
        w.add_scalars("loss", {}, 5)  # nothing, as torch's
    with TorchSummaryWriter(str(tmp_path / "nan")) as w:
        # Logged as given, and said once, naming the run.
        with pytest.warns(RuntimeWarning, match=r"add_scalar\('run/pair \(run_pair_a\)'\): nan at step 5, logged"):
            w.add_scalars("run/pair", {"a": float("nan"), "b": 1.0}, 5)
            w.add_scalars("run/pair", {"a": float("nan"), "b": 1.0}, 6)
        # A name that is not a str is written with %s, into the run of its str (one file).
        w.add_scalars("n", {0: 2.5}, 5)
        w.add_scalars("n", {"0": 3.5}, 6)
    written = _runs_scalars(tmp_path / "nan")
    assert sorted((run, step) for run in ("run_pair_a", "run_pair_b") for _, step, _ in written[run]) == [
        ("run_pair_a", 5), ("run_pair_a", 6), ("run_pair_b", 5), ("run_pair_b", 6)]
    assert written["n_0"] == [("n", 5, 2.5), ("n", 6, 3.5)] and len(event_files(str(tmp_path / "nan" / "n_0"))) == 1
    with SummaryWriter(str(tmp_path / "mxb")) as w:
        w.add_scalars("run/pair", {"a": 1.0, "b": np.float32(2.0)}, 3, runs="torch")
        w.add_scalars("run/pair", {"a": 1.5, "c": -1}, 4, runs="torch")
        w.add_scalars("loss", {"train": 0.5}, 4, runs="torch")
        w.add_scalars("loss", {"train": 0.25}, 5)  # tensorboardX's runs: loss/train
        with pytest.raises(ValueError, match=r"^runs must be 'tensorboardx' or 'torch'; got 'keras'$"):
            w.add_scalars("loss", {"train": 0.5}, runs="keras")
        with pytest.raises(TypeError, match=r"^main_tag must be a str; got int 5$"):
            w.add_scalars(5, {"train": 0.5}, runs="torch")
        with pytest.raises(TypeError, match=r"^tag_scalar_dict\['a'\] must be a number"):
            w.add_scalars("x", {"a": "b"}, runs="torch")
        with pytest.raises(ValueError, match=r"the dict of named scalars for 'loss' is empty"):
            w.add_scalars("loss", {}, 6)
    theirs = _runs_scalars(tmp_path / "torch")
    assert theirs == {"run_pair_a": [("run/pair", 3, 1.0), ("run/pair", 4, 1.5)], "run_pair_b": [("run/pair", 3, 2.0)],
                      "run_pair_c": [("run/pair", 4, -1.0)], "loss_train": [("loss", 4, 0.5)]}
    assert _runs_scalars(tmp_path / "stand_in") == theirs
    assert _runs_scalars(tmp_path / "mxb") == dict(theirs, **{os.path.join("loss", "train"): [("loss", 5, 0.25)]})


@pytest.mark.slow
def test_every_layout_call_of_a_writer_is_shown(tmp_path, serve):
    """A multiline chart, then a margin chart, then a layout of its own: TensorBoard shows a
    run's last layout, so tensorboardX's run shows its last call's chart only; mxboard merges a
    writer's layout calls, and shows them all (a chart given again replaces its namesake)."""
    tensorboardx = pytest.importorskip("tensorboardX")
    import mxboard

    for module, run in ((tensorboardx, "tbx"), (mxboard, "mxb")):
        with module.SummaryWriter(str(tmp_path / run / "run")) as writer:
            writer.add_scalar("loss", 1.0, 0)
            writer.add_custom_scalars_multilinechart(["loss", "acc"], category="c", title="lines")
            writer.add_custom_scalars_marginchart(["loss", "lo", "hi"], category="c", title="band")
            writer.add_custom_scalars({"d": {"alone": ["Multiline", ["loss"]]},
                                       "c": {"lines": ["Multiline", ["loss"]]}})
    charts = {}
    for run in ("tbx", "mxb"):  # the layout route merges every run's: one server a logdir
        server = serve(tmp_path / run)
        layout = server.json("/data/plugin/custom_scalars/layout", until=lambda layout: layout.get("category"))
        charts[run] = {(cat["title"], c["title"]): c for cat in layout["category"] for c in cat["chart"]}
    assert sorted(charts["tbx"]) == [("c", "lines"), ("d", "alone")]
    assert sorted(charts["mxb"]) == [("c", "band"), ("c", "lines"), ("d", "alone")]
    assert charts["mxb"][("c", "lines")] == charts["tbx"][("c", "lines")]  # replaced by the last call


@pytest.mark.slow
def test_a_torch_module_is_drawn_as_torchs_writer_draws_it(tmp_path, serve):
    """add_graph(model, input_to_model): torch's own tracer, the same GraphDef served."""
    torch = pytest.importorskip("torch")
    from torch.utils import tensorboard as torch_tensorboard

    import mxboard

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 2))
    example = torch.rand(1, 3, 8, 8)
    for module, run in ((torch_tensorboard, "torch"), (mxboard, "mxb")):
        writer = module.SummaryWriter(str(tmp_path / run))
        writer.add_graph(model, example)
        writer.close()
    with mxboard.SummaryWriter(str(tmp_path / "mxb_keywords")) as writer:
        writer.add_graph(model=model, input_to_model=(example,))
        with pytest.raises(ValueError, match="needs input_to_model"):
            writer.add_graph(model)
    server = serve(tmp_path)
    server.json("/data/runs", until=lambda runs: {"torch", "mxb", "mxb_keywords"} <= set(runs))
    graphs = {run: server.get("/data/plugin/graphs/graph", {"run": run})[1].decode()
              for run in ("torch", "mxb", "mxb_keywords")}
    assert graphs["mxb"] == graphs["torch"] == graphs["mxb_keywords"]
    for expected in ('op: "aten::_convolution"', 'op: "aten::relu"', 'op: "aten::linear"'):
        assert expected in graphs["mxb"], expected


@pytest.mark.slow
def test_tensorboardx_own_demo_runs_unchanged_and_is_served_like_tensorboardxs(tmp_path, serve):
    pytest.importorskip("tensorboardX")
    pytest.importorskip("torch")
    _run_script(TENSORBOARDX_DEMO, "peer", str(tmp_path), str(tmp_path / "tbx"))
    ours = _run_script(TENSORBOARDX_DEMO, "mxboard", str(tmp_path), str(tmp_path / "mxb"))
    assert "Traceback" not in ours.stderr
    server = serve(tmp_path)
    server.json("/data/runs", until=lambda runs: {"tbx", "mxb"} <= set(runs))
    for plugin in ("scalars", "images", "audio", "histograms", "text", "pr_curves"):
        tags = server.json("/data/plugin/%s/tags" % plugin, until=lambda t: t.get("mxb") and t.get("tbx"))
        peer = {t.replace("/text_summary", "") for t in tags["tbx"]}
        # tensorboardX writes videos only with moviepy installed (else it says so and writes none)
        videos = {"video", "video_1_fps"} if plugin == "images" else set()
        assert peer - videos == set(tags["mxb"]) - videos and videos <= set(tags["mxb"]), plugin
    for tag in ("data/scalar_systemtime", "data/scalar_customtime"):
        peer, ours = (server.json("/data/plugin/scalars/scalars", {"run": run, "tag": tag}) for run in ("tbx", "mxb"))
        assert [s for _, s, _ in ours] == [s for _, s, _ in peer] == list(range(100))
    peer, ours = (server.json("/data/plugin/scalars/scalars", {"run": run, "tag": "data/scalar_customtime"})
                  for run in ("tbx", "mxb"))
    assert [w for w, _, _ in ours] == [w for w, _, _ in peer] == list(range(100))  # walltime=n_iter
    for plugin, tag in (("pr_curves", "xoxo"), ("pr_curves", "prcurve with raw data")):
        peer, ours = (server.json("/data/plugin/%s/%s" % (plugin, plugin), {"run": run, "tag": tag})[run]
                      for run in ("tbx", "mxb"))
        assert [e["step"] for e in ours] == [e["step"] for e in peer] == list(range(0, 100, 10)), tag
    for plugin, tag in (("images", "Image"), ("images", "imagebox"), ("audio", "myAudio")):
        peer, ours = (server.json("/data/plugin/%s/%s" % (plugin, "audio" if plugin == "audio" else "images"),
                                  {"run": run, "tag": tag}) for run in ("tbx", "mxb"))
        assert [e["step"] for e in ours] == [e["step"] for e in peer], tag
    peer, ours = (server.json("/data/plugin/histograms/histograms", {"run": run, "tag": "conv1.weight"})
                  for run in ("tbx", "mxb"))
    assert [e[1] for e in ours] == [e[1] for e in peer] == list(range(0, 100, 10))
    assert [sum(b[2] for b in e[2]) for e in ours] == [sum(b[2] for b in e[2]) for e in peer]
    projector = {run: server.json("/data/plugin/projector/info", {"run": run}) for run in ("tbx", "mxb")}
    assert len(projector["mxb"]["embeddings"]) == len(projector["tbx"]["embeddings"]) == 3
    assert json.loads((tmp_path / "mxb" / "all_scalars.json").read_text())


@pytest.mark.slow
def test_histograms_are_histograms_to_every_reader(tmp_path, serve):
    """Written in the `histo` form, as tensorboardX and torch write theirs: EventAccumulator's Histograms()
    (what tbparse reads) gives mxboard's as tensorboardX's, raw ones field for field, and the
    fast loader serves both alike."""
    tensorboardx = pytest.importorskip("tensorboardX")
    import mxboard
    from conftest import accumulator

    values = np.random.default_rng(0).normal(size=10_000).astype(np.float32)
    raw = dict(min=0.0, max=3.0, num=6, sum=9.0, sum_squares=17.0, bucket_limits=[1.0, 2.0, 3.0],
               bucket_counts=[1, 2, 3])
    for module, run in ((tensorboardx, "tbx"), (mxboard, "mxb")):
        with module.SummaryWriter(str(tmp_path / run)) as w:
            w.add_histogram("h", values, 1, bins="tensorflow")
            w.add_histogram_raw("raw", global_step=2, **raw)
    peer, ours = (accumulator(tmp_path / run) for run in ("tbx", "mxb"))
    (p,), (o,) = peer.Histograms("h"), ours.Histograms("h")
    assert (o.step, o.histogram_value.num, o.histogram_value.min, o.histogram_value.max) == (
        p.step, p.histogram_value.num, p.histogram_value.min, p.histogram_value.max) == (
        1, 10_000, float(values.min()), float(values.max()))
    assert o.histogram_value.sum == pytest.approx(float(values.astype(np.float64).sum()), abs=1e-3)
    assert o.histogram_value.sum_squares == pytest.approx(p.histogram_value.sum_squares, rel=1e-5)
    (p,), (o,) = peer.Histograms("raw"), ours.Histograms("raw")
    assert o.histogram_value == p.histogram_value
    server = serve(tmp_path)
    served = [server.json("/data/plugin/histograms/histograms", {"run": run, "tag": "raw"}, until=bool)
              for run in ("tbx", "mxb")]
    assert served[0][0][1:] == served[1][0][1:]


def test_compat_md_names_the_tag_cleaning_and_its_recipe_gives_the_old_names(logdir):
    """mxboard 0.1.0 and tensorboardX replace characters in tags with `_`; mxboard keeps tags as
    given (as torch does). docs/compat.md says so, and its recipe gives tensorboardX's names."""
    import re

    tbx_summary = pytest.importorskip("tensorboardX.summary")
    with open(os.path.join(ROOT, "docs", "compat.md")) as f:
        text = f.read()
    assert "`train loss` becomes `train_loss`" in text
    recipe = re.search(r"```python\n(import re\n\ndef clean_tag.*?)\n\nwriter", text, re.S).group(1)
    namespace = {}
    exec(recipe, namespace)
    for tag in ("train loss", "/a/b c", "ok/tag-1.5", "é ü", "x%y(z)", "//lead"):
        assert namespace["clean_tag"](tag) == tbx_summary._clean_tag(tag)
    with SummaryWriter(logdir) as w:
        w.add_scalar("train loss", 1.0, 0)
        w.add_scalar(namespace["clean_tag"]("train loss"), 1.0, 0)
    assert sorted({t for t, _, _ in tb_scalars(event_files(logdir)[0])}) == ["train loss", "train_loss"]
