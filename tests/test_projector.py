"""Embeddings for the projector: assets, and a config that stays complete and whole when many
writers, threads and processes share a logdir."""
import io
import multiprocessing
import os
import stat
import threading

import numpy as np
import pytest
from PIL import Image

from conftest import projector_config, run_python
from conftest import projector_config as _config
from mxboard import SummaryWriter


def test_an_embedding_writes_its_files_and_is_registered_in_the_config(logdir):
    from mxboard import SummaryWriter

    points = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    images = np.stack([np.full((3, 6, 5), i / 4.0) for i in range(4)])  # NCHW
    with SummaryWriter(logdir) as w:
        w.add_embedding("emb", points, labels=["a", "b\tc", "d", "e"], images=images, global_step=12)
        w.add_embedding("multi", points, labels=[("x", 1), ("y", 2), ("z", 3), ("w", 4)],
                        metadata_header=["name", "n"])
    config = _config(logdir)
    entries = {e.tensor_name: e for e in config.embeddings}
    assert set(entries) == {"emb:12", "multi"}
    emb = entries["emb:12"]
    assert emb.tensor_path == os.path.join("emb_000012", "tensors.tsv")  # mxboard's folder names
    assert list(emb.tensor_shape) == [4, 3] and list(emb.sprite.single_image_dim) == [5, 6]
    tensors = np.loadtxt(os.path.join(logdir, emb.tensor_path), delimiter="\t")
    assert np.allclose(tensors, points)
    with open(os.path.join(logdir, emb.metadata_path)) as f:
        assert f.read() == "a\nb c\nd\ne\n"  # one column: no header; tabs cleaned
    with open(os.path.join(logdir, entries["multi"].metadata_path)) as f:
        assert f.read().splitlines() == ["name\tn", "x\t1", "y\t2", "z\t3", "w\t4"]
    sprite = Image.open(os.path.join(logdir, emb.sprite.image_path))
    assert sprite.size == (2 * 5, 2 * 6)  # a square grid of 2 x 2
    pixels = np.asarray(sprite)
    assert [pixels[0, 0, 0], pixels[0, 5, 0], pixels[6, 0, 0], pixels[6, 5, 0]] == [0, 64, 128, 191]


def test_a_large_sprite_is_shrunk_to_8192_px_keeping_order():
    from mxboard.summaries.projector import sprite

    images = np.zeros((9_901, 100, 100, 1), dtype=np.uint8)
    images[123] = 255
    images[-1] = 128
    png, (width, height) = sprite(images)
    pixels = np.asarray(Image.open(io.BytesIO(png)))
    assert width == height == 81 and pixels.shape == (100 * 81, 100 * 81)  # <= 8192 px, square
    assert pixels[1 * 81 + 40, 23 * 81 + 40] == 255  # image 123: row 1, column 23
    assert pixels[99 * 81 + 40, 0 * 81 + 40] == 128  # image 9900: row 99, column 0
    assert pixels[99 * 81 + 40, 1 * 81 + 40] == 0  # nothing after it
    assert (pixels == 255).sum() == 81 * 81


def _add_embeddings(args):
    logdir, prefix, count = args
    import mxboard

    with mxboard.SummaryWriter(logdir) as w:
        for i in range(count):
            w.add_embedding("%s-%d" % (prefix, i), np.random.rand(5, 2), labels=list("abcde"))


def test_many_writers_threads_and_processes_keep_every_entry_and_never_show_a_torn_config(logdir):
    os.makedirs(logdir)
    stop = threading.Event()
    seen = []

    def reader():  # what TensorBoard's projector would read, as often as it can
        path = os.path.join(logdir, "projector_config.pbtxt")
        while not stop.is_set():
            if os.path.exists(path):
                seen.append(len(_config(logdir).embeddings))  # raises on a torn file

    watcher = threading.Thread(target=reader)
    watcher.start()
    threads = [threading.Thread(target=_add_embeddings, args=((logdir, "t%d" % i, 5),)) for i in range(3)]
    for t in threads:
        t.start()
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        pool.map(_add_embeddings, [(logdir, "p%d" % i, 5) for i in range(3)])
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    names = sorted(e.tensor_name for e in _config(logdir).embeddings)
    assert names == sorted("%s%d-%d" % (kind, i, j) for kind in "tp" for i in range(3) for j in range(5))
    assert seen and max(seen) == 30


@pytest.mark.parametrize("call, error, message", [
    (lambda w: w.add_embedding("e", np.zeros(5)), ValueError, "2-D"),
    (lambda w: w.add_embedding("e", np.zeros((5, 2)), labels=[1, 2]), ValueError, "one per point: 5; got 2"),
    (lambda w: w.add_embedding("e", np.zeros((5, 2)), images=np.zeros((4, 3, 2, 2))), ValueError, "one per point"),
    (lambda w: w.add_embedding("e", np.zeros((5, 2)), images=np.zeros((5, 2, 2, 2))), ValueError, "channels"),
    (lambda w: w.add_embedding("e", np.zeros((2, 2)), labels=[(1,), (2, 3)], metadata_header=["a", "b"]),
     ValueError, "len\\(metadata_header\\)"),
    (lambda w: w.add_embedding("e", np.zeros((0, 2))), ValueError, "empty"),
])
def test_a_bad_embedding_is_refused_and_the_writer_goes_on(logdir, call, error, message):
    from mxboard import SummaryWriter

    with SummaryWriter(logdir) as w:
        with pytest.raises(error, match=message):
            call(w)
        w.add_embedding("ok", np.zeros((2, 2)))
    assert [e.tensor_name for e in _config(logdir).embeddings] == ["ok"]


FOREIGN_CONFIG = """embeddings {
  tensor_name: "from_another_tool"
  tensor_path: "other/tensors.tsv"
}
model_checkpoint_path: "ckpt/model"
"""


def test_the_projector_config_keeps_entries_it_did_not_write(logdir):
    os.makedirs(logdir)
    with open(os.path.join(logdir, "projector_config.pbtxt"), "w") as f:
        f.write(FOREIGN_CONFIG)
    with SummaryWriter(logdir) as w:
        w.add_embedding("ours", np.ones((3, 2)))
    config = projector_config(logdir)
    assert sorted(e.tensor_name for e in config.embeddings) == ["from_another_tool", "ours"]
    assert config.model_checkpoint_path == "ckpt/model"


@pytest.mark.slow
def test_projector_files_follow_the_umask(tmp_path):
    run_python("LOGDIR = %r\n" % str(tmp_path) + r"""
import os
import numpy as np
import mxboard
os.umask(0o022)
with mxboard.SummaryWriter(LOGDIR) as w:
    w.add_embedding("e", np.ones((3, 2)), labels=["a", "b", "c"], images=np.zeros((3, 1, 4, 4)))
""")
    files = [os.path.join(d, n) for d, _, names in os.walk(str(tmp_path)) for n in names if "tfevents" not in n]
    assert len(files) == 6  # tensors, metadata, sprite, config; our entry and lock beside it
    assert {oct(stat.S_IMODE(os.stat(f).st_mode)) for f in files} == {"0o644"}


def test_embedding_folders_of_different_tags_or_steps_never_collide(logdir):
    with SummaryWriter(logdir) as w:
        w.add_embedding("a", np.full((2, 2), 1.0), global_step=1)
        w.add_embedding("a_000001", np.full((2, 2), 2.0))
    config = projector_config(logdir)
    paths = {e.tensor_name: e.tensor_path for e in config.embeddings}
    assert set(paths) == {"a:1", "a_000001"} and len(set(paths.values())) == 2
    values = {name: np.loadtxt(os.path.join(logdir, path)) for name, path in paths.items()}
    assert values["a:1"].tolist() == [[1.0, 1.0]] * 2 and values["a_000001"].tolist() == [[2.0, 2.0]] * 2


def _projector_reads(text):
    """metadata.tsv as TensorBoard's Projector parses it (projector_binary.js, parseMetadata): the
    first line names the columns only where it holds a tab (else the one column is "label"), and
    each other non-blank line is a point. Returns (column names, one {column: value} a point)."""
    lines = [line for line in text.split("\n") if line.strip()]
    columns = ["label"]
    if lines and "\t" in lines[0]:
        columns, lines = lines[0].split("\t"), lines[1:]
    return columns, [dict(zip(columns, line.split("\t"))) for line in lines]


def _metadata(logdir, name):
    (entry,) = [e for e in _config(logdir).embeddings if e.tensor_name == name]
    with open(os.path.join(logdir, entry.metadata_path), encoding="utf-8") as f:
        return f.read()


def _mxboard_010_metadata_tsv(labels):
    """What awslabs/mxboard's `_make_metadata_tsv` (d89b2f6, "add support for multi labels for
    embeddings") writes: `np.array(labels)`, each row's values joined by tabs, a newline after each."""
    return "".join("\t".join(str(x) for x in row) + "\n" for row in np.array(labels))


def test_mxboard_010s_two_dimensional_labels_with_a_header_row(logdir):
    """mxboard 0.1.0's add_embedding takes N + 1 rows of labels, the first naming the columns
    ("If the labels are 2D the first row is considered the column names"), and writes them as
    they are: mxboard writes the same file (on 706ab3a refused, "labels must have one per
    point"), and the Projector reads N points of those columns. An array of N + 1 rows is taken
    so too; a single column's name is not written, as the Projector would take it for a point."""
    points = np.arange(8, dtype=np.float32).reshape(4, 2)
    labels = [["digit", "set"], [0, "train"], [1, "train"], [7, "test"], [3.5, "a b"]]
    with SummaryWriter(logdir) as w:
        w.add_embedding("rows", points, labels)
        w.add_embedding("array", points, labels=np.array(labels))
        w.add_embedding("one_column", points, labels=[["digit"], [0], [1], [7], [3]])
    expected = _mxboard_010_metadata_tsv(labels)
    assert _metadata(logdir, "rows") == _metadata(logdir, "array") == expected
    assert _projector_reads(expected) == (["digit", "set"], [
        {"digit": "0", "set": "train"}, {"digit": "1", "set": "train"}, {"digit": "7", "set": "test"},
        {"digit": "3.5", "set": "a b"}])
    assert _projector_reads(_metadata(logdir, "one_column")) == (
        ["label"], [{"label": "0"}, {"label": "1"}, {"label": "7"}, {"label": "3"}])


def test_metadata_header_rows_are_written_as_tensorboardx_writes_them(tmp_path):
    """tensorboardX's (and torch's) `metadata_header` with N rows: the same metadata.tsv as
    tensorboardX's, read by the Projector as N points; the rows may be tuples (its demo zips
    them) or an array."""
    tensorboardx = pytest.importorskip("tensorboardX")
    points = np.random.default_rng(0).random((3, 4))
    rows = [(1, "test"), (2, "train"), (3.5, "train")]
    with tensorboardx.SummaryWriter(str(tmp_path / "tbx")) as w:
        w.add_embedding(points, metadata=rows, metadata_header=["digit", "dataset"], tag="e")
    with open(str(tmp_path / "tbx" / "00000" / "e" / "metadata.tsv"), encoding="utf-8") as f:
        theirs = f.read()
    logdir = str(tmp_path / "mxb")
    with SummaryWriter(logdir) as w:
        w.add_embedding(points, metadata=rows, metadata_header=["digit", "dataset"], tag="e")
        w.add_embedding(points, metadata=np.array(rows), metadata_header=["digit", "dataset"], tag="array")
    assert _metadata(logdir, "e") == theirs == "digit\tdataset\n1\ttest\n2\ttrain\n3.5\ttrain\n"
    assert _projector_reads(theirs)[1][2] == {"digit": "3.5", "dataset": "train"}
    assert _metadata(logdir, "array") == _metadata(logdir, "e")
    with SummaryWriter(logdir) as w:  # one column: its name is not written, the Projector's "label"
        w.add_embedding(points, metadata=[[r[0]] for r in rows], metadata_header=["digit"], tag="one")
    assert _projector_reads(_metadata(logdir, "one")) == (["label"], [{"label": "1"}, {"label": "2"},
                                                                      {"label": "3.5"}])


@pytest.mark.parametrize("labels, header, error, message", [
    (np.array([["a", "b"]] * 3), None, ValueError,
     r"labels: 3 rows of 2 labels need their columns' names, .* metadata_header=\[...\] .* or a first row of "
     r"names, 4 rows in all \(mxboard 0.1.0's\)"),
    ([["digit", "set"], [0, "a"], [1], [2, "b"]], None, ValueError,
     "every row must have as many values as the first row, which names the columns: 2"),
    ([["n"]] * 5, None, ValueError, r"one per point: 3; got 5 \(or, mxboard 0.1.0's form, 4 rows: the first names"),
    ([1, 2, 3], ["n"], TypeError, r"with metadata_header, each label is a row of len\(metadata_header\) = 1 values; "
                                  r"got int 1"),
    (np.zeros((3, 2, 2)), None, ValueError, r"labels must be 1-D .* or 2-D .*; got shape \(3, 2, 2\) for 3 points"),
    (["a", "b", "c"], "name", TypeError, "metadata_header must be a list of the labels' column names; got str"),
])
def test_labels_the_projector_could_not_read_are_refused_saying_what_it_reads(logdir, labels, header, error,
                                                                             message):
    with SummaryWriter(logdir) as w:
        with pytest.raises(error, match=message):
            w.add_embedding("e", np.zeros((3, 2)), labels, metadata_header=header)
