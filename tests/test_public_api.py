"""The public API, pinned (as httpx's test_exported_members does): the names of the public
modules' `__all__` and the writers' public members. A change here is a change users see: it
belongs in docs/compat.md and the changelog, not in a refactor. The modules below the public
ones (`mxboard._api.writer_core`, `mxboard.storage`...) may move freely, but for
`mxboard.storage.is_url`, which integrations and users ask whether a logdir is a URL."""
import ast
import os

import mxboard
import mxboard.reader
from conftest import ROOT

SUMMARY_WRITER = [
    "add_audio", "add_custom_scalars", "add_custom_scalars_marginchart", "add_custom_scalars_multilinechart",
    "add_embedding", "add_event", "add_figure", "add_graph", "add_histogram", "add_histogram_raw", "add_hparams",
    "add_image", "add_image_with_boxes", "add_images", "add_mesh", "add_onnx_graph", "add_openvino_graph",
    "add_pr_curve", "add_pr_curve_raw", "add_scalar", "add_scalars", "add_summary", "add_tensor", "add_text",
    "add_video", "clear_scalar_dict",
    "close", "closed", "export_scalars", "export_scalars_to_json", "flush", "get_logdir", "log_dir", "logdir",
    "reopen", "use_metadata",
]
GLOBAL_SUMMARY_WRITER = ["add_audio", "add_histogram", "add_image", "add_scalar", "add_text", "add_video", "close",
                         "flush", "getSummaryWriter", "logdir"]


def _public(cls):
    return sorted(name for name in dir(cls) if not name.startswith("_"))


def test_the_public_modules_export_what_they_did_and_each_name_exists():
    assert mxboard.__all__ == ["CorruptRecordWarning", "DataLossError", "FileDeletedError", "GlobalSummaryWriter",
                               "MXBoardError", "MXBoardWarning", "ReportError", "SpoolSettings", "SummaryWriter",
                               "TornRecordWarning", "UploadPolicy", "WriterClosedError", "WriterError",
                               "WriterIOError", "WriterTimeoutError", "patch", "unpatch"]
    from mxboard import errors, reader
    from mxboard._writer import intake
    from mxboard.storage import local

    # one class each, wherever it is imported from (old paths keep working)
    assert (mxboard.WriterError is errors.WriterError is intake.WriterError
            and mxboard.FileDeletedError is errors.FileDeletedError is local.FileDeletedError
            and mxboard.DataLossError is errors.DataLossError is reader.DataLossError
            and mxboard.TornRecordWarning is reader.TornRecordWarning
            and mxboard.CorruptRecordWarning is reader.CorruptRecordWarning)
    assert errors.__all__ == ["CorruptRecordWarning", "DataLossError", "FileDeletedError", "MXBoardError",
                              "MXBoardWarning", "ReportError", "TornRecordWarning", "WriterClosedError", "WriterError",
                              "WriterIOError", "WriterTimeoutError"]
    assert sorted(mxboard.reader.__all__) == [
        "CorruptRecordWarning", "DataLossError", "KINDS", "TornRecordWarning", "event_files", "histograms", "hparams",
        "read_events", "read_records", "scalars", "table", "text"]
    import inspect

    from mxboard import report

    assert report.__all__ == ["ReportError", "write"]
    assert report.ReportError is errors.ReportError
    assert str(inspect.signature(report.write)) == (
        "(logdir: str, output: str = 'report.html', runs: Optional[str] = None, tags: Optional[str] = None, "
        "max_points: int = 2000) -> List[str]")
    for module in (mxboard, mxboard.reader, report):
        assert [name for name in module.__all__ if not hasattr(module, name)] == []
    # mxboard.callbacks imports mxnet: read without importing it (the plain environments have none)
    with open(os.path.join(ROOT, "python", "mxboard", "callbacks.py")) as f:
        tree = ast.parse(f.read())
    (exported,) = [ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                   and any(getattr(t, "id", None) == "__all__" for t in node.targets)]
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert exported == ["ModuleLogger", "SummaryHandler", "log_parameters"] and set(exported) <= defined


def test_the_writers_public_members_are_what_they_were():
    import inspect

    assert _public(mxboard.SummaryWriter) == SUMMARY_WRITER
    assert _public(mxboard.GlobalSummaryWriter) == GLOBAL_SUMMARY_WRITER
    assert list(inspect.signature(mxboard.SummaryWriter.add_summary).parameters) == [
        "self", "summary", "global_step", "walltime"]  # tensorboardX's and torch's FileWriter.add_summary
    assert list(inspect.signature(mxboard.SummaryWriter.add_event).parameters) == [
        "self", "event", "step", "walltime"]  # tensorboardX's and torch's FileWriter.add_event


def test_whether_a_logdir_is_a_url_is_public():
    """`mxboard.storage.is_url` is the one answer to "is this logdir in an object store?", as a
    writer decides it; the old alias `within` of `call_with_timeout` is gone."""
    import inspect

    from mxboard import storage

    assert "is_url" in storage.__all__ and list(inspect.signature(storage.is_url).parameters) == ["path"]
    logdirs = ["s3://bucket/run", "gs://b", "az://c/d", "memory://x", "runs/exp1", "/abs/run", "file:///tmp/run",
               "run:1/x", "C:\\runs", b"s3://bucket", None]
    assert [storage.is_url(p) for p in logdirs] == [True] * 4 + [False] * 7
    assert "within" not in storage.__all__ and not hasattr(storage, "within")


def test_a_writers_store_settings_are_values_pinned_and_checked(tmp_path):
    """A store writer's settings are two values, passed to the constructor (nothing patched):
    their fields and defaults are public, and a wrong one is an error at the call."""
    import dataclasses
    import inspect

    import pytest

    from mxboard import SpoolSettings, SummaryWriter, UploadPolicy

    parameters = inspect.signature(SummaryWriter.__init__).parameters
    assert {"upload_policy", "spool", "process_hooks"} <= {name for name, p in parameters.items()
                                                            if p.kind is p.KEYWORD_ONLY}
    assert parameters["process_hooks"].default is None  # None: as MXBOARD_PROCESS_HOOKS says, else on
    with pytest.raises(TypeError, match=r"process_hooks must be a bool or None; got str"):
        SummaryWriter(str(tmp_path / "run"), process_hooks="no")
    assert dataclasses.asdict(UploadPolicy()) == {
        "upload_secs": 10, "max_object": 16 << 20, "max_unsent": 64 << 20, "request_secs": 30, "check_secs": 10,
        "retry_secs": 2, "give_up_secs": 180, "flush_secs": 30, "first_part": 1}
    assert [f.name for f in dataclasses.fields(SpoolSettings)] == ["directory", "max_bytes", "source"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        UploadPolicy().upload_secs = 1  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"UploadPolicy.request_secs must be > 0; got 0"):
        UploadPolicy(request_secs=0)
    with pytest.raises(TypeError, match=r"UploadPolicy.max_object must be an int; got float"):
        UploadPolicy(max_object=1.5)
    with pytest.raises(ValueError, match=r"max_bytes must be an int >= 0 or None; got -1"):
        SpoolSettings(max_bytes=-1)
    with pytest.raises(ValueError, match=r"upload_policy applies to a logdir in an object store \(a URL\)"):
        SummaryWriter(str(tmp_path / "run"), upload_policy=UploadPolicy())
    with pytest.raises(TypeError, match=r"spool must be a mxboard.SpoolSettings or None; got dict"):
        SummaryWriter("memory://settings/run", spool={"directory": str(tmp_path)})
    assert not (tmp_path / "run").exists()
