"""mxboard writes TensorBoard event files from MXNet, or from anything that gives numpy arrays,
without TensorFlow and without blocking the training loop."""
from ._api.global_writer import GlobalSummaryWriter
from ._api.writer import SummaryWriter
from ._patch import patch, unpatch
from .errors import (
    CorruptRecordWarning,
    DataLossError,
    FileDeletedError,
    MXBoardError,
    MXBoardWarning,
    ReportError,
    TornRecordWarning,
    WriterClosedError,
    WriterError,
    WriterIOError,
    WriterTimeoutError,
)
from .storage import SpoolSettings, UploadPolicy

__all__ = ["CorruptRecordWarning", "DataLossError", "FileDeletedError", "GlobalSummaryWriter", "MXBoardError",
           "MXBoardWarning", "ReportError", "SpoolSettings", "SummaryWriter", "TornRecordWarning", "UploadPolicy",
           "WriterClosedError", "WriterError", "WriterIOError", "WriterTimeoutError", "patch",
           "unpatch"]
__version__ = "0.3.0"
