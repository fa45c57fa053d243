"""Where users live: numpy 2 without MXNet (make test-plain runs this file on Pythons 3.9 to 3.13),
warnings as errors, the typed API. (The pandas hint beside MXNet is test_release.py's, in the venv
`make demo` builds.)"""
import os
import re
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.each_python  # every plain environment runs this file (tools/plain_envs.sh)

EVERY_KIND = """
import numpy as np
from mxboard import SummaryWriter

rng = np.random.default_rng(0)
with SummaryWriter(LOGDIR) as w:
    w.add_histogram("h", rng.normal(size=1000).astype(np.float32), 0)  # the first histogram of the process
    w.add_histogram("h64", rng.normal(size=1000), 0)
    w.add_histogram("h16", rng.normal(size=1000).astype(np.float16), 0)
    w.add_histogram("hbins", rng.normal(size=100), 0, bins=10)
    w.add_scalar("s", 1.5, 0)
    w.add_scalar("s", np.float32(2.5), 1)
    w.add_scalar("big", 1e300, 2)  # beyond float32: infinity, as protobuf writes it
    w.add_scalars("pair", {"a": 1.0, "b": np.float64(2.0)}, 0)
    w.add_image("i", rng.random((3, 8, 8)), 0)
    w.add_images("b", rng.random((4, 3, 8, 8)), 0)
    w.add_video("v", rng.random((2, 3, 8, 8)), 0)
    w.add_audio("a", np.sin(np.arange(800) / 10.0), sample_rate=8000, global_step=0)
    w.add_text("t", "x", 0)
    w.add_pr_curve("p", rng.integers(0, 2, 50), rng.random(50), num_thresholds=10, global_step=0)
    w.add_pr_curve_raw("r", [3, 2, 1], [2, 1, 0], [0, 1, 2], [0, 1, 2], [0.6, 0.7, 1.0], [1.0, 0.7, 0.3], 0)
    w.add_mesh("m", rng.random((10, 3)), colors=np.full((10, 3), 200), global_step=0)
    w.add_embedding("e", rng.random((5, 3)), labels=list("abcde"), images=rng.random((5, 1, 4, 4)), global_step=0)
    w.add_hparams({"lr": 0.1, "opt": "sgd"}, {"hparam/acc": 0.5})
    w.add_custom_scalars({"c": {"t": ["Multiline", ["s"]]}})
    w.add_histogram_raw("raw", 0, 3, 6, 9, 17, [1, 2, 3], [1, 2, 3], 0)
    w.add_tensor("tensor", np.arange(4.0), 0)
print("logged")
"""


@pytest.mark.slow
@pytest.mark.plain
def test_every_kind_in_a_fresh_process_warns_nothing(tmp_path):
    """The first add_histogram of a process builds its bucket table from float32 patterns, NaNs
    among them: on numpy 2 their cast warned "invalid value encountered in cast" (and failed
    under -W error). Every kind, in a fresh interpreter with every warning an error."""
    code = "LOGDIR = %r\n" % str(tmp_path / "run") + EVERY_KIND
    proc = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONWARNINGS="error"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["logged"] and proc.stderr == ""


def test_values_whose_float32_pattern_is_a_signalling_nan_are_dropped_quietly_with_one_warning(logdir):
    import warnings

    import numpy as np

    from mxboard import SummaryWriter, reader

    signalling = np.array([0x7F800001, 0xFF800001], dtype=np.uint32).view(np.float32)
    values = np.concatenate([signalling, np.float32([1.0, 2.0])])
    with np.errstate(invalid="ignore"):
        wide = values.astype(np.float64)
    with SummaryWriter(logdir) as w:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            w.add_histogram("h", values, 0)
            w.add_histogram("h64", wide, 1)
            w.flush()
    assert [str(c.message) for c in caught] == ["add_histogram('h'): NaN or infinite values were dropped (they "
                                                "cannot be binned) at step 0; said once for this tag",
                                                "add_histogram('h64'): NaN or infinite values were dropped (they "
                                                "cannot be binned) at step 1; said once for this tag"]
    columns = reader.table(logdir, "histograms")
    assert [sum(counts) for counts in columns["counts"]] == [2, 2]


def test_the_readers_pandas_hint_is_the_extra_that_keeps_numpy(logdir, monkeypatch):
    from mxboard import SummaryWriter, reader

    with SummaryWriter(logdir) as w:
        w.add_scalar("s", 1.0, 0)
    monkeypatch.setitem(sys.modules, "pandas", None)  # as where pandas is not installed
    with pytest.raises(ImportError, match=r"needs pandas: pip install 'pandas>=1.5,<3' \(or use "
                                          r"mxboard.reader.table\(logdir, 'scalars'\)"):
        reader.scalars(logdir)
    assert reader.table(logdir, "scalars")["value"] == [1.0]  # no pandas needed


def test_the_package_is_typed_for_its_users():
    import importlib.resources

    assert (importlib.resources.files("mxboard") / "py.typed").is_file()


@pytest.mark.slow
def test_a_users_type_checker_sees_the_public_api(tmp_path):
    """py.typed: mypy checks a user's script against the installed package's annotations."""
    pytest.importorskip("mypy")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        from mxboard import SummaryWriter

        with SummaryWriter("runs/x", flush_secs=2) as w:
            w.add_scalar("loss", 0.5, global_step=1)
            reveal_type(w.logdir)
        SummaryWriter("runs/y", max_queue="ten")
    """))
    env = dict(os.environ, PYTHONPATH="")  # the installed mxboard, as a user has it
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull, str(script)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert re.search(r'Revealed type is "(builtins\.)?str"', proc.stdout), proc.stdout
    assert 'Argument "max_queue" to "SummaryWriter" has incompatible type "str"; expected "int"' in proc.stdout
    assert proc.stdout.count("error:") == 1, proc.stdout

