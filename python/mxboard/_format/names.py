"""Names in a logdir, for every storage: tags and names made into path components that can never
leave the logdir, whether a logdir is a URL, and the run of a directory (its path below the
logdir)."""
from __future__ import annotations

import hashlib
import os
import posixpath
import re
from typing import Dict, Iterable, List

__all__ = ["components", "is_url", "local_names", "part_key", "run_of", "stitched_name"]

_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"|?*]')
# Bytes; filesystems allow 255, and the hash suffix and margins need the rest.
_MAX_COMPONENT = 120
# The directory levels a name may become; deeper ones are folded into the last.
_MAX_DEPTH = 8
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_PART = re.compile(r"^(.+tfevents.+)\.part(z*)(\d{4,})$")
# The bytes in a path component that every common local filesystem allows.
_NAME_MAX = 255


def is_url(path: object) -> bool:
    """Whether `path` is a logdir URL (`s3://...` or any fsspec URL; `file://` is a local path)."""
    return isinstance(path, str) and bool(_URL.match(path)) and not path.startswith("file://")


def _component(text: str) -> str:
    safe = _UNSAFE.sub("_", text).strip(" .")
    encoded = safe.encode("utf-8", "surrogatepass")
    if len(encoded) > _MAX_COMPONENT:
        safe = encoded[:_MAX_COMPONENT].decode("utf-8", "ignore")
    return safe


def components(*names: str) -> List[str]:
    """The path components of `names` below a logdir: each name split at slashes and
    backslashes into components that are never empty, `.`, `..` or absolute. Where cleaning
    changed a name, a short hash of the original is appended, so two different names never
    share a directory."""
    parts: List[str] = []
    for name in names:
        pieces = [_component(p) for p in re.split(r"[/\\]", name)]
        pieces = [p for p in pieces if p] or ["_"]
        if len(pieces) > _MAX_DEPTH:
            pieces = pieces[:_MAX_DEPTH - 1] + [_component("_".join(pieces[_MAX_DEPTH - 1:]))]
        if "/".join(pieces) != name:
            digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
            pieces[-1] = "%s~%s" % (pieces[-1], digest)
        parts.extend(pieces)
    return parts


def run_of(logdir: str, directory: str) -> str:
    """The run of `directory` below `logdir`, as TensorBoard names it: its path relative to the
    logdir with `/` between components, or '.' for the logdir itself. Both are local paths, or
    both are URLs (or paths in one store)."""
    if is_url(logdir) or is_url(directory):
        root = logdir.split("://", 1)[-1].strip("/")
        below = directory.split("://", 1)[-1].strip("/")
        relative = posixpath.relpath(below, root) if root else below
    else:
        relative = os.path.relpath(directory, logdir).replace(os.sep, "/")
    return relative if relative not in ("", ".") else "."


def part_key(base: str, number: int) -> str:
    """The name in a store of an event file's object `number` (1, 2, ...) after `base`:
    `<base>.part0001` to `.part9999`, then `.partz10000`, `.partzz100000` and so on. There is one
    `z` per digit past four, and as `z` sorts after every digit, the names always sort in the
    order they were made."""
    digits = "%04d" % number
    return "%s.part%s%s" % (base, "z" * (len(digits) - 4), digits)


def stitched_name(name: str) -> str:
    """The event file that an object `name` belongs to: `<base>` for `<base>.partNNNN` (the names
    part_key makes), else `name` itself."""
    match = _PART.match(name)
    if match and len(match.group(3)) == 4 + len(match.group(2)):
        return match.group(1)
    return name


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def _holdable(component: str) -> str:
    """`component` itself where a local disk can hold it, else a safe and unique stand-in: the
    name cut to fit (at a character), a hash of the whole, and `tfevents` where the name had it
    (loaders look for it)."""
    try:
        encoded = component.encode("utf-8")
    # A lone surrogate, which no filesystem name holds.
    except UnicodeEncodeError:
        encoded = component.encode("utf-8", "replace")
    if len(encoded) <= _NAME_MAX and "\x00" not in component and encoded.decode("utf-8") == component:
        return component
    cut = encoded.replace(b"\x00", b"_")[:200].decode("utf-8", "ignore")
    return "%s~%s%s" % (cut, _digest(component), "~tfevents" if "tfevents" in component else "")


def local_names(names: Iterable[str]) -> Dict[str, str]:
    """The local relative path of each of the files `names` of a logdir in a store, as
    {name: path}.

    The names have `/` between components, and none is empty, `.` or `..`. A path is the name
    itself wherever a local disk can hold it, so that runs are named as in the store. A component
    over 255 bytes, or with a character that no filesystem takes, is cut and given a hash of the
    whole (_holdable). A file whose path is also a directory of other files (`run2` beside
    `run2/events...`) gets a `~file-<hash>` suffix. Two names never share a path, and a name's
    path depends on the other names only where it is such a file."""
    mapped = {name: "/".join(_holdable(c) for c in name.split("/")) for name in names}
    directories = {path.rsplit("/", 1)[0] for path in mapped.values() if "/" in path}
    directories |= {d.rsplit("/", i)[0] for d in directories for i in range(1, d.count("/") + 1)}
    return {name: path if path not in directories else "%s~file-%s" % (path, _digest(name))
            for name, path in mapped.items()}
