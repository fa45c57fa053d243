"""TensorBoard's DataProvider over the loader's index (`--load_fast=mxboard`).

Every call answers as upstream's MultiplexerDataProvider answers with every point kept, where the
series fits the request's budget (`downsample`); over it, scalars keep the first and the last
point and each bucket's extremes (downsample.extremes), tensors and blob sequences points evenly
spaced (downsample.evenly), instead of upstream's random sample. Runs are named by their
directory, as upstream names them. A run's answer to a listing is kept while the run does not
change: a page's listing of 100,000 runs makes the answers of those that changed alone.
"""
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

from tensorboard import errors
from tensorboard.compat.proto import summary_pb2
from tensorboard.data import provider

from tensorboard_bundle.loader import blobs
from tensorboard_bundle.loader.downsample import evenly, extremes
from tensorboard_bundle.loader.index import Changes, Series
from tensorboard_bundle.loader.logdir import Logdir

__all__ = ["MxboardDataProvider", "start"]

# {run: {tag: what a call returns for it}}
Answer = Dict[str, Dict[str, Any]]
# A run's answer to a listing: (the run, its index's `changes` then, {tag: the answer}).
_Listing = Tuple[Any, int, Dict[str, Any]]


# How long `start` waits at most for the first pass.
FIRST_PASS_WAIT = 2.0


def start(logdir: str, reload_interval: float, purge_orphaned_data: bool = True) -> "MxboardDataProvider":
    """A provider over `logdir`, loading it now and every `reload_interval` seconds (0: once)
    on a thread of its own; `purge_orphaned_data` as TensorBoard's flag of that name. It is given
    once the first pass ended (at most FIRST_PASS_WAIT seconds after it began), so that a page
    opened at the server's banner lists every run, not the first found; at once where the pass is
    a long one (Logdir.shown), whose runs are then shown a batch at a time as they are read."""
    loaded = Logdir(logdir, purge_orphaned_data)
    loaded.start(reload_interval)
    loaded.shown.wait(FIRST_PASS_WAIT)
    return MxboardDataProvider(loaded)


class MxboardDataProvider(provider.DataProvider):  # type: ignore[misc]
    def __init__(self, logdir: Logdir) -> None:
        self._logdir = logdir
        # {(describe, plugin, data class): {run name: its listing}}: `_list`'s answers kept.
        self._listings: Dict[Tuple[Any, str, int], Dict[str, _Listing]] = {}
        # The same key -> (the runs, Changes.count, every run's listing) when all were last listed.
        self._whole: Dict[Tuple[Any, str, int], Tuple[Any, int, Dict[str, _Listing]]] = {}

    def __str__(self) -> str:
        return "MxboardDataProvider(logdir=%r)" % self._logdir.path

    def experiment_metadata(self, ctx: Any = None, *, experiment_id: str) -> Any:
        _check(ctx, experiment_id)
        return provider.ExperimentMetadata(data_location=self._logdir.path)

    def list_plugins(self, ctx: Any = None, *, experiment_id: str) -> Any:
        _check(ctx, experiment_id)
        plugins = set()
        for run in list(self._logdir.runs.values()):
            with run.index.lock:
                plugins |= run.index.plugins
        return frozenset(plugins)

    def list_runs(self, ctx: Any = None, *, experiment_id: str) -> Any:
        _check(ctx, experiment_id)
        return [provider.Run(run_id=name, run_name=name, start_time=run.index.first_wall_time)
                for name, run in self._logdir.runs.items()]

    def list_scalars(self, ctx: Any = None, *, experiment_id: str, plugin_name: str,
                     run_tag_filter: Any = None) -> Answer:
        _check(ctx, experiment_id)
        return self._list(_scalar_series, plugin_name, run_tag_filter, summary_pb2.DATA_CLASS_SCALAR)

    def read_scalars(self, ctx: Any = None, *, experiment_id: str, plugin_name: str, downsample: Any = None,
                     run_tag_filter: Any = None) -> Answer:
        _check(ctx, experiment_id, downsample)
        result: Answer = {}
        for run, tag, _, series in self._series(plugin_name, run_tag_filter, summary_pb2.DATA_CLASS_SCALAR):
            steps, walls, values = series
            chosen = extremes(values, downsample)
            result.setdefault(run, {})[tag] = [
                provider.ScalarDatum(step=step, wall_time=wall, value=value)
                for step, wall, value in zip(steps[chosen].tolist(), walls[chosen].tolist(),
                                             values[chosen].tolist())]
        return result

    def read_last_scalars(self, ctx: Any = None, *, experiment_id: str, plugin_name: str,
                          run_tag_filter: Any = None) -> Answer:
        _check(ctx, experiment_id)
        result: Answer = {}
        for run, tag, _, series in self._series(plugin_name, run_tag_filter, summary_pb2.DATA_CLASS_SCALAR):
            steps, walls, values = series
            if len(steps):
                result.setdefault(run, {})[tag] = provider.ScalarDatum(
                    step=int(steps[-1]), wall_time=float(walls[-1]), value=float(values[-1]))
        return result

    def list_tensors(self, ctx: Any = None, *, experiment_id: str, plugin_name: str,
                     run_tag_filter: Any = None) -> Answer:
        _check(ctx, experiment_id)
        return self._list(_tensor_series, plugin_name, run_tag_filter, summary_pb2.DATA_CLASS_TENSOR)

    def read_tensors(self, ctx: Any = None, *, experiment_id: str, plugin_name: str, downsample: Any = None,
                     run_tag_filter: Any = None) -> Answer:
        _check(ctx, experiment_id, downsample)
        result: Answer = {}
        for run, tag, _, points in self._series(plugin_name, run_tag_filter, summary_pb2.DATA_CLASS_TENSOR):
            # Only the points chosen are read back from their files.
            chosen = evenly(len(points.steps), downsample)
            result.setdefault(run, {})[tag] = [
                provider.TensorDatum(step=step, wall_time=wall, numpy=array)
                for step, wall, array in blobs.read_tensors(points, chosen, tag)]
        return result

    def list_blob_sequences(self, ctx: Any = None, *, experiment_id: str, plugin_name: str,
                            run_tag_filter: Any = None) -> Answer:
        _check(ctx, experiment_id)
        return self._list(_blob_sequence, plugin_name, run_tag_filter, summary_pb2.DATA_CLASS_BLOB_SEQUENCE)

    def read_blob_sequences(self, ctx: Any = None, *, experiment_id: str, plugin_name: str, downsample: Any = None,
                            run_tag_filter: Any = None) -> Answer:
        _check(ctx, experiment_id, downsample)
        result: Answer = {}
        for run, tag, _, refs in self._series(plugin_name, run_tag_filter, summary_pb2.DATA_CLASS_BLOB_SEQUENCE):
            # The first event of each step, in the order of steps (as upstream).
            by_step: Dict[int, Any] = {}
            for ref in refs:
                by_step.setdefault(ref.step, ref)
            data = [provider.BlobSequenceDatum(
                wall_time=ref.wall_time, step=step,
                values=tuple(provider.BlobReference(blobs.encode_key(experiment_id, plugin_name, run, tag, step, i))
                             for i in range(ref.length)))
                for step, ref in sorted(by_step.items())]
            result.setdefault(run, {})[tag] = [data[i] for i in evenly(len(data), downsample).tolist()]
        return result

    def read_blob(self, ctx: Any = None, *, blob_key: str) -> bytes:
        _check(ctx)
        _, _, run, tag, step, index = blobs.decode_key(blob_key)
        loaded = self._logdir.runs.get(run)
        if loaded is None:
            raise errors.NotFoundError("%s: no run %r" % (blob_key, run))
        with loaded.index.lock:
            metadata = loaded.index.metadata.get(tag)
            series = loaded.index.series.get(tag)
            if metadata is None or series is None or metadata.data_class != summary_pb2.DATA_CLASS_BLOB_SEQUENCE:
                raise errors.NotFoundError(blob_key)
            # The first event at this step, as upstream.
            ref = next((ref for ref in series.blobs if ref.step == step), None)
        if ref is None:
            raise errors.NotFoundError("%s: no such step %r" % (blob_key, step))
        return blobs.read_blob(ref, tag, index, blob_key)

    def kept_listings(self, ctx: Any = None, *, experiment_id: str, plugin_name: str,
                      data_class: int) -> Dict[str, _Listing]:
        """`list_scalars` (DATA_CLASS_SCALAR), `list_tensors` (DATA_CLASS_TENSOR) or
        `list_blob_sequences` (DATA_CLASS_BLOB_SEQUENCE) unfiltered, as each run's kept answer:
        {run: (the run, its `changes` then, {tag: what the call gives for it})}, every run in the
        logdir's order, a run's tuple the same object while the run does not change (a caller may
        keep what it made of it). Never to be changed by the caller."""
        _check(ctx, experiment_id)
        describe = {summary_pb2.DATA_CLASS_SCALAR: _scalar_series, summary_pb2.DATA_CLASS_TENSOR: _tensor_series,
                    summary_pb2.DATA_CLASS_BLOB_SEQUENCE: _blob_sequence}[data_class]
        return self._kept(describe, plugin_name, None, data_class)

    def _list(self, describe: Callable[[Any, Series], Any], plugin_name: str, run_tag_filter: Any,
              data_class: int) -> Answer:
        """Each run's series of the plugin and data class that the filters let through, as
        `describe(metadata, series)` gives each."""
        runs = run_tag_filter.runs if run_tag_filter is not None else None
        tags = run_tag_filter.tags if run_tag_filter is not None else None
        result: Answer = {}
        for name, listing in self._kept(describe, plugin_name, runs, data_class).items():
            answers = listing[2] if tags is None else {tag: v for tag, v in listing[2].items() if tag in tags}
            if answers:
                # A copy: the caller may change what it is given.
                result[name] = dict(answers)
        return result

    def _kept(self, describe: Callable[[Any, Series], Any], plugin_name: str, runs: Any,
              data_class: int) -> Dict[str, _Listing]:
        """Each run's answer (of those in `runs`, None: all) to a listing of the plugin's series of
        the data class, as `describe(metadata, series)` gives each, in the logdir's order. A run's
        answer is kept while the run does not change (a listing of 100,000 runs is asked for while
        most of them stand still)."""
        key = (describe, plugin_name, data_class)
        now, changes = self._logdir.runs, Changes.count
        whole = self._whole.get(key)
        if runs is None and whole is not None and whole[0] is now and whole[1] == changes:
            # No run came, went or changed since (100,000 runs: 0.22 s to check each).
            return whole[2]
        kept = self._listings.get(key, {})
        # Every run listed: the answers of runs gone are dropped with the old dict.
        fresh: Dict[str, _Listing] = {} if runs is None else kept
        found: Dict[str, _Listing] = {}
        for name, run in list(now.items()):
            if runs is not None and name not in runs:
                continue
            listing = kept.get(name)
            if listing is None or listing[0] is not run or listing[1] != run.index.changes:
                with run.index.lock:
                    listing = (run, run.index.changes, {
                        tag: describe(metadata, run.index.series[tag])
                        for tag, metadata in run.index.metadata.items()
                        if metadata.data_class == data_class and metadata.plugin_data.plugin_name == plugin_name})
            fresh[name] = found[name] = listing
        self._listings[key] = fresh
        if runs is None:
            self._whole[key] = (now, changes, found)
        return found

    def _series(self, plugin_name: str, run_tag_filter: Any, data_class: int) -> Iterator[Tuple[str, str, Any, Any]]:
        """(run, tag, metadata, points) of each time series the filters let through, in upstream's
        order; points: the columns of a scalar series, the RefsView of a tensor series, the
        BlobRefs of a blob sequence, each as they stand now. A run all of whose series are
        filtered out is answered as upstream answers it (absent)."""
        runs = run_tag_filter.runs if run_tag_filter is not None else None
        tags = run_tag_filter.tags if run_tag_filter is not None else None
        for name, run in list(self._logdir.runs.items()):
            if runs is not None and name not in runs:
                continue
            with run.index.lock:
                chosen = [(tag, metadata, _points(run.index.series[tag]))
                          for tag, metadata in run.index.metadata.items()
                          if (tags is None or tag in tags) and metadata.data_class == data_class
                          and metadata.plugin_data.plugin_name == plugin_name]
            for tag, metadata, found in chosen:
                yield name, tag, metadata, found


def _scalar_series(metadata: Any, series: Series) -> Any:
    return _Scalars(metadata, series.columns.view()[:2])


def _tensor_series(metadata: Any, series: Series) -> Any:
    return _Tensors(metadata, series.refs.view()[:2])


def _lazy(upstream_class: Any) -> Any:
    """`upstream_class` (a time series of upstream's), its largest step and wall time found when
    first read: the tags routes read neither (a listing of 10,000 runs' scalars: 0.15 s, 0.10 s so)."""

    class Lazy(upstream_class):  # type: ignore[misc]
        __slots__ = ("_points", "_found")

        def __init__(self, metadata: Any, points: Tuple[Any, Any]) -> None:
            # The series' steps and wall times as they stood (arrays that later appends never change).
            self._points = points
            self._found: Optional[Tuple[Optional[int], Optional[float]]] = None
            super().__init__(max_step=None, max_wall_time=None, plugin_content=metadata.plugin_data.content,
                             description=metadata.summary_description, display_name=metadata.display_name)

        def _largest(self) -> Tuple[Optional[int], Optional[float]]:
            found = self._found
            if found is None:
                steps, walls = self._points
                found = self._found = (int(steps.max()), float(walls.max())) if len(steps) else (None, None)
            return found

        # Upstream's fields, read by its properties, __eq__, __hash__ and __repr__; its __init__
        # sets them (to nothing here).
        _max_step = property(lambda self: self._largest()[0], lambda self, value: None)
        _max_wall_time = property(lambda self: self._largest()[1], lambda self, value: None)

    Lazy.__name__ = Lazy.__qualname__ = upstream_class.__name__
    return Lazy


_Scalars = _lazy(provider.ScalarTimeSeries)
_Tensors = _lazy(provider.TensorTimeSeries)


def _blob_sequence(metadata: Any, series: Series) -> Any:
    refs = series.blobs
    return provider.BlobSequenceTimeSeries(
        max_step=max((ref.step for ref in refs), default=None),
        max_wall_time=max((ref.wall_time for ref in refs), default=None),
        max_length=max((ref.length for ref in refs), default=None),
        plugin_content=metadata.plugin_data.content, description=metadata.summary_description,
        display_name=metadata.display_name)


def _points(series: Series) -> Any:
    """A series' points as they stand now (a tag with metadata has its kind)."""
    if series.kind == "scalar":
        return series.columns.view()
    if series.kind == "tensor":
        return series.refs.view()
    return list(series.blobs)


def _check(ctx: Any, experiment_id: Optional[str] = "", downsample: Any = 0) -> None:
    """Upstream's checks of the arguments (MultiplexerDataProvider's), with its errors."""
    if type(ctx).__name__ != "RequestContext":
        raise TypeError("ctx must be a RequestContext; got: %r" % (ctx,))
    if not isinstance(experiment_id, str):
        raise TypeError("experiment_id must be %r, but got %r: %r" % (str, type(experiment_id), experiment_id))
    if downsample is None:
        raise TypeError("`downsample` required but not given")
    if not isinstance(downsample, int):
        raise TypeError("`downsample` must be an int, but got %r: %r" % (type(downsample), downsample))

