"""System metrics beside the curves (SummaryWriter(system_metrics=...), system_metrics.py): served
by the bundled TensorBoard like any scalar; bad values refused; an unclosed writer still
collected."""
import gc
import sys
import time
import weakref

import pytest

from conftest import served_losses
from mxboard import SummaryWriter

pytest.importorskip("psutil")

TAGS = ["system/cpu/machine_percent", "system/cpu/process_percent", "system/disk/read_mb_per_s",
        "system/disk/write_mb_per_s", "system/memory/available_mb", "system/memory/process_rss_mb",
        "system/network/received_mb_per_s", "system/network/sent_mb_per_s"]


@pytest.mark.slow
@pytest.mark.plain
def test_system_metrics_are_served_beside_the_curves(tmp_path, serve):
    with SummaryWriter(str(tmp_path), system_metrics=0.5) as writer:
        for step in range(3):
            writer.add_scalar("loss", 1.0, step)
            time.sleep(0.6)
    server = serve(tmp_path)
    tags = server.json("/data/plugin/scalars/tags", until=lambda tags: "." in tags)["."]
    assert sorted(t for t in tags if t.startswith("system/")) == TAGS  # no GPU here: no system/gpu* tags
    rss = served_losses(server, ".", "system/memory/process_rss_mb")
    assert len(rss) >= 2 and all(20 < value < 1 << 16 for _, value in rss)  # MB, as a Python process holds
    steps = [step for step, _ in rss]
    assert steps == sorted(steps) and steps[-1] <= 3  # seconds since the writer began
    cpu = served_losses(server, ".", "system/cpu/machine_percent")
    assert all(0 <= value <= 100 for _, value in cpu)


def test_bad_values_are_refused_and_an_unclosed_writer_is_collected(tmp_path):
    for bad in (0, -1, "often", float("nan")):
        with pytest.raises(ValueError, match="system_metrics must be True, False or a number of seconds > 0"):
            SummaryWriter(str(tmp_path / "bad"), system_metrics=bad)
    writer = SummaryWriter(str(tmp_path / "dropped"), system_metrics=0.05)
    time.sleep(0.2)
    dropped = weakref.ref(writer)
    del writer
    gc.collect()
    assert dropped() is None  # the metrics thread holds it weakly: the reaper closes it


def test_without_psutil_the_call_names_the_extra_and_makes_no_file(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)  # what Python does when it is not installed: ImportError
    with pytest.raises(ImportError, match=r"system_metrics needs psutil: pip install 'mxboard\[system\]'"):
        SummaryWriter(str(tmp_path / "logs"), system_metrics=True)
    assert not (tmp_path / "logs").exists()
    with SummaryWriter(str(tmp_path / "logs")) as w:  # without system metrics, nothing needs psutil
        w.add_scalar("loss", 1.0)
