"""The code's shape, read from the source with `ast` (no module is imported, no process started).

- No module docstring in python/mxboard or tensorboard_bundle (its generated `_patched/` aside) is
  longer than 15 lines: a module docstring says what the module is for, and the design essays
  live in docs/architecture.md and docs/server.md.
- The imports inside python/mxboard run one way, down the levels of docs/architecture.md ("The
  import levels", LEVELS below), and no two modules import each other, directly or around a circle.
  LEVELS is checked against that list, so the page and the test cannot drift apart.

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


def level_of(unit: str) -> int:
    return next(i for i, units in enumerate(LEVELS) if unit in units)


def units_without_a_level(modules: Set[str]) -> Set[str]:
    placed = {unit for units in LEVELS for unit in units}
    return {unit_of(m) for m in modules} - placed


def imports_up(found: List[Import]) -> List[str]:
    """Each import of a module on a higher level than the importer's, as a line to read."""
    return [f"{importer}:{line} imports {target} ({unit_of(target)} is above {unit_of(importer)})"
            for importer, target, line in found
            if level_of(unit_of(target)) < level_of(unit_of(importer))]


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


def test_no_module_docstring_is_longer_than_fifteen_lines():
    assert long_docstrings(MXBOARD, os.path.join(ROOT, "tensorboard_bundle")) == {}


def test_every_unit_of_mxboard_has_a_level_and_no_import_runs_back_up():
    modules, found = imports(MXBOARD)
    assert units_without_a_level(modules) == set()
    assert imports_up(found) == []


def test_no_imports_among_mxboard_modules_form_a_circle():
    _, found = imports(MXBOARD)
    assert circles(found) == []


def documented_levels(markdown: str, heading: str = "### The import levels") -> List[List[str]]:
    """The units of each numbered item under `heading`, in order: `x.py` and `x/` name the unit
    x, `__init__.py` names "mxboard"; other backquoted text is not a unit."""
    section = markdown.split(heading, 1)[1].split("\n#", 1)[0]
    items = re.split(r"^\d+\. ", section, flags=re.M)[1:]
    units = []
    for item in items:
        item = item.split("\n\n", 1)[0]  # the list ends at a blank line
        names = re.findall(r"`([A-Za-z_]+)(?:\.py|/)`", item)
        units.append(["mxboard" if name == "__init__" else name for name in names])
    return units


def test_the_levels_are_the_ones_docs_architecture_lists():
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        doc = f.read()
    assert documented_levels(doc) == LEVELS
    assert documented_levels(doc, WRITER_LEVELS_HEADING) == WRITER_LEVELS


def writer_imports_up(modules: Set[str], found: List[Import]) -> Tuple[Set[str], List[str]]:
    """The modules of `_writer/` that WRITER_LEVELS does not place, and each import between two
    of its modules that runs up those levels, as a line to read."""
    def name(module: str) -> str:
        parts = module.split(".")
        return parts[2] if len(parts) == 3 and parts[1] == "_writer" else ""

    level = {unit: i for i, units in enumerate(WRITER_LEVELS) for unit in units}
    unplaced = {name(m) for m in modules if name(m)} - set(level)
    up = [f"{importer}:{line} imports {target}" for importer, target, line in found
          if name(importer) in level and name(target) in level and level[name(target)] < level[name(importer)]]
    return unplaced, up


def test_every_module_of_writer_has_a_level_and_no_import_runs_back_up():
    modules, found = imports(MXBOARD)
    assert writer_imports_up(modules, found) == (set(), [])


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
