"""`scan_together` on a second core: a child process that scans the batches of small files that
a parent sends it, so that the parent takes one batch's records while the child scans the next.

The parent (`ScanProcess`) sends each batch down the child's stdin and reads its scan from the
child's stdout, a frame each way (an 8-byte length, then a pickle), on one thread of its own;
`submit` gives a Future. The pipes are the only way in: nothing listens, and the child ends at the
end of its stdin (the parent closed it, or died), not at a Ctrl-C (a process group of its own).
It starts isolated (-I) and imports numpy and the scanner only (about 0.15 s). Where the child
cannot start or dies, each batch is scanned in the parent. Given a `Plan`, the child scans a first
pass's batches before they are asked for (scan_ahead.py).
"""
import concurrent.futures
import logging
import os
import pickle
import signal
import struct
import subprocess
import sys
from typing import IO, Any, List, Optional, Sequence

from .scan import scan_together
from .scan_ahead import Ahead, Plan

__all__ = ["ScanProcess", "main"]

logger = logging.getLogger(__name__)

_LENGTH = struct.Struct("<Q")
# What the child runs, isolated (-I: nothing imported from the directory it starts in, nor from
# the environment's PYTHON* variables): the parent's sys.path comes first down the pipe, so the
# child imports the scanner the parent imported, from wherever the parent found it.
_CHILD = "import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); " \
         "from mxboard._reading.scan_process import main; main()"


class ScanProcess:
    """A child process that scans batches (`submit`), one after another; `close` ends it. `plan`:
    the batches that it scans before they are asked for."""

    def __init__(self, plan: Optional[Plan] = None) -> None:
        self._process: Optional["subprocess.Popen[bytes]"] = None
        # One thread: a batch is sent, then its scan read back, in the order submitted.
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mxboard scan")
        self._plan = plan
        # The batches answered from the child's scans ahead.
        self.scanned_ahead = 0
        if getattr(sys, "frozen", False) or not sys.executable:
            # A frozen application's executable is no Python that runs -c.
            logger.info("no Python to run the scanner's child process: batches are scanned here")
            return
        try:
            # In a process group of its own: a Ctrl-C at the terminal is the parent's to decide.
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                start_new_session=True, creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0))
            assert self._process.stdin is not None and self._process.stdout is not None
            for pipe in (self._process.stdin, self._process.stdout):
                _widened(pipe)
            pickle.dump(list(sys.path), self._process.stdin)
            pickle.dump(plan, self._process.stdin)
            self._process.stdin.flush()
        except (OSError, ValueError) as exc:
            logger.info("the scanner's child process cannot start (%s): batches are scanned here", exc)
            self._stop()

    def submit(self, pieces: List[bytes], paths: Optional[Sequence[str]] = None) -> "concurrent.futures.Future[Any]":
        """`scan_together(pieces)`, as the child gives it (or as it gives it here); `paths`: the
        pieces' files, where a batch may have been scanned ahead."""
        try:
            return self._thread.submit(self._scan, pieces, tuple(paths) if paths is not None else None)
        except RuntimeError:
            # The interpreter is ending (its threads take no new work): scanned on this thread,
            # as where there is no child.
            done: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
            done.set_result(scan_together(pieces))
            return done

    def _scan(self, pieces: List[bytes], paths: Optional[Sequence[str]]) -> Any:
        process = self._process
        if process is not None:
            assert process.stdin is not None and process.stdout is not None
            try:
                lengths = [len(piece) for piece in pieces]
                if self._plan is not None and paths is not None:
                    # Asked first without the bytes: the child may have scanned them ahead.
                    _send(process.stdin, (paths, lengths, None))
                    scanned, found = _received(process.stdout)
                    if scanned:
                        self.scanned_ahead += 1
                        return found
                _send(process.stdin, (paths, lengths, pieces))
                return _received(process.stdout)[1]
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                logger.info("the scanner's child process ended (%s): batches are scanned here", exc)
                self._stop()
        return scan_together(pieces)

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            for pipe in (process.stdin, process.stdout):
                try:
                    if pipe is not None:
                        pipe.close()
                except OSError:
                    pass
            process.kill()
            process.wait()

    def close(self) -> None:
        """End the child, once what was submitted is done or cancelled."""
        self._thread.shutdown(wait=True, cancel_futures=True)
        self._stop()

    def __enter__(self) -> "ScanProcess":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


def _widened(pipe: IO[bytes]) -> None:
    """`pipe` made to hold a batch (1 MB, Linux's most for a user by default) where the platform
    allows: each frame then crosses in one write, not in 16 of 64 KB, each waiting for the other
    process (the parent's CPU for the pipes at 10,000 runs: 0.18 s, 0.10 s so)."""
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (ImportError, OSError):
        pass


def _send(pipe: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(_LENGTH.pack(len(data)))
    pipe.write(data)
    pipe.flush()


def _received(pipe: IO[bytes]) -> Any:
    head = pipe.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError("the pipe ended")
    (length,) = _LENGTH.unpack(head)
    data = pipe.read(length)
    if len(data) < length:
        raise EOFError("the pipe ended inside a frame")
    return pickle.loads(data)


def main() -> None:
    """The child: scan each batch read from stdin, its scan written to stdout, until stdin ends."""
    # A Ctrl-C is the parent's to decide (the child's group is its own; this for a SIGINT sent to
    # it alone): the child ends with its pipe, without a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    source, sink = sys.stdin.buffer, os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    # Nothing else may write to the frames' pipe: what Python or a C library writes to standard
    # output goes to standard error.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    plan = pickle.load(source)
    ahead = Ahead(plan) if plan is not None else None
    # Each frame: a batch's (paths, the bytes of each, and the bytes or None to ask whether they
    # were scanned ahead); each answer: (whether scanned, the scan).
    while True:
        try:
            paths, lengths, pieces = _received(source)
        except EOFError:
            return
        answer = ahead.answer(paths, lengths) if pieces is None and ahead is not None else \
            (False, None) if pieces is None else (True, scan_together(pieces))
        try:
            _send(sink, answer)
        except OSError:
            # The parent is gone (its end of the pipe closed): nothing to say to anyone.
            return
