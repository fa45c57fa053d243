"""What mxboard raises or warns that a user may catch, in one place (`from mxboard import
WriterError`, or from here). Each is also importable where it was defined before (the writer's,
the reader's and the local storage's modules), as the same class."""

__all__ = ["CorruptRecordWarning", "DataLossError", "FileDeletedError", "ReportError", "TornRecordWarning",
           "WriterError"]


class WriterError(RuntimeError):
    """The writer thread could not write; raised on the caller's next call, `__cause__` says why."""


class FileDeletedError(FileNotFoundError):
    """An event file was deleted while being written (its logdir removed): the next call
    raises it; in close(), it is the user's own tear-down, and nothing is said (as the peers)."""


class DataLossError(ValueError):
    """mxboard.reader met a corrupt record (its length or payload does not match its CRC, or it
    is no Event), with `strict=True`."""


class ReportError(Exception):
    """`python -m mxboard report` (mxboard.report.write) wrote no report: the message names what
    failed, the logdir read or the file written."""


class TornRecordWarning(UserWarning):
    """mxboard.reader: the file ends inside a record (the writer stopped mid-write, or is still
    writing)."""


class CorruptRecordWarning(UserWarning):
    """mxboard.reader skipped a corrupt record (its CRC does not match, or it is no Event)."""
