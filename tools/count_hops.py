"""Counts the file-to-file hops of one `add_scalar` call given a torch CUDA scalar, on the caller's
thread, until the call returns. No GPU is needed: a CPU tensor stands in for the CUDA one behind
the fake CUDA seam the device tests use (tests/fake_cuda.py).

    python tools/count_hops.py            # prints each hop's file, then the count and the files

A hop is a change of the Python file whose code runs: a call into a function of another file, or
a return to one (sys.setprofile sees both). The call counted is the second of its tag, so the
series, the slots' ring and the writer thread exist already; the count is the steady state's.
"""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))


def fake_gpu():
    """Take every torch tensor for a CUDA one, its copies queued on the fake stream."""
    from fake_cuda import FakeCuda

    from mxboard._api import convert
    from mxboard.frameworks import device_capture

    device_capture.CUDA = FakeCuda()
    convert.is_cuda_tensor = lambda tensor: True


def hops(call):
    """The files, in order, whose code ran while `call()` ran on this thread: one a hop."""
    files = []

    def profile(frame, event, arg):
        if event == "call":
            where = frame.f_code.co_filename
        elif event == "return" and frame.f_back is not None:
            where = frame.f_back.f_code.co_filename
        else:
            return
        if not files or files[-1] != where:
            files.append(where)

    outer = sys._getframe().f_code.co_filename
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    if files and files[-1] == outer:  # the return to this script ends the count, and is no hop
        files.pop()
    return files


def main():
    import torch

    fake_gpu()
    from mxboard import SummaryWriter

    with tempfile.TemporaryDirectory() as logdir:
        writer = SummaryWriter(logdir)
        loss = torch.tensor(0.25)
        writer.add_scalar("loss", loss, 0)  # the series, the ring and the thread made
        writer.flush()
        files = hops(lambda: writer.add_scalar("loss", loss, 1))
        writer.close()
    base = os.path.dirname(os.path.dirname(sys.modules["mxboard"].__file__))
    ours = [where for where in files if where.startswith(base + os.sep + "mxboard")]
    ours = [where for i, where in enumerate(ours) if not i or ours[i - 1] != where]
    for where in ours:
        print("  " + os.path.relpath(where, base))
    print("hops: %d over %d files of mxboard (%d over %d files with the fake, numpy's and the standard library's)"
          % (len(ours) - 1, len(set(ours)), len(files) - 1, len(set(files))))
    return len(ours) - 1


if __name__ == "__main__":
    main()
