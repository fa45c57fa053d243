"""The seam to upstream TensorBoard (tensorboard_bundle/upstream.py): the pinned release still has
every private name the bundle uses and every name it replaces at run time, and no other module of
the bundle reaches a private name of upstream's (read with `ast`). Bumping TensorBoard, this test
names each name that went away."""
import ast
import importlib
import os

import pytest

from conftest import ROOT
from tensorboard_bundle import upstream

BUNDLE = os.path.join(ROOT, "tensorboard_bundle")
# Private names of the standard library that any module may use.
STANDARD = {("os", "_exit")}


def _has(module_name, dotted):
    found = importlib.import_module(module_name)
    for part in dotted.split("."):
        if not hasattr(found, part):
            return False
        found = getattr(found, part)
        # argparse's list is an instance's
        if found is getattr(importlib.import_module("argparse"), "ArgumentParser", None):
            found = found()
    return True


@pytest.mark.parametrize("module, name", sorted(upstream.PRIVATE) + sorted(upstream.REPLACED))
def test_the_pinned_tensorboard_has_every_name_the_bundle_uses(module, name):
    assert _has(module, name), "%s.%s: %s" % (module, name, {**upstream.PRIVATE, **upstream.REPLACED}[(module, name)])
    if module == "tensorboard.program":
        # the bundle's program is the patched copy of upstream's (patches/)
        assert _has("tensorboard_bundle._patched.program", name), name


def _modules():
    for directory, folders, files in os.walk(BUNDLE):
        folders[:] = [f for f in folders if f not in ("_patched", "__pycache__")]
        for name in files:
            if name.endswith(".py") and not (directory == BUNDLE and name == "upstream.py"):
                path = os.path.join(directory, name)
                with open(path) as f:
                    yield os.path.relpath(path, ROOT), ast.parse(f.read())


def _reaches(tree):
    """(line, what) of each private name of another module's object that `tree` reaches, and each
    private member of an upstream class (`program.X`) that a subclass overrides or calls."""
    program = importlib.import_module("tensorboard.program")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if isinstance(owner, ast.Name) and (owner.id in ("self", "cls") or (owner.id, node.attr) in STANDARD):
                continue
            # super()._x: the override check below names it
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            yield node.lineno, ast.unparse(node)
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                if not (isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name)
                        and base.value.id == "program"):
                    continue
                for member in node.body:
                    if (isinstance(member, ast.FunctionDef) and member.name.startswith("_")
                            and not member.name.startswith("__")
                            and hasattr(getattr(program, base.attr), member.name)
                            and ("tensorboard.program", "%s.%s" % (base.attr, member.name)) not in upstream.PRIVATE):
                        yield member.lineno, "%s.%s overridden" % (base.attr, member.name)


def test_no_module_of_the_bundle_but_the_seam_reaches_a_private_name_of_upstreams():
    found = ["%s:%d %s" % (path, line, what) for path, tree in _modules() for line, what in _reaches(tree)]
    assert not found, "reach them through tensorboard_bundle/upstream.py, listed there:\n" + "\n".join(found)


def test_the_check_finds_a_private_reach_and_an_unlisted_override():
    code = ("from tensorboard import manager\nmanager._get_info_dir()\n"
            "class T(program.TensorBoard):\n    def _fix_something(self): pass\n"
            "    def _make_data_provider(self): pass\n")
    found = list(_reaches(ast.parse(code)))
    assert [what for _, what in found] == ["manager._get_info_dir"], found
    # an override of a member that upstream's class has, and that the seam does not list
    # a listed override, an unlisted one, and a private method of the subclass's own
    code = "class T(program.TensorBoard):\n    def _register_info(self, server): pass\n" \
           "    def _make_server(self): pass\n    def _ours(self): pass\n"
    found = [what for _, what in _reaches(ast.parse(code))]
    assert found == ["TensorBoard._make_server overridden"], found


def test_a_name_the_seam_does_not_list_is_refused_in_one_line():
    from tensorboard import manager

    with pytest.raises(KeyError, match="lists no tensorboard.manager._nothing_here: add it"):
        upstream.private(manager, "_nothing_here")
    with pytest.raises(KeyError, match="lists no tensorboard.manager.start: add it"):
        upstream.replace(manager, "start", None)
