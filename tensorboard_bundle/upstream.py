"""The seam to upstream TensorBoard: every private name of it that the bundle uses, and every name
of its modules that the bundle replaces at run time, listed here, and reached through `private`
and `replace` only. patches/*.diff record what the build changes in upstream's files (vendored
into _patched/); this module records the rest. Bumping TensorBoard means reading this list:
tests/test_upstream.py checks that the pinned release still has each name, and that no other
module of the bundle reaches a private name of upstream's. Standard library only: the notebook's
modules, which a kernel imports, use it."""
from types import ModuleType
from typing import Any, Dict, Tuple

__all__ = ["PRIVATE", "REPLACED", "parser_actions", "private", "replace"]

# (module, name): why the bundle uses that private name. A dotted name is a class's member, which
# the bundle's subclass overrides or calls.
PRIVATE: Dict[Tuple[str, str], str] = {
    ("tensorboard.manager", "_info_to_string"):
        "info_files: an info file's fields, checked and written as upstream writes them",
    ("tensorboard.manager", "_info_from_string"):
        "info_files: an info file read as upstream reads it, in the listing that skips a file gone meanwhile",
    ("tensorboard.manager", "_get_info_dir"): "info_files: replaced by the user's private directory",
    ("tensorboard.manager", "_get_info_file_path"): "info_files: replaced: a name of its own for each server",
    ("tensorboard.notebook", "_display_ipython"): "notebook: replaced: Jupyter's frame carries the token",
    ("tensorboard.notebook", "_display_colab"): "notebook: replaced: Colab's frame carries the token",
    ("tensorboard.notebook", "_display_cli"): "notebook: replaced: the line outside a notebook carries the token",
    ("tensorboard.program", "_WSGIRequestHandler"): "serving: subclassed: no log line holds the token",
    ("tensorboard.program", "WerkzeugServer._fix_werkzeug_logging"):
        "serving: called for the socket's server too (its werkzeug logger at TensorBoard's level: no access log)",
    ("tensorboard.program", "TensorBoard._register_info"): "launcher: overridden: no info file for a socket",
    ("tensorboard.program", "TensorBoard._start_subprocess_data_ingester"):
        "launcher: overridden: the data server in a network namespace of its own (data_server.py)",
    ("tensorboard.program", "TensorBoard._make_data_provider"):
        "launcher: overridden: the bundle's own loader (loader/) by default; the fast loader watched, the "
        "Python loader its fallback (watchdog.py)",
    ("tensorboard.plugins.metrics.metrics_plugin", "MetricsPlugin._tags_impl"):
        "kept_tags: the Time Series tags as upstream makes them, where a run's kept part cannot be made",
    ("tensorboard.plugins.metrics.metrics_plugin", "_get_tag_to_description"):
        "kept_tags: the Time Series tags' descriptions made as upstream makes them, from the runs that describe a tag",
    ("tensorboard.plugins.metrics.metrics_plugin", "_get_tag_run_image_info"):
        "kept_tags: the Time Series images' samples made as upstream makes them",
    ("tensorboard.plugins.core.core_plugin", "CorePlugin._serve_asset"):
        "assets: serves each asset as upstream serves it, gzipped without compressing it again",
    ("tensorboard.plugins.core.core_plugin", "CorePlugin._serve_index"): "assets: serves index.html as upstream does",
    ("argparse", "ArgumentParser._actions"):
        "arguments: every flag TensorBoard's parser defines (argparse has no public list of them)",
}
# (module, name): why the bundle replaces that public name at run time.
REPLACED: Dict[Tuple[str, str], str] = {
    ("tensorboard.manager", "get_all"):
        "info_files: none where the private directory is refused; a file gone between the listing and its reading "
        "skipped",
    ("tensorboard.manager", "write_info_file"): "info_files: private, whole, with who wrote it and the token",
    ("tensorboard.manager", "remove_info_file"): "info_files: only the file this process wrote",
    ("tensorboard.compat.tensorflow_stub.pywrap_tensorflow", "PyRecordReader_New"):
        "launcher: the patched record reader (patches/0008), where the Python loader looks it up",
    ("tensorboard.backend.http_util", "Respond"):
        "launcher: JSON dumped without walking clean content first (patches/0009), where the plugins look it up",
}


def _listed(module: ModuleType, name: str, table: Dict[Tuple[str, str], str]) -> None:
    # A patched copy of an upstream module (_patched/program.py) is listed under upstream's name.
    key = (module.__name__.replace("tensorboard_bundle._patched.", "tensorboard."), name)
    if key not in table:
        raise KeyError("tensorboard_bundle.upstream lists no %s.%s: add it, saying why" % key)


def private(module: ModuleType, name: str) -> Any:
    """`module`'s private `name` (a dotted name: a class's member), which PRIVATE lists. Raises
    AttributeError, in one line, where this TensorBoard has no such name."""
    _listed(module, name, PRIVATE)
    found: Any = module
    for part in name.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise AttributeError("TensorBoard's %s has no %s, which the bundle uses (tensorboard_bundle/upstream.py "
                                 "says why): this TensorBoard is not the one the bundle was made for"
                                 % (module.__name__, name)) from None
    return found


def parser_actions(parser: Any) -> Any:
    """An argparse parser's actions (`ArgumentParser._actions`, which PRIVATE lists)."""
    import argparse

    _listed(argparse, "ArgumentParser._actions", PRIVATE)
    return parser._actions


def replace(module: ModuleType, name: str, value: Any) -> Any:
    """Put `value` in place of `module`'s `name` (which PRIVATE or REPLACED lists); returns what
    was there. Raises AttributeError, in one line, where this TensorBoard has no such name."""
    table = PRIVATE if name.startswith("_") else REPLACED
    _listed(module, name, table)
    if not hasattr(module, name):
        raise AttributeError("TensorBoard's %s has no %s, which the bundle replaces (tensorboard_bundle/upstream.py "
                             "says why): this TensorBoard is not the one the bundle was made for"
                             % (module.__name__, name))
    original = getattr(module, name)
    setattr(module, name, value)
    return original
