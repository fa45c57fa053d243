"""The code's shape, read from the source with `ast` (no module is imported, no process started).

- No module docstring in python/mxboard or tensorboard_bundle (its generated `_patched/` aside) is
  longer than 15 lines: a module docstring says what the module is for, and the design essays
  live in docs/architecture.md and docs/server.md.
- The imports inside python/mxboard run one way, down the levels of docs/architecture.md ("The
  import levels", LEVELS below), and no two modules import each other, directly or around a circle.
  LEVELS is checked against that list, so the page and the test cannot drift apart.

- A writer's core (`SummaryWriter._core`, writer_core.py) is reached from `_api/` only: the stand-ins
  of `_patch/` and every other module go through `SummaryWriter`'s public calls, and the stand-ins
  import nothing private of mxboard's (only what `mxboard.__all__` exports, and the public modules).

Every import of an mxboard module counts: those at the top of a module, those under
`if TYPE_CHECKING:` and those inside a function alike. A function-level import still means one
module depends on the other, and deferring it to hide a circle is what this test rules out. The
last tests plant a bad tree in a temporary folder, so that each check is seen to fail.
"""
import ast
import os
import re
from typing import Dict, Iterator, List, Set, Tuple

from conftest import ROOT

MOST_DOCSTRING_LINES = 15

# The levels of docs/architecture.md ("The import levels"), from the top: a module may import from
# its own level or a lower one, never from a higher one. A unit is a top-level module or package of
# mxboard ("mxboard" itself is the package's __init__.py). Keep this list and that one in step.
LEVELS: List[List[str]] = [
    ["__main__", "demo", "demo_models", "report", "integrations", "callbacks"],  # programs, add-ons
    ["mxboard", "_patch"],  # the public face: SummaryWriter, the errors, UploadPolicy; patch() and `run`
    ["_api"],  # the caller's threads: checks, captures, queueing
    ["_writer", "reader", "system_metrics"],  # the writer thread; reading files back; sampling
    ["frameworks", "_reading"],  # captures of MXNet's and GPU arrays; reading event files back
    ["summaries"],  # pure builders: numpy in, Summary out
    ["storage"],  # where files go: a directory or an object store
    ["_format"],  # what the writer, the reader and the server share: framing, names, scanning
    ["proto", "errors", "signal_mask"],  # leaves: the protos, the exceptions, the signal mask
]

# The levels of the modules inside `_writer/` (docs/architecture.md, "The levels inside
# `_writer/`"), from the top, by the same rule: each module of the folder is on one of them.
WRITER_LEVELS: List[List[str]] = [
    # The seam.
    ["writer_thread"],
    # A batch's event files; what the process's ends learn of each writer thread.
    ["event_files", "process"],
    # Events to bytes, the intake, the failures; the exit and the signals.
    ["encoding", "intake", "faults", "process_exit", "signals"],
    # The registry of writer threads; the calls into C; a warning at the user's line.
    ["lifecycle", "c_calls", "callsite"],
]
WRITER_LEVELS_HEADING = "#### The levels inside `_writer/`"

# The server's levels (docs/architecture.md, "The server's import levels"), by the same rule: a
# unit is a top-level module or folder of tensorboard_bundle ("tensorboard_bundle" its
# __init__.py). Following --logdir from the launcher to a served point thus never steps back up.
BUNDLE_LEVELS: List[List[str]] = [
    ["__main__", "handover", "notebook"],  # where a process enters
    ["launcher"],  # the launcher, which composes the rest
    ["logdirs", "serving", "loader", "data_server", "watchdog", "info_files", "locate", "kept_tags",
     "assets"],  # composed
    ["arguments", "mirror", "namespace_helper"],  # the command line; the store's mirror; the data server's helper
    ["access", "upstream", "upstream_line", "_patched", "tensorboard_bundle"],  # the leaves
]
BUNDLE_LEVELS_HEADING = "### The server's import levels"
# The levels inside `loader/` ("__init__" its __init__.py), from the data provider down to the bytes.
LOADER_LEVELS: List[List[str]] = [
    ["__init__", "provider"],  # the data provider
    ["logdir", "downsample", "blobs"],  # the reload loop; a read's choice of points; records read back
    # a run read; the runs found; the kernel's news; the polling plan; the first pass scanned ahead
    ["run", "walk", "watch", "schedule", "ahead"],
    ["index"],  # a run in memory
    ["ingest"],  # bytes to records
]
LOADER_LEVELS_HEADING = "#### The levels inside `loader/`"

Import = Tuple[str, str, int]  # (importer, imported module, line)


def module_docstring_lines(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read()), clean=True)
    return len(doc.strip().splitlines()) if doc else 0


def python_files(top: str, skip: Tuple[str, ...] = ()) -> Iterator[str]:
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in skip and d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def long_docstrings(*tops: str) -> Dict[str, int]:
    """The modules under `tops` whose docstring is longer than MOST_DOCSTRING_LINES, and its length."""
    found = {}
    for top in tops:
        for path in python_files(top, skip=("_patched",)):
            lines = module_docstring_lines(path)
            if lines > MOST_DOCSTRING_LINES:
                found[os.path.relpath(path, os.path.dirname(top))] = lines
    return found


def module_name(package_dir: str, path: str) -> str:
    """`mxboard.storage.remote.spool` for .../mxboard/storage/remote/spool.py; a package's
    __init__.py is the package's own name."""
    rel = os.path.relpath(path, os.path.dirname(package_dir))[: -len(".py")].split(os.sep)
    if rel[-1] == "__init__":
        rel.pop()
    return ".".join(rel)


def imports(package_dir: str) -> Tuple[Set[str], List[Import]]:
    """Every module of the package at `package_dir`, and every import in it of one of them.
    `from package import name` is an import of the module `package.name` where that is a module,
    else of `package` itself."""
    top = os.path.basename(package_dir)
    paths = {module_name(package_dir, path): path for path in python_files(package_dir)}
    found: List[Import] = []
    for module, path in paths.items():
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base
                           for alias in node.names]
            else:
                continue
            found += [(module, target, node.lineno) for target in targets
                      if target == top or target.startswith(top + ".")]
    return set(paths), found


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def level_of(unit: str, levels: List[List[str]] = LEVELS) -> int:
    return next(i for i, units in enumerate(levels) if unit in units)


def units_without_a_level(modules: Set[str], levels: List[List[str]] = LEVELS) -> Set[str]:
    placed = {unit for units in levels for unit in units}
    return {unit_of(m) for m in modules} - placed


def imports_up(found: List[Import], levels: List[List[str]] = LEVELS) -> List[str]:
    """Each import of a module on a higher level than the importer's, as a line to read."""
    return [f"{importer}:{line} imports {target} ({unit_of(target)} is above {unit_of(importer)})"
            for importer, target, line in found
            if level_of(unit_of(target), levels) < level_of(unit_of(importer), levels)]


def circles(found: List[Import]) -> List[List[str]]:
    """The strongly connected components of more than one module (or one importing itself) in
    the import graph: each is a circle of imports (Tarjan's algorithm)."""
    graph: Dict[str, Set[str]] = {}
    for importer, target, _ in found:
        graph.setdefault(importer, set()).add(target)
        graph.setdefault(target, set())
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    components: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for after in sorted(graph[node]):
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in on_stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


MXBOARD = os.path.join(ROOT, "python", "mxboard")
BUNDLE = os.path.join(ROOT, "tensorboard_bundle")


def test_no_module_docstring_is_longer_than_fifteen_lines():
    assert long_docstrings(MXBOARD, os.path.join(ROOT, "tensorboard_bundle")) == {}


# The most lines a function may have without a reason: its docstring then says why, in a
# sentence that begins "Its length:".
MOST_FUNCTION_LINES = 60
LENGTH_REASON = "Its length:"


def long_functions(*tops: str) -> Dict[str, int]:
    """The functions under `tops` (`path:name`) longer than MOST_FUNCTION_LINES, decorators and
    docstring included, whose docstring gives no reason, and their lengths."""
    found = {}
    for top in tops:
        for path in python_files(top, skip=("_patched",)):
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                lines = (node.end_lineno or node.lineno) - first + 1
                if lines > MOST_FUNCTION_LINES and LENGTH_REASON not in (ast.get_docstring(node) or ""):
                    found["%s:%s" % (os.path.relpath(path, os.path.dirname(top)), node.name)] = lines
    return found


def test_no_function_is_longer_than_sixty_lines_without_a_reason_in_its_docstring():
    assert long_functions(os.path.join(ROOT, "python"), os.path.join(ROOT, "tensorboard_bundle")) == {}


def test_the_length_check_finds_a_long_function_and_takes_a_reason(tmp_path):
    body = "".join("    x = %d\n" % i for i in range(60))
    package = plant(tmp_path / "pkg", {
        "long.py": "def f():\n" + body,
        "reasoned.py": 'def g():\n    """Its length: one table, read in one place."""\n' + body,
        "short.py": "def h():\n" + body[:-len("    x = 59\n")],
    })
    assert long_functions(package) == {os.path.join("pkg", "long.py") + ":f": 61}


def test_every_unit_of_mxboard_has_a_level_and_no_import_runs_back_up():
    modules, found = imports(MXBOARD)
    assert units_without_a_level(modules) == set()
    assert imports_up(found) == []


def test_no_imports_among_mxboard_modules_form_a_circle():
    _, found = imports(MXBOARD)
    assert circles(found) == []


def documented_levels(markdown: str, heading: str = "### The import levels",
                      package: str = "mxboard") -> List[List[str]]:
    """The units of each numbered item under `heading`, in order: `x.py` and `x/` name the unit
    x, `__init__.py` names `package`; other backquoted text is not a unit."""
    section = markdown.split(heading, 1)[1].split("\n#", 1)[0]
    items = re.split(r"^\d+\. ", section, flags=re.M)[1:]
    units = []
    for item in items:
        item = item.split("\n\n", 1)[0]  # the list ends at a blank line
        names = re.findall(r"`([A-Za-z_]+)(?:\.py|/)`", item)
        units.append([package if name == "__init__" else name for name in names])
    return units


def test_the_levels_are_the_ones_docs_architecture_lists():
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        doc = f.read()
    assert documented_levels(doc) == LEVELS
    assert documented_levels(doc, WRITER_LEVELS_HEADING) == WRITER_LEVELS
    assert documented_levels(doc, BUNDLE_LEVELS_HEADING, "tensorboard_bundle") == BUNDLE_LEVELS
    assert documented_levels(doc, LOADER_LEVELS_HEADING, "__init__") == LOADER_LEVELS


def writer_imports_up(modules: Set[str], found: List[Import], folder: str = "_writer",
                      levels: List[List[str]] = WRITER_LEVELS) -> Tuple[Set[str], List[str]]:
    """The modules of the package's `folder` (`_writer/`) that `levels` does not place, and each
    import between two of its modules that runs up those levels, as a line to read. The folder's
    __init__.py is "__init__" where `levels` place it, else not a module of the folder."""
    level = {unit: i for i, units in enumerate(levels) for unit in units}

    def name(module: str) -> str:
        parts = module.split(".")
        if len(parts) == 2 and parts[1] == folder and "__init__" in level:
            return "__init__"
        return parts[2] if len(parts) == 3 and parts[1] == folder else ""

    unplaced = {name(m) for m in modules if name(m)} - set(level)
    up = [f"{importer}:{line} imports {target}" for importer, target, line in found
          if name(importer) in level and name(target) in level and level[name(target)] < level[name(importer)]]
    return unplaced, up


def test_every_module_of_writer_has_a_level_and_no_import_runs_back_up():
    modules, found = imports(MXBOARD)
    assert writer_imports_up(modules, found) == (set(), [])


def test_every_unit_of_the_server_has_a_level_and_the_way_to_a_served_point_never_runs_back_up():
    modules, found = imports(BUNDLE)
    assert units_without_a_level(modules, BUNDLE_LEVELS) == set()
    assert imports_up(found, BUNDLE_LEVELS) == []
    assert writer_imports_up(modules, found, "loader", LOADER_LEVELS) == (set(), [])
    assert circles(found) == []


def reaches_into_a_core(package_dir: str) -> List[str]:
    """Each `x._core` in a module of the package outside its `_api/`, as `path:line`."""
    found = []
    for path in python_files(package_dir):
        rel = os.path.relpath(path, package_dir)
        if rel.split(os.sep)[0] == "_api":
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        found += [f"{rel}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and node.attr == "_core"]
    return found


def exported(package_dir: str) -> Set[str]:
    """The names of the package's `__all__` (its __init__.py, read without importing it)."""
    with open(os.path.join(package_dir, "__init__.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {name for node in tree.body if isinstance(node, ast.Assign)
            and any(getattr(target, "id", None) == "__all__" for target in node.targets)
            for name in ast.literal_eval(node.value)}


def private_uses(package_dir: str, path: str) -> List[str]:
    """What the module at `path` uses of the package that is private, as lines to read: an import
    of the package's that is neither a name of its `__all__` nor from a public module (no part of
    its name after the package's begins with `_`; the module's own folder aside), and a private
    attribute (`x._name`, not a dunder) that the module does not define itself."""
    public = exported(package_dir)
    top = os.path.basename(package_dir)
    module = module_name(package_dir, path)
    own = module.rpartition(".")[0]
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    # The names the module defines: its functions and classes, class attributes, and attributes
    # it assigns (`self._x = ...`, `view._x = ...`).
    defined = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    defined.add(target.id)
                elif isinstance(target, ast.Attribute):
                    defined.add(target.attr)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{module}:{node.lineno} imports {alias.name}" for alias in node.names
                      if (alias.name == top or alias.name.startswith(top + "."))]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")
                base = ".".join(parts[: len(parts) - node.level] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not (base == top or base.startswith(top + ".")) or base == own or base.startswith(own + "."):
                continue
            private_module = any(part.startswith("_") for part in base.split(".")[1:])
            found += [f"{module}:{node.lineno} imports {base}.{alias.name}" for alias in node.names
                      if alias.name.startswith("_") or (private_module and alias.name not in public)]
        elif (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.endswith("__")
              and node.attr not in defined):
            found.append(f"{module}:{node.lineno} reaches .{node.attr}")
    return found


STAND_INS = os.path.join(MXBOARD, "_patch", "stand_ins.py")


def test_only_api_reaches_a_writers_core_and_the_stand_ins_use_nothing_private():
    """The stand-ins use `SummaryWriter` and its public verbs only (`add_scalars(runs="torch")`,
    `add_event`): one scalar path, the one mxboard's own calls take."""
    assert reaches_into_a_core(MXBOARD) == []
    assert private_uses(MXBOARD, STAND_INS) == []


def plant(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root)


def test_the_checks_find_a_long_docstring_an_import_up_and_a_circle(tmp_path):
    package = plant(tmp_path / "mxboard", {
        "__init__.py": '"""The face."""\nfrom ._api.writer import SummaryWriter\n',
        "_api/__init__.py": "",
        "_api/writer.py": "from .. import storage\nfrom ..storage import local\n",
        "storage/__init__.py": '"""' + "A line.\n" * 16 + '"""\n',
        # a function-level import up a level, which also closes a circle with _api/writer.py
        "storage/local.py": "def f():\n    from .._api import writer\n",
        "_format/__init__.py": "",
        "_format/events.py": "from . import names\n",
        "_format/names.py": "import mxboard._format.events\n",  # a circle within one unit
        "elsewhere.py": "",
        # Inside _writer/: an import up its levels, and a module without a level.
        "_writer/__init__.py": "",
        "_writer/lifecycle.py": "from . import signals\n",
        "_writer/signals.py": "from . import lifecycle\n",
        "_writer/stray.py": "",
    })
    assert long_docstrings(package) == {os.path.join("mxboard", "storage", "__init__.py"): 16}
    modules, found = imports(package)
    assert units_without_a_level(modules) == {"elsewhere"}
    assert ("mxboard._api.writer", "mxboard.storage.local", 2) in found
    assert imports_up(found) == [
        "mxboard.storage.local:2 imports mxboard._api.writer (_api is above storage)"]
    assert writer_imports_up(modules, found) == (
        {"stray"}, ["mxboard._writer.lifecycle:1 imports mxboard._writer.signals"])
    assert sorted(circles(found)) == [["mxboard._api.writer", "mxboard.storage.local"],
                                      ["mxboard._format.events", "mxboard._format.names"],
                                      ["mxboard._writer.lifecycle", "mxboard._writer.signals"]]
    doc = "### The import levels\n\n1. `a.py` and\n   `b/`.\n2. `__init__.py` (`x`).\n\nThe server, `c/`.\n"
    assert documented_levels(doc) == [["a", "b"], ["mxboard"]] != LEVELS
    doc += "\n#### The levels inside `_writer/`\n\n1. `x.py`, `y.py`.\n2. `z.py`.\n"
    assert documented_levels(doc, WRITER_LEVELS_HEADING) == [["x", "y"], ["z"]] != WRITER_LEVELS


def test_the_checks_find_a_core_reached_and_a_private_import_or_attribute(tmp_path):
    package = plant(tmp_path / "mxboard", {
        "__init__.py": '__all__ = ["SummaryWriter", "patch"]\n',
        "_api/writer.py": "class SummaryWriter:\n    def f(self):\n        return self._core\n",
        "_api/convert.py": "",
        "proto/__init__.py": "",
        "_patch/__init__.py": "",
        "_patch/other.py": "",
        "_patch/stand_ins.py": (
            "from .._api.writer import SummaryWriter as Base\n"  # public: a name of __all__
            "from ..proto import Event\n"  # a public module
            "from . import other\n"  # its own folder
            "from .._api import convert\n"  # private
            "from .._api.writer import _helper\n"  # private
            "import mxboard._api.writer\n"  # private
            "class W(Base):\n"
            "    _library = 'x'\n"
            "    def g(self):\n"
            "        self._mine = self._library\n"
            "        return self._mine, self.__dict__, self._core._closed\n"),
    })
    assert reaches_into_a_core(package) == [os.path.join("_patch", "stand_ins.py") + ":11"]
    assert private_uses(package, os.path.join(package, "_patch", "stand_ins.py")) == [
        "mxboard._patch.stand_ins:4 imports mxboard._api.convert",
        "mxboard._patch.stand_ins:5 imports mxboard._api.writer._helper",
        "mxboard._patch.stand_ins:6 imports mxboard._api.writer",
        "mxboard._patch.stand_ins:11 reaches ._closed",
        "mxboard._patch.stand_ins:11 reaches ._core"]
