"""Tags and names as directory names that can never leave the logdir."""
import hashlib
import os
import re

__all__ = ["subdir"]

_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"|?*]')
_MAX_COMPONENT = 120  # bytes; filesystems allow 255, the hash suffix and margins need the rest
_MAX_DEPTH = 8  # directory levels a name may become; deeper ones are folded into the last


def _component(text):
    safe = _UNSAFE.sub("_", text).strip(" .")
    encoded = safe.encode("utf-8", "surrogatepass")
    if len(encoded) > _MAX_COMPONENT:
        safe = encoded[:_MAX_COMPONENT].decode("utf-8", "ignore")
    return safe


def subdir(logdir, *names, remote=False):
    """`logdir/<name>/...`, each name split at slashes and backslashes into components that are
    never empty, `.`, `..` or absolute. Where cleaning changed a name, a short hash of the
    original is appended, so two different names never share a directory. `remote`: `logdir`
    is a path in an object store (joined with `/`; no links to resolve)."""
    parts = []
    for name in names:
        pieces = [_component(p) for p in re.split(r"[/\\]", name)]
        pieces = [p for p in pieces if p] or ["_"]
        if len(pieces) > _MAX_DEPTH:
            pieces = pieces[:_MAX_DEPTH - 1] + [_component("_".join(pieces[_MAX_DEPTH - 1:]))]
        if "/".join(pieces) != name:
            digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
            pieces[-1] = "%s~%s" % (pieces[-1], digest)
        parts.extend(pieces)
    if remote:
        return "/".join([logdir.rstrip("/")] + parts)
    path = os.path.join(logdir, *parts)
    root = os.path.realpath(logdir)
    if os.path.commonpath([root, os.path.realpath(path)]) != root:
        raise ValueError("%r would leave the logdir %r" % ("/".join(names), logdir))
    return path
