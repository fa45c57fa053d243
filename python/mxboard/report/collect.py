"""Read a logdir once into what the report draws.

That is each run's scalar series as TensorBoard shows them, the hparams table, the Custom Scalars
layout, and the images, audio, texts, histograms and PR curves that TensorBoard's server would
keep (sampled with its own reservoirs and sizes, so memory follows what is kept, not the size of
the logdir). It also notes what TensorBoard shows that the report leaves out. Files are read
through `mxboard.reader`, and the Distributions bands are computed by TensorBoard's own code, so
that they are what it shows."""
import errno
import os
import re
import time
import warnings
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Pattern, Tuple

import numpy as np
from google.protobuf.message import DecodeError

from .. import reader
from .._reading.records import corrupt
from .._reading.scan import joined, scan_file
from .._reading.small_files import Batch, batches
from ..errors import MXBoardWarning
from ..proto import Event
from ..proto import hparams as hparams_proto
from ..storage import run_of

__all__ = ["Collected", "ScalarColumns", "collect", "KEEP", "printable"]

# the items kept per run and tag, as TensorBoard's server keeps them
KEEP = {"images": 10, "audio": 10, "text": 10, "histograms": 500, "pr_curves": 100}
# The most lines about values that could not be read (a file full of them gives its first).
MAX_NOTES = 100
# What TensorBoard draws and the report does not: the dashboard, and why.
LEFT_OUT = {
    "graphs": ("Graph", "an interactive graph explorer, too big for a page"),
    "projector": ("Projector", "embeddings in 3-D, too big for a page"),
    "mesh": ("Mesh", "3-D point clouds and meshes, drawn with WebGL"),
}
DRAWN = {"scalars", "images", "audio", "text", "histograms", "distributions", "pr_curves", "custom_scalars",
         "hparams"}


class ScalarColumns(Mapping[Tuple[str, str], Tuple[Any, Any, Any]]):
    """The scalar series, `{(run, tag): (steps, values, walls)}`, held as three columns (arrays
    `step` and `wall` of float64, and `value` of float32 where every value is one, as every
    simple_value is, else float64) in which each series' points are together: series i, named
    `names[i]`, is `bounds[i]:bounds[i + 1]` of them, and its value in the mapping is three views.
    The page reads the columns at once."""

    def __init__(self, keys: List[Tuple[str, str]], bounds: Any, steps: Any, values: Any, walls: Any) -> None:
        self.names, self.bounds = keys, bounds
        self.step, self.value, self.wall = steps, values, walls
        self._index: Optional[Dict[Tuple[str, str], int]] = None

    def __getitem__(self, key: Tuple[str, str]) -> Tuple[Any, Any, Any]:
        if self._index is None:
            self._index = {name: i for i, name in enumerate(self.names)}
        i = self._index[key]
        start, end = int(self.bounds[i]), int(self.bounds[i + 1])
        return self.step[start:end], self.value[start:end], self.wall[start:end]

    def __iter__(self) -> Iterator[Tuple[str, str]]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def points(self) -> int:
        """The points of every series."""
        return len(self.step)


class _Points:
    """Every scalar point read, of every run and tag, as numpy columns in chunks.

    Each point keeps its place in the logdir (its file and record), so that points read by the
    vectorized path and by protobuf are put back in the order they were written. TensorBoard's
    rule is then applied: a step logged again hides the points from that step on. The work is
    done for all series at once, so it grows with the points, not with the number of series."""

    __slots__ = ("keys", "columns", "pending")

    def __init__(self) -> None:
        self.keys: Dict[Tuple[str, str], int] = {}
        # The chunks of each column: series numbers (int32), places, steps, values, walls.
        self.columns: Tuple[List[Any], ...] = ([], [], [], [], [])
        self.pending: List[Tuple[int, int, int, float, float]] = []

    def number(self, key: Tuple[str, str]) -> int:
        """The number of the series of `key` (run, tag)."""
        return self.keys.setdefault(key, len(self.keys))

    def add(self, key: Tuple[str, str], place: int, step: int, value: float, wall: float) -> None:
        self.pending.append((self.number(key), place, step, value, wall))
        if len(self.pending) >= 4096:
            self._flush()

    def extend(self, series: Any, places: Any, steps: Any, values: Any, walls: Any) -> None:
        self._flush()
        for column, chunk in zip(self.columns, (series.astype(np.int32, copy=False), places, steps, values, walls)):
            column.append(chunk)

    def _flush(self) -> None:
        if self.pending:
            series, places, steps, values, walls = zip(*self.pending)
            self.pending = []
            for column, chunk, dtype in zip(self.columns, (series, places, steps, values, walls),
                                            (np.int32, np.int64, np.int64, np.float64, np.float64)):
                column.append(np.array(chunk, dtype))
            # Values that float32 holds exactly (every simple_value) are kept so, as the scanner's are.
            narrow = self.columns[3][-1].astype(np.float32)
            if np.array_equal(narrow, self.columns[3][-1], equal_nan=True):
                self.columns[3][-1] = narrow

    def series(self) -> "ScalarColumns":
        """Every series as TensorBoard shows it."""
        self._flush()
        if not self.columns[0]:
            return ScalarColumns([], np.zeros(1, np.int64), np.zeros(0), np.zeros(0), np.zeros(0))
        # Each column is joined when it is needed and its chunks freed, so that memory holds the
        # chunks and about one column more. First the order: the points of each series together,
        # in the order written (a window's events that protobuf reads come before its decoded
        # ones, and their places are sorted back in).
        series, order = self._joined(0), self._place_order()
        by_series = np.argsort(series if order is None else series[order], kind="stable")
        if order is not None:
            by_series = order[by_series]
        del order
        # Indices of 4 bytes, as the columns are put in order (a logdir of 2**31 points would not fit).
        if len(by_series) < 1 << 31:
            by_series = by_series.astype(np.int32)
        series = series[by_series]
        steps = self._joined(2)[by_series]
        first = _firsts(series)
        # Where every series' steps rise, every point is shown (the common case: no run resumed).
        if not (first[1:] | (steps[1:] > steps[:-1])).all():
            shown = reader.shown_points(series, steps)
            by_series, series, steps = by_series[shown], series[shown], steps[shown]
            first = _firsts(series)
        steps = steps.astype(np.float64)
        # Values stay float32 where every one is (simple_value is): the same numbers, in half the memory.
        values = self._joined(3)[by_series]
        walls = self._joined(4)[by_series].astype(np.float64, copy=False)
        del by_series
        starts = np.flatnonzero(first)
        names = list(self.keys)
        return ScalarColumns([names[number] for number in series[starts].tolist()],
                             np.append(starts, len(series)), steps, values, walls)

    def _place_order(self) -> Any:
        """The order of the points by their places, or None where they are in order already
        (each chunk in order, and each after the one before it: no column is joined then)."""
        chunks = [c for c in self.columns[1] if len(c)]
        if all((c[1:] > c[:-1]).all() for c in chunks) and all(a[-1] < b[0] for a, b in zip(chunks, chunks[1:])):
            self.columns[1].clear()
            return None
        return np.argsort(self._joined(1), kind="stable")

    def _joined(self, i: int) -> Any:
        chunks = self.columns[i]
        joined = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
        chunks.clear()
        return joined


def _firsts(series: Any) -> Any:
    """Where each run of equal series numbers starts (True at the first point of a series)."""
    first = np.empty(len(series), bool)
    first[:1] = True
    np.not_equal(series[1:], series[:-1], out=first[1:])
    return first


class _Kept:
    """At most `size` items of one run's tag, chosen as TensorBoard's server chooses them: with its
    reservoir, seeded as it seeds it, always keeping the last. A step logged again drops the items
    from that step on. `seen` counts the items added."""

    def __init__(self, size: int) -> None:
        from tensorboard.backend.event_processing.reservoir import Reservoir

        self._reservoir = Reservoir(size)
        self.seen = 0
        self._last: Dict[Any, int] = {}

    def add(self, key: Any, step: int, item: Any) -> None:
        last = self._last.get(key)
        if last is not None and step <= last:
            self._reservoir.FilterItems(lambda kept: kept[0] < step, key)
        self._last[key] = step
        self._reservoir.AddItem(key, (step, item))
        self.seen += 1

    def items(self) -> Dict[Any, List[Tuple[int, Any]]]:
        return {key: sorted(self._reservoir.Items(key), key=lambda kept: kept[0]) for key in self._reservoir.Keys()}


class Collected:
    """What a logdir holds, for the page.

    Attributes:
        scalars: `{(run, tag): (steps, values, walls)}`, as numpy arrays (collect() gives a
            ScalarColumns; a dict serves as well).
        images, audio, texts, histograms, pr_curves: `{(run, tag): [(step, item)]}`, the kept
            items in step order: (mime, bytes), (mime, bytes, label), an array of strings as
            TensorBoard's text plugin takes it, (wall, (k, 3) buckets), (wall, 6 x N array).
        hparams: `{run: {name: value}}`.
        metrics: the hparams experiment's metrics, as (group, tag) pairs.
        layout: the Custom Scalars categories, merged as TensorBoard merges the runs' last layouts.
        left_out: `{dashboard: {run: None}}`, what only TensorBoard shows.
        seen: `{kind: count}`, the summaries read of each kept kind.
        notes: what could not be read, one line each.
        runs: the runs, in the order first met.
        seconds: how long reading took."""

    def __init__(self) -> None:
        self.scalars: Mapping[Tuple[str, str], Tuple[Any, Any, Any]] = {}
        self.images: Dict[Tuple[str, str], List[Tuple[int, Any]]] = {}
        self.audio: Dict[Tuple[str, str], List[Tuple[int, Any]]] = {}
        self.texts: Dict[Tuple[str, str], List[Tuple[int, Any]]] = {}
        self.histograms: Dict[Tuple[str, str], List[Tuple[int, Any]]] = {}
        self.pr_curves: Dict[Tuple[str, str], List[Tuple[int, Any]]] = {}
        self.hparams: Dict[str, Dict[str, Any]] = {}
        self.metrics: List[Tuple[str, str]] = []
        self.layout: List[Dict[str, Any]] = []
        self.left_out: Dict[str, Dict[str, None]] = {}
        self.seen: Dict[str, int] = {}
        self.notes: List[str] = []
        self.runs: List[str] = []
        self.seconds = 0.0

    @property
    def bands(self) -> Dict[Tuple[str, str], List[Tuple[int, float, List[float]]]]:
        """The Distributions dashboard's percentile bands of the kept histograms, as (step, wall,
        nine values), computed by TensorBoard's own compressor."""
        from tensorboard.plugins.distribution import compressor

        out: Dict[Tuple[str, str], List[Tuple[int, float, List[float]]]] = {}
        for key, kept in self.histograms.items():
            out[key] = [(step, wall, [float(c[1]) for c in compressor.compress_histogram(buckets)])
                        for step, (wall, buckets) in kept if buckets[:, 2].sum() > 0]
        return out


class _Reading:
    """The state of one collect() call: the series and reservoirs, filled file by file."""

    def __init__(self, out: Collected, tags: Optional[Pattern[str]]) -> None:
        self.out, self.tags = out, tags
        self.points = _Points()
        self.kept = {kind: _Kept(size) for kind, size in KEEP.items()}
        # Run -> its last Custom Scalars layout (a Layout proto).
        self.layouts: Dict[str, Any] = {}
        self.files = 0
        # The values that could not be read past the first MAX_NOTES lines: counted, not said.
        self.unsaid = 0


def collect(logdir: str, runs: Optional[Pattern[str]] = None, tags: Optional[Pattern[str]] = None) -> Collected:
    """Everything below `logdir` that the report draws, of the runs and tags that the patterns
    find (`re.search`). A torn or corrupt file is read as far as it can be, and a file that cannot
    be read is left out; `notes` has a line on each."""
    began = time.perf_counter()
    out = Collected()
    reading = _Reading(out, tags)
    seen_runs: Dict[str, None] = {}
    one_file = "://" not in logdir and os.path.isfile(logdir)
    with warnings.catch_warnings(record=True) as caught:
        # A damaged record, a torn end or a link loop: each is said in the page's notes too.
        warnings.simplefilter("always", MXBoardWarning)
        # Each file's run, of the runs asked for.
        files: Dict[str, str] = {}
        for path in _listed(logdir):
            directory = path.rsplit("/", 1)[0] if "://" in path else os.path.dirname(path)
            run = "." if one_file else run_of(logdir, directory)
            if runs is not None and not runs.search(run):
                continue
            if run not in seen_runs:
                shown = printable(run)
                if shown != run:
                    out.notes.append("run %s: its directory's name is not UTF-8; shown with \\x escapes" % shown)
            seen_runs.setdefault(run)
            files[path] = printable(run)
        # Small files are scanned together (a sweep's thousands of runs), the others one by one.
        for _, found in batches(list(files)):
            if isinstance(found, Batch):
                _read_batch(found, [files[path] for path in found.paths], reading)
                continue
            try:
                _read_file(found, files[found], reading)
            # Only this file is lost from here on; what it gave is kept.
            except OSError as exc:
                # A store that hangs will send no more.
                if isinstance(exc, TimeoutError) and "://" in found:
                    raise TimeoutError(errno.ETIMEDOUT, "the store did not answer within %g s (reading %s)"
                                       % (_policy().request_secs, printable(found))) from None
                out.notes.append("%s: cannot be read (%s); left out from there, every other file is reported"
                                 % (printable(found), exc.strerror or exc))
    for warning in caught:
        if issubclass(warning.category, MXBoardWarning):
            out.notes.append(printable(str(warning.message)))
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    out.runs = [printable(run) for run in seen_runs]
    if not one_file and "://" not in logdir:
        for run in _projector_runs(logdir, runs):
            out.left_out.setdefault("projector", {})[run] = None
    out.scalars = reading.points.series()
    for kind, kept in reading.kept.items():
        setattr(out, "texts" if kind == "text" else kind, kept.items())
        out.seen[kind] = kept.seen
    out.layout = _merged_layout(reading.layouts)
    if reading.unsaid:
        out.notes.append("%d more values could not be read and are left out (past the first %d notes)"
                         % (reading.unsaid, MAX_NOTES))
    out.seconds = time.perf_counter() - began
    return out


def _policy() -> Any:
    from ..storage.remote.policy import DEFAULT_POLICY

    return DEFAULT_POLICY


def _listed(logdir: str) -> List[str]:
    """The logdir's event files. A store is listed within the bound the writer puts on its check
    of a store (UploadPolicy.check_secs; storage/bounds.py), else a TimeoutError says so."""
    if "://" not in logdir:
        return reader.event_files(logdir)
    from ..storage.bounds import call_with_timeout

    seconds = _policy().check_secs
    try:
        return call_with_timeout(seconds, reader.event_files, logdir)
    except TimeoutError:
        raise TimeoutError(errno.ETIMEDOUT, "the store did not answer within %g s" % seconds) from None


def _projector_runs(logdir: str, runs: Optional[Pattern[str]]) -> List[str]:
    """The runs with a projector_config.pbtxt (the Projector's embeddings), as TensorBoard finds
    them: links followed as for the event files (`_reading/listing.py`), and a loop, which the
    listing of the event files has already said, said no more."""
    from .._reading.listing import walk

    found = []
    for directory, names in walk(logdir, say=lambda line: None):
        if "projector_config.pbtxt" in names:
            run = run_of(logdir, directory)
            if runs is None or runs.search(run):
                found.append(printable(run))
    return found


def _read_file(path: str, run: str, reading: _Reading) -> None:
    """Read one event file's summaries into `reading`.

    Its simple scalars are decoded many at once (`_reading/scan.py`), and every other record is
    parsed by protobuf. A value that cannot be read (a tensor of no known shape, or plugin data
    that is not protobuf) is left out, and a note says so."""
    tags = reading.tags
    # tag -> plugin name (a tag's first value carries it)
    plugins: Dict[str, str] = {}
    reading.files += 1
    # A point's place is its file's number, then its record's number.
    base = reading.files << 40
    # The series number of each of the file's decoded tags, by the scan's tag id (-1: not wanted).
    series_of = np.zeros(0, np.int32)
    for window in scan_file(path):
        # Read first, as a tag's plugin is named in its first event.
        for number, payload in window.others:
            try:
                event = Event.FromString(payload)
            except DecodeError as exc:
                warnings.warn(reader.CorruptRecordWarning("%s: record %d has a valid CRC but is no Event (%s); it is "
                                                          "skipped" % (path, number, exc)), stacklevel=2)
                continue
            _read_event(event, path, run, base + number, plugins, reading)
        plugins.update(window.plugins)
        if len(series_of) < len(window.tags):
            new = window.tags[len(series_of):]
            wanted = np.array([tags is None or tags.search(tag) is not None for tag in new], bool)
            numbers = np.full(len(new), -1, np.int32)
            numbers[wanted] = reader.numbered(reading.points.keys,
                                              [(run, tag) for tag, keep in zip(new, wanted) if keep])
            series_of = np.append(series_of, numbers)
        for chunks, tensors in ((window.scalars, False), (window.tensors, True)):
            ids, numbers, steps, walls, values = joined(chunks)
            wanted = series_of[ids] >= 0
            if tensors and len(ids):
                present = np.unique(ids)
                named = np.array([plugins.get(window.tags[i]) == "scalars" for i in present.tolist()])
                wanted &= named[np.searchsorted(present, ids)]
            if len(ids) and wanted.all():
                # Every point wanted (the common case): the window's columns are kept as they are.
                reading.points.extend(series_of[ids], numbers + base, steps, values, walls)
            elif wanted.any():
                reading.points.extend(series_of[ids[wanted]], numbers[wanted] + base, steps[wanted],
                                      values[wanted], walls[wanted])


def _read_batch(batch: Batch, runs: List[str], reading: _Reading) -> None:
    """Read the summaries of small files scanned together (each file's run in `runs`) into
    `reading`, as `_read_file` reads each of them: each file's damage said, then its events that
    protobuf reads, then the rows decoded together, each (file, tag) a series of its run."""
    window, tags, firsts = batch.window, batch.window.tags, batch.firsts.tolist()
    reading.files += 1
    # A point's place: the batch's number, then its record's number across the batch's files.
    base = reading.files << 40
    # Each file's tags' plugins, from its events that protobuf reads.
    plugins: List[Dict[str, str]] = [{} for _ in runs]
    others, at = window.others, 0
    for file, path in enumerate(batch.paths):
        for offset in batch.corrupt[file]:
            corrupt("%s: corrupt record payload at byte %d; the record is skipped" % (path, offset), False)
        while at < len(others) and others[at][0] < firsts[file + 1]:
            number, payload = others[at]
            at += 1
            try:
                event = Event.FromString(payload)
            except DecodeError as exc:
                warnings.warn(reader.CorruptRecordWarning("%s: record %d has a valid CRC but is no Event (%s); it is "
                                                          "skipped" % (path, number - firsts[file], exc)), stacklevel=2)
                continue
            _read_event(event, path, runs[file], base + number, plugins[file], reading)
    width = max(len(tags), 1)
    # (file, tag) pairs whose decoded rows name the scalars plugin in their metadata.
    named = {(file, tag) for file, found in enumerate(plugins) for tag, plugin in found.items() if plugin == "scalars"}
    for named_ids, named_numbers in window.named:
        pairs = np.unique(batch.file_of(named_numbers) * width + named_ids)
        named.update((pair // width, tags[pair % width]) for pair in pairs.tolist())
    for chunks, tensors in ((window.scalars, False), (window.tensors, True)):
        ids, numbers, steps, walls, values = joined(chunks)
        if not len(ids):
            continue
        pairs, inverse = np.unique(batch.file_of(numbers) * width + ids, return_inverse=True)
        keys = [(runs[pair // width], tags[pair % width]) for pair in pairs.tolist()]
        wanted = np.array([(reading.tags is None or reading.tags.search(tag) is not None)
                           and (not tensors or (pair // width, tag) in named)
                           for (_, tag), pair in zip(keys, pairs.tolist())], bool)
        # A run's files share its series: each key numbered once.
        numbered = reading.points.number
        series = np.array([numbered(key) if keep else -1 for key, keep in zip(keys, wanted.tolist())], np.int32)
        rows = series[inverse.reshape(-1)]
        kept = rows >= 0
        if kept.any():
            reading.points.extend(rows[kept], numbers[kept] + base, steps[kept], values[kept], walls[kept])


def _read_event(event: Any, path: str, run: str, place: int, plugins: Dict[str, str], reading: _Reading) -> None:
    out, tags = reading.out, reading.tags
    what = event.WhichOneof("what")
    if what != "summary":
        if what in ("graph_def", "meta_graph_def", "tagged_run_metadata"):
            out.left_out.setdefault("graphs", {})[run] = None
        return
    step, wall = int(event.step), float(event.wall_time)
    for value in event.summary.value:
        tag = value.tag
        if value.HasField("metadata") and value.metadata.plugin_data.plugin_name:
            plugins[tag] = value.metadata.plugin_data.plugin_name
        plugin = plugins.get(tag)
        if tags is not None and not tags.search(tag) and plugin not in ("hparams", "custom_scalars"):
            continue
        try:
            _add(value, plugin, run, step, wall, place, reading)
        # Any error in one value leaves out that value only.
        except Exception as exc:  # noqa: BLE001
            if len(out.notes) < MAX_NOTES:
                out.notes.append("%s: %s at step %d: cannot be read (%s: %s); left out"
                                 % (printable(path), printable(tag), step, type(exc).__name__, exc))
            else:
                reading.unsaid += 1


def _add(value: Any, plugin: Optional[str], run: str, step: int, wall: float, place: int, reading: _Reading) -> None:
    """Keep one summary value of a kind the report draws. A value whose tensor has not the shape
    its dashboard needs raises ValueError, which names the shape it has, and is left out."""
    from tensorboard import data_compat
    from tensorboard.util import tensor_util

    out, key, field = reading.out, (run, value.tag), value.WhichOneof("value")
    if plugin == "hparams":
        _hparams(value, run, out)
    elif field == "simple_value" or (field == "tensor" and plugin == "scalars"):
        if field == "simple_value":
            number = value.simple_value
        else:
            array = tensor_util.make_ndarray(value.tensor)
            _check(array, "a scalar needs a tensor of one number", array.size == 1 and _numeric(array))
            number = float(array.reshape(-1)[0])
        reading.points.add(key, place, step, number, wall)
    elif field == "image" or (field == "tensor" and plugin == "images"):
        reading.kept["images"].add(key, step, _image(value))
    elif field == "audio" or (field == "tensor" and plugin == "audio"):
        reading.kept["audio"].add(key, step, _audio(value))
    elif field == "tensor" and plugin == "text":
        reading.kept["text"].add(key, step, _text(tensor_util.make_ndarray(value.tensor)))
    elif field == "histo" or (field == "tensor" and plugin == "histograms"):
        # Both forms as TensorBoard's (k, 3) buckets: left edge, right edge, count.
        array = tensor_util.make_ndarray(data_compat.migrate_value(value).tensor)
        _check(array, "a histogram needs a numeric tensor of k rows of 3 (left edge, right edge, count)",
               array.ndim == 2 and array.shape[1] == 3 and _numeric(array))
        if len(array):
            reading.kept["histograms"].add(key, step, (wall, array.astype(np.float64)))
    elif field == "tensor" and plugin == "pr_curves":
        array = tensor_util.make_ndarray(value.tensor)
        _check(array, "a PR curve needs a numeric tensor of 6 rows (TP, FP, TN, FN, precision, recall) and a column "
               "per threshold", array.ndim == 2 and array.shape[0] == 6 and array.shape[1] > 0 and _numeric(array))
        reading.kept["pr_curves"].add(key, step, (wall, array))
    elif field == "tensor" and plugin == "custom_scalars":
        from tensorboard.plugins.custom_scalar import layout_pb2

        layout = layout_pb2.Layout.FromString(tensor_util.make_ndarray(value.tensor).item())
        # A run's last layout is the one TensorBoard shows.
        reading.layouts[run] = layout
    elif plugin in LEFT_OUT or (plugin and plugin.startswith("graph")):
        out.left_out.setdefault(plugin if plugin in LEFT_OUT else "graphs", {})[run] = None
    elif plugin and plugin not in DRAWN:
        out.left_out.setdefault(plugin, {})[run] = None


def _numeric(array: Any) -> bool:
    return bool(array.dtype.kind in "biuf")


def _check(array: Any, needs: str, fits: bool) -> None:
    """Raise ValueError saying what `array` is, unless it `fits` what its dashboard `needs`."""
    if not fits:
        raise ValueError(_odd(array, needs))


def _odd(array: Any, needs: str) -> str:
    what = "strings" if array.dtype.kind in "OSU" else array.dtype.name
    return "%s; this one is %s of shape %s" % (needs, what, tuple(array.shape))


def _text(array: Any) -> Any:
    """A text value's strings, as TensorBoard's text plugin takes them: a string, or an array of
    strings (a 1-D one is a column, a 2-D one a table). Bytes that are not UTF-8, which
    TensorBoard cannot show, have the replacement character in their place."""
    _check(array, "a text needs a tensor of strings", array.dtype.kind in "OS")
    out = np.empty(array.shape, dtype=object)
    for index, item in np.ndenumerate(array):
        if isinstance(item, bytes):
            try:
                item.decode("utf-8")
            except UnicodeDecodeError:
                item = item.decode("utf-8", "replace").encode("utf-8")
        elif not isinstance(item, str):
            raise ValueError("a text needs a tensor of strings; this one holds %s" % type(item).__name__)
        out[index] = item
    return out


def _hparams(value: Any, run: str, out: Collected) -> None:
    data = hparams_proto.HParamsPluginData.FromString(value.metadata.plugin_data.content)
    if data.HasField("session_start_info"):
        out.hparams.setdefault(run, {}).update(
            {k: reader.hparam_value(v) for k, v in data.session_start_info.hparams.items()})
    elif data.HasField("experiment"):
        for info in data.experiment.metric_infos:
            if (info.name.group, info.name.tag) not in out.metrics:
                out.metrics.append((info.name.group, info.name.tag))


def _image(value: Any) -> Tuple[str, bytes]:
    """The (mime type, bytes) of an image summary value: the `image` field, or the first image of
    the images plugin's tensor [width, height, image...] (TensorBoard's blob sequence)."""
    if value.WhichOneof("value") == "image":
        data = value.image.encoded_image_string
    else:
        strings = value.tensor.string_val
        shape = tuple(d.size for d in value.tensor.tensor_shape.dim)
        if len(strings) < 3 or len(shape) != 1:
            from tensorboard.util import tensor_util

            raise ValueError(_odd(tensor_util.make_ndarray(value.tensor), "an image needs a 1-D tensor of strings: "
                                  "its width, its height and one or more encoded images"))
        data = strings[2]
    if not data:
        raise ValueError("the image is empty (no encoded bytes)")
    mime = "image/gif" if data[:4] == b"GIF8" else "image/png" if data[:4] == b"\x89PNG" else "image/jpeg"
    return mime, bytes(data)


def _audio(value: Any) -> Tuple[str, bytes, str]:
    """The (mime type, bytes, label) of an audio summary value: the `audio` field, or the first
    clip of the audio plugin's tensor [[clip, label], ...], which is the one TensorBoard shows."""
    if value.WhichOneof("value") == "audio":
        if not value.audio.encoded_audio_string:
            raise ValueError("the clip is empty (no encoded bytes)")
        return value.audio.content_type or "audio/wav", bytes(value.audio.encoded_audio_string), ""
    from tensorboard.util import tensor_util

    array = tensor_util.make_ndarray(value.tensor)
    _check(array, "audio needs a tensor of strings: one row [clip, label] a clip",
           array.dtype.kind in "OS" and array.ndim == 2 and array.shape[0] > 0 and array.shape[1] == 2
           and all(isinstance(s, bytes) for s in array[0]) and len(array[0][0]) > 0)
    return "audio/wav", bytes(array[0][0]), array[0][1].decode("utf-8", "replace")


def _merged_layout(layouts: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The Custom Scalars layout, merged as TensorBoard's plugin merges it.

    The runs' last layouts are taken in run order, and a category whose title was seen before
    gains the charts it lacks. The result is [{title, closed, charts}], where each chart is
    {title, multiline: [regex...]} or {title, margin: [{value, lower, upper}...]}."""
    categories: Dict[str, List[Any]] = {}
    order: List[Tuple[str, bool]] = []
    for run in sorted(layouts):
        for category in layouts[run].category:
            if category.title not in categories:
                categories[category.title] = []
                order.append((category.title, category.closed))
            known = categories[category.title]
            known.extend(c for c in category.chart if c not in known)
    merged = []
    for title, closed in order:
        charts: List[Dict[str, Any]] = []
        for chart in categories[title]:
            if chart.WhichOneof("content") == "multiline":
                charts.append({"title": chart.title, "multiline": list(chart.multiline.tag)})
            elif chart.WhichOneof("content") == "margin":
                charts.append({"title": chart.title, "margin": [
                    {"value": s.value, "lower": s.lower, "upper": s.upper} for s in chart.margin.series]})
        merged.append({"title": title, "closed": closed, "charts": charts})
    return merged


def matching(patterns: List[str], tags: List[str], said: Callable[[str], None]) -> List[str]:
    """The tags that any of `patterns` matches from their start (`re.match`, as TensorBoard's
    Custom Scalars plugin matches). A pattern that is not a regular expression matches none, and
    `said` is told so."""
    found: List[str] = []
    for pattern in patterns:
        try:
            compiled_pattern = re.compile(pattern)
        except re.error as exc:
            said("custom scalars: %r is not a regular expression (%s); it draws nothing" % (pattern, exc))
            continue
        found.extend(tag for tag in tags if compiled_pattern.match(tag) and tag not in found)
    return found


def printable(name: str) -> str:
    """`name` as text that a page can hold: the bytes of a file name that are not UTF-8 (Python's
    surrogate escapes) become `\\xe9` and the like, and everything else stays as it is."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    # A surrogate that no file name decodes to.
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def compiled(pattern: Optional[str], what: str) -> Optional[Pattern[str]]:
    """A regular expression given on the command line, or a ValueError naming it."""
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError("--%s %r is not a regular expression: %s" % (what, pattern, exc)) from None
