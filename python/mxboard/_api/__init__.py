"""The writers' calls, which run on the caller's thread.

`SummaryWriter` (writer.py) checks each call's arguments (checks.py), turns its inputs into
numbers and arrays (convert.py, scalars.py) and queues them for its writer thread through the
one `WriterCore` it holds (writer_core.py). compat.py accepts the argument names and orders of
tensorboardX and torch.utils.tensorboard, and global_writer.py holds `GlobalSummaryWriter`.
docs/architecture.md shows how this package reaches the writer thread."""
