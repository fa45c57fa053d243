"""`mxboard.patch()` and `mxboard.unpatch()`: torch's and tensorboardX's writers made mxboard's.

patch() sets a hook of the start-up module (_mxboard_startup: its one finder on `sys.meta_path`)
on `torch.utils.tensorboard`, `tensorboardX` and their `writer` modules: once each has run, the
stand-ins (stand_ins.py) are put in place of its `SummaryWriter` and `FileWriter`; nothing is
imported that the program does not import. A library imported already has them replaced at
once, in every module that bound them by name (`from torch.utils.tensorboard import
SummaryWriter`). unpatch() puts the originals back wherever a stand-in is bound. With
MXBOARD_PATCH on, the wheel's .pth file sets a trigger at the interpreter's start, which imports
mxboard and patches when the program first imports either library: that is how `python -m
mxboard run` reaches its child Pythons.
"""
from __future__ import annotations

import os
import sys
import threading
from types import ModuleType
from typing import Any, Dict, List, Tuple

import _mxboard_startup

from . import stand_ins

__all__ = ["VARIABLE", "patch", "patched", "triggered", "unpatch"]

# With this variable on (1, true, yes or on, any case, as every switch of mxboard's), every Python
# started patches (through the wheel's .pth file and _mxboard_startup, which reads it).
VARIABLE = _mxboard_startup.PATCH
# The keys of the start-up module's hooks: the .pth file's trigger, which patch() and unpatch() take
# away, and the stand-ins put in once a target module has run, while patched.
TRIGGER = "mxboard.patch-trigger"
HOOK = "mxboard.patch"

# The modules whose names are replaced: each library's `writer` module, where its classes are
# defined, and the package, which imports them from there.
TARGETS = ("torch.utils.tensorboard.writer", "torch.utils.tensorboard", "tensorboardX.writer", "tensorboardX")
NAMES = ("SummaryWriter", "FileWriter")
STAND_INS: Dict[Tuple[str, str], type] = {
    ("torch.utils.tensorboard.writer", "SummaryWriter"): stand_ins.TorchSummaryWriter,
    ("torch.utils.tensorboard.writer", "FileWriter"): stand_ins.TorchFileWriter,
    ("tensorboardX.writer", "SummaryWriter"): stand_ins.TensorboardXSummaryWriter,
    ("tensorboardX.writer", "FileWriter"): stand_ins.TensorboardXFileWriter,
}


class _State:
    """Whether the process is patched, and each library's original classes once seen."""

    def __init__(self) -> None:
        # Reentrant: the .pth file's trigger patches from inside an import that patching may see.
        self.lock = threading.RLock()
        self.patched = False
        # The library's class, by its writer module and its name.
        self.originals: Dict[Tuple[str, str], Any] = {}


_STATE = _State()


def _after_run(module_name: str, module: ModuleType) -> None:
    """The start-up module's hook, once a target module has run: the stand-ins put in."""
    with _STATE.lock:
        if _STATE.patched:
            _put_in(module, module_name)


def _library(module_name: str) -> str:
    """The writer module of the library that `module_name` belongs to."""
    return "tensorboardX.writer" if module_name.split(".")[0] == "tensorboardX" else "torch.utils.tensorboard.writer"


def _put_in(module: ModuleType, module_name: str) -> None:
    """The stand-ins in place of the library's classes in `module` (one of TARGETS, just run)."""
    library = _library(module_name)
    namespace = vars(module)
    for name in NAMES:
        value = namespace.get(name)
        stand_in = STAND_INS[(library, name)]
        if value is None or value is stand_in:
            continue
        # Where the class is defined, the class found is the library's (its latest, if imported anew).
        if module_name == library:
            _STATE.originals[(library, name)] = value
        if _STATE.originals.get((library, name)) is value:
            namespace[name] = stand_in


def _rebind(pairs: List[Tuple[Any, Any]]) -> None:
    """In every module imported, each name bound to the first of a pair bound to the second.
    Objects are told apart by identity: no module's values are hashed or compared."""
    swap = {id(old): (old, new) for old, new in pairs}
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            pair = swap.get(id(value))
            if pair is not None and pair[0] is value and namespace.get(name) is value:
                namespace[name] = pair[1]


def patch() -> None:
    """Make torch's and tensorboardX's `SummaryWriter` and `FileWriter` mxboard's, in this process.

    Before their import, a finder makes them mxboard's as they are imported; after it, they are
    replaced at once in the library and in every module that bound them by name. Writers made
    before stay what they are. Idempotent and thread-safe; `unpatch()` undoes it. Child processes
    started by fork inherit it; other child Pythons do where MXBOARD_PATCH=1 is in their
    environment (`python -m mxboard run` sets it). docs/any-library.md says more.
    """
    with _STATE.lock:
        # The hook first, then the trigger away: the start-up module's finder stays where it is.
        _mxboard_startup.after_import(HOOK, TARGETS, _after_run)
        _mxboard_startup.forget(TRIGGER)
        if _STATE.patched:
            return
        _STATE.patched = True
        imported = [name for name in TARGETS if name in sys.modules]
        for name in imported:
            library = _library(name)
            for attr in NAMES:
                value = getattr(sys.modules.get(library), attr, None)
                if library == name and value is not None and value is not STAND_INS[(library, attr)]:
                    _STATE.originals[(library, attr)] = value
        if imported:
            _rebind([(original, STAND_INS[key]) for key, original in _STATE.originals.items()])


def unpatch() -> None:
    """Undo `patch()`: torch's and tensorboardX's classes back wherever a stand-in is bound by
    name, the hooks taken away, and MXBOARD_PATCH taken out of `os.environ`
    (child Pythons started after are not patched). Writers made while patched stay mxboard's.
    Idempotent and thread-safe."""
    with _STATE.lock:
        _mxboard_startup.forget(TRIGGER)
        _mxboard_startup.forget(HOOK)
        if VARIABLE in os.environ:
            del os.environ[VARIABLE]
        if not _STATE.patched:
            return
        _STATE.patched = False
        _rebind([(STAND_INS[key], original) for key, original in _STATE.originals.items()])


def patched() -> bool:
    """Whether `patch()` is in force."""
    return _STATE.patched


def triggered() -> None:
    """The start-up module's trigger, at the program's first import of torch.utils.tensorboard or
    tensorboardX with MXBOARD_PATCH on: patch(), before that module runs."""
    # The program may have turned the variable off since its start.
    try:
        on = _mxboard_startup.flag(VARIABLE, False)
    except ValueError:
        on = False
    if on:
        patch()
    else:
        with _STATE.lock:
            _mxboard_startup.forget(TRIGGER)
