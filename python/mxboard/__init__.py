"""mxboard: log TensorBoard event files from MXNet (or anything numpy-speaking), without
TensorFlow and without blocking the training loop."""
from .global_writer import GlobalSummaryWriter
from .intake import WriterError
from .writer import SummaryWriter

__all__ = ["GlobalSummaryWriter", "SummaryWriter", "WriterError"]
__version__ = "0.3.0"
