"""Counts the file-to-file hops of one `add_scalar` call given a torch CUDA scalar, on the caller's
thread, until the call returns. No GPU is needed: a CPU tensor stands in for the CUDA one behind
the fake CUDA seam that the device tests use (tests/fake_cuda.py).

    python tools/count_hops.py      # prints the files in the order the call runs in them, and the count

A hop is a change of the mxboard file whose code runs: a call into a function of another file,
or the return to it (sys.setprofile sees both). The code of other files (the fake stream, numpy,
the standard library) counts as part of the mxboard file that called it. The call counted is
the second of its tag: the series, the ring and the writer thread exist already.
tests/test_device_capture.py asserts the bound.
"""
import contextlib
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextlib.contextmanager
def fake_gpu():
    """Every torch tensor taken for a CUDA one, its copies queued on the fake stream, while inside."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    try:
        from fake_cuda import FakeCuda
    finally:
        sys.path.remove(os.path.join(ROOT, "tests"))
    from mxboard._api import convert
    from mxboard.frameworks import device_capture

    saved = device_capture.CUDA, convert.is_cuda_tensor
    device_capture.CUDA, convert.is_cuda_tensor = FakeCuda(), lambda tensor: True
    try:
        yield
    finally:
        device_capture.CUDA, convert.is_cuda_tensor = saved


def files_run(call):
    """The files, in order, whose code ran while `call()` ran on this thread, each where it
    differs from the one before."""
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

    before = sys.getprofile()
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(before)
    return files


def mxboard_files(files):
    """`files` of mxboard only, a file where it differs from the one before."""
    import mxboard

    package = os.path.dirname(mxboard.__file__) + os.sep
    ours = [where for where in files if where.startswith(package)]
    return [where for i, where in enumerate(ours) if not i or ours[i - 1] != where]


def device_scalar_files():
    """(the mxboard files, every file) that one add_scalar of a torch CUDA scalar runs in, in order."""
    import torch

    from mxboard import SummaryWriter

    with fake_gpu(), tempfile.TemporaryDirectory() as logdir:
        writer = SummaryWriter(logdir)
        try:
            loss = torch.tensor(0.25)
            writer.add_scalar("loss", loss, 0)  # the series, the ring and the thread made
            writer.flush()
            files = files_run(lambda: writer.add_scalar("loss", loss, 1))
        finally:
            writer.close()
    return mxboard_files(files), files


def main():
    import mxboard

    ours, files = device_scalar_files()
    top = os.path.dirname(os.path.dirname(mxboard.__file__))
    for where in ours:
        print("  " + os.path.relpath(where, top))
    print("hops: %d over %d files of mxboard (%d over %d files counting the fake stream's, numpy's and the "
          "standard library's)" % (len(ours) - 1, len(set(ours)), len(files) - 1, len(set(files))))


if __name__ == "__main__":
    main()
