"""One profile per kind of object store: everything mxboard knows of a URL scheme, here only.

A `Profile` holds a store's schemes, the extra that installs its fsspec package, how its client
is made (its filesystem factory, with each request bounded and tried once: the uploader and the
mirror retry on their own clocks), whether its paths start with a bucket, the listing fields that
tell an object's versions apart (the mirror compares them: without one, a changed object goes
unnoticed), and the environment variable through which its client reaches another endpoint (an
emulator's, in tests/object_stores.py). `profile_of(url)` finds a URL's; any other scheme that
fsspec knows (`memory://`, `hdfs://`...) gets `OTHER`. `checked_logdir(logdir)` is the one check of
a logdir that every writer, reader, command and the launcher make: `~` is expanded in a local
path, `file://` URLs become local paths, a mistyped scheme is refused with its likely fix, and
for a reader (`must_exist`) a local logdir that is not there is an error naming it.

Adding a store: one Profile here, in `PROFILES`, and its emulator in tests/object_stores.py.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

__all__ = ["Profile", "PROFILES", "OTHER", "S3", "GCS", "AZURE", "S3_REQUESTS", "checked_logdir", "open_filesystem",
           "profile_of", "scheme_of"]

# The client libraries' own bound on a stalled answer, above mxboard's (a fallback).
LIBRARY_READ_SECS = 60
# botocore's settings for every S3 request of the writer and the server's mirror: an unreachable
# endpoint fails in seconds, and each request is tried once (each caller retries on its own clock)
S3_REQUESTS: Dict[str, Any] = {"connect_timeout": 5, "read_timeout": 20,
                               "retries": {"max_attempts": 1, "mode": "standard"}}


def _url_to_fs(url: str, options: Dict[str, Any]) -> Tuple[Any, str]:
    import fsspec

    fs, root = fsspec.core.url_to_fs(url, **options)
    return fs, str(root)


def _as_is(fs: Any) -> None:
    pass


@dataclass(frozen=True)
class Profile:
    """What mxboard knows of one kind of store.

    Attributes:
        name: what its users call it, for messages.
        schemes: its URL schemes, the usual one first.
        extra: the mxboard extra that installs its package (`pip install 'mxboard[<extra>]'`).
        package: the module of its fsspec filesystem.
        bucketed: its paths start with a bucket or container (checked to exist, never made).
        versions: the fields of a listing's entry that tell an object's versions apart, in order.
        endpoint_variable: the environment variable its client reads for another endpoint.
        read_by_data_server: TensorBoard's own data server reads it when `package` is missing.
        presigned_listing: the mirror lists and reads it with presigned requests (S3Reader).
        options: fsspec options of every filesystem made for it.
        make: (url, options) -> (filesystem, path).
        one_try: sets a made filesystem's client to try each request once.
    """

    name: str
    schemes: Tuple[str, ...]
    extra: Optional[str] = None
    package: Optional[str] = None
    bucketed: bool = False
    versions: Tuple[str, ...] = ("etag", "ETag", "mtime", "created", "LastModified", "last_modified")
    endpoint_variable: Optional[str] = None
    read_by_data_server: bool = False
    presigned_listing: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    make: Callable[[str, Dict[str, Any]], Tuple[Any, str]] = _url_to_fs
    one_try: Callable[[Any], None] = _as_is

    @property
    def install(self) -> str:
        """What to run for its package."""
        return "pip install 'mxboard[%s]'" % self.extra if self.extra else "pip install fsspec and its package"

    def missing(self, url: str) -> str:
        """The words for a logdir `url` of this store whose client package is not installed."""
        return "logdir %r is in %s, whose client package (%s) is not installed: %s" % (
            url, self.name, self.package or "fsspec", self.install)


def _s3_one_try(fs: Any) -> None:
    fs.retries = 1


def _azure_one_try(fs: Any) -> None:
    """An Azure client's requests tried once, as S3's: its SDK's own policy waits 15 s, then 18,
    then 24 before a retry; the uploader retries on its own clock."""
    policy = getattr(getattr(getattr(fs, "service_client", None), "_config", None), "retry_policy", None)
    for name in ("total_retries", "connect_retries", "read_retries", "status_retries"):
        if hasattr(policy, name):
            setattr(policy, name, 0)


def _gcs(url: str, options: Dict[str, Any]) -> Tuple[Any, str]:
    """gcsfs' plain filesystem: its default one probes each bucket's type over gRPC first (60 s
    against an emulator, and a warning without Google credentials), which writing never needs.
    gcsfs' own default is no timeout at all: a socket read (an answer that stalls) is bounded
    here; a slow upload is not cut by it (mxboard's `call_with_timeout` is)."""
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=LIBRARY_READ_SECS)
    fs = _gcs_one_try()(requests_timeout=timeout, **options)
    return fs, str(fs._strip_protocol(url))


@functools.lru_cache(maxsize=None)
def _gcs_one_try() -> Any:
    """gcsfs' filesystem with each request tried once, as S3's: its own policy tries six times
    over 31 s. A gcsfs without that decorator keeps its own (still bounded by mxboard's `call_with_timeout`)."""
    from gcsfs.core import GCSFileSystem
    from gcsfs.retry import retry_request

    request = getattr(GCSFileSystem._request, "__wrapped__", None)
    if request is None:
        return GCSFileSystem
    return type("GCSFileSystem", (GCSFileSystem,), {"_request": retry_request(retries=1)(request)})


S3 = Profile("Amazon S3 and S3-compatible stores", ("s3", "s3a"), extra="s3", package="s3fs", bucketed=True,
             versions=("ETag", "LastModified"), endpoint_variable="AWS_ENDPOINT_URL", presigned_listing=True,
             options={"config_kwargs": S3_REQUESTS}, one_try=_s3_one_try)
GCS = Profile("Google Cloud Storage", ("gs", "gcs"), extra="gcs", package="gcsfs", bucketed=True,
              versions=("etag", "generation", "updated"), endpoint_variable="STORAGE_EMULATOR_HOST",
              read_by_data_server=True, make=_gcs)
AZURE = Profile("Azure Blob Storage", ("az", "abfs", "abfss"), extra="azure", package="adlfs", bucketed=True,
                versions=("etag", "last_modified"), endpoint_variable="AZURE_STORAGE_CONNECTION_STRING",
                options={"connection_timeout": 5, "read_timeout": LIBRARY_READ_SECS}, one_try=_azure_one_try)
OTHER = Profile("a filesystem of fsspec's", ())
PROFILES = (S3, GCS, AZURE)
_BY_SCHEME = {scheme: profile for profile in PROFILES for scheme in profile.schemes}


def scheme_of(url: str) -> str:
    """A URL's scheme, lower case (`s3` of `S3://bucket`)."""
    return url.split("://", 1)[0].lower()


def profile_of(url: str) -> Profile:
    """The profile of a store URL; OTHER for a scheme no profile has."""
    return _BY_SCHEME.get(scheme_of(url), OTHER)


# 2 letters or more: not C:/.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):(/{0,2})(.*)$", re.DOTALL)


def _fsspec_protocols() -> Optional[Tuple[str, ...]]:
    """The URL schemes of fsspec's filesystems; None without fsspec."""
    try:
        import fsspec
    except ImportError:
        return None
    return tuple(fsspec.available_protocols())


def checked_logdir(logdir: str, packages: bool = True, must_exist: bool = False) -> str:
    """`logdir` as mxboard writes and reads it: a local path with `~` expanded (as a shell
    would, for `--logdir=~/x` and for a path in Python code); a `file://` URL as its local path;
    a store's URL as given, once its scheme is known and (with `packages`) its client package
    is installed. The one check of every writer, reader, command and the launcher, so that a
    logdir means the same everywhere and a wrong one is refused in the same words, before
    anything is made (`S3://b/x` or `s3:/b/x` would otherwise be a local directory).

    Args:
        logdir: a local path, a `file://` URL or a store's URL.
        packages: require a store's client package (the launcher leaves that to its mirror).
        must_exist: a local logdir (a directory, or one event file) must be there: a reader's
            check. A writer makes its logdir, and the server waits for it.

    Raises:
        ValueError: a scheme in upper case, one slash after a scheme (`s3:/bucket`), a scheme
            no filesystem here knows, or a `file://` URL of another host, the logdir named with
            the likely fix; with `must_exist`, a local logdir that does not exist, named as given
            and as expanded.
        ImportError: a store whose client package is missing; the extra to install named.
    """
    match = _SCHEME.match(logdir)
    if not match:
        return _local(os.path.expanduser(logdir), logdir, must_exist)
    scheme, slashes, rest = match.groups()
    lower = scheme.lower()
    fsspec_known = _fsspec_protocols()
    known = set(_BY_SCHEME) | {"file"} | set(fsspec_known or ())
    if (slashes != "//" or scheme != lower) and lower in known and slashes:
        fixed = "%s://%s%s" % (lower, "/" if lower == "file" and slashes == "/" else "", rest)
        why = "URL schemes are lower case" if scheme != lower else "a URL has two slashes after its scheme"
        raise ValueError("logdir %r: %s: did you mean %s?" % (logdir, why, fixed))
    if slashes != "//":
        # A local name with a colon (`run:1/x`).
        return _local(logdir, logdir, must_exist)
    if lower == "file":
        parsed = urllib.parse.urlsplit(logdir)
        if parsed.netloc not in ("", "localhost"):
            raise ValueError("logdir %r: a file:// URL names a local path (file:///dir/run); this one names host "
                             "%r" % (logdir, parsed.netloc))
        # A URL's path is absolute: `~` there is a directory's name, never the home directory.
        return _local(urllib.request.url2pathname(parsed.path), logdir, must_exist)
    if lower not in known:
        stores = ", ".join(p.schemes[0] + "://" for p in PROFILES)
        others = "fsspec's other filesystems: memory://, hdfs://, http://..." if fsspec_known \
            else "with fsspec installed, its other filesystems"
        raise ValueError("logdir %r: unknown URL scheme %s:// (known: %s, file:// for a local path, and %s)"
                         % (logdir, scheme, stores, others))
    profile = profile_of(logdir)
    if packages and (fsspec_known is None or (profile.package and importlib.util.find_spec(profile.package) is None)):
        raise ImportError(profile.missing(logdir))
    return logdir


def _local(path: str, given: str, must_exist: bool) -> str:
    """The local `path` of the logdir `given`; with `must_exist`, a ValueError naming both where
    nothing is there (a dangling link counts as nothing)."""
    if must_exist and not os.path.exists(path):
        raise ValueError("logdir %r does not exist%s" % (given, "" if path == given else " (%s)" % path))
    return path


def open_filesystem(url: str, shared: bool = False) -> Tuple[Any, str]:
    """(fsspec filesystem, path) of a URL, a new instance (a writer's uploader, the mirror: never
    fsspec's shared one, whose connections a forked child or another thread must not share), or
    with `shared` fsspec's one for these settings (a reader's, made once a process). An unknown
    scheme or a missing package is a clear error naming what to install. Every request is tried
    once, bounded by the profile's client settings."""
    extras = ", ".join("for %s: %s" % (p.schemes[0] + "://", p.install) for p in PROFILES)
    try:
        import fsspec
    except ImportError:
        raise ImportError("logdir %r is a URL: install fsspec and the package of its filesystem (%s)"
                          % (url, extras)) from None
    scheme = scheme_of(url)
    if scheme not in fsspec.available_protocols():
        raise ValueError("logdir %r: unknown URL scheme %r (fsspec knows %s)"
                         % (url, scheme + "://", ", ".join(sorted(fsspec.available_protocols())[:12]) + "..."))
    profile = profile_of(url)
    # Each filesystem its own.
    options: Dict[str, Any] = {key: dict(value) if isinstance(value, dict) else value
                               for key, value in profile.options.items()}
    options["skip_instance_cache"] = not shared
    try:
        fs, root = profile.make(url, options)
    except ImportError as exc:
        if profile.extra:
            raise ImportError(profile.missing(url)) from None
        raise ImportError("logdir %r needs a package for %s:// (%s): %s" % (url, scheme, extras, exc)) from None
    profile.one_try(fs)
    return fs, root.rstrip("/")
