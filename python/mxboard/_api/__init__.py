"""The caller's threads: `SummaryWriter` (writer.py) over its `WriterCore` (writer_core.py), the
arguments' checks (checks.py), inputs to numbers and arrays (convert.py), the scalar hot path
(scalars.py), the peers' names and orders (compat.py), and `GlobalSummaryWriter`. Everything here
runs on the thread that makes the call. It reaches the writer thread through `_writer.worker`'s
verbs, with the items it queues (`_writer.intake`'s Record and PendingScalar) and the process's
hooks (`_writer.lifecycle`: exit, fork, signals, the reaper); it hands the worker where the files
go as a value (`storage.Destination`, with the writer's UploadPolicy and SpoolSettings), never a
storage. `export_scalars` alone reads event files back, on the caller's thread (through
mxboard.reader)."""
