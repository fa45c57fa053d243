"""What the store did not take by the end, kept on local disk as the objects it would have become.

When close(), the process's exit or a signal ends an event file before the store took all of
it, what waits is written to the spool's directory as `<dir>/<key>`: one file for each object,
each within the policy's max_object. Each is a valid event file, to upload to its key or to serve.
"""
from __future__ import annotations

import collections
import errno
import itertools
import os
import posixpath
from typing import IO, Any, Callable, Iterable, List, Optional, Tuple

from ..._format.sizes import readable
from .parts import Parts, take_records
from .private_files import create_private
from .unsent import Unsent

__all__ = ["keep_on_disk"]


def keep_on_disk(path: str, size: int, parts: Parts, unsent: Unsent, max_object: int,
                 url: Callable[[str], str]) -> str:
    """Keep the `size` bytes that the store did not take of the event file `path` (the current
    part's unconfirmed bytes, then `unsent`) in the spool's directory, under the file's lock. No
    put takes them afterwards. Returns the sentence that says where they are, with `url` making
    each key the URL to upload it to; raises OSError where no directory can keep them."""
    directory = unsent.directory_to_keep()
    if directory is None:
        raise OSError(errno.EIO, "%s: the store did not take %s, and no directory can keep it (set "
                      "MXBOARD_SPOOL_DIR to a writable directory)" % (path, readable(size)))
    contents = itertools.chain([parts.unconfirmed_bytes()], unsent.contents())
    paths, keys, last = _write_objects(directory, parts, contents, max_object)
    unsent.clear()
    parts.kept(last)
    return _where_kept(path, size, paths, [url(key) for key in keys], directory)


def _write_objects(directory: str, parts: Parts, contents: Iterable[bytes], max_object: int) -> Tuple[
        List[str], List[str], int]:
    """Write `contents` (what the store did not take, in order) to `directory` as the objects
    that would have held it: the current part put again with the rest after it (no record is ever
    in two objects), then the next parts, each within `max_object` (but a single larger record).
    Streamed: memory holds one piece of `contents` at a time. Returns (local paths, keys, the
    number of the last part kept)."""
    part = parts.pending_part()
    paths: List[str] = []
    keys: List[str] = []
    kept: Optional[IO[Any]] = None
    size = 0
    try:
        for piece in contents:
            data = collections.deque([piece])
            while data and data[0]:
                if kept is None:
                    kept, path = _create_kept(directory, parts.key(part))
                    paths.append(path)
                    keys.append(parts.key(part))
                taken = take_records(data, max_object - size, at_least_one=not size)
                # The next record does not fit: the next part.
                if not taken:
                    kept.close()
                    kept, size, part = None, 0, part + 1
                    continue
                for records in taken:
                    kept.write(records)
                    size += len(records)
    finally:
        if kept is not None:
            kept.close()
    return paths, keys, part if size else part - 1


def _where_kept(path: str, size: int, paths: List[str], urls: List[str], directory: str) -> str:
    """The sentence that says where the `size` bytes of the event file `path` were kept: in the
    local `paths`, to be uploaded to `urls`, or served from `directory`."""
    if len(paths) == 1:
        where, target = paths[0], urls[0]
    else:
        where = "%s and %d more files beside it (to %s)" % (paths[0], len(paths) - 1, os.path.basename(paths[-1]))
        target = "%s ... %s (each to the name it has)" % (urls[0], posixpath.basename(urls[-1]))
    return ("%s: the store did not take %s in time; it is kept in %s: upload it to %s, or serve it "
            "(tensorboard --logdir %s)" % (path, readable(size), where, target, directory))


def _create_kept(directory: str, key: str) -> Tuple[IO[Any], str]:
    """(a new private file for `key` in `directory`, its path): `<key>`, else `<key>.kept1`...
    where a name is taken (a file, a planted symlink: never written through)."""
    parts = key.split("/")
    for attempt in range(100):
        name = parts[:-1] + [parts[-1] + (".kept%d" % attempt if attempt else "")]
        try:
            return create_private(directory, name, "wb"), os.path.join(directory, *name)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name to keep what waits", os.path.join(directory, *parts))
