"""The calls of the Scalars dashboard, and the scalars' export. A part of `SummaryWriter`
(writer.py). `add_scalar` is the training loop's hot path: a float and a known tag cost a dict
lookup, a few checks and five array appends (scalars.py); the writer thread encodes the rows in
batches."""
from __future__ import annotations

from collections.abc import Mapping
from time import time as _now
from types import MappingProxyType
from typing import Any, Dict, List, Optional

from . import checks, convert
from .scalars import DESCRIBED
from .writer_core import WriterCore

__all__ = ["ScalarCalls"]


_PEER_KEYWORDS = {"scalar_value", "new_style", "double_precision", "display_name", "summary_description"}


class ScalarCalls(WriterCore):
    """`SummaryWriter`'s scalar calls."""

    _cleared: Mapping[str, int] = MappingProxyType({})  # event file piece -> offset export_scalars starts from

    def add_scalar(self, tag: str, value: Any = None, global_step: Optional[int] = None,
                   walltime: Optional[float] = None, **peer: Any) -> None:
        """Log a number under `tag` (the training loop's hot path: a few microseconds).

        Args:
            tag: the chart's name.
            value: a number, numpy scalar, one-element array, torch tensor or MXNet NDArray (read
                once the engine has computed it: the loop never waits); or a `(name, value)`
                pair, a `[name, value]` list or a mapping of them: each name one line in the same
                chart, from the sub-run `logdir/<tag>/<name>/`.
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.
            **peer: the peers' `scalar_value=` (for `value`); tensorboardX's `display_name` and
                `summary_description` (shown by TensorBoard; such a call is a summary of its
                own, not a batched row); torch's `new_style` and `double_precision` are
                accepted (values are float32 either way).

        Raises:
            TypeError, ValueError: a value that is no single real number, a bad tag or step.
            WriterError: the writer thread failed earlier (its cause is attached).

        Example:
            >>> sw.add_scalar("loss", loss.mean(), global_step=step)  # an NDArray: no wait
            >>> sw.add_scalar("accuracy", {"train": 0.91, "val": 0.87}, global_step=epoch)
        """
        if type(value) is not float or peer:
            described = None
            if peer:
                value, described = _peer_value(value, peer)
            form, value = convert.scalar_form(value, named=described is None)
            if described:  # a summary of its own, with its metadata
                form, value = DESCRIBED, (form, value) + described
            if form is not convert.NUMBER:  # named values, an NDArray read later, or described
                self._ready()
                self._scalars.add(form, tag, value, *self._stamp(global_step, walltime))
                return self._report()
        while True:
            scalars = self._scalars
            try:
                series = scalars.ids[tag]
            except (KeyError, TypeError):
                self._ready()
                scalars = self._scalars  # a forked child's own
                series = scalars.series(tag)
            if global_step is None:
                global_step = self._default_step
            elif type(global_step) is not int or not 0 <= global_step < 0x7FFFFFFFFFFFFFFF:
                global_step = checks.step(global_step)
            if walltime is None:
                walltime = _now() if self._default_wall is None else self._default_wall
            else:
                walltime = checks.walltime(walltime)
            scalars.append(series, value, global_step, walltime)
            if not (self._worker.attention and self._report_or_reopen()):
                return  # else a forked child, which now has a worker of its own: once more, into it

    def add_scalars(self, main_tag: str, tag_scalar_dict: Mapping, global_step: Optional[int] = None,
                    walltime: Optional[float] = None) -> None:
        """Lines in one chart (tensorboardX's call), as `add_scalar(main_tag, dict)`.

        Args:
            main_tag: the chart's name.
            tag_scalar_dict: `{name: value}`; each name's values go to the sub-run
                `logdir/<main_tag>/<name>/` (tensorboardX's layout; torch's is `<main_tag>_<name>`).
            global_step: the step (x axis); an int, or a float taken as int(step). Default 0.
            walltime: seconds since the epoch. Default: the time of the call.

        Raises:
            TypeError, ValueError: not a mapping, or a value that is no single number.

        Example:
            >>> sw.add_scalars("loss", {"train": 0.3, "val": 0.4}, global_step=10)
        """
        if not isinstance(tag_scalar_dict, Mapping):
            raise TypeError("tag_scalar_dict must be a dict of name -> value; got %s"
                            % type(tag_scalar_dict).__name__)
        self._ready()
        self._scalars.add(convert.GROUP, main_tag, tag_scalar_dict, *self._stamp(global_step, walltime))
        self._report()

    def export_scalars(self, path: str) -> None:
        """Write the scalars this writer has written (since `clear_scalar_dict()`) to a JSON file.

        As mxboard did: `{"<logdir>/<tag>[/<name>]": [[wall_time, step, value], ...]}`, read back
        from the event files (no scalar is kept in memory).

        Args:
            path: the JSON file to write.
        """
        import json

        from .proto import Event
        from .reader import read_records

        self.flush()
        exported: Dict[str, List[List[float]]] = {}
        for names, run, pieces in self._worker.written():
            prefix = [self._logdir] + ([run] if run != "." else [])  # mxboard's keys: <logdir>/<tag>, and
            named = names is not None and len(names) == 2  # <logdir>/<tag>/<name> for named values
            for piece, _ in pieces:
                for payload in read_records(piece, self._cleared.get(piece, 0)):
                    event = Event.FromString(payload)
                    for value in event.summary.value:
                        if value.WhichOneof("value") == "simple_value":
                            key = prefix if named else prefix + [value.tag]
                            exported.setdefault("/".join(key), []).append(
                                [event.wall_time, event.step, value.simple_value])
        with open(path, "w") as f:
            json.dump(exported, f)

    def export_scalars_to_json(self, path: str) -> None:
        """tensorboardX's name for `export_scalars`."""
        self.export_scalars(path)

    def clear_scalar_dict(self) -> None:
        """Start `export_scalars` afresh from here."""
        self.flush()
        self._cleared = {piece: size for _, _, pieces in self._worker.written() for piece, size in pieces}


def _peer_value(value, peer):
    """(value, (display_name, description) or None) of a call with the peers' keywords: their
    `scalar_value=`, tensorboardX's `display_name`/`summary_description` (a summary of its own),
    torch's `new_style`/`double_precision` (accepted: values are float32 either way)."""
    unknown = sorted(set(peer) - _PEER_KEYWORDS)
    if unknown:
        raise TypeError("SummaryWriter.add_scalar() got an unexpected keyword argument %r" % unknown[0])
    scalar_value = peer.get("scalar_value")
    if scalar_value is not None:
        if value is not None:
            raise TypeError("add_scalar() got both 'value' and 'scalar_value' (tensorboardX's name for it)")
        value = scalar_value
    display_name, description = peer.get("display_name") or "", peer.get("summary_description") or ""
    return value, (display_name, description) if display_name or description else None
