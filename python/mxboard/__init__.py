"""mxboard: log TensorBoard event files from MXNet (or anything numpy-speaking), without
TensorFlow and without blocking the training loop."""
from .worker import WriterError
from .writer import SummaryWriter

__all__ = ["SummaryWriter", "WriterError"]
__version__ = "0.2.0"
