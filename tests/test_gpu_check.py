"""The GPU check's one command (tools/gpu_check.py, `make gpu-check`) on a machine without a CUDA
GPU: it runs every part that a CPU allows, says that nothing was measured, and exits 0."""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.xdist_group("gpu-check")  # five child Pythons: handed out with the long chains, not last
def test_without_a_gpu_the_check_runs_what_a_cpu_can_and_says_nothing_was_measured(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is here: make gpu-check measures on it")
    pytest.importorskip("tensorboardX")  # the bench's peer
    out = tmp_path / "figures"
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu_check.py")], capture_output=True,
                          text=True, env=dict(os.environ, OUT=str(out)), timeout=540)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "gpu-check: no CUDA GPU: nothing measured" in done.stdout
    assert sorted(os.listdir(out)) == ["bench-gpu-cpu.json", "gpu-check.log", "pytest-gpu.xml", "summary.json"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["measured"] is False and summary["failed"] == []
    assert list(summary["steps"]) == ["pytest -m gpu", "bench", "system metrics"]
    assert summary["machine"]["cuda"] is False and summary["system_metrics_gpu_rows"] == {}
    # every GPU test was collected and skipped, none failed to import or errored
    suite = ET.parse(out / "pytest-gpu.xml").getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {key: int(suite.get(key)) for key in ("tests", "skipped", "errors", "failures")}
    assert counts["tests"] >= 40 and counts["skipped"] == counts["tests"], counts
    assert counts["errors"] == counts["failures"] == 0, counts
    # the bench checked itself on the CPU: all five loggers timed, mxboard's values read back
    bench = json.loads((out / "bench-gpu-cpu.json").read_text())
    assert bench["checked"]["loss_points"] == 26 and bench["checked"]["histograms"] > 0
    for rows in bench["schedules"].values():
        assert len(rows) == 5 and all(row["step_ms"] > 0 for row in rows.values())
