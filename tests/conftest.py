import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, ".cache")


def accumulator(path, **size_guidance):
    """TensorBoard's own reader over a run directory (or file), fully loaded."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(path), size_guidance=size_guidance or {"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def tb_events(path):
    """Every Event in one file, parsed by TensorBoard's EventFileLoader (its compat protos)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    return list(EventFileLoader(str(path)).Load())


def tb_scalars(path):
    """(tag, step, value) of every scalar in one file, as TensorBoard's loader migrates them
    (simple_value becomes a scalar tensor)."""
    from tensorboard.util import tensor_util

    return [(v.tag, e.step, tensor_util.make_ndarray(v.tensor).item())
            for e in tb_events(path) for v in e.summary.value]


def event_files(directory):
    return sorted(os.path.join(directory, n) for n in os.listdir(directory) if "tfevents" in n)


def run_python(code, env=None, timeout=120, check=True):
    """Run `code` in a fresh interpreter with mxboard importable; returns the CompletedProcess."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [
        (env or {}).pop("PYTHONPATH_PREPEND", None), os.path.join(ROOT, "python")]))
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError("subprocess failed (%d):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
    return proc


def pip_target(spec):
    """`pip install --target` of one requirement into .cache/, once; returns the directory."""
    target = os.path.join(CACHE, "target", spec.replace("==", "-"))
    if not os.path.isdir(os.path.join(target, ".done")):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        target, spec], check=True, timeout=600)
        os.makedirs(os.path.join(target, ".done"))
    return target


@pytest.fixture
def logdir(tmp_path):
    return str(tmp_path / "logs")
