"""Logdirs in object stores on the fast loader: the command line's `--logdir` URL, or the URLs of
`--logdir_spec`, become local mirrors (mirror.py) that the Rust data server reads. The server
starts once the mirrors' first passes are done (at most FIRST_PASS_SECS: a large logdir then
appears as it is fetched). `gs://` and local paths are left as they are (the data server reads
both), and so is everything with `--load_fast=false` (TensorBoard's Python loader then reads the
store itself).

The launcher's own flags, taken off the command line before TensorBoard parses it:
    --mirror_dir DIR        keep the mirror in DIR (empty, or a mirror of the same logdir, which
                            is then reused); by default a temporary directory, removed at exit
    --mirror_max_bytes N    the most the mirror may hold on disk (suffixes K, M, G, T); by default
                            80% of the space free where it lives, at start
    --mirror_interval SECS  seconds between passes over the store, at least (default 2)
    --mirror_max_record_bytes N
                            a record in an event file claiming more ends that file's copy at the
                            record before it, said once (default 1G: no file in a store can make the
                            data server allocate what it claims)

A `--logdir_spec` whose entries all have names becomes one local tree served as `--logdir` (a
mirror or a link a name), so that mixed specs (`a:s3://bucket/x,b:/local/y`) are read by the fast
loader too, runs named as the spec names them. A mirror never writes below a local entry named
inside its own (`cloud:s3://...,cloud/mine:/local`: what the store holds below `mine` is not
mirrored, and the user's files are never written); a store's entry named inside a local one
(`a:/local,a/b:s3://...`) cannot be mirrored without writing into the user's directory, so that
spec stays a spec, as do specs with unnamed entries: the Python loader, as upstream, each URL
replaced by its mirror.

A temporary mirror is removed at exit, on SIGTERM, SIGINT and SIGHUP (a closed terminal) alike.
"""
import atexit
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from typing import Any, List

from mxboard.storage.names import components, is_url
from mxboard.storage.sizes import parse_bytes, readable

__all__ = ["mirror_remote_logdirs"]

FIRST_PASS_SECS = 10  # the server starts once the mirrors' first passes ended, or after this long


def _flag(argv, name):
    """(value of --name, argv without it); the value None where it is not given."""
    value, rest, i = None, [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--" + name and i + 1 < len(argv):
            value, i = argv[i + 1], i + 2
            continue
        if arg.startswith("--%s=" % name):
            value = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return value, rest


def flag_value(argv, name):
    """The value of --name in argv (None where it is not given)."""
    return _flag(argv, name)[0]


def _bytes(text, flag):
    try:
        return parse_bytes(text, "--" + flag)
    except ValueError as exc:
        sys.exit("Error: %s" % exc)


def _seconds(text):
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1
    if not seconds > 0:
        sys.exit("Error: --mirror_interval %r: a number of seconds above 0" % text)
    return seconds


def _mirrored(path):
    """Whether `path` is a URL the mirror serves (gs:// the data server reads itself)."""
    return is_url(path) and not path.lower().startswith("gs://")


def mirror_remote_logdirs(argv):
    """`argv` for TensorBoard, with remote logdirs replaced by mirrors that are being filled
    (started here, stopped and, unless the user named their place, removed at exit)."""
    directory, argv = _flag(argv, "mirror_dir")
    max_bytes, argv = _flag(argv, "mirror_max_bytes")
    interval, argv = _flag(argv, "mirror_interval")
    max_record, argv = _flag(argv, "mirror_max_record_bytes")
    logdir, _ = _flag(argv, "logdir")
    spec, _ = _flag(argv, "logdir_spec")
    load_fast, _ = _flag(argv, "load_fast")
    urls = [path for path in ([logdir] if logdir else list(_entries(spec)) if spec else []) if _mirrored(path)]
    if load_fast == "false" or not urls:
        return argv
    try:
        from mxboard.storage.remote import open_filesystem
        from tensorboard_bundle.mirror import MAX_RECORD_BYTES, Mirror

        open_filesystem(urls[0])
    except ImportError as exc:  # fsspec or the scheme's package missing: TensorBoard's own reader
        sys.stderr.write("note: no mirror of the remote logdir, the Python loader reads it: %s\n" % exc)
        return argv
    seconds, limit = _seconds(interval or "2"), _bytes(max_bytes, "mirror_max_bytes") if max_bytes else None
    record_limit = _bytes(max_record, "mirror_max_record_bytes") if max_record else MAX_RECORD_BYTES
    root = directory or tempfile.mkdtemp(prefix="mxboard-mirror-")
    os.makedirs(root, exist_ok=True)
    limit = limit or int(shutil.disk_usage(root).free * 0.8)
    mirrors: List[Any] = []
    atexit.register(_stop, mirrors, None if directory else root)
    if hasattr(signal, "SIGHUP") and threading.current_thread() is threading.main_thread():
        # a closed terminal: exit as on SIGTERM (atexit removes the mirror)
        signal.signal(signal.SIGHUP, _exit_on_hangup)

    def mirror(url, where, exclude=()):
        mirrors.append(Mirror(url, where, limit, seconds, exclude=exclude, max_record_bytes=record_limit))
        sys.stderr.write("mirror: %s in %s (%s), at most %s on disk (--mirror_max_bytes)\n" % (
            url, where, "kept" if directory else "removed at exit; --mirror_dir DIR keeps one", readable(limit)))
        return where

    try:
        if logdir and _mirrored(logdir):
            argv = _replace(argv, "logdir", mirror(logdir, root))
        elif spec:
            argv = _spec(argv, spec, root, mirror)
    except ValueError as exc:
        sys.exit("Error: %s" % exc)
    for m in mirrors:
        m.start()
    deadline = time.monotonic() + FIRST_PASS_SECS
    for m in mirrors:  # the loader's first look finds what the store holds, unless that takes long
        m.first_pass.wait(max(0.0, deadline - time.monotonic()))
    return argv


def _entries(spec):
    """{path: name or None} of a --logdir_spec, parsed as TensorBoard parses it."""
    from tensorboard.backend.event_processing.data_ingester import _parse_event_files_spec

    return _parse_event_files_spec(spec)


def _below(path, directory):
    return path.startswith(directory + os.sep)


def _spec(argv, spec, root, mirror):
    entries = _entries(spec)
    places = {}
    for path, name in entries.items() if all(entries.values()) else ():
        where = os.path.join(root, *components(name))
        if where in places:
            raise ValueError("--logdir_spec names two logdirs %r" % name)
        places[where] = path
    linked = [where for where, path in places.items() if not _mirrored(path)]
    mirrored = sorted((where for where, path in places.items() if _mirrored(path)), key=len)  # outer ones first
    if any(_below(where, link) for where in places for link in linked):
        sys.stderr.write("note: an entry of --logdir_spec is named inside a local one's directory, which is never "
                         "written: the spec is read by the Python loader\n")
    elif places:  # one tree, served by the fast loader: the mirrors first, then the links (never inside them)
        for where in mirrored:
            mirror(places[where], where, [os.path.relpath(other, where).replace(os.sep, "/") for other in places
                                            if _below(other, where)])
        for where in linked:
            os.makedirs(os.path.dirname(where), exist_ok=True)
            if os.path.islink(where):
                os.unlink(where)
            os.symlink(os.path.abspath(places[where]), where)
        _, argv = _flag(argv, "logdir_spec")
        return argv + ["--logdir", root]
    items = []
    for i, (path, name) in enumerate(entries.items()):
        if _mirrored(path):
            path = mirror(path, os.path.join(root, str(i)))
        items.append("%s:%s" % (name, path) if name else path)
    return _replace(argv, "logdir_spec", ",".join(items))


def _replace(argv, name, value):
    _, argv = _flag(argv, name)
    return argv + ["--" + name, value]


def _exit_on_hangup(signum, frame):
    signal.signal(signum, signal.SIG_DFL)  # a second one while exiting ends the process
    sys.stderr.write("TensorBoard caught SIGHUP; exiting...\n")
    sys.exit(0)


def _stop(mirrors, temporary):
    for m in mirrors:
        m.stop(5)
    if temporary:
        shutil.rmtree(temporary, ignore_errors=True)
