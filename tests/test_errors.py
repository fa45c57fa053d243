"""mxboard's errors and warnings: all defined in mxboard/errors.py, each one an `MXBoardError` (or
`MXBoardWarning`) that keeps its built-in base, and each one caught by `except MXBoardError` where
a real situation raises it."""
import ast
import errno
import functools
import os
import pickle
import shutil
import warnings

import pytest

import mxboard
from conftest import ROOT, small_tmpfs, started_worker
from mxboard import MXBoardError, SummaryWriter, errors, reader, report

PACKAGE = os.path.join(ROOT, "python", "mxboard")
BASES = {errors.WriterError: RuntimeError, errors.WriterIOError: OSError, errors.WriterTimeoutError: TimeoutError,
         errors.WriterClosedError: RuntimeError,
         errors.FileDeletedError: FileNotFoundError, errors.DataLossError: ValueError, errors.ReportError: Exception}


def _raised(call):
    """What `call()` raised, caught as an MXBoardError (None if it raised nothing)."""
    try:
        call()
    except MXBoardError as exc:
        return exc
    return None


def test_no_module_but_errors_py_defines_an_exception_or_a_warning():
    found = []
    for directory, _, names in os.walk(PACKAGE):
        for name in names:
            path = os.path.join(directory, name)
            if not name.endswith(".py") or path == os.path.join(PACKAGE, "errors.py"):
                continue
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    bases = [ast.unparse(base) for base in node.bases]
                    if any(base.endswith(("Error", "Exception", "Warning")) for base in bases):
                        found.append("%s: class %s(%s)" % (os.path.relpath(path, ROOT), node.name, ", ".join(bases)))
    assert found == []


def test_every_error_is_an_mxboard_error_and_keeps_its_built_in_base():
    assert all(getattr(mxboard, name) is getattr(errors, name) for name in errors.__all__)
    assert set(BASES) | {MXBoardError} == {getattr(errors, name) for name in errors.__all__
                                           if issubclass(getattr(errors, name), Exception)
                                           and not issubclass(getattr(errors, name), Warning)}
    for error, base in BASES.items():
        assert issubclass(error, MXBoardError) and issubclass(error, base), error
    for warning in (errors.TornRecordWarning, errors.CorruptRecordWarning):
        assert issubclass(warning, errors.MXBoardWarning) and issubclass(warning, UserWarning)
        assert not issubclass(warning, MXBoardError)


def test_the_old_names_are_the_same_classes_and_the_old_except_clauses_still_catch():
    from mxboard._writer import intake
    from mxboard.storage import local

    assert intake.WriterError is errors.WriterError and local.FileDeletedError is errors.FileDeletedError
    assert reader.DataLossError is errors.DataLossError and report.ReportError is errors.ReportError
    assert reader.TornRecordWarning is errors.TornRecordWarning
    assert reader.CorruptRecordWarning is errors.CorruptRecordWarning
    with pytest.raises(RuntimeError, match="is closed"):
        raise intake.closed_error()
    with pytest.raises(FileNotFoundError):
        raise errors.FileDeletedError(2, "deleted", "/x")
    with pytest.raises(ValueError):
        raise errors.DataLossError("corrupt")


def test_a_call_on_a_closed_writer_thread_is_an_mxboard_error(logdir):
    worker = started_worker(logdir, flush_secs=3600, max_queue=10)
    assert worker.close() is None
    error = _raised(lambda: worker.flush())
    assert type(error) is errors.WriterClosedError and "is closed" in str(error)
    assert isinstance(error, RuntimeError)  # as before this class existed


def test_a_writer_whose_logdir_was_deleted_raises_mxboard_errors(logdir):
    w = SummaryWriter(logdir)
    w.add_scalar("x", 1.0, 0)
    w.flush()
    shutil.rmtree(logdir)
    w.add_scalar("x", 2.0, 1)
    deleted = _raised(w.flush)  # the write of step 1 found its file gone
    assert type(deleted) is errors.FileDeletedError, repr(deleted)
    # Nothing more is written, and each call says so: an OSError too, of the deletion's errno.
    stopped = _raised(lambda: w.add_scalar("x", 3.0, 2))
    assert type(stopped) is errors.WriterIOError and stopped.__cause__ is deleted, repr(stopped)
    assert stopped.errno == errno.ENOENT and "stopped writing" in str(stopped)
    w.close()


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs (root only), unmounted after: a disk that fills for real (ENOSPC)."""
    yield from small_tmpfs(tmp_path, "64k")


def _log_until_raised(w):
    """Scalars, flushed every 500, until a call raises; what it raised, caught as an MXBoardError."""
    for step in range(1_000_000):
        error = _raised(functools.partial(w.add_scalar, "x", float(step), step))
        if error is None and step % 500 == 0:
            error = _raised(w.flush)
        if error is not None:
            return error
    raise AssertionError("the disk never filled")


@pytest.mark.slow
def test_a_full_disk_is_first_raised_as_an_mxboard_error_that_is_an_os_error(full_disk):
    """Issue 69: a full disk reached the caller first as a bare OSError, which `except
    MXBoardError` missed, and then as a WriterError. Every call now raises one face: a
    WriterIOError, an MXBoardError and an OSError of the disk's errno, the cause chained."""
    w = SummaryWriter(str(full_disk / "run"), flush_secs=3600)
    first = _log_until_raised(w)
    assert isinstance(first, errors.WriterIOError) and isinstance(first, OSError), repr(first)
    assert isinstance(first, errors.WriterError) and first.errno == errno.ENOSPC, repr(first)
    assert first.strerror == os.strerror(errno.ENOSPC) and first.filename.startswith(str(full_disk / "run"))
    cause = first.__cause__
    assert type(cause) is OSError and cause.errno == errno.ENOSPC, repr(cause)
    then = _raised(lambda: w.add_scalar("x", 0.0, 0))
    assert type(then) is errors.WriterIOError and then.errno == errno.ENOSPC and then.__cause__ is cause
    assert "stopped writing after an earlier error" in str(then)
    assert w.close() is None  # told already: close() returns
    with pytest.raises(OSError) as caught:  # the old `except OSError` still catches it
        raise first
    assert caught.value.errno == errno.ENOSPC


@pytest.mark.slow
def test_a_full_disk_that_no_call_heard_of_is_raised_by_close_as_the_same_face(full_disk):
    """Nothing flushed before close(): the disk fills during close()'s writes, and close() raises
    it, as the next call would have."""
    w = SummaryWriter(str(full_disk / "run"), flush_secs=3600)
    for step in range(8000):  # fewer than a batch (8192): all of it waits for close()
        w.add_scalar("x", float(step), step)
    closed = _raised(w.close)
    assert type(closed) is errors.WriterIOError and closed.errno == errno.ENOSPC, repr(closed)
    assert type(closed.__cause__) is OSError and closed.__cause__.errno == errno.ENOSPC
    assert w.close() is None


def test_a_writer_io_error_keeps_its_errno_and_filename_through_pickle():
    """A pool worker's error reaches its parent pickled."""
    error = errors.WriterIOError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/logs/events")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is errors.WriterIOError and str(copy) == str(error)
    assert (copy.errno, copy.strerror, copy.filename) == (errno.ENOSPC, os.strerror(errno.ENOSPC), "/logs/events")


def test_a_corrupt_record_read_strictly_is_an_mxboard_error_and_its_warning_an_mxboard_warning(logdir):
    with SummaryWriter(logdir) as w:
        w.add_scalar("x", 1.0, 0)
    (name,) = os.listdir(logdir)
    path = os.path.join(logdir, name)
    with open(path, "r+b") as f:
        f.seek(-5, os.SEEK_END)  # inside the last record's payload: its CRC no longer matches
        f.write(b"\xff")
    error = _raised(lambda: list(reader.read_events(path, strict=True)))
    assert type(error) is errors.DataLossError, repr(error)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        list(reader.read_events(path))
    assert [type(w.message) for w in said] == [errors.CorruptRecordWarning]
    assert issubclass(said[0].category, errors.MXBoardWarning)


def test_a_report_that_cannot_be_written_is_an_mxboard_error(tmp_path):
    (tmp_path / "empty").mkdir()
    error = _raised(lambda: report.write(str(tmp_path / "empty"), str(tmp_path / "report.html")))
    assert type(error) is errors.ReportError and "no event files" in str(error), repr(error)


def test_a_changed_copy_of_uplot_is_a_report_error(tmp_path, monkeypatch):
    from mxboard.report import page

    changed = tmp_path / "assets"
    shutil.copytree(page._HERE, changed)
    with open(changed / "uPlot.iife.min.js", "a") as f:
        f.write("\n// changed")
    monkeypatch.setattr(page, "_HERE", str(changed))
    error = _raised(lambda: page.asset("uPlot.iife.min.js"))
    assert type(error) is errors.ReportError and "reinstall mxboard" in str(error), repr(error)
