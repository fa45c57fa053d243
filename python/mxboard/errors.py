"""The errors and warnings that mxboard raises for a user to catch, all defined here.

Every error is an `MXBoardError` and keeps the built-in base it always had (a `WriterError` is
still a RuntimeError), so `except MXBoardError` catches them all and older `except` clauses still
work. An I/O error of the writer thread reaches the caller as a `WriterIOError`, which is an
OSError too. Every warning is an `MXBoardWarning`. Each name is also importable from `mxboard` and from
the module that raised it before (`mxboard.reader`, `mxboard.report`, `mxboard.storage.local`).
"""

__all__ = ["CorruptRecordWarning", "DataLossError", "FileDeletedError", "MXBoardError", "MXBoardWarning",
           "ReportError", "TornRecordWarning", "WriterClosedError", "WriterError", "WriterIOError",
           "WriterTimeoutError"]


class MXBoardError(Exception):
    """The base class of every error that mxboard raises for a user to catch."""


class MXBoardWarning(UserWarning):
    """The base class of the warnings that mxboard's reader gives."""


class WriterError(RuntimeError, MXBoardError):
    """The writer thread could not write. The caller's next call raises it, and `__cause__` holds
    the error that stopped the thread. Where that error is an OSError, it is a `WriterIOError`."""


class WriterIOError(OSError, WriterError):
    """The writer thread met an I/O error: a full disk, a store that gave up, an event file that
    could not be opened. The caller's next call raises it, and every call after it, since nothing
    more is written; close() raises one for what it could not write or keep. It is an OSError with
    the cause's `errno`, `strerror` and `filename` (and its message), and `__cause__` is the cause,
    so `except OSError`, `except WriterError` and `except MXBoardError` all catch it. OSError comes
    first among its bases: OSError's constructor then sets `errno`, `strerror` and `filename`, and
    a pickled copy keeps them."""


class WriterTimeoutError(WriterIOError, TimeoutError):
    """A WriterIOError whose cause is a TimeoutError (an object store that did not answer within
    its bound), so that `except TimeoutError` catches it too."""


class WriterClosedError(RuntimeError, MXBoardError):
    """A call reached a writer that was closed, so its data cannot be written (for example, a
    call on another thread that raced `close()`)."""


class FileDeletedError(FileNotFoundError, MXBoardError):
    """An event file was deleted while it was being written, because its logdir was removed. The
    next call raises it. During `close()` it is taken as the user's own tear-down and not reported,
    as TensorBoard's and tensorboardX's writers do."""


class DataLossError(ValueError, MXBoardError):
    """`mxboard.reader` met a corrupt record with `strict=True`: its length or payload does not
    match its CRC, or it is not an Event."""


class ReportError(MXBoardError):
    """`python -m mxboard report` (`mxboard.report.write`) wrote no report. The message names what
    failed: reading the logdir, writing the file, or mxboard's own copy of uPlot."""


class TornRecordWarning(MXBoardWarning):
    """`mxboard.reader` found a file that ends inside a record: its writer stopped in the middle of
    a write, or is still writing."""


class CorruptRecordWarning(MXBoardWarning):
    """`mxboard.reader` skipped a corrupt record: its CRC does not match, or it is not an Event."""
