"""The classes that `mxboard.patch()` puts in the place of torch's and tensorboardX's.

Each library's `SummaryWriter` becomes a subclass of mxboard's that also has what code written
for theirs reaches: `file_writer`, `_get_file_writer()` and `all_writers` (a `FileWriter` over the
writer's own run), its tags for text (`<tag>/text_summary`) and, for torch's, its runs for
`add_scalars` (`<main_tag>_<name>`), so that a patched library's runs and tags are the ones its
own writer makes. Their `FileWriter` becomes one over an mxboard writer. An attribute none of
these has raises an AttributeError naming it and docs/any-library.md.
"""
from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Dict, Iterator, Optional

# mxboard's public writer, from where it is defined (`mxboard` itself imports this package).
from .._api.writer import SummaryWriter as MxboardSummaryWriter
from ..proto import Event

__all__ = ["FileWriter", "SummaryWriter", "TensorboardXFileWriter", "TensorboardXSummaryWriter", "TorchFileWriter",
           "TorchSummaryWriter"]

DOC = "docs/any-library.md"


def missing(obj: object, name: str) -> str:
    """The one line an AttributeError of a stand-in says."""
    return ("%r object has no attribute %r: mxboard's writer stands in for %s's here (mxboard.patch() or "
            "`python -m mxboard run`) and does not have it; %s says what it has (mxboard.unpatch() gives "
            "the original back)" % (type(obj).__name__, name, getattr(obj, "_library", "the library"), DOC))


class FileWriter:
    """tensorboardX's and torch's `FileWriter`, over an mxboard writer: Events and Summary
    protocol buffers written as they are into the writer's run.

    Made directly, `FileWriter(logdir)` makes a writer of its own (closed by `close()`); a
    stand-in SummaryWriter's `file_writer` is one over that writer.
    """

    _library = "tensorboardX's or torch"

    def __init__(self, logdir: Optional[str] = None, max_queue: int = 10, flush_secs: Optional[float] = None,
                 filename_suffix: str = "", *, log_dir: Optional[str] = None) -> None:
        where = log_dir if logdir is None else logdir
        if where is None:
            raise TypeError("FileWriter() needs a logdir")
        # The peers' default flush_secs (120 s) is left out: mxboard's (2 s) shows points within seconds.
        self._writer = MxboardSummaryWriter(where, max_queue, 2 if flush_secs is None else flush_secs,
                                            filename_suffix or None)

    @classmethod
    def over(cls, summary_writer: MxboardSummaryWriter) -> FileWriter:
        """The FileWriter of `summary_writer`'s own run (its `file_writer`)."""
        view = cls.__new__(cls)
        view._writer = summary_writer
        return view

    def get_logdir(self) -> str:
        """The directory the events go to."""
        return self._writer.logdir

    def add_event(self, event: Any, step: Optional[int] = None, walltime: Optional[float] = None) -> None:
        """An Event protocol buffer as it is (its own step where `step` is None; the time of the
        call where `walltime` is None). A file-version event is left out: the file has one
        (SummaryWriter.add_event)."""
        self._writer.add_event(event, step, walltime)

    def add_summary(self, summary: Any, global_step: Optional[int] = None, walltime: Optional[float] = None) -> None:
        """A Summary protocol buffer as it is (SummaryWriter.add_summary)."""
        self._writer.add_summary(summary, global_step, walltime)

    def add_graph(self, graph_profile: Any, walltime: Optional[float] = None) -> None:
        """A GraphDef, or the peers' `(GraphDef, RunMetadata)` pair (the run metadata is left out)."""
        graph = graph_profile[0] if isinstance(graph_profile, (tuple, list)) else graph_profile
        self._writer.add_event(Event(graph_def=graph.SerializeToString()), 0, walltime)

    def add_onnx_graph(self, graph: Any, walltime: Optional[float] = None) -> None:
        """A GraphDef made from an ONNX model (the peers' name)."""
        self._writer.add_event(Event(graph_def=graph.SerializeToString()), 0, walltime)

    def add_openvino_graph(self, graph: Any, walltime: Optional[float] = None) -> None:
        """Not drawn by mxboard (raises, as SummaryWriter.add_openvino_graph does)."""
        self._writer.add_openvino_graph(str(graph))

    def flush(self) -> None:
        """Return when everything added is in the event file."""
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the writer (a later call reopens it, with a new event file)."""
        self._writer.close()

    def reopen(self) -> None:
        """After close(), a new event file."""
        self._writer.reopen()

    @contextlib.contextmanager
    def use_metadata(self, *, global_step: Optional[int] = None,
                     walltime: Optional[float] = None) -> Iterator[FileWriter]:
        """The step and time of the enclosed calls that give none (tensorboardX's)."""
        with self._writer.use_metadata(global_step=global_step, walltime=walltime):
            yield self

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(missing(self, name))


class SummaryWriter(MxboardSummaryWriter):
    """mxboard's SummaryWriter with what code written for tensorboardX's or torch's reaches."""

    _library = "tensorboardX's or torch"
    _file_writer_class = FileWriter

    @property
    def file_writer(self) -> FileWriter:
        """The FileWriter of this writer's own run (the peers' attribute): its `add_summary`,
        `add_event` and `add_graph` write here."""
        view = self.__dict__.get("_file_writer")
        if view is None:
            view = self.__dict__["_file_writer"] = self._file_writer_class.over(self)
        return view

    def _get_file_writer(self) -> FileWriter:
        """The peers' method: `file_writer`."""
        return self.file_writer

    @property
    def all_writers(self) -> Dict[str, FileWriter]:
        """`{logdir: file_writer}`, as the peers keep it."""
        return {self.logdir: self.file_writer}

    def add_text(self, tag: str, *args: Any, **kwargs: Any) -> None:
        """Text under `<tag>/text_summary`, the tag the peers write; the other arguments are
        mxboard's `add_text`'s (tensorboardX's and torch's names among them: `text_string`)."""
        super().add_text(tag + "/text_summary" if isinstance(tag, str) else tag, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(missing(self, name))


class TorchFileWriter(FileWriter):
    """`torch.utils.tensorboard.FileWriter`, while patched."""

    _library = "torch.utils.tensorboard"


class TensorboardXFileWriter(FileWriter):
    """`tensorboardX.FileWriter`, while patched."""

    _library = "tensorboardX"


class TorchSummaryWriter(SummaryWriter):
    """`torch.utils.tensorboard.SummaryWriter`, while patched: `add_scalars` writes torch's runs."""

    _library = "torch.utils.tensorboard"
    _file_writer_class = TorchFileWriter

    def add_scalars(self, main_tag: str, tag_scalar_dict: Mapping[str, Any], global_step: Optional[int] = None,
                    walltime: Optional[float] = None, *, runs: str = "torch") -> None:
        """Lines in one chart, as torch writes them: each name's values under the tag `main_tag`
        in the sub-run `logdir/<main_tag>_<name>/` (a `/` of `main_tag` written `_` there), each
        value as mxboard's `add_scalars` takes it (a CUDA tensor is read once computed)."""
        super().add_scalars(main_tag, tag_scalar_dict, global_step, walltime, runs=runs)


class TensorboardXSummaryWriter(SummaryWriter):
    """`tensorboardX.SummaryWriter`, while patched."""

    _library = "tensorboardX"
    _file_writer_class = TensorboardXFileWriter
