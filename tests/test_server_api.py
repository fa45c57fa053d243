"""What a running TensorBoard serves of what mxboard wrote: every dashboard's HTTP API."""
import io
import urllib.parse
import wave

import numpy as np
import pytest
from PIL import Image

from mxboard import SummaryWriter

pytestmark = pytest.mark.plain  # every dashboard over HTTP, on numpy 2 too (make test-plain)


@pytest.fixture(scope="module", params=["fast", "python"])
def server(request, tmp_path_factory):
    """A TensorBoard over one logdir of every kind, with each of its loaders: the fast data
    server (Rust) and the Python one."""
    from conftest import Server

    logdir = tmp_path_factory.mktemp("served")
    with SummaryWriter(str(logdir)) as w:
        for step in range(5):
            w.add_scalar("loss", 1.0 / (step + 1), step)
            w.add_histogram("weights", np.random.default_rng(step).normal(size=1000), step)
        w.add_scalar("acc", {"train": 0.9, "val": 0.8}, 4)
        w.add_image("digits", np.random.default_rng(0).random((4, 1, 8, 8)), 4)
        w.add_audio("tone", np.sin(np.arange(16000) / 5.0) * 0.5, sample_rate=16000, global_step=4)
        w.add_text("config", "lr: **0.1**", 4)
        w.add_pr_curve("pr/class0", np.arange(100) % 2, np.linspace(0, 1, 100), num_thresholds=200, global_step=4)
        w.add_mesh("cloud", np.random.default_rng(1).random((10, 3)), global_step=4)
        w.add_custom_scalars({"Train vs val": {"accuracy": ["Multiline", ["acc"]]}})
        w.add_embedding("features", np.random.default_rng(2).random((6, 3)), labels=list("abcdef"))
        w.add_hparams({"lr": 0.1, "optimizer": "sgd", "batch_norm": True}, {"hparam/accuracy": 0.93},
                      run_name="hp-run")
    instance = Server(logdir, "--load_fast", "true" if request.param == "fast" else "false")
    yield instance
    instance.close()


def _wait_for_run(server, run):
    return server.json("/data/runs", until=lambda runs: run in runs)


def test_scalars_and_sub_runs(server):
    assert {".", "acc/train", "acc/val", "hp-run"} <= set(_wait_for_run(server, "hp-run"))
    rows = server.json("/data/plugin/scalars/scalars", {"run": ".", "tag": "loss"})
    assert [(step, value) for _, step, value in rows] == [(s, pytest.approx(1.0 / (s + 1))) for s in range(5)]
    val = server.json("/data/plugin/scalars/scalars", {"run": "acc/val", "tag": "acc"})
    assert [(s, v) for _, s, v in val] == [(4, pytest.approx(0.8))]


def test_histograms_are_served_at_every_step_with_every_count(server):
    _wait_for_run(server, ".")
    data = server.json("/data/plugin/histograms/histograms", {"run": ".", "tag": "weights"})
    assert [entry[1] for entry in data] == list(range(5))
    assert all(sum(bucket[2] for bucket in entry[2]) == 1000 for entry in data)


def test_images_served_as_png_with_their_size(server):
    _wait_for_run(server, ".")
    entries = server.json("/data/plugin/images/images", {"run": ".", "tag": "digits"})
    assert entries[0]["step"] == 4
    content_type, data = server.get("/data/plugin/images/individualImage?" + entries[0]["query"])
    assert content_type == "image/png" and Image.open(io.BytesIO(data)).size == (42, 12)


def test_audio_served_as_wav(server):
    _wait_for_run(server, ".")
    entries = server.json("/data/plugin/audio/audio", {"run": ".", "tag": "tone"})
    content_type, data = server.get("/data/plugin/audio/individualAudio?" + entries[0]["query"])
    assert content_type == "audio/wav"
    with wave.open(io.BytesIO(data)) as wav:
        assert (wav.getframerate(), wav.getnframes(), wav.getnchannels()) == (16000, 16000, 1)


def test_text_rendered(server):
    _wait_for_run(server, ".")
    data = server.json("/data/plugin/text/text", {"run": ".", "tag": "config"})
    assert data[0]["step"] == 4 and "<strong>0.1</strong>" in data[0]["text"]


def test_pr_curves(server):
    _wait_for_run(server, ".")
    data = server.json("/data/plugin/pr_curves/pr_curves", {"run": ".", "tag": "pr/class0"})
    entry = data["."][0]
    assert entry["step"] == 4 and len(entry["precision"]) == 200 and entry["true_positives"][0] == 50


def test_mesh_and_custom_scalars(server):
    _wait_for_run(server, ".")
    tags = server.json("/data/plugin/mesh/tags", until=bool)
    assert tags["."]["cloud"] == {"samples": 1}
    layout = server.json("/data/plugin/custom_scalars/layout")
    assert layout["category"][0]["chart"][0]["multiline"]["tag"] == ["acc"]


def test_projector(server):
    runs = server.json("/data/plugin/projector/runs", until=lambda runs: "." in runs)
    assert "." in runs
    info = server.json("/data/plugin/projector/info", {"run": "."})
    (embedding,) = info["embeddings"]
    assert embedding["tensorName"] == "features" and embedding["tensorShape"] == [6, 3]
    _, tensor = server.get("/data/plugin/projector/tensor?" + urllib.parse.urlencode(
        {"run": ".", "name": "features"}))
    assert np.frombuffer(tensor, "<f4").shape == (18,)
    _, metadata = server.get("/data/plugin/projector/metadata?" + urllib.parse.urlencode(
        {"run": ".", "name": "features"}))
    assert metadata.decode().split() == list("abcdef")


def test_hparams_dashboard_shows_the_session_with_its_metric(server):
    _wait_for_run(server, "hp-run")
    experiment = server.post_json("/data/plugin/hparams/experiment", {"experimentName": ""})
    names = {h["name"]: h["type"] for h in experiment["hparamInfos"]}
    assert names == {"lr": "DATA_TYPE_FLOAT64", "optimizer": "DATA_TYPE_STRING", "batch_norm": "DATA_TYPE_BOOL"}
    assert [m["name"]["tag"] for m in experiment["metricInfos"]] == ["hparam/accuracy"]
    groups = server.post_json("/data/plugin/hparams/session_groups", {
        "experimentName": "", "allowedStatuses": ["STATUS_SUCCESS", "STATUS_UNKNOWN"],
        "colParams": [{"hparam": "lr"}, {"metric": {"tag": "hparam/accuracy"}}],
        "startIndex": 0, "sliceSize": 10})
    (group,) = groups["sessionGroups"]
    assert group["hparams"] == {"lr": 0.1, "optimizer": "sgd", "batch_norm": True}
    assert group["metricValues"][0]["value"] == pytest.approx(0.93)


@pytest.mark.slow
def test_hparams_into_the_run_are_one_row_with_the_runs_own_metric(tmp_path, serve):
    """add_hparams(..., in_run=True): the hparams go into the writer's own run, so the HParams
    dashboard shows each run once, its own validation loss beside its hparams (tensorboardX's and torch's way
    makes a second, time-named run per call, and the curves and the hparams are two rows)."""
    for run, lr in (("a", 0.1), ("b", 0.01)):
        with SummaryWriter(str(tmp_path / run)) as writer:
            for step in range(3):
                writer.add_scalar("loss/validation", lr * 10 + step, step)
            writer.add_hparams({"lr": lr, "optimizer": "adam"}, {"loss/validation": None, "accuracy": 0.5},
                               in_run=True, global_step=2)
    server = serve(tmp_path)
    assert sorted(server.json("/data/runs", until=lambda runs: len(runs) == 2)) == ["a", "b"]
    groups = server.post_json("/data/plugin/hparams/session_groups", {
        "experimentName": "", "allowedStatuses": ["STATUS_SUCCESS", "STATUS_UNKNOWN"],
        "colParams": [{"hparam": "lr"}, {"metric": {"tag": "loss/validation"}}, {"metric": {"tag": "accuracy"}}],
        "startIndex": 0, "sliceSize": 10})["sessionGroups"]
    rows = sorted((g["sessions"][0]["name"], g["hparams"]["lr"],
                   {m["name"]["tag"]: m["value"] for m in g["metricValues"]}) for g in groups)
    assert rows == [("a", 0.1, {"loss/validation": pytest.approx(3.0), "accuracy": 0.5}),
                    ("b", 0.01, {"loss/validation": pytest.approx(2.1), "accuracy": 0.5})]
    with SummaryWriter(str(tmp_path / "c")) as writer, pytest.raises(ValueError, match="run_name='x' with in_run"):
        writer.add_hparams({"lr": 0.1}, {"m": 1.0}, run_name="x", in_run=True)


@pytest.mark.slow
def test_hparams_into_the_run_take_metrics_from_its_named_scalars_drawn_as_runs_of_their_own(tmp_path, serve):
    """add_scalar(tag, {name: value}) writes each name to a sub-run, so train and validation are
    two lines of their own colour in one chart (TensorBoard colours by run); a metric key
    (tag, name) with in_run=True shows such a line's last value on the run's one HParams row."""
    with SummaryWriter(str(tmp_path / "cnn")) as writer:
        for epoch in range(3):
            writer.add_scalar("accuracy", {"train": 0.5 + epoch / 10, "validation": 0.4 + epoch / 10}, epoch)
        writer.add_hparams({"lr": 0.1}, {("accuracy", "train"): None, ("accuracy", "validation"): None},
                           in_run=True, global_step=2)
    server = serve(tmp_path)
    runs = ["cnn", "cnn/accuracy/train", "cnn/accuracy/validation"]
    assert sorted(server.json("/data/runs", until=lambda found: len(found) == 3)) == runs
    tags = server.json("/data/plugin/scalars/tags")
    assert {run: list(tags[run]) for run in runs[1:]} == {run: ["accuracy"] for run in runs[1:]}
    metrics = [{"tag": "accuracy", "group": "accuracy/train"}, {"tag": "accuracy", "group": "accuracy/validation"}]
    (group,) = server.post_json("/data/plugin/hparams/session_groups", {
        "experimentName": "", "allowedStatuses": ["STATUS_SUCCESS", "STATUS_UNKNOWN"],
        "colParams": [{"hparam": "lr"}] + [{"metric": m} for m in metrics],
        "startIndex": 0, "sliceSize": 10})["sessionGroups"]
    assert group["sessions"][0]["name"] == "cnn" and group["hparams"]["lr"] == 0.1
    assert {m["name"]["group"]: m["value"] for m in group["metricValues"]} == {
        "accuracy/train": pytest.approx(0.7), "accuracy/validation": pytest.approx(0.6)}
    # readable names (on b621f0a the dashboard showed accuracy/validation.accuracy)
    experiment = server.post_json("/data/plugin/hparams/experiment", {"experimentName": ""})
    assert sorted(m.get("displayName") for m in experiment["metricInfos"]) == [
        "accuracy (train)", "accuracy (validation)"]
