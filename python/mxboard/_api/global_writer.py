"""`GlobalSummaryWriter`: tensorboardX's writer for code that has no step at hand (a data loader,
a callback deep in a library). Each tag's step is the number of calls made for it so far, from
any thread, and `GlobalSummaryWriter.getSummaryWriter()` is one writer for the whole process."""
from __future__ import annotations

import collections
import threading
from typing import Any, Optional, Tuple

from .writer import SummaryWriter

__all__ = ["GlobalSummaryWriter"]


class GlobalSummaryWriter:
    """A SummaryWriter whose steps count themselves (tensorboardX's GlobalSummaryWriter).

    The n-th call of a kind on a tag is step n (0, 1, 2...). Calls from many threads are taken
    one at a time, so steps follow call order. Each `add_*` takes what `SummaryWriter`'s does,
    less the step, and raises what it raises.

    Args:
        logdir, comment, purge_step, max_queue, flush_secs, filename_suffix, write_to_disk,
            log_dir: as `SummaryWriter` (tensorboardX's order).
        coalesce_process: accepted; one writer per process is what `getSummaryWriter` gives.

    Attributes:
        smw: the SummaryWriter underneath.

    Example:
        >>> writer = GlobalSummaryWriter.getSummaryWriter()
        >>> writer.add_scalar("queue/length", 12)   # step 0, then 1, 2... at each call
    """

    _process_writer: Optional[GlobalSummaryWriter] = None
    _process_lock = threading.Lock()

    def __init__(self, logdir: Optional[str] = None, comment: str = "", purge_step: Optional[int] = None,
                 max_queue: int = 10, flush_secs: float = 2, filename_suffix: Optional[str] = None,
                 write_to_disk: bool = True, log_dir: Optional[str] = None, coalesce_process: bool = True) -> None:
        # tensorboardX's name.
        if log_dir is not None:
            if logdir is not None:
                raise TypeError("GlobalSummaryWriter() got both 'logdir' and 'log_dir' (tensorboardX's name for it)")
            logdir = log_dir
        self.smw = SummaryWriter(logdir, max_queue, flush_secs, filename_suffix, comment=comment,
                                 purge_step=purge_step, write_to_disk=write_to_disk)
        self._lock = threading.Lock()
        # (kind, tag) -> calls so far.
        self._calls: collections.Counter[Tuple[str, str]] = collections.Counter()

    @property
    def logdir(self) -> str:
        """Where the writer writes."""
        return self.smw.logdir

    def _log(self, kind: str, tag: str, *args: Any, **kwargs: Any) -> None:
        with self._lock:
            step = self._calls[kind, tag]
            getattr(self.smw, kind)(tag, *args, global_step=step, **kwargs)
            # Only once the call was taken.
            self._calls[kind, tag] = step + 1

    def add_scalar(self, tag: str, scalar_value: Any, walltime: Optional[float] = None) -> None:
        """A number under `tag`, at the tag's next step (see `SummaryWriter.add_scalar`)."""
        self._log("add_scalar", tag, scalar_value, walltime=walltime)

    def add_histogram(self, tag: str, values: Any, bins: Any = "tensorflow", walltime: Optional[float] = None) -> None:
        """A histogram at the tag's next step (see `SummaryWriter.add_histogram`)."""
        self._log("add_histogram", tag, values, bins=bins, walltime=walltime)

    def add_image(self, tag: str, img_tensor: Any, walltime: Optional[float] = None, dataformats: str = "CHW") -> None:
        """An image at the tag's next step (see `SummaryWriter.add_image`)."""
        self._log("add_image", tag, img_tensor, walltime=walltime, dataformats=dataformats)

    def add_audio(self, tag: str, snd_tensor: Any, sample_rate: int = 44100, walltime: Optional[float] = None) -> None:
        """Audio at the tag's next step (see `SummaryWriter.add_audio`)."""
        self._log("add_audio", tag, snd_tensor, sample_rate=sample_rate, walltime=walltime)

    def add_text(self, tag: str, text_string: Any, walltime: Optional[float] = None) -> None:
        """Text at the tag's next step (see `SummaryWriter.add_text`)."""
        self._log("add_text", tag, text_string, walltime=walltime)

    def add_video(self, tag: str, vid_tensor: Any, fps: float = 4, walltime: Optional[float] = None) -> None:
        """A video at the tag's next step (see `SummaryWriter.add_video`)."""
        self._log("add_video", tag, vid_tensor, fps=fps, walltime=walltime)

    def flush(self) -> None:
        """Return when everything logged is in the event file (see `SummaryWriter.flush`)."""
        self.smw.flush()

    def close(self) -> None:
        """Write everything and close the file (see `SummaryWriter.close`)."""
        self.smw.close()

    def __enter__(self) -> GlobalSummaryWriter:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    @staticmethod
    # tensorboardX's name.
    def getSummaryWriter() -> GlobalSummaryWriter:  # noqa: N802
        """The process's GlobalSummaryWriter, made on first use (under runs/<date>_<host>), and
        again after it was closed.

        Returns:
            GlobalSummaryWriter: one for the whole process.
        """
        with GlobalSummaryWriter._process_lock:
            if GlobalSummaryWriter._process_writer is None or GlobalSummaryWriter._process_writer.smw.closed:
                GlobalSummaryWriter._process_writer = GlobalSummaryWriter()
            return GlobalSummaryWriter._process_writer
