"""Read event files back, from a local logdir or an object store.

    for event in mxboard.reader.read_events("logs/"):  # one file, or every event file below
        print(event.step, event.summary)
    df = mxboard.reader.scalars("logs/")  # run, tag, step, wall_time, value (one row per point)

`scalars`, `histograms`, `text` and `hparams` return pandas DataFrames, as tbparse does, and
`table` returns the same columns as plain lists without pandas. Every record's CRCs are checked.
Files from any writer are read: mxboard, tensorboardX, torch.utils.tensorboard and TensorFlow.
The tables hold what TensorBoard shows: when a run logs a tag again at a step it has passed (a
run resumed from a checkpoint), the points from that step on are hidden, and `raw=True` returns
them all. A corrupt record is skipped with a `CorruptRecordWarning`, or raises `DataLossError` with
`strict=True`. docs/architecture.md ("Reading event files back") says more.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np
from google.protobuf.message import DecodeError

from ._reading import listing
from ._reading.records import corrupt, read_records
from .errors import CorruptRecordWarning, DataLossError, TornRecordWarning
from .proto import Event
from .proto import hparams as hparams_proto
from .storage import checked_logdir, is_url, run_of

if TYPE_CHECKING:
    from ._reading.small_files import Batch

__all__ = ["CorruptRecordWarning", "DataLossError", "TornRecordWarning", "read_events", "read_records", "event_files",
           "table", "scalars", "histograms", "text", "hparams", "KINDS"]


# The pip command for mxboard's `pandas` extra. It asks for a pandas that leaves numpy as it is:
# pandas 3 would upgrade an MXNet environment's numpy 1.23, and MXNet 1.9.1 cannot import then.
PANDAS_HINT = "pip install 'pandas>=1.5,<3'"


def event_files(logdir: Union[str, "os.PathLike[str]"]) -> List[str]:
    """Every event file below `logdir`, in the order TensorBoard reads them.

    Args:
        logdir: a directory, one event file, or a logdir URL.

    Returns:
        list: paths (URLs for a store): in name order within each directory, directories
        sorted; a store's parts included (`<file>`, `<file>.part0001`... in that order). Links
        are followed as TensorBoard follows them, each named by its own path below the logdir
        (`_reading/listing.py`).

    Raises:
        ValueError: a local `logdir` that does not exist (`~` is expanded), one that is neither
            a regular file nor a directory, or a mistyped URL (storage.checked_logdir: `file://`
            URLs are local paths).
        ImportError: a store's URL whose client package is not installed.

    Warns:
        MXBoardWarning: a link loop (a link to the logdir or to a directory above it), which is
            not followed, as TensorBoard does not follow it.
    """
    logdir = checked_logdir(os.fspath(logdir), must_exist=True)
    if is_url(logdir):
        return _remote_event_files(logdir)
    return listing.event_files(logdir)


def _remote_event_files(url: str) -> List[str]:
    import posixpath

    from .storage import open_filesystem

    fs, root = open_filesystem(url, shared=True)
    # A listing cached earlier in this process may miss new objects.
    fs.invalidate_cache()
    found = [p for p in fs.find(root) if "tfevents" in posixpath.basename(p)]
    # where nothing is found below it, the URL may name one event file
    if not found and fs.isfile(root):
        found = [root]
    found.sort(key=lambda p: (posixpath.dirname(p), posixpath.basename(p)))
    return [str(fs.unstrip_protocol(p)) for p in found]


def read_events(path: Union[str, "os.PathLike[str]"], strict: bool = False) -> Iterator[Any]:
    """The Events of an event file, or of every event file below a directory, CRCs checked.

    Args:
        path: an event file, a directory, or a URL (see `event_files`).
        strict: raise on a corrupt record, instead of warning and skipping it.

    Yields:
        mxboard.proto.Event: each event, in file order (every record: no point is hidden).

    Raises:
        DataLossError: with `strict`, a corrupt record, or one that is no Event.

    Warns:
        CorruptRecordWarning: a corrupt record was skipped (without `strict`).

    Example:
        >>> steps = [e.step for e in read_events("runs/exp1") if e.HasField("summary")]
    """
    for event_file in event_files(path):
        for number, payload in enumerate(read_records(event_file, strict=strict)):
            try:
                yield Event.FromString(payload)
            except DecodeError as exc:
                corrupt("%s: record %d has a valid CRC but is no Event (%s); it is skipped"
                        % (event_file, number, exc), strict)


# -- tables ------------------------------------------------------------------------------------
# Each kind of table and its columns.
KINDS = {
    "scalars": ("run", "tag", "step", "wall_time", "value"),
    "histograms": ("run", "tag", "step", "wall_time", "limits", "counts"),
    "text": ("run", "tag", "step", "wall_time", "text"),
    # Then there is one column per hyper-parameter.
    "hparams": ("run",),
}
# TensorFlow DataType -> numpy dtype.
_NUMPY = {1: "<f4", 2: "<f8", 3: "<i4", 4: "<u1", 5: "<i2", 6: "<i1", 9: "<i8", 10: "?", 17: "<u2",
          19: "<f2", 22: "<u4", 23: "<u8"}


def table(logdir: Union[str, "os.PathLike[str]"], kind: str = "scalars", raw: bool = False,
          strict: bool = False) -> Dict[str, List[Any]]:
    """The `kind` of data below `logdir` as columns, without pandas.

    Reads any writer's files (mxboard's, tensorboardX's, torch's, TensorFlow's).

    Args:
        logdir: a directory (every event file below it), one event file, or a logdir URL
            (`s3://...` or any fsspec URL; an object store's parts are read in order).
        kind: 'scalars', 'histograms', 'text' or 'hparams' (the columns: KINDS).
        raw: every record, also the points TensorBoard hides (a tag logged again at a step <=
            its last one hides its points from that step on: a resumed run).
        strict: raise on a corrupt record, instead of warning and skipping it.

    Returns:
        dict: column name -> list, rows in file order (within a run and tag, the steps as written).

    Raises:
        ValueError: an unknown kind, a local logdir that does not exist, or a mistyped logdir URL
            (see `event_files`).
        DataLossError: with `strict`, a corrupt record.

    Example:
        >>> columns = table("runs", "scalars"); columns["value"][:3]
    """
    if kind not in KINDS:
        raise ValueError("kind must be one of %s; got %r" % (", ".join(KINDS), kind))
    logdir = checked_logdir(os.fspath(logdir), must_exist=True)
    if kind == "scalars":
        return _scalar_columns(logdir, raw, strict)
    rows: List[Tuple[Any, ...]] = []
    one_file = not is_url(logdir) and os.path.isfile(logdir)
    for path in event_files(logdir):
        run = "." if one_file else run_of(logdir, path.rsplit("/", 1)[0] if is_url(path) else os.path.dirname(path))
        # Tag -> plugin name, from the metadata of the tag's first value.
        plugins: Dict[str, Optional[str]] = {}
        for event in read_events(path, strict=strict):
            if not event.HasField("summary"):
                continue
            step, wall = event.step, event.wall_time
            for value in event.summary.value:
                tag = value.tag
                if value.HasField("metadata"):
                    plugins[tag] = value.metadata.plugin_data.plugin_name or plugins.get(tag)
                row = _read_row(kind, value, plugins.get(tag), path, step, strict)
                if row is not None:
                    rows.append((run, tag, step, wall) + row)
    if kind == "hparams":
        return _hparam_columns(rows)
    if not raw:
        rows = _shown(rows)
    return {name: [row[i] for row in rows] for i, name in enumerate(KINDS[kind])}


def _scalar_columns(logdir: str, raw: bool, strict: bool) -> Dict[str, List[Any]]:
    """The scalars table as lists (`_scalar_arrays`)."""
    names, series, step, wall, value = _scalar_arrays(logdir, raw, strict)
    return {"run": [names[i][0] for i in series.tolist()], "tag": [names[i][1] for i in series.tolist()],
            "step": step.tolist(), "wall_time": wall.tolist(), "value": value.tolist()}


def _scalar_arrays(logdir: str, raw: bool, strict: bool) -> Tuple[List[Tuple[str, str]], Any, Any, Any, Any]:
    """The scalars table, read by numpy: the (run, tag) names, then numpy columns of each
    row's number in those names, its step, wall time and value.

    Simple scalar Events are decoded many at once by numpy (`_reading/scan.py`), and the rest (tensor
    scalars, events of several values) by protobuf. Small files are scanned many at once
    (`_reading/small_files.py`). The rows are in file order, and hold what TensorBoard shows unless
    `raw` is true. The work grows with the events read, not with the number of runs and tags."""
    from ._reading.small_files import Batch, batches

    # (run, tag) -> its series' number.
    names: Dict[Tuple[str, str], int] = {}
    # (series numbers, places, steps, walls, values), numpy arrays.
    chunks: List[Tuple[Any, ...]] = []
    runs = _Runs(logdir)
    for index, found in batches(event_files(logdir)):
        # A row's place is its file's number, then its record's number (in a batch, numbered
        # across its files, in their order).
        base = (index + 1) << 40
        if isinstance(found, Batch):
            _read_batch(found, [runs.of(path) for path in found.paths], base, names, chunks, strict)
        else:
            _read_file(found, runs.of(found), base, names, chunks, strict)
    if not chunks:
        return [], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    series, place, step, wall, value = (np.concatenate([c[i] for c in chunks]) for i in range(5))
    # File order, and a record's values in their own order.
    order = np.argsort(place, kind="stable")
    series, step, wall, value = series[order], step[order], wall[order], value[order].astype(np.float64)
    if not raw:
        shown = shown_points(series, step)
        series, step, wall, value = series[shown], step[shown], wall[shown], value[shown]
    return list(names), series, step, wall, value


class _Runs:
    """The run of each event file below one logdir, as `run_of` names it."""

    def __init__(self, logdir: str) -> None:
        self.logdir = logdir
        self.one_file = not is_url(logdir) and os.path.isfile(logdir)
        # A local listing names each file by the logdir as given, then plain names
        # (listing.event_files): the run is what follows it, found without relpath's work.
        self.prefix = None if is_url(logdir) else os.path.join(logdir, "")

    def of(self, path: str) -> str:
        if self.one_file:
            return "."
        if self.prefix is None:
            return run_of(self.logdir, path.rsplit("/", 1)[0])
        directory = os.path.dirname(path)
        if directory.startswith(self.prefix):
            return directory[len(self.prefix):].replace(os.sep, "/")
        return run_of(self.logdir, directory)


def _read_file(path: str, run: str, base: int, names: Dict[Tuple[str, str], int], chunks: List[Tuple[Any, ...]],
               strict: bool) -> None:
    """Read the scalars of one event file into `chunks`, its series numbered in `names`."""
    from ._reading.scan import joined, scan_file

    plugins: Dict[str, Optional[str]] = {}
    # The series number of each of the file's decoded tags, by the scan's tag id.
    series_of = np.zeros(0, np.int64)
    for window in scan_file(path, strict=strict):
        _read_others(path, run, base, window.others, plugins, names, chunks, strict)
        if len(series_of) < len(window.tags):
            series_of = np.append(series_of, numbered(names, [(run, tag) for tag in window.tags[len(series_of):]]))
        # After the others, as a tag's plugin is named in its first event, which may be one of them.
        plugins.update(window.plugins)
        ids, numbers, steps, walls, values = joined(window.scalars)
        chunks.append((series_of[ids], numbers + base, steps, walls, values))
        ids, numbers, steps, walls, values = joined(window.tensors)
        if len(ids):
            present = np.unique(ids)
            named = np.array([plugins.get(window.tags[i]) == "scalars" for i in present.tolist()])
            kept = named[np.searchsorted(present, ids)]
            chunks.append((series_of[ids[kept]], numbers[kept] + base, steps[kept], walls[kept], values[kept]))


def _read_batch(batch: "Batch", runs: List[str], base: int, names: Dict[Tuple[str, str], int],
                chunks: List[Tuple[Any, ...]], strict: bool) -> None:
    """Read the scalars of small files scanned together (each file's run in `runs`) into
    `chunks`, as `_read_file` reads each of them."""
    from ._reading.scan import joined

    window, tags = batch.window, batch.window.tags
    # Each file's tags' plugins, from its events that protobuf reads.
    plugins: List[Dict[str, Optional[str]]] = [{} for _ in runs]
    others, at, firsts = window.others, 0, batch.firsts.tolist()
    for file, path in enumerate(batch.paths):
        # A file's warnings, then its events, as one file alone says them.
        for offset in batch.corrupt[file]:
            corrupt("%s: corrupt record payload at byte %d; the record is skipped" % (path, offset), strict)
        begin = at
        while at < len(others) and others[at][0] < firsts[file + 1]:
            at += 1
        if at > begin:
            _read_others(path, runs[file], base, others[begin:at], plugins[file], names, chunks, strict, firsts[file])
    width = max(len(tags), 1)
    ids, numbers, steps, walls, values = joined(window.scalars)
    if len(ids):
        chunks.append((_batch_series(batch, runs, names, ids, numbers), numbers + base, steps, walls, values))
    ids, numbers, steps, walls, values = joined(window.tensors)
    if len(ids):
        # A tensor is a scalar where its tag's plugin in its file is "scalars": named by the
        # file's events that protobuf read, or by its decoded events' metadata.
        named = {(file, tag) for file, found in enumerate(plugins) for tag, plugin in found.items()
                 if plugin == "scalars"}
        for named_ids, named_numbers in window.named:
            pairs = np.unique(batch.file_of(named_numbers) * width + named_ids)
            named.update((pair // width, tags[pair % width]) for pair in pairs.tolist())
        pairs, inverse = np.unique(batch.file_of(numbers) * width + ids, return_inverse=True)
        kept = np.array([(pair // width, tags[pair % width]) in named for pair in pairs.tolist()],
                        bool)[inverse.reshape(-1)]
        if kept.any():
            ids, numbers = ids[kept], numbers[kept]
            chunks.append((_batch_series(batch, runs, names, ids, numbers), numbers + base, steps[kept], walls[kept],
                           values[kept]))


def _batch_series(batch: "Batch", runs: List[str], names: Dict[Tuple[str, str], int], ids: Any, numbers: Any) -> Any:
    """The series number of each of a batch's decoded rows (its tag id and record number), each
    (file, tag) looked up once in `names`, and added where it is new."""
    tags = batch.window.tags
    width = max(len(tags), 1)
    pairs, inverse = np.unique(batch.file_of(numbers) * width + ids, return_inverse=True)
    found = [names.setdefault((runs[pair // width], tags[pair % width]), len(names)) for pair in pairs.tolist()]
    return np.array(found, np.int64)[inverse.reshape(-1)]


def _read_others(path: str, run: str, base: int, others: List[Tuple[int, bytes]], plugins: Dict[str, Optional[str]],
                 names: Dict[Tuple[str, str], int], chunks: List[Tuple[Any, ...]], strict: bool,
                 first: int = 0) -> None:
    """Read the scalars of the records that protobuf parses (record number, payload) into
    `chunks`, noting each tag's plugin in `plugins`. The file's first record is number `first`."""
    rows: List[Tuple[int, int, int, float, float]] = []
    for number, payload in others:
        try:
            event = Event.FromString(payload)
        except DecodeError as exc:
            corrupt("%s: record %d has a valid CRC but is no Event (%s); it is skipped"
                    % (path, number - first, exc), strict)
            continue
        if not event.HasField("summary"):
            continue
        for value in event.summary.value:
            if value.HasField("metadata"):
                plugins[value.tag] = value.metadata.plugin_data.plugin_name or plugins.get(value.tag)
            row = _read_row("scalars", value, plugins.get(value.tag), path, event.step, strict)
            if row is not None:
                rows.append((names.setdefault((run, value.tag), len(names)), base + number, event.step,
                             event.wall_time, row[0]))
    if rows:
        chunks.append(tuple(np.array(column, dtype) for column, dtype in
                            zip(zip(*rows), (np.int64, np.int64, np.int64, np.float64, np.float64))))


def numbered(names: Dict[Any, int], keys: List[Any]) -> Any:
    """The number of each of `keys` (distinct) in `names`, which numbers its keys in the order
    they were added; a key not there yet is added."""
    found = list(map(names.get, keys))
    numbers = np.array([-1 if known is None else known for known in found], np.int64)
    if None in found:
        missing = [i for i, known in enumerate(found) if known is None]
        start = len(names)
        names.update(zip([keys[i] for i in missing], range(start, start + len(missing))))
        numbers[missing] = np.arange(start, start + len(missing))
    return numbers


def shown_points(series: Any, steps: Any) -> Any:
    """Which points TensorBoard shows, of points in the order written: a point is hidden when a
    later point of its series has a step at or below its own (a run resumed from a checkpoint
    logs its tags again from there).

    Computed for every series at once: the points are sorted by series, keeping their order, and
    each step is compared with the least step after it in its series. The steps are replaced by
    their ranks, offset by series, so that one running minimum over the reversed points never
    crosses from one series into the next."""
    n = len(steps)
    if n < 2:
        return np.ones(n, bool)
    by_series = np.argsort(series, kind="stable")
    ranks = np.unique(steps, return_inverse=True)[1].reshape(-1).astype(np.int64)
    _, dense = np.unique(series, return_inverse=True)
    keys = dense.reshape(-1).astype(np.int64)[by_series] * (n + 1) + ranks[by_series]
    least_after = np.minimum.accumulate(keys[::-1])[::-1]
    later = np.append(least_after[1:], np.iinfo(np.int64).max)
    # the last point of a series has no later point in it: the next series' keys are all higher
    shown = np.empty(n, bool)
    shown[by_series] = keys < later
    return shown


def _shown(rows: List[Tuple[Any, ...]]) -> List[Tuple[Any, ...]]:
    """The rows TensorBoard shows.

    In each run and tag, a step at or below the last one hides the points from that step on. This
    is the rule of TensorBoard's fast loader: a run resumed from a checkpoint logs its tags again
    from there."""
    # (run, tag) -> [(step, index)], steps rising.
    kept: Dict[Tuple[Any, ...], List[Tuple[int, int]]] = {}
    hidden = set()
    for index, row in enumerate(rows):
        series = kept.setdefault(row[:2], [])
        while series and series[-1][0] >= row[2]:
            hidden.add(series.pop()[1])
        series.append((row[2], index))
    return [row for index, row in enumerate(rows) if index not in hidden] if hidden else rows


def _read_row(kind: str, value: Any, plugin: Optional[str], path: str, step: int, strict: bool
              ) -> Optional[Tuple[Any, ...]]:
    """`_row`, where a value whose tensor has not the shape or type its dashboard needs (a
    histogram not k x 3, a text of numbers, an empty scalar tensor) is skipped with a
    CorruptRecordWarning naming it, or raises DataLossError with `strict`."""
    try:
        return _row(kind, value, plugin)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, DecodeError) as exc:
        corrupt("%s: %r at step %d is not a value of the %s kind TensorBoard reads (%s: %s); it is skipped"
                % (path, value.tag, step, kind, type(exc).__name__, exc), strict)
        return None


def _row(kind: str, value: Any, plugin: Optional[str]) -> Optional[Tuple[Any, ...]]:
    """The kind-specific cells of one summary value, or None if it is of another kind."""
    field = value.WhichOneof("value")
    if kind == "scalars":
        if field == "simple_value":
            return (value.simple_value,)
        if field == "tensor" and plugin == "scalars":
            return (float(_ndarray(value.tensor).reshape(-1)[0]),)
    elif kind == "histograms":
        if field == "histo":
            limits = np.array(value.histo.bucket_limit)
            return limits, np.array(value.histo.bucket)
        if field == "tensor" and plugin == "histograms":
            buckets = _ndarray(value.tensor).reshape(-1, 3)
            return buckets[:, 1].astype(np.float64), buckets[:, 2].astype(np.float64)
    elif kind == "text":
        if field == "tensor" and plugin == "text":
            strings = _ndarray(value.tensor).reshape(-1)
            return ("\n".join(s.decode("utf-8", "replace") for s in strings),)
    elif kind == "hparams" and plugin == "hparams":
        data = hparams_proto.HParamsPluginData.FromString(value.metadata.plugin_data.content)
        if data.WhichOneof("data") == "session_start_info":
            return ({name: hparam_value(v) for name, v in data.session_start_info.hparams.items()},)
    return None


def hparam_value(value: Any) -> Any:
    """A hyper-parameter's protobuf `Value` as a Python value.

    A number, string or bool is itself, a list or struct is a list or dict, and null (or unset) is
    None: every kind that JSON can hold."""
    from google.protobuf.json_format import MessageToDict

    kind = value.WhichOneof("kind")
    if kind in (None, "null_value"):
        return None
    if kind in ("number_value", "string_value", "bool_value"):
        return getattr(value, kind)
    return MessageToDict(value)


def _hparam_columns(rows: List[Tuple[Any, ...]]) -> Dict[str, List[Any]]:
    """One row per run, with its hyper-parameters (the last ones written, if a run has several)."""
    runs: Dict[str, Dict[str, Any]] = {}
    for run, _, _, _, values in rows:
        runs.setdefault(run, {}).update(values)
    names = sorted({name for values in runs.values() for name in values})
    columns: Dict[str, List[Any]] = {"run": list(runs)}
    for name in names:
        columns[name] = [values.get(name) for values in runs.values()]
    return columns


def _ndarray(tensor: Any) -> Any:
    """A TensorProto's values as a numpy array (strings as bytes)."""
    shape = [d.size for d in tensor.tensor_shape.dim]
    # DataType 7 is DT_STRING.
    if tensor.dtype == 7:
        return np.array(list(tensor.string_val), dtype=object).reshape(shape or -1)
    dtype = np.dtype(_NUMPY[tensor.dtype])
    if tensor.tensor_content:
        return np.frombuffer(tensor.tensor_content, dtype=dtype).reshape(shape)
    for field in ("float_val", "double_val", "int_val", "int64_val", "bool_val", "half_val"):
        values = getattr(tensor, field, None)
        if values:
            array = np.array(values)
            if field == "half_val" or (field == "int_val" and dtype == np.float16):
                array = array.astype(np.uint16).view(np.float16)
            return np.broadcast_to(array.astype(dtype), shape or array.shape).copy()
    return np.zeros(shape, dtype=dtype)


def _frame(kind: str, logdir: Union[str, "os.PathLike[str]"], raw: bool, strict: bool) -> Any:
    # A mistyped or missing logdir is said first, with or without pandas.
    logdir = checked_logdir(os.fspath(logdir), must_exist=True)
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("mxboard.reader.%s needs pandas: %s (or use mxboard.reader.table(logdir, %r) for plain "
                          "columns)" % (kind, PANDAS_HINT, kind)) from None
    if kind != "scalars":
        return pd.DataFrame(table(logdir, kind, raw=raw, strict=strict))
    # straight from numpy: no Python object a row (2M rows took 5 times the memory as lists)
    names, series, step, wall, value = _scalar_arrays(logdir, raw, strict)
    runs, tags = (np.array([name[i] for name in names], dtype=object) for i in (0, 1))
    return pd.DataFrame({"run": runs[series], "tag": tags[series], "step": step, "wall_time": wall, "value": value})


def scalars(logdir: Union[str, "os.PathLike[str]"], raw: bool = False, strict: bool = False) -> Any:
    """Every scalar below `logdir` (needs pandas).

    Args:
        logdir: a directory (every event file below it), one event file, or a logdir URL
            (`s3://...` or any fsspec URL; an object store's parts are read in order).
        raw: return every record, also the points TensorBoard hides (see `table`).
        strict: raise on a corrupt record, instead of warning and skipping it.

    Returns:
        pandas.DataFrame: run, tag, step, wall_time, value.

    Raises:
        ImportError: pandas is not installed (`table` needs none).

    Example:
        >>> df = scalars("runs"); df[df.tag == "loss"].plot(x="step", y="value")
    """
    return _frame("scalars", logdir, raw, strict)


def histograms(logdir: Union[str, "os.PathLike[str]"], raw: bool = False, strict: bool = False) -> Any:
    """Every histogram below `logdir` (needs pandas).

    Args:
        logdir: a directory (every event file below it), one event file, or a logdir URL
            (`s3://...` or any fsspec URL; an object store's parts are read in order).
        raw: return every record, also the points TensorBoard hides (see `table`).
        strict: raise on a corrupt record, instead of warning and skipping it.

    Returns:
        pandas.DataFrame: run, tag, step, wall_time, limits, counts (bucket i holds counts[i]
        values up to limits[i]).

    Raises:
        ImportError: pandas is not installed.

    Example:
        >>> histograms("runs").groupby("tag").step.max()
    """
    return _frame("histograms", logdir, raw, strict)


def text(logdir: Union[str, "os.PathLike[str]"], raw: bool = False, strict: bool = False) -> Any:
    """Every text summary below `logdir` (needs pandas).

    Args:
        logdir: a directory (every event file below it), one event file, or a logdir URL
            (`s3://...` or any fsspec URL; an object store's parts are read in order).
        raw: return every record, also the points TensorBoard hides (see `table`).
        strict: raise on a corrupt record, instead of warning and skipping it.

    Returns:
        pandas.DataFrame: run, tag, step, wall_time, text.

    Raises:
        ImportError: pandas is not installed.

    Example:
        >>> text("runs").text.tolist()
    """
    return _frame("text", logdir, raw, strict)


def hparams(logdir: Union[str, "os.PathLike[str]"], strict: bool = False) -> Any:
    """The hyper-parameters of each run below `logdir` (needs pandas).

    Args:
        logdir: a directory (every event file below it), one event file, or a logdir URL
            (`s3://...` or any fsspec URL; an object store's parts are read in order).
        strict: raise on a corrupt record, instead of warning and skipping it.

    Returns:
        pandas.DataFrame: run, then one column per hyper-parameter. Their metrics are scalars
        (see `scalars`).

    Raises:
        ImportError: pandas is not installed.

    Example:
        >>> hparams("runs").sort_values("lr")
    """
    return _frame("hparams", logdir, False, strict)
