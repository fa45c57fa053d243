"""`mxboard.patch()` and `mxboard.unpatch()`: torch's and tensorboardX's writers made mxboard's.

patch() puts a finder first on `sys.meta_path`. It finds `torch.utils.tensorboard`,
`tensorboardX` and their `writer` modules as the other finders do, and once each has run, puts
the stand-ins (stand_ins.py) in place of its `SummaryWriter` and `FileWriter`: nothing is
imported that the program does not import. A library imported already has them replaced at
once, in every module that bound them by name (`from torch.utils.tensorboard import
SummaryWriter`). unpatch() puts the originals back wherever a stand-in is bound. With
MXBOARD_PATCH=1, the wheel's .pth file puts a trigger on `sys.meta_path` at the interpreter's
start (setup.py), which imports mxboard and patches when the program first imports either
library: that is how `python -m mxboard run` reaches its child Pythons.
"""
from __future__ import annotations

import importlib.abc
import os
import sys
import threading
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .._writer.lifecycle import ON
from . import stand_ins

__all__ = ["VARIABLE", "patch", "patched", "triggered", "unpatch"]

# With this variable on (1, true, yes or on, any case, as every switch of mxboard's), every Python
# started patches (through the wheel's .pth file, which reads it by the same rule).
VARIABLE = "MXBOARD_PATCH"
# The class name of the .pth file's finder (setup.py), which patch() and unpatch() take away.
TRIGGER = "MXBoardPatchTrigger"

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
        # Its `on` is set while this thread's finder asks the other finders.
        self.finding = threading.local()


_STATE = _State()


class _Loader(importlib.abc.Loader):
    """The library's own loader, and after it has run the module, the stand-ins put in."""

    def __init__(self, loader: Any, name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: ModuleSpec) -> Optional[ModuleType]:
        create = getattr(self._loader, "create_module", None)
        return None if create is None else create(spec)

    def exec_module(self, module: ModuleType) -> None:
        # The module keeps its own loader (inspect, importlib.resources and reload ask it).
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        with _STATE.lock:
            if _STATE.patched:
                _put_in(module, self._name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path while patched: the target modules, found by the finders after it,
    with a loader that puts the stand-ins in."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[ModuleSpec]:
        if fullname not in TARGETS or not _STATE.patched or getattr(_STATE.finding, "on", False):
            return None
        _STATE.finding.on = True
        try:
            spec = _find_elsewhere(self, fullname, path, target)
        finally:
            _STATE.finding.on = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, fullname)
        return spec


_FINDER = _Finder()


def _find_elsewhere(finder: Any, fullname: str, path: Any, target: Any) -> Optional[ModuleSpec]:
    """The spec that the other finders on sys.meta_path give, in their order."""
    for other in list(sys.meta_path):
        find = getattr(other, "find_spec", None)
        if other is finder or find is None or type(other).__name__ == TRIGGER:
            continue
        spec = find(fullname, path, target)
        if spec is not None:
            return spec  # type: ignore[no-any-return]
    return None


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


def _drop_triggers() -> None:
    """Take the .pth file's trigger off sys.meta_path (patch() and unpatch() decide from here)."""
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != TRIGGER]


def patch() -> None:
    """Make torch's and tensorboardX's `SummaryWriter` and `FileWriter` mxboard's, in this process.

    Before their import, a finder makes them mxboard's as they are imported; after it, they are
    replaced at once in the library and in every module that bound them by name. Writers made
    before stay what they are. Idempotent and thread-safe; `unpatch()` undoes it. Child processes
    started by fork inherit it; other child Pythons do where MXBOARD_PATCH=1 is in their
    environment (`python -m mxboard run` sets it). docs/any-library.md says more.
    """
    with _STATE.lock:
        _drop_triggers()
        if _STATE.patched:
            return
        _STATE.patched = True
        sys.meta_path.insert(0, _FINDER)
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
    name, the finder taken off `sys.meta_path`, and MXBOARD_PATCH=1 taken out of `os.environ`
    (child Pythons started after are not patched). Writers made while patched stay mxboard's.
    Idempotent and thread-safe."""
    with _STATE.lock:
        _drop_triggers()
        if VARIABLE in os.environ:
            del os.environ[VARIABLE]
        if not _STATE.patched:
            return
        _STATE.patched = False
        sys.meta_path[:] = [f for f in sys.meta_path if f is not _FINDER]
        _rebind([(STAND_INS[key], original) for key, original in _STATE.originals.items()])


def patched() -> bool:
    """Whether `patch()` is in force."""
    return _STATE.patched


def triggered(fullname: str, path: Optional[Sequence[str]] = None,
              target: Optional[ModuleType] = None) -> Optional[ModuleSpec]:
    """The .pth file's trigger, at the program's first import of torch.utils.tensorboard or
    tensorboardX with MXBOARD_PATCH=1: patch(), then that module's spec, patched."""
    # The program may have taken the variable out since its start.
    if os.environ.get(VARIABLE, "").strip().lower() not in ON:
        with _STATE.lock:
            _drop_triggers()
        return None
    patch()
    return _FINDER.find_spec(fullname, path, target)
