"""mxboard: log TensorBoard event files from MXNet (or anything numpy-speaking), without
TensorFlow and without blocking the training loop."""
from ._api.global_writer import GlobalSummaryWriter
from ._api.writer import SummaryWriter
from ._thread.intake import WriterError

__all__ = ["GlobalSummaryWriter", "SummaryWriter", "WriterError"]
__version__ = "0.3.0"
