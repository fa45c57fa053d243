"""mxboard's own threads (the writer thread, each store file's uploader, the end's flusher)
never take a process-directed SIGTERM or SIGINT: the kernel gives one to a thread that has not
blocked it, so it reaches the user's threads, never one of ours busy writing (lifecycle.py says
what then happens)."""
import signal

__all__ = ["keep_signals_off_this_thread"]


def keep_signals_off_this_thread() -> None:
    """Block SIGTERM and SIGINT in the calling (mxboard) thread."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
