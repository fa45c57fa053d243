"""add_scalar / add_scalars, read back by TensorBoard's EventAccumulator."""
import math
import os
import time

import numpy as np
import pytest

from conftest import accumulator, event_files, tb_scalars
from mxboard import SummaryWriter, proto
from mxboard._writer.encoding import ScalarSeries, encode_scalar_rows
from mxboard.reader import read_records


def _scalars(path, tag):
    return [(e.step, e.value) for e in accumulator(path).Scalars(tag)]


@pytest.mark.parametrize("value", [
    3, 3.0, np.float32(3), np.float64(3), np.int64(3), np.array(3.0), np.array([3.0]),
    np.array([[3]], dtype=np.uint8), np.float16(3), np.int8(3),
])
def test_every_kind_of_scalar_value_logs_its_number(logdir, value):
    with SummaryWriter(logdir) as w:
        w.add_scalar("v", value, 1)
    assert _scalars(logdir, "v") == [(1, 3.0)]


@pytest.mark.parametrize("step", [0, 1, 127, 128, 16383, 16384, 2**31, 2**63 - 1, -1, -(2**63)])
def test_steps_at_varint_boundaries_and_negative(logdir, step):
    with SummaryWriter(logdir) as w:
        w.add_scalar("s", 1.5, step)
        w.add_scalar("s", 2.5, np.int64(step))
    assert [(s, v) for _, s, v in tb_scalars(event_files(logdir)[0])] == [(step, 1.5), (step, 2.5)]


def test_mixed_step_sizes_keep_their_order_within_a_tag(logdir):
    steps = [5, 300, 2, 70000, 1, 129, 0, 2**40, 3]
    with SummaryWriter(logdir) as w:
        for i, step in enumerate(steps):
            w.add_scalar("a", float(i), step)
            w.add_scalar("b", float(-i), step)
    got = tb_scalars(event_files(logdir)[0])
    assert [(s, v) for t, s, v in got if t == "a"] == [(s, float(i)) for i, s in enumerate(steps)]
    assert [(s, v) for t, s, v in got if t == "b"] == [(s, float(-i)) for i, s in enumerate(steps)]


def test_hand_encoded_records_parse_to_the_protobuf_message():
    steps, values, walls = [0, 1, 300, -5], [0.5, -2.0, 1e39, float("nan")], [1.0, 2.5, 3.0, 4.0]
    tag = "päth/ünïcode"
    ((_, _, data),) = encode_scalar_rows([ScalarSeries(None, tag)], np.zeros(4, np.int64), np.array(values),
                                      np.array(steps), np.array(walls), np.arange(4))
    records, offset = [], 0
    while offset < len(data):  # each record: 12-byte header, payload, 4-byte CRC
        end = offset + 16 + int.from_bytes(data[offset:offset + 8], "little")
        records.append(data[offset:end])
        offset = end
    for record, step, value, wall in zip(records, steps, values, walls):
        event = proto.Event.FromString(record[12:-4])
        expected = proto.Event(wall_time=wall, step=step, summary=proto.Summary(
            value=[proto.Summary.Value(tag=tag, simple_value=value)]))
        got = event.summary.value[0].simple_value
        with np.errstate(over="ignore"):
            assert (event.wall_time, event.step, event.summary.value[0].tag) == (wall, step, tag)
            assert got == np.float32(value) if not math.isnan(value) else math.isnan(got)
        if not math.isnan(value):
            assert event == expected


def test_values_beyond_float32_become_infinity_like_protobuf(logdir):
    with SummaryWriter(logdir) as w:
        w.add_scalar("big", 1e300, 0)
        w.add_scalar("big", -1e300, 1)
        with pytest.warns(RuntimeWarning, match=r"add_scalar\('big'\): nan at step 2, logged as given"):
            w.add_scalar("big", float("nan"), 2)
    values = [v for _, v in _scalars(logdir, "big")]
    assert values[:2] == [math.inf, -math.inf] and math.isnan(values[2])


def test_walltime_is_kept_and_defaults_to_now(logdir):
    import time

    before = time.time()
    with SummaryWriter(logdir) as w:
        w.add_scalar("t", 1, 0, walltime=1234567.5)
        w.add_scalar("t", 1, 1)
    walls = [e.wall_time for e in accumulator(logdir).Scalars("t")]
    assert walls[0] == 1234567.5 and before <= walls[1] <= time.time()


def test_add_multiple_scalars_as_mxboard_0_1_0_tests_it(logdir):
    """mxboard 0.1.0's test_add_multiple_scalars: every form of named values, then the sub-run
    files are looked for, without a flush: torch, tensorboardX and 0.1.0 make them during the
    call (on b621f0a the writer thread made them later: missing when the call returned)."""
    sw = SummaryWriter(logdir=logdir)
    sw.add_scalar(tag="test_multiple_scalars", value=("0", 0.5), global_step=0)  # a (name, value) pair
    sw.add_scalar(tag="test_multiple_scalars", value=["1", 0.25], global_step=0)
    sw.add_scalar(tag="test_multiple_scalars", value={"2": 0.125, "3": 0.0625}, global_step=0)
    sw.add_scalars("test_multiple_scalars", {"4": 1.0})
    for name in "01234":
        run = os.path.join(logdir, "test_multiple_scalars", name)
        assert len(event_files(run)) == 1, "%s: no event file when the call returned" % run
    sw.close()
    for name, value in zip("01234", (0.5, 0.25, 0.125, 0.0625, 1.0)):
        assert _scalars(os.path.join(logdir, "test_multiple_scalars", name), "test_multiple_scalars") == [(0, value)]


def test_a_tear_down_that_deletes_the_logdir_right_after_add_scalars_never_races_the_writer(tmp_path):
    """A test's tear-down deletes the logdir with the writer still open. On b621f0a, over 30
    tries: rmtree failed ("Directory not empty") 2-15 times, the deleted logdir came back with new
    files 25-30 times, and close() raised FileNotFoundError 1-9 times (torch, tensorboardX: 0)."""
    import shutil

    for attempt in range(50):
        logdir = str(tmp_path / str(attempt))
        writer = SummaryWriter(logdir, flush_secs=0.01)
        writer.add_scalars("loss", {"train": 1.0, "validation": 2.0}, 0)
        assert sorted(os.listdir(os.path.join(logdir, "loss"))) == ["train", "validation"]
        shutil.rmtree(logdir)
        time.sleep(0.02)  # the writer thread wakes (flush_secs) meanwhile
        writer.close()  # quiet
        assert not os.path.exists(logdir), "attempt %d: the deleted logdir came back: %s" % (
            attempt, [os.path.join(d, f) for d, _, fs in os.walk(logdir) for f in fs])


@pytest.mark.parametrize("form", ["tuple", "list", "dict", "add_scalars"])
def test_named_values_become_lines_in_sub_runs(logdir, form):
    with SummaryWriter(logdir) as w:
        for step in range(3):
            if form == "tuple":
                w.add_scalar("acc", ("train", step / 10), step)
                w.add_scalar("acc", ("val", step / 20), step)
            elif form == "list":
                w.add_scalar("acc", ["train", step / 10], step)
                w.add_scalar("acc", ["val", step / 20], step)
            elif form == "dict":
                w.add_scalar("acc", {"train": step / 10, "val": step / 20}, step)
            else:
                w.add_scalars("acc", {"train": step / 10, "val": step / 20}, step)
    for name, scale in (("train", 10), ("val", 20)):
        run = os.path.join(logdir, "acc", name)
        assert accumulator(run).Tags()["scalars"] == ["acc"]
        assert _scalars(run, "acc") == [(s, pytest.approx(s / scale)) for s in range(3)]


def test_thirty_thousand_scalars_arrive_in_order(logdir):
    with SummaryWriter(logdir, max_queue=1) as w:
        for step in range(30_000):
            w.add_scalar("loss", step * 0.5, step)
            if step % 1000 == 0:
                w.add_scalar("lr", 0.1, step)
    acc = accumulator(logdir)
    loss = acc.Scalars("loss")
    assert [e.step for e in loss] == list(range(30_000))
    assert loss[-1].value == 14999.5 and len(acc.Scalars("lr")) == 30


@pytest.mark.parametrize("call, error, message", [
    (lambda w: w.add_scalar(3, 1.0), TypeError, "tag must be a str; got int"),
    (lambda w: w.add_scalar("", 1.0), ValueError, "tag must not be empty"),
    (lambda w: w.add_scalar(["x"], 1.0), TypeError, "tag must be a str; got list"),
    (lambda w: w.add_scalar("t\udcff", 1.0), ValueError, "valid Unicode"),
    (lambda w: w.add_scalar("x", "1.0"), TypeError, "value must be a number"),
    (lambda w: w.add_scalar("x", None), TypeError, "value must be a number"),
    (lambda w: w.add_scalar("x", np.zeros(3)), ValueError, r"single number; got an array of shape \(3,\)"),
    (lambda w: w.add_scalar("x", 1j), TypeError, "real number"),
    (lambda w: w.add_scalar("x", 10**400), ValueError, "too large"),
    (lambda w: w.add_scalar("x", object()), TypeError, "must be a number or an array"),
    (lambda w: w.add_scalar("x", 1.0, float("nan")), ValueError, "global_step must be finite"),
    (lambda w: w.add_scalar("x", 1.0, "3"), TypeError, "global_step must be a number"),
    (lambda w: w.add_scalar("x", 1.0, 2**63), ValueError, "int64"),
    (lambda w: w.add_scalar("x", 1.0, 0, walltime=float("-inf")), ValueError, "walltime must be finite"),
    (lambda w: w.add_scalar("x", ("a", 1, 2)), ValueError, r"one \(name, number\) pair\); got tuple \('a', 1, 2\)"),
    (lambda w: w.add_scalar("x", (1, 2)), TypeError, r"value must be one number .*; got tuple \(1, 2\)"),
    (lambda w: w.add_scalar("x", {1: 2}), TypeError, "scalar name must be a str; got int"),
    (lambda w: w.add_scalar("x", {}), ValueError, "empty"),
    (lambda w: w.add_scalar("x", {"a": "b"}), TypeError, r"value\['a'\] must be a number"),
    (lambda w: w.add_scalars("x", [("a", 1)]), TypeError, "must be a dict"),
])
def test_bad_input_is_refused_at_the_call_and_the_writer_stays_usable(logdir, call, error, message):
    with SummaryWriter(logdir) as w:
        with pytest.raises(error, match=message):
            call(w)
        w.add_scalar("ok", 1.0, 1)
    assert _scalars(logdir, "ok") == [(1, 1.0)]
    assert all(t == "ok" for f in event_files(logdir) for t, _, _ in tb_scalars(f))


def test_a_list_of_numbers_says_what_a_scalar_is_and_what_to_call_for_several(logdir):
    """On a6ab6a5 `add_scalar("loss", [1, 2], 0)` said `scalar name must be a str; got int 1`."""
    with SummaryWriter(logdir) as w:
        with pytest.raises(TypeError) as raised:
            w.add_scalar("loss", [1, 2], 0)
    said = str(raised.value)
    assert said.startswith("value must be one number (an int, a float, a numpy or torch scalar, an array of one "
                           "element) or named numbers (a dict {name: number}, or one (name, number) pair); got list "
                           "[1, 2]"), said
    assert "add_scalars(tag, {name: number, ...}, step)" in said, said


@pytest.mark.parametrize("kwargs, error", [
    ({"max_queue": 0}, ValueError), ({"flush_secs": 0}, ValueError), ({"flush_secs": "1"}, ValueError),
    ({"filename_suffix": 3}, TypeError), ({"filename_suffix": "/x"}, ValueError),
])
def test_bad_writer_arguments(logdir, kwargs, error):
    with pytest.raises(error):
        SummaryWriter(logdir, **kwargs)


def test_logdir_must_be_a_path():
    with pytest.raises(TypeError, match="logdir"):
        SummaryWriter(3)


def test_a_batch_over_many_tags_files_and_step_sizes_is_encoded_in_call_order_per_tag(tmp_path):
    """One vectorized pass over rows of 300 tags of many lengths, in two files, with steps of
    every varint length: each file's records pass their CRCs and parse to the rows, each tag's
    in call order."""

    rng = np.random.default_rng(0)
    files = ["a", "b"]
    tags = ["t%d/%s" % (i, "x" * int(rng.integers(0, 40))) for i in range(300)]
    series = [ScalarSeries(files[i % 2], tag) for i, tag in enumerate(tags)]
    n = 5000
    ids = rng.integers(0, 300, n)
    steps = rng.choice([0, 1, 127, 128, 16384, 2**35, 2**62, -1], n)
    values, walls, seqs = rng.normal(size=n), rng.random(n) * 1e9, rng.permutation(n)
    written = {f: data for f, _, data in encode_scalar_rows(series, ids, values, steps, walls, seqs)}
    assert sorted(written) == files
    for name in files:
        path = tmp_path / name
        path.write_bytes(written[name])
        got = {}
        for payload in read_records(str(path), strict=True):  # every CRC checked
            event = proto.Event.FromString(payload)
            value = event.summary.value[0]
            got.setdefault(value.tag, []).append((event.step, event.wall_time, value.simple_value))
        for sid in {int(i) for i in ids if series[i].file == name}:
            rows = sorted(np.flatnonzero(ids == sid), key=lambda r: seqs[r])
            assert got[tags[sid]] == [(int(steps[r]), walls[r], np.float32(values[r])) for r in rows]


def test_rows_come_in_segments_between_a_files_other_records(tmp_path):
    """A batch's other records of a file (a histogram, a described scalar) cut its scalar rows
    into segments, so that the file holds every record in call order."""
    rng = np.random.default_rng(3)
    series = [ScalarSeries("a", "x"), ScalarSeries("a", "y"), ScalarSeries("b", "z")]
    n = 3000
    ids, seqs = rng.integers(0, 3, n), rng.permutation(n) * 2  # odd numbers: the other records'
    cuts = {"a": np.sort(rng.choice(np.arange(1, 2 * n, 2), 7, replace=False))}
    steps = rng.integers(0, 10**6, n)
    out = list(encode_scalar_rows(series, ids, rng.normal(size=n), steps, rng.random(n), seqs, cuts))
    assert {(f, s) for f, s, _ in out} <= {("a", s) for s in range(8)} | {("b", 0)}
    for name, segment, data in out:
        path = tmp_path / ("%s-%d" % (name, segment))
        path.write_bytes(data)
        written = [proto.Event.FromString(p).step for p in read_records(str(path), strict=True)]
        rows = np.flatnonzero(np.array([series[i].file == name for i in ids]))
        if name == "a":
            bounds = np.concatenate([[-1], cuts["a"], [2 * n]])
            rows = rows[(seqs[rows] > bounds[segment]) & (seqs[rows] < bounds[segment + 1])]
        assert len(rows) and sorted(written) == sorted(steps[rows].tolist())  # exactly that segment's rows
