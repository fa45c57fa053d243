"""What runs at the start of every Python that mxboard is installed in, the one after-import hook
that mxboard.patch() and the bundle's notebook share, and the one rule for on/off variables.

The wheel's .pth file is one line, `import _mxboard_startup; _mxboard_startup.start()`, which
`site` runs at every start of the interpreter, the training loop's too. So this module imports
the standard library only (what `site` has already, and _thread), and nothing of mxboard's or
the bundle's until a program imports what needs it (`start` says what each part does).
"""
# _thread, not threading, and typing for the type checker only (the annotations are strings): each
# import here is paid at every start of every Python of the environment.
import _thread
import os
import sys

# mypy takes MYPY as True.
MYPY = False
if MYPY:
    from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

    _After = Callable[[str, Any], None]
    _Before = Callable[[str], None]

__all__ = ["OFF", "ON", "PATCH", "after_import", "before_import", "flag", "forget", "start"]

# The words that turn a switch on or off (any case, spaces around them ignored).
ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")
# With this variable on, every Python started patches (mxboard._patch).
PATCH = "MXBOARD_PATCH"
# The modules whose first import patches, where PATCH is on.
_PATCHED_AT = ("torch.utils.tensorboard", "tensorboardX")
# The modules that the bundle's notebook changes once they have run.
_NOTEBOOK = ("tensorboard.manager", "tensorboard.notebook")


def flag(name: str, default: bool, environ: "Optional[Mapping[str, str]]" = None) -> bool:
    """An on/off environment variable: 1, true, yes, on or 0, false, no, off (any case); unset or
    empty, `default`. Raises ValueError, in one line, for anything else."""
    given = (os.environ if environ is None else environ).get(name, "")
    value = given.strip().lower()
    if not value:
        return default
    if value in ON:
        return True
    if value in OFF:
        return False
    raise ValueError("%s must be 1 or 0 (true/false, yes/no, on/off); got %r" % (name, given))


class _Loader:
    """The module's own loader, and once it has run the module, the hooks of its name. (No
    subclass of importlib.abc.Loader: importing importlib.abc costs 30 ms, in every process.)"""

    def __init__(self, loader: "Any", name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: "Any") -> "Any":
        create = getattr(self._loader, "create_module", None)
        return None if create is None else create(spec)

    def exec_module(self, module: "Any") -> None:
        # The module keeps its own loader (inspect, importlib.resources and reload ask it).
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        for callback in _HOOKS.after(self._name):
            callback(self._name, module)

    def __getattr__(self, name: str) -> "Any":
        return getattr(self._loader, name)


class _Hooks:
    """The hooks by module name, and the one finder that runs them, first on sys.meta_path while
    any hook is set. A `before` hook runs once, at the first search for one of its names (before
    that module runs); an `after` hook runs each time one of its modules has run. Each is kept
    under a key, by which `forget` takes it away."""

    def __init__(self) -> None:
        # Reentrant: a hook may import, and so search again, on the same thread.
        self.lock = _thread.RLock()
        self._after: Dict[str, List[Tuple[str, _After]]] = {}
        self._before: Dict[str, List[Tuple[str, _Before]]] = {}
        # Set on a thread while the finder asks the other finders.
        self._finding = _thread._local()

    def after(self, name: str) -> "List[_After]":
        with self.lock:
            return [callback for _, callback in self._after.get(name, ())]

    def add(self, table: "Dict[str, List[Any]]", key: str, names: "Iterable[str]", callback: "Any") -> None:
        with self.lock:
            for name in names:
                entries = table.setdefault(name, [])
                if (key, callback) not in entries:
                    entries.append((key, callback))
            self._place()

    def forget(self, key: str) -> None:
        with self.lock:
            _drop(self._after, key)
            _drop(self._before, key)
            self._place()

    def _place(self) -> None:
        """The finder on sys.meta_path (first, when it comes) while a hook is set, and off it once
        none is. Never moved while there: an import may be going through the list."""
        there = any(finder is _FINDER for finder in sys.meta_path)
        if (self._after or self._before) and not there:
            sys.meta_path.insert(0, _FINDER)
        elif not (self._after or self._before) and there:
            sys.meta_path.remove(_FINDER)

    def find_spec(self, fullname: str, path: "Optional[Sequence[str]]" = None, target: "Any" = None) -> "Any":
        if (fullname not in self._after and fullname not in self._before) or getattr(self._finding, "on", False):
            return None
        with self.lock:
            before = [callback for _, callback in self._before.pop(fullname, ())]
            if before:
                # A `before` hook runs once for all its names.
                for name in list(self._before):
                    self._before[name] = [e for e in self._before[name] if e[1] not in before]
                    if not self._before[name]:
                        del self._before[name]
        for callback in before:
            callback(fullname)
        if fullname not in self._after:
            return None
        self._finding.on = True
        try:
            spec = _spec_elsewhere(fullname, path, target)
        finally:
            self._finding.on = False
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader, fullname)
        return spec


def _drop(table: "Dict[str, List[Tuple[str, Any]]]", key: str) -> None:
    """Every hook of `key` out of `table`, and the names left with none."""
    for name in list(table):
        table[name] = [entry for entry in table[name] if entry[0] != key]
        if not table[name]:
            del table[name]


def _spec_elsewhere(fullname: str, path: "Any", target: "Any") -> "Any":
    """The spec that the other finders on sys.meta_path give, in their order."""
    for finder in list(sys.meta_path):
        find = getattr(finder, "find_spec", None)
        if finder is _FINDER or find is None:
            continue
        spec = find(fullname, path, target)
        if spec is not None:
            return spec
    return None


class _Finder:
    """What sys.meta_path holds: the hooks' finder."""

    def find_spec(self, fullname: str, path: "Optional[Sequence[str]]" = None, target: "Any" = None) -> "Any":
        return _HOOKS.find_spec(fullname, path, target)


_FINDER = _Finder()
_HOOKS = _Hooks()
_STARTED = False


def after_import(key: str, names: "Iterable[str]", callback: "_After") -> None:
    """`callback(name, module)` each time one of the modules `names` has been run by its own
    loader (its first import, a reload). A module imported already is not run again: the caller
    handles what is in sys.modules."""
    _HOOKS.add(_HOOKS._after, key, names, callback)


def before_import(key: str, names: "Iterable[str]", callback: "_Before") -> None:
    """`callback(name)` once, at the first search for one of the modules `names`, before it runs
    (the `after` hooks that the callback sets for that module then apply to it)."""
    _HOOKS.add(_HOOKS._before, key, names, callback)


def forget(key: str) -> None:
    """Take away every hook set under `key`."""
    _HOOKS.forget(key)


def _patch_now(name: str) -> None:
    """At the program's first import of torch.utils.tensorboard or tensorboardX, with PATCH on."""
    __import__("mxboard._patch", fromlist=["triggered"]).triggered()


def _notebook(name: str, module: "Any") -> None:
    __import__("tensorboard_bundle.notebook", fromlist=["after"]).after(name, module)


def _say(line: str) -> None:
    """One line on stderr, where there is one."""
    if sys.stderr is not None:
        try:
            sys.stderr.write("mxboard: %s\n" % line)
        except (OSError, ValueError):
            pass


def start() -> None:
    """What the wheel's .pth file runs at the interpreter's start. Never raises: a Python must
    start whatever its environment holds.

    - Where the environment's scripts directory is not on PATH (a Jupyter kernel started by the
      venv's python, unactivated: VS Code, `python -m ipykernel install`, nbclient), it sets
      TENSORBOARD_BINARY to its `tensorboard` (unless set), which `%tensorboard` runs.
    - In the `tensorboard` command itself, it keeps upstream's "TensorFlow installation not found"
      line out of the output (tensorboard_bundle/upstream_line.py).
    - With MXBOARD_PATCH on (`python -m mxboard run` sets it for the program's child Pythons), it
      patches torch's and tensorboardX's writers at the program's first import of either
      (mxboard._patch): a child that imports neither never imports mxboard.
    - At the import of `tensorboard.manager` or `tensorboard.notebook` (a kernel's `%tensorboard`,
      TensorBoard itself), once the module has run, tensorboard_bundle.notebook gives them the
      private info directory and the server's token.
    """
    global _STARTED
    # Once: a venv's lib64 link to lib has `site` read the .pth file twice.
    if _STARTED:
        return
    _STARTED = True
    scripts = os.path.join(sys.prefix, "Scripts" if os.name == "nt" else "bin")
    command = os.path.join(scripts, "tensorboard.exe" if os.name == "nt" else "tensorboard")
    if scripts not in os.environ.get("PATH", "").split(os.pathsep) and os.path.isfile(command):
        os.environ.setdefault("TENSORBOARD_BINARY", command)
    if os.path.basename((getattr(sys, "argv", None) or [""])[0]) in ("tensorboard", "tensorboard.exe"):
        __import__("tensorboard_bundle.upstream_line", fromlist=["hide"]).hide()
    try:
        patching = flag(PATCH, False)
    except ValueError as exc:
        _say("%s: not patched" % exc)
        patching = False
    if patching:
        before_import("mxboard.patch-trigger", _PATCHED_AT, _patch_now)
    after_import("tensorboard_bundle.notebook", _NOTEBOOK, _notebook)
