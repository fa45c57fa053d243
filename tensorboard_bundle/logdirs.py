"""Serves logdirs in object stores from local mirrors. The command line's `--logdir` URL, or the
URLs of `--logdir_spec`, become local mirrors (mirror/) that the bundle's loader reads (or, with
--load_fast=true, upstream's Rust data server). The
server starts once the mirrors' first passes are done, or after FIRST_PASS_SECS. Local paths are
left as they are, and so is everything with `--load_fast=false`: TensorBoard's Python loader then
reads the store itself. A temporary mirror is removed at exit, on SIGTERM, SIGINT and SIGHUP
alike. docs/server.md ("Logdirs in object stores") says which specs are mirrored, and why gs://
is mirrored too.
"""
import atexit
import importlib.util
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from mxboard._format.names import components, is_url
from mxboard._format.sizes import readable
from mxboard.storage.remote.profiles import profile_of
from tensorboard_bundle.arguments import Launch

__all__ = ["serve_remote"]

# The server starts once the mirrors' first passes ended, or after this long.
FIRST_PASS_SECS = 10
# At exit, the mirrors' passes are waited for this long (their manifests saved).
STOP_SECS = 5


def _mirrored(path: str) -> bool:
    """Whether `path` is a URL the mirror serves: every one (see the module's docstring) but one
    of a store that TensorBoard's data server reads itself, where its fsspec package is missing
    (gs:// without gcsfs: the data server reads Google's endpoint)."""
    if not is_url(path):
        return False
    profile = profile_of(path)
    return not profile.read_by_data_server or importlib.util.find_spec(profile.package or "") is not None


def serve_remote(launch: Launch) -> Tuple[Optional[str], Optional[str]]:
    """(logdir, logdir_spec) for TensorBoard to serve, remote logdirs replaced by mirrors that are
    being filled (started here, stopped and, unless the user named their place, removed at
    exit); (None, None): as given."""
    entries = launch.spec_entries() if launch.logdir_spec and not launch.logdir else {}
    urls = [path for path in ([launch.logdir] if launch.logdir else list(entries)) if _mirrored(path)]
    if launch.load_fast == "false" or not urls:
        return None, None
    missing = {url: why for url, why in ((url, _missing_package(url)) for url in urls) if why}
    for url, why in missing.items():
        if _python_loader_reads(url):
            sys.stderr.write("note: no mirror of %s, the Python loader reads it: %s\n" % (url, why))
        # Upstream's reloader would die of it, and serve nothing.
        elif entries:
            sys.stderr.write("note: %s is left out of --logdir_spec, nothing here reads it: %s\n" % (url, why))
            del entries[url]
        else:
            sys.exit("Error: nothing here reads --logdir %s: %s" % (url, why))
    if not (entries or launch.logdir):
        sys.exit("Error: nothing here reads any entry of --logdir_spec")
    left_out = [url for url in urls if url not in entries and url != launch.logdir]
    urls = [url for url in urls if url not in left_out]
    missing = {url: why for url, why in missing.items() if url in urls}
    # There is nothing to mirror.
    if len(missing) == len(urls):
        return (None, _spec_text(entries)) if left_out else (None, None)
    from tensorboard_bundle.mirror import MAX_RECORD_BYTES, Mirror

    directory = launch.mirror_dir
    root = directory or tempfile.mkdtemp(prefix="mxboard-mirror-")
    os.makedirs(root, exist_ok=True)
    limit = launch.mirror_max_bytes or int(shutil.disk_usage(root).free * 0.8)
    mirrors: List[Any] = []
    atexit.register(_stop, mirrors, None if directory else root)
    if hasattr(signal, "SIGHUP") and threading.current_thread() is threading.main_thread():
        # a closed terminal: exit as on SIGTERM (atexit removes the mirror)
        signal.signal(signal.SIGHUP, _exit_on_hangup)

    def mirror(url: str, where: str, exclude: Sequence[str] = ()) -> str:
        mirrors.append(Mirror(url, where, limit, launch.mirror_interval, exclude=exclude,
                              max_record_bytes=launch.mirror_max_record_bytes or MAX_RECORD_BYTES))
        sys.stderr.write("mirror: %s in %s (%s), at most %s on disk (--mirror_max_bytes)\n" % (
            url, where, "kept" if directory else "removed at exit; --mirror_dir DIR keeps one", readable(limit)))
        return where

    try:
        served = (mirror(launch.logdir, root), None) if launch.logdir else _spec(entries, root, mirror, missing)
    except ValueError as exc:
        sys.exit("Error: %s" % exc)
    for m in mirrors:
        m.start()
    deadline = time.monotonic() + FIRST_PASS_SECS
    # The loader's first look finds what the store holds, unless that takes long.
    for m in mirrors:
        m.first_pass.wait(max(0.0, deadline - time.monotonic()))
    return served


def _python_loader_reads(url: str) -> bool:
    """Whether TensorBoard's Python loader has a filesystem for `url` (S3 through boto3: patches/0004)."""
    from tensorboard.compat.tensorflow_stub.io import gfile

    try:
        gfile.get_filesystem(url)
    except (ImportError, ValueError):
        return False
    return True


def _missing_package(url: str) -> Optional[str]:
    """Why `url` cannot be read through fsspec here (its scheme's package missing), or None."""
    from mxboard.storage import open_filesystem

    try:
        open_filesystem(url)
    except ImportError as exc:
        return str(exc)
    return None


def _below(path: str, directory: str) -> bool:
    return path.startswith(directory + os.sep)


def _spec(entries: Dict[str, Optional[str]], root: str, mirror: Callable[[str, str, Sequence[str]], str],
          missing: Mapping[str, str]) -> Tuple[Optional[str], Optional[str]]:
    """(logdir, logdir_spec) serving a --logdir_spec's `entries`: one local tree where every
    entry has a name and can be placed in it, else the spec with each mirrored URL replaced."""
    places: Dict[str, str] = {}
    named = {path: name for path, name in entries.items() if name}
    for path, name in named.items() if len(named) == len(entries) and not missing else ():
        where = os.path.join(root, *components(name))
        if where in places:
            raise ValueError("--logdir_spec names two logdirs %r" % name)
        places[where] = path
    linked = [where for where, path in places.items() if not _mirrored(path)]
    # Outer ones come first.
    mirrored = sorted((where for where, path in places.items() if _mirrored(path)), key=len)
    if any(_below(where, link) for where in places for link in linked):
        sys.stderr.write("note: an entry of --logdir_spec is named inside a local one's directory, which is never "
                         "written: the spec is read by the Python loader\n")
    # One tree, served by the fast loader: the mirrors first, then the links (never inside them).
    elif places:
        for where in mirrored:
            mirror(places[where], where, [os.path.relpath(other, where).replace(os.sep, "/") for other in places
                                            if _below(other, where)])
        for where in linked:
            os.makedirs(os.path.dirname(where), exist_ok=True)
            if os.path.islink(where):
                os.unlink(where)
            os.symlink(os.path.abspath(places[where]), where)
        return root, None
    return None, _spec_text({mirror(path, os.path.join(root, str(i)), ()) if _mirrored(path) and path not in missing
                             else path: name for i, (path, name) in enumerate(entries.items())})


def _spec_text(entries: Mapping[str, Optional[str]]) -> str:
    return ",".join("%s:%s" % (name, path) if name else path for path, name in entries.items())


def _exit_on_hangup(signum: int, frame: Any) -> None:
    # A second one while exiting ends the process.
    signal.signal(signum, signal.SIG_DFL)
    sys.stderr.write("TensorBoard caught SIGHUP; exiting...\n")
    sys.exit(0)


def _stop(mirrors: List[Any], temporary: Optional[str]) -> None:
    # Each mirror asked to stop, then all waited for STOP_SECS in all, however many there are.
    for m in mirrors:
        m.stop(0)
    deadline = time.monotonic() + STOP_SECS
    for m in mirrors:
        m.stop(max(0.0, deadline - time.monotonic()))
    if temporary:
        shutil.rmtree(temporary, ignore_errors=True)
