"""The start-up module (python/_mxboard_startup.py), which the wheel's .pth file runs at every start
of every Python of the environment: the one rule for on/off variables, the one after-import hook
that mxboard.patch() and the bundle's notebook share, and the .pth file as one import and one
call. Each behaviour is checked in a fresh interpreter, the venv's own, where the wheel is
installed as users get it."""
import json
import subprocess
import sys
import textwrap

import _mxboard_startup
import pytest

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("value, expected", [("", None), ("1", True), ("TRUE", True), (" yes ", True), ("On", True),
                                             ("0", False), ("false", False), ("No", False), ("off", False)])
def test_every_switch_reads_the_same_words(value, expected):
    for default in (True, False):
        wanted = default if expected is None else expected
        assert _mxboard_startup.flag("X", default, {"X": value}) is wanted


def test_a_switch_of_another_word_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"^X must be 1 or 0 \(true/false, yes/no, on/off\); got 'maybe'$"):
        _mxboard_startup.flag("X", False, {"X": "maybe"})


def _python(code, env=None, timeout=60):
    import os

    full = {k: v for k, v in os.environ.items() if k != "MXBOARD_PATCH"}
    full.update(env or {})
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


HOOKS = """
import json, sys, importlib
import _mxboard_startup as s
said = []
s.after_import("a", ["json.tool"], lambda name, module: said.append(["after", name, hasattr(module, "main")]))
s.before_import("b", ["csv", "wave"], lambda name: said.append(["before", name]))
import json.tool, csv, wave
importlib.reload(json.tool)
s.forget("a")
importlib.reload(json.tool)
finders = [f for f in sys.meta_path if f is s._FINDER]
s.forget("tensorboard_bundle.notebook")
print(json.dumps({"said": said, "finders": len(finders), "left": s._FINDER in sys.meta_path}))
"""


@pytest.mark.slow
def test_a_hook_runs_after_its_module_ran_and_a_trigger_once_for_all_its_names():
    """After-import hooks run once the module has run (its names there), at each run (a reload),
    until forgotten; a before-import trigger runs once, at the first of its names; one finder on
    sys.meta_path while any hook is set, none once every hook is forgotten."""
    found = json.loads(_python(HOOKS).stdout.strip().splitlines()[-1])
    assert found == {"said": [["after", "json.tool", True], ["before", "csv"], ["after", "json.tool", True]],
                     "finders": 1, "left": False}


STARTED = """
import json, sys
import _mxboard_startup
print(json.dumps({"finder": sum(f is _mxboard_startup._FINDER for f in sys.meta_path),
                  "mxboard": "mxboard" in sys.modules, "numpy": "numpy" in sys.modules,
                  "bundle": "tensorboard_bundle" in sys.modules, "hooked": sorted(_mxboard_startup._HOOKS._after),
                  "triggers": sorted(_mxboard_startup._HOOKS._before)}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("patch", ["", "true", "maybe"])
def test_the_pth_file_runs_the_start_up_module_and_imports_nothing_else(patch):
    """`python -c` in the venv runs the .pth file's one line: the start-up module's finder is on
    sys.meta_path, with the notebook's hooks, and MXBOARD_PATCH's trigger where it is on; nothing of
    mxboard's, the bundle's or numpy is imported. A value of MXBOARD_PATCH that is no switch word
    is said in one line, and the Python runs on."""
    done = _python(STARTED, {"MXBOARD_PATCH": patch})
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["finder"] == 1 and not (found["mxboard"] or found["numpy"] or found["bundle"]), found
    assert found["hooked"] == ["tensorboard.manager", "tensorboard.notebook"], found
    assert found["triggers"] == (["tensorboardX", "torch.utils.tensorboard"] if patch == "true" else []), found
    if patch == "maybe":
        assert done.stderr.strip() == ("mxboard: MXBOARD_PATCH must be 1 or 0 (true/false, yes/no, on/off); got "
                                       "'maybe': not patched"), done.stderr
    else:
        assert done.stderr == "", done.stderr
