"""The commands mxboard prints for the user to run (its help's examples, the serve hint) run as
they are from where the user is: `python` and `tensorboard` where PATH finds this environment's
(an activated venv), else their paths (`.venv/bin/python`). A newcomer on a shared server copied
`python -m mxboard run ...` from the help, and the system's python had no mxboard."""
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

BIN = os.path.dirname(os.path.abspath(sys.executable))
# PATH without this environment's scripts: the system's own directories only.
BARE_PATH = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                            if p and os.path.abspath(p) != BIN) or "/usr/bin:/bin"


def _examples(args, path, cwd):
    env = dict(os.environ, PATH=path)
    env.pop("MXBOARD_SERVE_HINT", None)
    done = subprocess.run([sys.executable, "-m", "mxboard"] + args, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    shown = done.stdout.split("examples:", 1)[1]
    return [line.strip() for line in shown.splitlines() if line.startswith("  ") and not line.startswith("    ")]


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"]])
def test_the_help_examples_name_this_environments_python_where_it_is_not_on_path(tmp_path, args):
    venv = os.path.dirname(BIN)
    cwd = os.path.dirname(venv)
    relative = os.path.join(os.path.relpath(BIN, cwd), os.path.basename(sys.executable))
    unactivated = _examples(args, BARE_PATH, cwd)
    assert unactivated and all(line.startswith(relative + " -m mxboard ") or line.endswith("--logdir runs")
                               for line in unactivated), unactivated
    activated = _examples(args, BIN + os.pathsep + BARE_PATH, cwd)
    assert all(line.startswith(("python -m mxboard ", "python3 -m mxboard ", "tensorboard --logdir runs"))
               for line in activated), activated
    # Elsewhere (not below the venv), the path is absolute.
    elsewhere = _examples(args, BARE_PATH, str(tmp_path))
    assert all(line.startswith(os.path.abspath(sys.executable)) or "--logdir runs" in line for line in elsewhere), \
        elsewhere
    if args == ["--help"]:
        (serve,) = [line for line in unactivated if "--logdir" in line]
        assert serve == os.path.join(os.path.relpath(BIN, cwd), "tensorboard") + " --logdir runs", unactivated
