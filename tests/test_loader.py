"""The bundle's own loader (tensorboard_bundle/loader/, the server's default), in this process:
the same answers as upstream's MultiplexerDataProvider (every point kept) on every kind of summary
under the request's budget (restarts purged, kinds interleaved with the scalars read in bulk), the
documented downsampling over it, a file read from where the last read stopped, many runs read
together holding what each read alone holds, and tensor points read back from their records (a
record changed since left out, said once). test_loader_served.py reads it through the bundled
server over HTTP."""
import contextlib
import json
import math
import os
import time

import damaged_corpus
import every_kind_corpus
import numpy as np
import pytest
from tensorboard import context
from tensorboard.backend.event_processing import data_provider as upstream_provider
from tensorboard.backend.event_processing import plugin_event_multiplexer

from mxboard import SummaryWriter, reader
from mxboard._format.events import frame
from mxboard.proto import Event, ScalarPluginData, Summary, SummaryMetadata, TensorProto, TensorShapeProto
from tensorboard_bundle.loader import Logdir, MxboardDataProvider
from tensorboard_bundle.loader.downsample import evenly, extremes

CTX = context.RequestContext()
EXPERIMENT = "exp"
# More than any series here holds: every point.
EVERY = 10 ** 9


def _upstream(logdir, purge_orphaned_data=True):
    multiplexer = plugin_event_multiplexer.EventMultiplexer(size_guidance={"tensors": 0},
                                                            purge_orphaned_data=purge_orphaned_data)
    multiplexer.AddRunsFromDirectory(logdir)
    multiplexer.Reload()
    return upstream_provider.MultiplexerDataProvider(multiplexer, logdir)


def _ours(logdir, purge_orphaned_data=True):
    loaded = Logdir(logdir, purge_orphaned_data)
    loaded.reload()
    return MxboardDataProvider(loaded)


def _plain(answer):
    """An answer as nested builtins, NaN and arrays comparable."""
    if isinstance(answer, dict):
        return {key: _plain(value) for key, value in answer.items()}
    if isinstance(answer, (list, tuple)):
        return [_plain(value) for value in answer]
    if isinstance(answer, float):
        return "nan" if math.isnan(answer) else answer
    if isinstance(answer, np.ndarray):
        return (str(answer.dtype), answer.shape, repr(answer.tolist()))
    # Upstream's fields, where the answer is of a class of the bundle's made on upstream's.
    made_on = next(kind for kind in type(answer).__mro__ if not kind.__module__.startswith("tensorboard_bundle"))
    fields = getattr(made_on, "__slots__", None)
    if fields:
        return (type(answer).__name__, {name: _plain(getattr(answer, name)) for name in fields})
    return answer


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory):
    logdir = str(tmp_path_factory.mktemp("every_kind"))
    every_kind_corpus.write(logdir)
    return logdir


def _every_call(theirs, ours, experiment_id=EXPERIMENT):
    """Each call of both providers, for every plugin, run and tag (and each blob), compared."""
    def both(method, **kwargs):
        a = getattr(theirs, method)(CTX, experiment_id=experiment_id, **kwargs)
        b = getattr(ours, method)(CTX, experiment_id=experiment_id, **kwargs)
        assert _plain(b) == _plain(a), (method, kwargs)
        return b

    assert ours.experiment_metadata(CTX, experiment_id=EXPERIMENT) == theirs.experiment_metadata(
        CTX, experiment_id=EXPERIMENT)
    assert sorted(ours.list_runs(CTX, experiment_id=EXPERIMENT), key=lambda r: r.run_id) == sorted(
        theirs.list_runs(CTX, experiment_id=EXPERIMENT), key=lambda r: r.run_id)
    plugins = both("list_plugins")
    calls = 0
    for plugin in plugins:
        for lister, reader_name in (("list_scalars", "read_scalars"), ("list_tensors", "read_tensors"),
                                    ("list_blob_sequences", "read_blob_sequences")):
            listed = both(lister, plugin_name=plugin)
            both(reader_name, plugin_name=plugin, downsample=EVERY)
            if reader_name == "read_scalars":
                both("read_last_scalars", plugin_name=plugin)
            for run, tags in listed.items():
                for tag in tags:
                    only = upstream_provider.provider.RunTagFilter(runs=[run], tags=[tag])
                    both(lister, plugin_name=plugin, run_tag_filter=only)
                    read = both(reader_name, plugin_name=plugin, downsample=EVERY, run_tag_filter=only)
                    calls += 1
                    if reader_name != "read_blob_sequences":
                        continue
                    for datum in read[run][tag]:
                        for blob in datum.values:
                            assert ours.read_blob(CTX, blob_key=blob.blob_key) == theirs.read_blob(
                                CTX, blob_key=blob.blob_key)
    return plugins, calls


def test_every_call_answers_as_upstream_on_every_kind(every_kind):
    plugins, calls = _every_call(_upstream(every_kind), _ours(every_kind))
    assert {"scalars", "histograms", "images", "audio", "text", "pr_curves", "hparams", "mesh",
            "custom_scalars", "graphs"} <= set(plugins)
    assert calls > 20


def test_a_restart_purges_as_upstream_and_nothing_with_purge_orphaned_data_false(every_kind):
    for purge in (True, False):
        theirs, ours = _upstream(every_kind, purge), _ours(every_kind, purge)
        _every_call(theirs, ours)
        read = ours.read_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars", downsample=EVERY)
        steps = [p.step for p in read["nested/restarted"]["loss"]]
        assert steps == ([0, 1, 2, 3, 4, 7] if purge else list(range(10)) + [7])


@pytest.mark.slow
def test_every_call_answers_as_upstream_on_the_demos_logdir(tmp_path):
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "mxboard.demo", "--no-serve", "--epochs", "2", "--framework", "numpy",
                    "--batches", "20", "--logdir", str(tmp_path)], check=True, capture_output=True, timeout=180)
    plugins, calls = _every_call(_upstream(str(tmp_path)), _ours(str(tmp_path)))
    assert {"scalars", "histograms", "images"} <= set(plugins)


def test_over_the_budget_scalars_keep_first_last_and_each_buckets_extremes(every_kind):
    ours = _ours(every_kind)
    every = ours.read_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars", downsample=EVERY)
    read = ours.read_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars", downsample=10)
    for run, tags in every.items():
        for tag, points in tags.items():
            got = read[run][tag]
            assert len(got) <= 10
            if len(points) <= 10:
                assert _plain(got) == _plain(points)
                continue
            steps = [p.step for p in got]
            assert steps == sorted(steps) and got[0] == points[0] and got[-1] == points[-1]
            values = [p.value for p in points]
            if any(math.isnan(v) for v in values):
                assert any(math.isnan(p.value) for p in got), (run, tag)
            finite = [v for v in values if not math.isnan(v)]
            assert max(finite) in [p.value for p in got] and min(finite) in [p.value for p in got], (run, tag)
    # The loss with its NaN at step 33 (60 points): the NaN is drawn.
    assert any(math.isnan(p.value) for p in read["train"]["loss"])


def test_over_the_budget_tensors_and_blobs_are_evenly_spaced_first_and_last_kept(every_kind):
    ours = _ours(every_kind)
    for method, plugin in (("read_tensors", "histograms"), ("read_blob_sequences", "images")):
        every = getattr(ours, method)(CTX, experiment_id=EXPERIMENT, plugin_name=plugin, downsample=EVERY)
        read = getattr(ours, method)(CTX, experiment_id=EXPERIMENT, plugin_name=plugin, downsample=3)
        points = every["train"][next(iter(every["train"]))]
        got = read["train"][next(iter(every["train"]))]
        assert len(points) == 6
        assert [p.step for p in got] == [points[0].step, points[2].step if len(got) == 3 else None,
                                          points[-1].step][:len(got)] or len(got) == 3
        assert got[0].step == points[0].step and got[-1].step == points[-1].step and len(got) == 3


def test_the_downsampling_itself():
    values = np.arange(100_000, dtype=np.float64) % 7
    values[51_234] = 100.0
    values[70_000] = np.nan
    chosen = extremes(values, 1000)
    assert len(chosen) <= 1000
    assert {0, 51_234, 70_000, 99_999} <= set(chosen.tolist())
    assert list(chosen) == sorted(set(chosen.tolist()))
    assert extremes(values, 0).tolist() == [] and extremes(values, 1).tolist() == [99_999]
    assert extremes(values[:5], 5).tolist() == [0, 1, 2, 3, 4]
    assert evenly(10, 4).tolist() == [0, 3, 6, 9] and evenly(3, 10).tolist() == [0, 1, 2]


def _scalar_record(step):
    return frame(Event(wall_time=1.7e9 + step, step=step, summary=Summary(value=[
        Summary.Value(tag="loss", simple_value=float(step))])).SerializeToString())


def test_listings_kept_between_calls_follow_every_change_as_upstream(tmp_path):
    """The provider keeps each run's answer to a listing while the run stands still: after points,
    tags and kinds are added to one run and another run is deleted, every call (listings filtered
    and not) answers as a fresh upstream provider does."""
    import shutil

    rng = np.random.default_rng(3)

    def log(run, steps, extra=False):
        with SummaryWriter(str(tmp_path / run)) as writer:
            for step in steps:
                writer.add_scalar("loss", 1.0 / (step + 1), step)
                writer.add_histogram("weights", rng.normal(size=50), step)
                writer.add_image("picture", rng.integers(0, 255, (3, 4, 4), dtype=np.uint8), step)
                if extra:
                    writer.add_scalar("accuracy", step / 100.0, step)
                    writer.add_text("notes", "step %d" % step, step)

    log("a", range(5))
    log("b", range(3))
    loaded = Logdir(str(tmp_path))
    loaded.reload()
    ours = MxboardDataProvider(loaded)
    _every_call(_upstream(str(tmp_path)), ours)
    listed = ours.list_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars")
    assert listed["a"]["loss"].max_step == 4 and set(listed) == {"a", "b"}
    # The same answer for a run that did not change; a new one for a run that did.
    log("a", range(5, 9), extra=True)
    loaded.reload()
    _every_call(_upstream(str(tmp_path)), ours)
    listed = ours.list_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars")
    assert listed["a"]["loss"].max_step == 8 and set(listed["a"]) == {"loss", "accuracy"}
    shutil.rmtree(tmp_path / "b")
    loaded.reload()
    _every_call(_upstream(str(tmp_path)), ours)
    assert set(ours.list_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars")) == {"a"}


def test_the_tags_routes_answer_upstreams_bytes_through_every_change(tmp_path):
    """The bundle's Scalars and Time Series plugins make their tags answers from each run's kept
    part. Through points and described tags added to a run (two runs describing one tag alike, a
    third otherwise), a run with a name JSON escapes, a run without series, a run deleted, and a
    tag of a version upstream does not know (left out), each answer's bytes (gzipped and not) are
    those of upstream's plugin over the same provider, each answer that of upstream's plugin over
    upstream's provider (whose runs come in the order its walk met them), and a run that did not
    change keeps its parts."""
    import shutil

    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.metrics import metrics_plugin as upstream_metrics
    from tensorboard.plugins.scalar import scalars_plugin as upstream_scalars
    from werkzeug.test import Client

    from tensorboard_bundle import kept_tags

    rng = np.random.default_rng(5)

    def log(run, steps, described=None, newer=False):
        with SummaryWriter(str(tmp_path / run)) as writer:
            if newer:
                writer.add_event(Event(step=0, wall_time=1.7e9, summary=Summary(value=[Summary.Value(
                    tag="newer", tensor=TensorProto(dtype=1, float_val=[1.0], tensor_shape=TensorShapeProto()),
                    metadata=SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
                        plugin_name="scalars", content=ScalarPluginData(version=1).SerializeToString())))])))
            for step in steps:
                # Two scalar tags met in a file, in an order other than their names'.
                writer.add_scalar("zeta", float(step), step)
                writer.add_scalar("loss", 1.0 / (step + 1), step)
                writer.add_histogram("weights", rng.normal(size=20), step)
                writer.add_image("picture", rng.integers(0, 255, (3, 4, 4), dtype=np.uint8), step)
                if described:
                    writer.add_text("notes", "step %d" % step, step)
                    writer.add_event(Event(step=step, wall_time=1.7e9 + step, summary=Summary(value=[Summary.Value(
                        tag="described", simple_value=float(step), metadata=SummaryMetadata(
                            display_name="Shown", summary_description=described))])))

    def answers(route):
        asked = (Client(route).get("/", headers=headers) for headers in ({}, {"Accept-Encoding": "gzip"}))
        return [(response.data, response.headers["Content-Type"], response.headers.get("Content-Encoding"))
                for response in asked]

    def routes(scalars, metrics):
        return [scalars.tags_route, metrics.get_plugin_apps()["/tags"]]

    def parts(scalars, metrics):
        return [scalars._kept_tags._kept] + [metrics._kept_tags[kind]._kept for kind in ("scalars", "images")]

    loaded = Logdir(str(tmp_path))
    context = base_plugin.TBContext(data_provider=MxboardDataProvider(loaded), logdir=str(tmp_path))
    ours = (kept_tags.ScalarsPlugin(context), kept_tags.MetricsPlugin(context))
    upstreams_over_ours = (upstream_scalars.ScalarsPlugin(context), upstream_metrics.MetricsPlugin(context))
    steps = [lambda: (log("a", range(5)), log('b "quoted" é', range(3))),
             lambda: (log("a", range(5, 9), described="**bold** <b>x</b>"), log("c", range(2), described="other"),
                      log("d", range(2), described="**bold** <b>x</b>")),
             lambda: log("no series", []) or (tmp_path / "no series" / "events.out.tfevents.0").write_bytes(b""),
             lambda: shutil.rmtree(tmp_path / 'b "quoted" é'),
             # Data of a version upstream does not know: left out of the answer (upstream's route).
             lambda: log("newer", [], newer=True),
             lambda: shutil.rmtree(tmp_path / "newer")]
    for step in steps:
        step()
        loaded.reload()
        kept = [dict(each) for each in parts(*ours)]
        theirs = [plugin(base_plugin.TBContext(data_provider=_upstream(str(tmp_path)), logdir=str(tmp_path)))
                  for plugin in (upstream_scalars.ScalarsPlugin, upstream_metrics.MetricsPlugin)]
        for our_route, same_provider, upstreams in zip(routes(*ours), routes(*upstreams_over_ours), routes(*theirs)):
            assert answers(our_route) == answers(same_provider)
            ours_now, upstreams_now = (json.loads(answers(route)[0][0]) for route in (our_route, upstreams))
            assert ours_now == upstreams_now
            # Each run's tags in upstream's order too (the order the run's files first gave them).
            assert {run: list(tags) for run, tags in ours_now.items()} == \
                {run: list(tags) for run, tags in upstreams_now.items()}
        # Made from kept parts (upstream's route answers data of a version it does not know).
        assert (tmp_path / "newer").exists() or all(parts(*ours))
        for before, now in zip(kept, parts(*ours)):
            assert all(now[run] is part for run, part in before.items() if run != "a" and run in now)
    scalars, metrics = (json.loads(answers(route)[0][0]) for route in routes(*ours))
    assert scalars["a"]["described"] == {"displayName": "Shown",
                                         "description": "<p><strong>bold</strong> &lt;b&gt;x&lt;/b&gt;</p>"}
    assert "Multiple descriptions" in metrics["scalars"]["tagDescriptions"]["described"]
    assert set(metrics["images"]["tagRunSampledInfo"]["picture"]) == {"a", "c", "d"}


def test_a_growing_file_is_read_from_where_the_last_read_stopped(tmp_path):
    run = tmp_path / "run"
    with SummaryWriter(str(run)) as writer:
        for step in range(100):
            writer.add_scalar("loss", step, step)
    loaded = Logdir(str(tmp_path))
    loaded.reload()
    (path,) = reader.event_files(str(run))
    assert loaded.runs["run"].bytes_read == os.path.getsize(path)
    # A torn record at the end (its writer is writing it): not served, and read again next time.
    tail = _scalar_record(100)
    with open(path, "ab") as f:
        f.write(tail[:10])
    loaded.reload()
    ours = MxboardDataProvider(loaded)

    def steps():
        read = ours.read_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars", downsample=EVERY)
        return [p.step for p in read["run"]["loss"]]

    assert steps() == list(range(100))
    with open(path, "ab") as f:
        f.write(tail[10:] + b"".join(_scalar_record(step) for step in range(101, 150)))
    loaded.reload()
    assert steps() == list(range(150))
    # Every byte read once, but the torn record's 10 bytes, read again.
    assert loaded.runs["run"].bytes_read == os.path.getsize(path) + 10
    # Nothing new: the file is not read at all.
    loaded.reload()
    assert loaded.runs["run"].bytes_read == os.path.getsize(path) + 10


def test_a_loop_a_stray_file_and_a_deleted_run_cost_only_themselves(tmp_path, caplog):
    """Runs are found as TensorBoard's fast loader finds them (mxboard's walk): a link to a run is
    a run of its own, a link loop is not followed and said once; a file that is no event file
    and a run deleted while served cost only themselves."""
    for name in ("a", "b"):
        with SummaryWriter(str(tmp_path / name)) as writer:
            writer.add_scalar("loss", 1.0, 1)
    os.symlink(str(tmp_path), str(tmp_path / "a" / "loop"))
    os.symlink(str(tmp_path / "a"), str(tmp_path / "linked"))
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "events.out.tfevents.garbage").write_bytes(b"this is no event file at all")
    loaded = Logdir(str(tmp_path))
    loaded.reload()
    loaded.reload()
    assert set(loaded.runs) == {"a", "b", "c", "linked"}
    said = [r.getMessage() for r in caplog.records if r.name.startswith("tensorboard_bundle.loader")]
    assert len([line for line in said if "a link loop" in line]) == 2, said
    assert len([line for line in said if "garbage" in line]) == 1, said
    ours = MxboardDataProvider(loaded)
    read = ours.read_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars", downsample=EVERY)
    assert {run: [p.value for p in tags["loss"]] for run, tags in read.items()} == {
        "a": [1.0], "b": [1.0], "linked": [1.0]}
    import shutil

    shutil.rmtree(str(tmp_path / "b"))
    loaded.reload()
    read = ours.read_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars", downsample=EVERY)
    assert set(read) == {"a", "linked"}


def test_the_bundles_loader_is_the_default_and_load_fast_mxboard_never_reaches_tensorboards_parser():
    from tensorboard_bundle import arguments

    for argv in (["tb", "--logdir", "runs", "--load_fast=mxboard"], ["tb", "--load_fast", "mxboard", "--logdir=runs"],
                 ["tb", "--load_f", "mxboard", "--logdir=runs"]):
        launch = arguments.parse(argv)
        assert launch.loader == "mxboard"
        assert "mxboard" not in launch.argv("tb") and "--load_fast" not in " ".join(launch.argv("tb"))
    # The default, with --logdir or a spec (which logdirs.py may make one tree); none where
    # upstream's loaders or a data server of the user's are asked for.
    for argv in (["tb", "--logdir", "runs"], ["tb", "--logdir_spec", "a:/x,b:/y"]):
        assert arguments.parse(argv).loader == "mxboard"
    for asked in ("true", "false", "auto"):
        launch = arguments.parse(["tb", "--logdir", "runs", "--load_fast=" + asked])
        assert launch.loader is None and ["--load_fast", asked] == launch.argv("tb")[1:3]
    assert arguments.parse(["tb", "--logdir", "runs", "--grpc_data_provider", "localhost:1"]).loader is None
    with pytest.raises(SystemExit, match="^Error: --load_fast=mxboard serves one --logdir: leave out --logdir_spec"):
        arguments.parse(["tb", "--logdir_spec", "a:/x", "--load_fast=mxboard"])


def test_the_damaged_corpus_is_read_as_the_tfrecord_rules_leave_it_each_damage_said_once(tmp_path, caplog):
    """Every damaged file of test_damaged_files.py's corpus: the loader reads the records that the
    TFRecord rules leave (damaged_corpus.reference: a payload failing its checksum skipped, a
    length failing its own ending the file, a torn end left for the next read), says each damage
    once, and serves what upstream serves of those records alone."""
    intact = damaged_corpus.write_intact(str(tmp_path / "intact"))
    with open(intact, "rb") as f:
        data = f.read()
    cases = damaged_corpus.corpus(data)
    failures = []
    for number, case in enumerate(cases):
        damaged, rewritten = tmp_path / ("d%d" % number) / "run", tmp_path / ("r%d" % number) / "run"
        damaged.mkdir(parents=True)
        rewritten.mkdir(parents=True)
        (damaged / "events.out.tfevents.1").write_bytes(case.data)
        outcome = damaged_corpus.reference(case.data)
        (rewritten / "events.out.tfevents.1").write_bytes(b"".join(frame(p) for _, p in outcome.payloads))
        caplog.clear()
        loaded = Logdir(str(damaged.parent))
        loaded.reload()
        loaded.reload()
        file = loaded.runs["run"].files[str(damaged / "events.out.tfevents.1")]
        said = [r.getMessage() for r in caplog.records if r.name.startswith("tensorboard_bundle.loader")]
        want_said = len(outcome.skipped) + (1 if outcome.end and outcome.end[0] == "corrupt" else 0)
        # Read up to the damaged length or the torn end, else the whole file.
        want_offset = outcome.end[1] if outcome.end else len(case.data)
        theirs, ours = _upstream(str(rewritten.parent)), MxboardDataProvider(loaded)
        for method in ("read_scalars", "read_tensors", "read_blob_sequences"):
            for plugin in theirs.list_plugins(CTX, experiment_id=EXPERIMENT):
                a = getattr(theirs, method)(CTX, experiment_id=EXPERIMENT, plugin_name=plugin, downsample=EVERY)
                b = getattr(ours, method)(CTX, experiment_id=EXPERIMENT, plugin_name=plugin, downsample=EVERY)
                if _plain(a) != _plain(b):
                    failures.append((case.name, method, plugin))
        if len(said) != want_said or file.offset != want_offset:
            failures.append((case.name, said, want_said, file.offset, want_offset))
    assert not failures, failures[:5]
    assert len(cases) > 100


def test_reads_while_the_reload_thread_reads_see_whole_points_in_order(tmp_path):
    """The provider answers while the loader's own thread reads a file that grows: every answer
    is a prefix of what was logged, in order, never a point twice."""
    import threading

    run = tmp_path / "run"
    run.mkdir()
    path = run / "events.out.tfevents.1"
    path.write_bytes(b"")
    loaded = Logdir(str(tmp_path))
    ours = MxboardDataProvider(loaded)
    done = threading.Event()

    def grow():
        with open(path, "ab") as f:
            for step in range(0, 20_000, 500):
                f.write(b"".join(_scalar_record(s) for s in range(step, step + 500)))
                f.flush()
                loaded.reload()
        done.set()

    grower = threading.Thread(target=grow)
    grower.start()
    answers = 0
    while not done.is_set() or answers < 2:
        read = ours.read_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars", downsample=EVERY)
        steps = [p.step for p in read.get("run", {}).get("loss", [])]
        assert steps == list(range(len(steps)))
        assert [p.value for p in read.get("run", {}).get("loss", [])] == [float(s) for s in steps]
        answers += 1
        # Asked again and again, as a page's requests come, but not so that the reading thread
        # waits for the interpreter's lock most of its time (the test took 40 to 97 s so).
        time.sleep(0.002)
    grower.join(30)
    read = ours.read_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars", downsample=EVERY)
    assert [p.step for p in read["run"]["loss"]] == list(range(20_000)) and answers >= 2


def _write_events(path, events):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as f:
        for event in events:
            f.write(frame(event.SerializeToString()))


def _scalars(step, wall=None, **values):
    from tensorboard.compat.proto import event_pb2, summary_pb2

    return event_pb2.Event(wall_time=1.7e9 + step if wall is None else wall, step=step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=tag, simple_value=value) for tag, value in values.items()]))


def _one(step, tag, value):
    return _scalars(step, **{tag: value})


def _write_restarts_and_kinds(logdir):
    """Runs whose simple scalars the scanner decodes, read in bulk, between records that need
    upstream's migration: restarts with and without file version 2, kinds interleaved, a tag's
    kind that is no scalar, scalars of a second file, big and negative steps."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    root = logdir
    start = event_pb2.Event(wall_time=1.7e9, step=0, session_log=event_pb2.SessionLog(status=1))
    version2 = event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2")
    version1 = event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:1")
    # No file version: steps going back purge each tag's later points, one tag at a time.
    _write_events(root / "unversioned" / "events.out.tfevents.1",
                  [_one(s, "a", s) for s in range(50)] + [_one(s, "b", -s) for s in range(40)]
                  + [_one(s, "a", 100 + s) for s in range(20, 30)] + [_one(s, "b", 1.5) for s in range(45, 60)]
                  + [_one(s, "a", 7.0) for s in (3, 2, 1, 9, 8)])
    _write_events(root / "version1" / "events.out.tfevents.1",
                  [version1] + [_scalars(s, a=s, b=2 * s) for s in range(30)] + [_one(s, "a", s) for s in range(30)]
                  + [_one(s, "a", 1.0) for s in range(10, 20)])
    # File version 2: a step going back purges nothing, a second SessionLog START purges every
    # tag from its step, whatever lies between.
    second = event_pb2.Event(wall_time=1.7e9, step=15, session_log=event_pb2.SessionLog(status=1))
    _write_events(root / "version2" / "events.out.tfevents.1",
                  [version2, start] + [_one(s, "a", s) for s in range(30)] + [_one(s, "b", s) for s in range(30)]
                  + [_one(s, "a", -1.0) for s in range(5, 10)] + [second]
                  + [_one(s, "b", 2.0) for s in range(15, 40)] + [_one(s, "a", 3.0) for s in range(15, 40)])
    # Kinds interleaved step by step, and a tag first written as a histogram, then as scalars.
    rng = np.random.default_rng(1)
    with SummaryWriter(str(root / "interleaved")) as writer:
        for step in range(30):
            writer.add_scalar("loss", step / 3.0, step)
            writer.add_histogram("weights", rng.normal(size=20), step)
            writer.add_scalar("acc", 1 - step / 30.0, step)
            if step % 7 == 0:
                writer.add_image("picture", rng.integers(0, 255, (3, 4, 4), dtype=np.uint8), step)
                writer.add_text("notes", "step %d" % step, step)
        writer.add_histogram("mixed", rng.normal(size=20), 0)
        for step in range(1, 20):
            writer.add_scalar("mixed", float(step), step)
    # Two files in one run: the second a restart of the first (file version 2, one START each),
    # and a tag described in the first whose first event in the second needs no metadata.
    two = root / "two_files"
    _write_events(two / "events.out.tfevents.1",
                  [version2, start] + [_scalars(s, a=s, b=s) for s in range(40)])
    described = summary_pb2.SummaryMetadata(display_name="A shown", summary_description="a's words")
    _write_events(two / "events.out.tfevents.2",
                  [version2, event_pb2.Event(wall_time=1.8e9, step=20, session_log=event_pb2.SessionLog(status=1))]
                  + [event_pb2.Event(wall_time=1.8e9, step=20, summary=summary_pb2.Summary(value=[
                      summary_pb2.Summary.Value(tag="c", simple_value=1.0, metadata=described)]))]
                  + [_one(s, "a", 5.0) for s in range(20, 60)] + [_one(s, "c", s) for s in range(21, 60)])
    # Steps of many varint bytes, negative ones, wall times of every size.
    _write_events(root / "steps" / "events.out.tfevents.1",
                  [version2] + [_one(s, "big", s / 3.0) for s in (0, 127, 128, 2 ** 31, 2 ** 40, 2 ** 62)]
                  + [_scalars(-s, wall=float(s), neg=s) for s in range(1, 5)])


@pytest.fixture(scope="module")
def restarts(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("restarts")
    _write_restarts_and_kinds(logdir)
    return str(logdir)


def test_scalars_read_in_bulk_purge_and_interleave_as_upstream(restarts):
    """The scanner's scalars go into their columns many at once, each record that needs
    upstream's migration taken in file order with them: the same answers as upstream's, with
    and without purge_orphaned_data."""
    for purge in (True, False):
        _every_call(_upstream(restarts, purge), _ours(restarts, purge))
    ours = _ours(restarts)
    read = ours.read_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars", downsample=EVERY)
    # Checks of the corpus itself: each restart did purge.
    assert [p.step for p in read["unversioned"]["a"]] == [0, 1, 8]
    assert [p.step for p in read["unversioned"]["b"]] == list(range(40)) + list(range(45, 60))
    assert [p.step for p in read["version1"]["a"]] == list(range(20))
    assert [p.step for p in read["version2"]["a"]] == list(range(15)) + list(range(5, 10)) + list(range(15, 40))
    assert [p.step for p in read["two_files"]["b"]] == list(range(20))
    assert [p.step for p in read["steps"]["neg"]] == [-1, -2, -3, -4]
    assert sorted(read["interleaved"]) == ["acc", "loss"]
    assert ours.list_tensors(CTX, experiment_id=EXPERIMENT, plugin_name="histograms")["interleaved"].keys() == {
        "weights", "mixed"}


def _contents(run):
    """All that a Run holds, as builtins: each tag's metadata, kind and points, the files'
    offsets and ends."""
    index = run.index
    series = {}
    for tag, found in index.series.items():
        steps, walls, values = (column.tolist() for column in found.columns.view())
        series[tag] = (found.kind, steps, walls, repr(values),
                       _refs(found.refs.view()),
                       [(b.step, b.wall_time, b.offset, b.length) for b in found.blobs], len(found.pending))
    return ({tag: m.SerializeToString(deterministic=True) for tag, m in index.metadata.items()}, series,
            sorted(index.plugins), index.first_wall_time,
            {os.path.basename(p): (f.offset, f.ended) for p, f in run.files.items()})


def _refs(points):
    """A tensor series' points, as builtins: step, wall time, file name and byte offset."""
    steps, walls, offsets, file_ids, files = points
    return [(step, wall, os.path.basename(files[file_id].path), offset) for step, wall, offset, file_id in zip(
        steps.tolist(), walls.tolist(), offsets.tolist(), file_ids.tolist())]


@pytest.mark.parametrize("how", ["in turn", "read ahead", "read whole with their listing",
                                 pytest.param("scanned by a process", marks=pytest.mark.slow)])
def test_many_runs_read_together_hold_what_each_read_alone_holds(tmp_path, caplog, how, monkeypatch):
    """Runs read in one `read_runs`, their small files scanned together (the damaged corpus among
    them: a torn end, a damaged length, a damaged payload), hold what each run read alone holds,
    and each damage is said once, as alone; then every file grows, and is read from its offset.
    Read ahead on threads (as behind a network filesystem), read whole as their directory was
    listed (walk.py, as a first pass behind one), or scanned by a second process in small
    batches, several sent ahead (as a big first pass on a local disk), they hold the same."""
    import concurrent.futures

    from mxboard._reading.scan_process import ScanProcess
    from tensorboard_bundle.loader import ingest
    from tensorboard_bundle.loader.run import Run, read_runs
    from tensorboard_bundle.loader.walk import Walker

    monkeypatch.setattr(ingest, "SPREAD_BATCH", 3000)

    intact = damaged_corpus.write_intact(str(tmp_path / "intact"))
    with open(intact, "rb") as f:
        data = f.read()
    cases = damaged_corpus.corpus(data)[::3]
    logdir = tmp_path / "logdir"
    _write_restarts_and_kinds(logdir)
    for number, case in enumerate(cases):
        (logdir / ("damaged%03d" % number)).mkdir()
        (logdir / ("damaged%03d" % number) / "events.out.tfevents.1").write_bytes(case.data)
    # A run of many small files, each a restart of the one before (no file version: steps going
    # back purge): scanned in several batches, they are taken in their order.
    for number in range(12):
        _write_events(logdir / "restarted" / ("events.out.tfevents.%02d" % number),
                      [_one(s, "a", number + s / 100) for s in range(5 * number, 5 * number + 20)])
    # A file too big to be scanned with others, read a window at a time.
    with SummaryWriter(str(logdir / "big")) as writer:
        for step in range(60_000):
            writer.add_scalar("loss", step / 7.0, step)
    names = sorted(os.listdir(str(logdir)))
    paths = {name: sorted(str(logdir / name / f) for f in os.listdir(str(logdir / name))) for name in names}

    def said():
        lines = sorted(r.getMessage() for r in caplog.records if r.name.startswith("tensorboard_bundle.loader"))
        caplog.clear()
        return lines

    together = {name: Run() for name in names}
    alone = {name: Run() for name in names}
    fetch = concurrent.futures.ThreadPoolExecutor(4) if how == "read ahead" else None
    scanner = ScanProcess() if how == "scanned by a process" else None
    given = {}
    if how == "read whole with their listing":
        walker = Walker(str(logdir))
        for name in names:
            _, listing, whole = walker.look(str(logdir / name), (), each=ingest.read_whole)
            assert listing is not None
            given.update((path, read.data) for path, read in whole.items())
        # Every file is read so but the big one, and an empty one (read as any file is).
        assert sorted(given) == sorted(path for name in names for path in paths[name]
                                       if 0 < os.path.getsize(path) <= ingest.SMALL)
        assert len(given) > len(names)
    for turn in range(2):
        read_runs([(together[name], paths[name], None) for name in names], fetch, scanner, given if not turn else None)
        said_together = said()
        for name in names:
            alone[name].read(paths[name])
        assert said() == said_together
        if not turn:
            first_said = said_together
        for name in names:
            assert _contents(together[name]) == _contents(alone[name]), (turn, name)
        # Every file grows by some scalars, a torn record at the end of each (read again later).
        for name in names if not turn else ():
            with open(paths[name][-1], "ab") as f:
                f.write(b"".join(_scalar_record(1000 + step) for step in range(5)) + _scalar_record(1005)[:20])
    if fetch is not None:
        fetch.shutdown()
    if scanner is not None:
        scanner.close()
    assert len(first_said) >= len(cases) // 3
    assert together["big"].index.series["loss"].columns.size == 60_005
    assert together["version2"].files[paths["version2"][0]].offset == os.path.getsize(paths["version2"][0]) - 20


def test_files_of_scalars_alone_are_taken_a_tag_at_a_time_as_upstream_reads_them(tmp_path):
    """Files of simple scalars alone, of file version 2 (where order between tags cannot matter):
    each tag's points are taken at once (run._take_at_once), a tag met first in a later file and a
    file that grows between reloads among them; every call answers as upstream's provider, each
    run's tags in upstream's order (that in which its files first gave them, not their names')."""
    from tensorboard.compat.proto import event_pb2

    def version(path):
        _write_events(path, [event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2")])

    first, second = tmp_path / "one" / "events.out.tfevents.1", tmp_path / "two" / "events.out.tfevents.2"
    version(first)
    _write_events(first, [_scalars(step, zeta=float(step), loss=1.0 / (step + 1)) for step in range(40)])
    _write_events(first, [_one(step, "alpha", step / 2.0) for step in range(40, 60)])
    version(second)
    _write_events(second, [_one(step, tag, float(step)) for step in range(30) for tag in ("mid", "beta")])
    loaded = Logdir(str(tmp_path))
    loaded.reload()
    for turn, tags in enumerate((["zeta", "loss", "alpha"], ["zeta", "loss", "alpha", "omega"])):
        ours = MxboardDataProvider(loaded)
        _every_call(_upstream(str(tmp_path)), ours)
        listed = ours.list_scalars(CTX, experiment_id=EXPERIMENT, plugin_name="scalars")
        assert {run: list(found) for run, found in listed.items()} == {"one": tags, "two": ["mid", "beta"]}
        if not turn:
            # A second file of the run gives a tag of its own; the other run's file grows.
            later = tmp_path / "one" / "events.out.tfevents.3"
            version(later)
            _write_events(later, [_one(step, tag, 0.5) for step in range(60, 70) for tag in ("omega", "loss")])
            _write_events(second, [_one(30, "beta", 1.0)])
            loaded.reload()


def test_a_long_first_pass_shows_its_runs_as_it_reads_them(tmp_path, monkeypatch):
    """A first pass that lists the runs sooner than `runs` is copied for requests (0.5 s), then
    reads them a batch at a time, copies `runs` as it reads them: each batch's runs are served
    with their points before the pass ends (they were not, but the first run, until the end)."""
    from tensorboard_bundle.loader import logdir

    for number in range(30):
        _write_events(tmp_path / ("run%02d" % number) / "events.out.tfevents.1", [_one(1, "a", 0.5)])
    monkeypatch.setattr(logdir, "_BATCH_RUNS", 10)
    monkeypatch.setattr(logdir, "_PUBLISH_SECONDS", 0.2)
    served = []
    read_batch = logdir.Logdir._read_batch

    def slow_batch(self, batch, *args, **kwargs):
        # What a request would see as this batch starts; the batch then takes a while.
        served.append(sum(bool(run.index.series) for run in self.runs.values()))
        time.sleep(0.25)
        return read_batch(self, batch, *args, **kwargs)

    monkeypatch.setattr(logdir.Logdir, "_read_batch", slow_batch)
    loaded = logdir.Logdir(str(tmp_path))
    loaded.reload()
    assert served == [0, 10, 20]
    assert sum(bool(run.index.series) for run in loaded.runs.values()) == 30


@pytest.mark.parametrize("how", ["in turn", "read ahead", pytest.param("scanned by a process", marks=pytest.mark.slow)])
def test_a_read_stopped_early_leaves_the_files_it_never_handed_over_to_the_next(tmp_path, how, monkeypatch):
    """A read that stops after its first file (the caller's error) reads the others at the next
    call, with the sizes a listing gave: their sizes are not noted as seen (those sent to a
    scanner's process too)."""
    import concurrent.futures

    from mxboard._reading.scan_process import ScanProcess
    from tensorboard_bundle.loader import ingest
    from tensorboard_bundle.loader.ingest import EventFile, read

    # Each file too big to be scanned with the next: one Scanned a file, in turn.
    monkeypatch.setattr(ingest, "BATCH", 500)
    monkeypatch.setattr(ingest, "SPREAD_BATCH", 500)
    files = []
    for number in range(3):
        path = tmp_path / ("events.out.tfevents.%d" % number)
        path.write_bytes(b"".join(_scalar_record(step) for step in range(number * 10, number * 10 + 10)))
        files.append((EventFile(str(path)), path.stat().st_size))
    with concurrent.futures.ThreadPoolExecutor(2) if how == "read ahead" else contextlib.nullcontext() as fetch, \
            ScanProcess() if how == "scanned by a process" else contextlib.nullcontext() as scanner:
        first = read(files, fetch, scanner)
        assert next(first).file is files[0][0]
        first.close()
        again = [found.file.path for found in read(files, fetch, scanner)]
    assert again == [file.path for file, _ in files[1:]] and all(file.offset == size for file, size in files[1:])


def _histogram(tag, step, shift=0.0):
    """An old-style histogram value (upstream migrates it to a tensor when read)."""
    from tensorboard.compat.proto import summary_pb2

    return summary_pb2.Summary.Value(tag=tag, histo=summary_pb2.HistogramProto(
        min=-1.0 + shift, max=2.0 + shift + step, num=3, sum=shift, sum_squares=1.0,
        bucket_limit=[0.0 + shift, 1.0 + shift, 2.0 + step], bucket=[1.0, 0.0, 2.0]))


def _text(tag, words):
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.util import tensor_util

    metadata = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="text"))
    return summary_pb2.Summary.Value(tag=tag, metadata=metadata, tensor=tensor_util.make_tensor_proto([words]))


def _values(step, *values, wall=None):
    from tensorboard.compat.proto import event_pb2, summary_pb2

    return event_pb2.Event(wall_time=1.7e9 + step if wall is None else wall, step=step,
                           summary=summary_pb2.Summary(value=list(values)))


def _write_tensor_cases(logdir):
    """Tensor series whose points are read back from their records: a tag twice in one record
    beside other tags, restarts with and without file version 2, a series over two files, the
    second's records holding a simple scalar of the histograms' tag after each histogram."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    start = event_pb2.Event(wall_time=1.7e9, step=0, session_log=event_pb2.SessionLog(status=1))
    version2 = event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2")
    _write_events(logdir / "shared" / "events.out.tfevents.1",
                  [_values(s, _histogram("h", s), _text("t", "step %d" % s), _histogram("h", s, 0.5),
                           _histogram("g", s, 2.0)) for s in range(12)]
                  + [_values(13, _text("t", "€ and \x00 bytes"))])
    _write_events(logdir / "unversioned" / "events.out.tfevents.1",
                  [_values(s, _histogram("h", s)) for s in range(30)] + [_values(s, _histogram("h", s, 1.0))
                                                                        for s in range(10, 20)])
    _write_events(logdir / "version2" / "events.out.tfevents.1",
                  [version2, start] + [_values(s, _histogram("h", s), _text("t", str(s))) for s in range(30)]
                  + [event_pb2.Event(wall_time=1.8e9, step=12, session_log=event_pb2.SessionLog(status=1))]
                  + [_values(s, _histogram("h", s, 3.0)) for s in range(12, 20)])
    # Histograms of every shape that upstream's migration meets: no bucket filled, empty buckets at
    # either end, one bucket, edges NaN, infinite or past float32's range; a histogram of a tag
    # first written as text.
    shapes = [([0.0, 0.0, 0.0], [1.0, 2.0, 3.0], 0.0, 3.0),
              ([0.0, 2.0, 0.0, 5.0, 0.0], [1.0, 2.0, 3.0, 4.0, 9.0], 0.5, 8.0), ([], [], 0.0, 0.0),
              ([4.0], [1e39], -1e39, 1e39), ([1.0, 1.0], [0.0, 1.0], float("nan"), float("inf")),
              ([1.0, float("nan"), 2.0], [1.0, 2.0, 3.0], -2.0, 3.0)]
    _write_events(logdir / "edges" / "events.out.tfevents.1",
                  [_values(s, summary_pb2.Summary.Value(tag="h", histo=summary_pb2.HistogramProto(
                      min=low, max=high, num=5, bucket=counts, bucket_limit=limits)))
                   for s, (counts, limits, low, high) in enumerate(shapes)]
                  + [_values(10, _text("t", "words")), _values(11, _histogram("t", 11))])
    _write_events(logdir / "two_files" / "events.out.tfevents.1", [_values(s, _histogram("h", s)) for s in range(9)])
    _write_events(logdir / "two_files" / "events.out.tfevents.2",
                  [_values(s, _histogram("h", s, 1.0), _scalars(s, h=1.0).summary.value[0]) for s in range(9, 20)])


# A histogram's values beyond float32 overflow in upstream's own migration (data_compat) under
# numpy 2, which says so in a RuntimeWarning (both loaders migrate them alike).
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_tensor_points_read_back_from_their_records_answer_as_upstream(tmp_path):
    """A tensor series keeps where each point's record lies, and a read takes the points it
    chose back from their files: the same answers as upstream's (every point kept), with and
    without purge_orphaned_data; under a budget, exactly the points `evenly` chose of them."""
    _write_tensor_cases(tmp_path)
    for purge in (True, False):
        _every_call(_upstream(str(tmp_path), purge), _ours(str(tmp_path), purge))
    ours = _ours(str(tmp_path))
    for plugin in ("histograms", "text"):
        every = ours.read_tensors(CTX, experiment_id=EXPERIMENT, plugin_name=plugin, downsample=EVERY)
        for budget in (0, 1, 2, 5, 7):
            read = ours.read_tensors(CTX, experiment_id=EXPERIMENT, plugin_name=plugin, downsample=budget)
            for run, tags in every.items():
                for tag, points in tags.items():
                    chosen = evenly(len(points), budget).tolist()
                    assert _plain(read[run][tag]) == _plain([points[i] for i in chosen]), (run, tag, budget)
    every = ours.read_tensors(CTX, experiment_id=EXPERIMENT, plugin_name="histograms", downsample=EVERY)
    # Checks of the corpus itself: two points a step where "h" comes twice a record, each restart purged.
    assert [p.step for p in every["shared"]["h"]] == [s for s in range(12) for _ in range(2)]
    assert [p.step for p in every["unversioned"]["h"]] == list(range(20))
    assert [p.step for p in every["version2"]["h"]] == list(range(20))
    assert [p.step for p in every["two_files"]["h"]] == list(range(9)) + [s for s in range(9, 20) for _ in range(2)]
    series = ours._logdir.runs["two_files"].index.series["h"]
    assert series.refs.size == 31 and len(series.refs.files) == 2


def test_a_record_changed_under_the_server_leaves_its_point_out_said_once(tmp_path, caplog):
    """A tensor point's record is read again, its CRCs checked: a flipped bit, another record
    moved to its place (whole, CRCs good, another step), a file cut short or gone leaves those
    points out of the answer, each said once however often it is read, and the rest is served."""
    run = tmp_path / "run"
    _write_events(run / "events.out.tfevents.1", [_values(s, _histogram("h", s)) for s in range(50)])
    ours = _ours(str(tmp_path))
    refs = ours._logdir.runs["run"].index.series["h"].refs
    offsets = refs.offsets[:refs.size].tolist()
    path = str(run / "events.out.tfevents.1")
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        # A bit of record 10's payload; records 20 and 21 swapped (one length: steps < 128).
        data[offsets[10] + 20] ^= 0x01
        assert offsets[21] - offsets[20] == offsets[22] - offsets[21]
        twenty, twenty_one = data[offsets[20]:offsets[21]], data[offsets[21]:offsets[22]]
        data[offsets[20]:offsets[22]] = twenty_one + twenty
        f.seek(0)
        f.write(data[:offsets[45] + 30])
        f.truncate()
    caplog.clear()
    for _ in range(3):
        read = ours.read_tensors(CTX, experiment_id=EXPERIMENT, plugin_name="histograms", downsample=EVERY)
        assert [p.step for p in read["run"]["h"]] == [s for s in range(45) if s not in (10, 20, 21)]
    said = [r.getMessage() for r in caplog.records if r.name.startswith("tensorboard_bundle.loader")]
    assert len(said) == 3 + 5 and all("no longer reads as it was read" in line for line in said), said
    assert ours.list_tensors(CTX, experiment_id=EXPERIMENT, plugin_name="histograms")["run"]["h"].max_step == 49
    # The file gone (before the next reload sees it): no point, said once.
    os.remove(path)
    caplog.clear()
    for _ in range(2):
        assert ours.read_tensors(CTX, experiment_id=EXPERIMENT, plugin_name="histograms", downsample=EVERY) == {
            "run": {"h": []}}
    said = [r.getMessage() for r in caplog.records if r.name.startswith("tensorboard_bundle.loader")]
    assert len(said) == 1 and "cannot be read again" in said[0], said


def test_a_tensor_point_costs_its_place_in_the_file_not_its_tensor(tmp_path):
    """20,000 histograms of 30 buckets: each point in memory is its step, wall time, file and
    offset (28 bytes, and room to grow), and a read of 500 of them reads those 500 back."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    histo = summary_pb2.HistogramProto(min=-1.0, max=30.0, num=100, sum=5.0, sum_squares=50.0,
                                       bucket_limit=[float(i) for i in range(30)], bucket=[3.0] * 30)
    event = event_pb2.Event(summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="h", histo=histo)]))
    (tmp_path / "run").mkdir()
    with open(str(tmp_path / "run" / "events.out.tfevents.1"), "wb") as f:
        for step in range(20_000):
            event.step, event.wall_time = step, 1.7e9 + step
            f.write(frame(event.SerializeToString()))
    ours = _ours(str(tmp_path))
    refs = ours._logdir.runs["run"].index.series["h"].refs
    held = sum(column.nbytes for column in (refs.steps, refs.walls, refs.offsets, refs.file_ids))
    assert refs.size == 20_000 and held <= 2 * 28 * 20_000
    read = ours.read_tensors(CTX, experiment_id=EXPERIMENT, plugin_name="histograms", downsample=500)
    assert [p.step for p in read["run"]["h"]] == evenly(20_000, 500).tolist()
    assert all(p.numpy.shape == (30, 3) for p in read["run"]["h"])


def test_a_known_tags_histogram_that_upstreams_migration_refuses_is_skipped_and_said(tmp_path, caplog):
    """A record of known tensor tags is kept unmigrated (where it lies) only where upstream's
    migration cannot refuse it: a histogram with fewer limits than buckets is migrated, refused,
    skipped and said, as any record upstream's migration refuses."""
    from tensorboard.compat.proto import summary_pb2

    broken = summary_pb2.Summary.Value(tag="h", histo=summary_pb2.HistogramProto(
        min=0.0, max=1.0, num=3, bucket_limit=[0.5], bucket=[1.0, 1.0, 1.0]))
    _write_events(tmp_path / "run" / "events.out.tfevents.1",
                  [_values(s, _histogram("h", s)) for s in range(5)] + [_values(5, broken)]
                  + [_values(s, _histogram("h", s)) for s in range(6, 8)])
    caplog.clear()
    ours = _ours(str(tmp_path))
    read = ours.read_tensors(CTX, experiment_id=EXPERIMENT, plugin_name="histograms", downsample=EVERY)
    assert [p.step for p in read["run"]["h"]] == [0, 1, 2, 3, 4, 6, 7]
    said = [r.getMessage() for r in caplog.records if r.name.startswith("tensorboard_bundle.loader")]
    assert len(said) == 1 and "is skipped" in said[0], said


def test_a_files_rows_are_grouped_by_tag_as_a_stable_sort_groups_them():
    """run._groups, which takes a file's rows tag by tag: each tag's rows in file order, the tags
    in the order of their first rows, as a stable sort by tag gives them, whether the tags' rows
    lie together (slices), come in turn (strided slices) or neither (index arrays)."""
    from tensorboard_bundle.loader.run import _first, _groups

    def by_sort(ids):
        order = np.argsort(ids, kind="stable")
        ranked = ids[order]
        bounds = [0] + (np.flatnonzero(ranked[1:] != ranked[:-1]) + 1).tolist() + [len(ids)]
        return sorted(order[a:b].tolist() for a, b in zip(bounds, bounds[1:]))

    rng = np.random.default_rng(7)
    cases = [np.repeat([2, 0, 1], 100), np.tile([2, 0, 1], 100), np.array([4]), np.array([0, 0, 1, 0]),
             np.tile([0, 1, 0, 2], 10), np.tile([1, 2], 100)]
    for _ in range(500):
        cases.append(rng.integers(0, rng.integers(1, 6), rng.integers(1, 200)))
        cases.append(np.tile(rng.permutation(rng.integers(1, 6)), rng.integers(1, 50)))
        cases.append(np.repeat(rng.permutation(5)[:rng.integers(1, 6)], rng.integers(1, 30)))
    kinds = set()
    for ids in cases:
        rows = np.arange(len(ids))
        groups = _groups(ids.astype(np.int64))
        kinds.update(type(group).__name__ + str(getattr(group, "step", None)) for group in groups)
        assert [rows[group].tolist() for group in groups] == by_sort(ids), ids
        for group in groups:
            first, rest = _first(group)
            assert [first] + rows[rest].tolist() == rows[group].tolist()
    strided = [kind for kind in kinds if kind.startswith("slice") and kind != "sliceNone"]
    assert kinds >= {"sliceNone", "ndarrayNone"} and strided
