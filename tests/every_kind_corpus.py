"""A logdir with every kind of summary, for the loader's differential tests (test_loader.py,
test_loader_served.py): mxboard's kinds in several runs (named scalars make runs of their own),
torch's and TensorFlow 2's tensor scalars (damaged_corpus's intact file), a graph, tagged run
metadata, a NaN, and a run whose job restarted (two SessionLog STARTs: upstream purges)."""
import glob
import os

import damaged_corpus
import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2, graph_pb2

from mxboard import SummaryWriter, reader
from mxboard._format.events import frame
from mxboard.proto import Event, Summary


def write(logdir):
    """A logdir with every kind mxboard writes, in several runs, with foreign records appended:
    torch's and TensorFlow 2's tensor scalars, a graph, tagged run metadata, a restart."""
    rng = np.random.default_rng(0)
    with SummaryWriter(os.path.join(logdir, "train")) as writer:
        for step in range(60):
            if step == 33:
                with pytest.warns(RuntimeWarning, match="nan at step 33"):
                    writer.add_scalar("loss", float("nan"), step)
            else:
                writer.add_scalar("loss", float(np.exp(-step / 20)), step)
            writer.add_scalars("lr", {"a": step / 10.0, "b": -step / 10.0}, step)
            if step % 10 == 0:
                writer.add_histogram("weights", rng.normal(size=200), step)
                writer.add_image("picture", rng.integers(0, 255, (3, 8, 8), dtype=np.uint8), step)
                writer.add_images("pictures", rng.integers(0, 255, (2, 3, 4, 4), dtype=np.uint8), step)
                writer.add_audio("sound", np.sin(np.arange(800) / 10.0), 8000, step)
                writer.add_text("notes", "step **%d**" % step, step)
                writer.add_pr_curve("pr", rng.integers(0, 2, 50), rng.random(50), num_thresholds=20, global_step=step)
                writer.add_mesh("mesh", rng.random((1, 4, 3)), faces=np.array([[[0, 1, 2], [1, 2, 3]]]),
                                global_step=step)
        writer.add_custom_scalars({"losses": {"both": ["Multiline", ["loss", "lr"]]}})
        writer.add_hparams({"lr": 0.1, "optimizer": "sgd"}, {"loss": None}, in_run=True)
    damaged_corpus.write_intact(os.path.join(logdir, "intact"))
    (path,) = glob.glob(os.path.join(logdir, "train", "*tfevents*"))
    graph = graph_pb2.GraphDef()
    graph.node.add(name="x", op="Placeholder")
    extra = [event_pb2.Event(wall_time=1.7e9, step=0, graph_def=graph.SerializeToString())]
    extra.append(event_pb2.Event(wall_time=1.7e9, step=3, tagged_run_metadata=event_pb2.TaggedRunMetadata(
        tag="step3", run_metadata=b"\x0a\x00")))
    with open(path, "ab") as f:
        for event in extra:
            f.write(frame(event.SerializeToString()))
    # A second file in a run of its own, with a restart (two SessionLog STARTs): upstream purges.
    restarted = os.path.join(logdir, "nested", "restarted")
    with SummaryWriter(restarted) as writer:
        for step in range(10):
            writer.add_scalar("loss", step, step)
    (path,) = reader.event_files(restarted)
    with open(path, "ab") as f:
        for step in (0, 5):
            f.write(frame(event_pb2.Event(wall_time=1.7e9 + step, step=step,
                                          session_log=event_pb2.SessionLog(status=1)).SerializeToString()))
        f.write(frame(Event(wall_time=1.8e9, step=7, summary=Summary(value=[
            Summary.Value(tag="loss", simple_value=70.0)])).SerializeToString()))
