"""`GlobalSummaryWriter`: tensorboardX's writer for code that has no step at hand (a data loader,
a callback deep in a library): each tag's step counts its calls, from any thread, and
`GlobalSummaryWriter.getSummaryWriter()` is one writer for the whole process."""
import collections
import threading

from .writer import SummaryWriter

__all__ = ["GlobalSummaryWriter"]


class GlobalSummaryWriter:
    """A SummaryWriter whose steps count themselves: the n-th call of a kind on a tag is step n
    (0, 1, 2...). Calls from many threads are taken one at a time, so steps follow call order.
    Arguments are tensorboardX's (`coalesce_process` is accepted: one writer per process is
    what `getSummaryWriter` gives)."""

    _process_writer = None
    _process_lock = threading.Lock()

    def __init__(self, logdir=None, comment="", purge_step=None, max_queue=10, flush_secs=2, filename_suffix=None,
                 write_to_disk=True, log_dir=None, coalesce_process=True):
        self.smw = SummaryWriter(logdir, max_queue, flush_secs, filename_suffix, comment=comment,
                                 purge_step=purge_step, write_to_disk=write_to_disk, log_dir=log_dir)
        self._lock = threading.Lock()
        self._calls = collections.Counter()  # (kind, tag) -> calls so far

    @property
    def logdir(self):
        return self.smw.logdir

    def _log(self, kind, tag, *args, **kwargs):
        with self._lock:
            step = self._calls[kind, tag]
            getattr(self.smw, kind)(tag, *args, global_step=step, **kwargs)
            self._calls[kind, tag] = step + 1  # only once the call was taken

    def add_scalar(self, tag, scalar_value, walltime=None):
        self._log("add_scalar", tag, scalar_value, walltime=walltime)

    def add_histogram(self, tag, values, bins="tensorflow", walltime=None):
        self._log("add_histogram", tag, values, bins=bins, walltime=walltime)

    def add_image(self, tag, img_tensor, walltime=None, dataformats="CHW"):
        self._log("add_image", tag, img_tensor, walltime=walltime, dataformats=dataformats)

    def add_audio(self, tag, snd_tensor, sample_rate=44100, walltime=None):
        self._log("add_audio", tag, snd_tensor, sample_rate=sample_rate, walltime=walltime)

    def add_text(self, tag, text_string, walltime=None):
        self._log("add_text", tag, text_string, walltime=walltime)

    def add_video(self, tag, vid_tensor, fps=4, walltime=None):
        self._log("add_video", tag, vid_tensor, fps=fps, walltime=walltime)

    def flush(self):
        self.smw.flush()

    def close(self):
        self.smw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    @staticmethod
    def getSummaryWriter():  # noqa: N802 - tensorboardX's name
        """The process's GlobalSummaryWriter (made on first use, under runs/<date>_<host>)."""
        with GlobalSummaryWriter._process_lock:
            if GlobalSummaryWriter._process_writer is None or GlobalSummaryWriter._process_writer.smw.closed:
                GlobalSummaryWriter._process_writer = GlobalSummaryWriter()
            return GlobalSummaryWriter._process_writer
