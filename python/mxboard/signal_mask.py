"""Keeps SIGTERM and SIGINT off mxboard's own threads.

The kernel gives a signal sent to the process to any thread that has not blocked it. mxboard's
threads (the writer thread, each store file's uploader, the flush at the process's end) block
SIGTERM and SIGINT, so such a signal reaches one of the user's threads and never one of ours in
the middle of a write. _writer/signals.py says what happens then."""
import signal

__all__ = ["keep_signals_off_this_thread"]


def keep_signals_off_this_thread() -> None:
    """Block SIGTERM and SIGINT in the calling (mxboard) thread."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
