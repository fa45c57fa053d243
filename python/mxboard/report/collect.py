"""A logdir read once into what the report draws: each run's scalar series (what TensorBoard shows:
a step logged again drops the points from it on), the hparams table, the kept images and texts,
and the histograms as the Distributions dashboard's percentile bands. Read with `mxboard.reader`
(records checked against their CRCs, any writer's files, local or in an object store); the text
rendered and the bands computed by TensorBoard's own code, so that they are what it shows."""
import os
import re
import warnings
from typing import Any, Dict, List, Optional, Pattern, Tuple

import numpy as np

from .. import reader
from ..proto import hparams as hparams_proto
from ..storage import run_of

__all__ = ["Collected", "collect", "KEEP"]

KEEP = 10  # images and texts kept a tag and run, as TensorBoard keeps by default
MAX_NOTES = 100  # lines said of values that could not be read (a file of them says its first ones)


class Collected:
    """What a logdir holds, for the page: `scalars[(run, tag)] = (steps, values, walls)` (numpy),
    `images`/`texts[(run, tag)] = [(step, item)]` (every one: `keep` chooses), `bands[(run, tag)]
    = [(step, wall, nine percentiles)]`, `hparams[run] = {name: value}`, `metrics` the hparams
    experiment's metrics as (group, tag), `notes` what could not be read (torn or corrupt
    files), `runs` in the order first met."""

    def __init__(self) -> None:
        self.scalars: Dict[Tuple[str, str], Tuple[Any, Any, Any]] = {}
        self.images: Dict[Tuple[str, str], List[Tuple[int, Tuple[str, bytes]]]] = {}
        self.texts: Dict[Tuple[str, str], List[Tuple[int, str]]] = {}
        self.bands: Dict[Tuple[str, str], List[Tuple[int, float, List[float]]]] = {}
        self.hparams: Dict[str, Dict[str, Any]] = {}
        self.metrics: List[Tuple[str, str]] = []
        self.notes: List[str] = []
        self.runs: List[str] = []


class _Series:
    """One run's tag, in the order written, with TensorBoard's rule for a step logged again."""

    __slots__ = ("steps", "values", "walls")

    def __init__(self) -> None:
        self.steps: List[int] = []
        self.values: List[float] = []
        self.walls: List[float] = []

    def add(self, step: int, value: float, wall: float) -> None:
        steps = self.steps
        if steps and steps[-1] >= step:  # a resumed run: its points from this step on are dropped
            cut = len(steps)
            while cut and steps[cut - 1] >= step:
                cut -= 1
            del steps[cut:], self.values[cut:], self.walls[cut:]
        steps.append(step)
        self.values.append(value)
        self.walls.append(wall)


def _image(value: Any) -> Optional[Tuple[str, bytes]]:
    """(mime type, bytes) of an image summary value (the `image` field, or the images plugin's
    tensor [width, height, image...]: its first image)."""
    if value.WhichOneof("value") == "image":
        data = value.image.encoded_image_string
    else:
        strings = value.tensor.string_val
        if len(strings) < 3:
            return None
        data = strings[2]
    mime = "image/gif" if data[:4] == b"GIF8" else "image/png" if data[:4] == b"\x89PNG" else "image/jpeg"
    return mime, bytes(data)


def collect(logdir: str, runs: Optional[Pattern[str]] = None, tags: Optional[Pattern[str]] = None) -> Collected:
    """Everything below `logdir` that the report draws, of the runs and tags the patterns find
    (`re.search`). A torn or corrupt file is read as far as it can be, and said in `notes`."""
    out = Collected()
    series: Dict[Tuple[str, str], _Series] = {}
    seen_runs: Dict[str, None] = {}
    one_file = "://" not in logdir and os.path.isfile(logdir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", reader.TornRecordWarning)
        warnings.simplefilter("always", reader.CorruptRecordWarning)
        for path in reader.event_files(logdir):
            directory = path.rsplit("/", 1)[0] if "://" in path else os.path.dirname(path)
            run = "." if one_file else run_of(logdir, directory)
            if runs is not None and not runs.search(run):
                continue
            if run not in seen_runs:
                shown = printable(run)
                if shown != run:
                    out.notes.append("run %s: its directory's name is not UTF-8; shown with \\x escapes" % shown)
            seen_runs.setdefault(run)
            try:
                _read_file(path, printable(run), tags, out, series)
            except OSError as exc:  # this file only: what it gave so far is kept, the other files are read
                out.notes.append("%s: cannot be read (%s); left out from there, every other file is reported"
                                 % (printable(path), exc.strerror or exc))
    for warning in caught:
        if issubclass(warning.category, (reader.TornRecordWarning, reader.CorruptRecordWarning)):
            out.notes.append(printable(str(warning.message)))
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    out.runs = [printable(run) for run in seen_runs]
    for key, found in series.items():
        out.scalars[key] = (np.array(found.steps, np.float64), np.array(found.values, np.float64),
                            np.array(found.walls, np.float64))
    return out


def _read_file(path: str, run: str, tags: Optional[Pattern[str]], out: Collected,
               series: Dict[Tuple[str, str], _Series]) -> None:
    """One event file's summaries into `out` (scalars into `series`). A value that cannot be
    read (a tensor of no known shape, plugin data that is no protobuf) is left out and said."""
    plugins: Dict[str, str] = {}  # tag -> plugin name (a tag's first value carries it)
    for event in reader.read_events(path):
        if not event.HasField("summary"):
            continue
        step, wall = int(event.step), float(event.wall_time)
        for value in event.summary.value:
            tag = value.tag
            if value.HasField("metadata") and value.metadata.plugin_data.plugin_name:
                plugins[tag] = value.metadata.plugin_data.plugin_name
            if tags is not None and not tags.search(tag) and plugins.get(tag) != "hparams":
                continue
            try:
                _add(value, plugins.get(tag), run, step, wall, out, series)
            except Exception as exc:  # noqa: BLE001 (odd input costs only itself: any error of one value)
                if len(out.notes) < MAX_NOTES:
                    out.notes.append("%s: %s at step %d: cannot be read (%s: %s); left out"
                                     % (printable(path), printable(tag), step, type(exc).__name__, exc))


def _add(value: Any, plugin: Optional[str], run: str, step: int, wall: float, out: Collected,
         series: Dict[Tuple[str, str], _Series]) -> None:
    from tensorboard import data_compat
    from tensorboard.plugins.distribution import compressor
    from tensorboard.util import tensor_util

    tag = value.tag
    if plugin == "hparams":
        data = hparams_proto.HParamsPluginData.FromString(value.metadata.plugin_data.content)
        if data.HasField("session_start_info"):
            out.hparams.setdefault(run, {}).update(
                {k: reader.hparam_value(v) for k, v in data.session_start_info.hparams.items()})
        elif data.HasField("experiment"):
            for info in data.experiment.metric_infos:
                if (info.name.group, info.name.tag) not in out.metrics:
                    out.metrics.append((info.name.group, info.name.tag))
        return
    field = value.WhichOneof("value")
    key = (run, tag)
    if field == "simple_value" or (field == "tensor" and plugin == "scalars"):
        number = (value.simple_value if field == "simple_value"
                  else float(tensor_util.make_ndarray(value.tensor).reshape(-1)[0]))
        series.setdefault(key, _Series()).add(step, number, wall)
    elif field == "image" or (field == "tensor" and plugin == "images"):
        image = _image(value)
        if image is not None:
            out.images.setdefault(key, []).append((step, image))
    elif field == "tensor" and plugin == "text":
        strings = tensor_util.make_ndarray(value.tensor).reshape(-1)
        text = "\n".join(s.decode("utf-8", "replace") if isinstance(s, bytes) else str(s) for s in strings)
        out.texts.setdefault(key, []).append((step, text))
    elif field == "histo" or (field == "tensor" and plugin == "histograms"):
        migrated = data_compat.migrate_value(value)  # TensorBoard's (k, 3) buckets
        buckets = tensor_util.make_ndarray(migrated.tensor).reshape(-1, 3)
        if len(buckets) and buckets[:, 2].sum() > 0:
            bands = [float(c[1]) for c in compressor.compress_histogram(buckets)]
            out.bands.setdefault(key, []).append((step, wall, bands))


def printable(name: str) -> str:
    """`name` as text a page can hold: a file name's bytes that are not UTF-8 (Python's
    surrogate escapes) as `\\xe9`, anything else as it is."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name decodes to
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")

def kept(items: List[Tuple[int, Any]], keep: int = KEEP) -> List[Tuple[int, Any]]:
    """At most `keep` of `items` (in step order), spread evenly over them, the last always."""
    items = sorted(items, key=lambda item: item[0])
    if len(items) <= keep:
        return items
    chosen = np.unique(np.round(np.linspace(0, len(items) - 1, keep)).astype(int))
    return [items[i] for i in chosen]


def compiled(pattern: Optional[str], what: str) -> Optional[Pattern[str]]:
    """A regular expression given on the command line, or a ValueError naming it."""
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError("--%s %r is not a regular expression: %s" % (what, pattern, exc)) from None
