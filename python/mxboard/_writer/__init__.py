"""The writer thread and the process around it.

writer_thread.py is the seam: the methods the caller's side uses. intake.py holds what waits for
the thread, in call order, within its bounds. event_files.py builds, encodes and writes each
batch to the event files, and encoding.py turns events into bytes. lifecycle.py decides what
becomes of the writers at exit, at a fork, at SIGTERM and when a writer is collected.
callsite.py shows a warning at the user's line, from either thread."""
