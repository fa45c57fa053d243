"""Finding what TensorBoard needs wherever its packages were installed, by package data rather
than by paths next to `__file__` (which do not exist inside a zip)."""
import hashlib
import io
import logging
import os
import pkgutil
import stat
from typing import BinaryIO, Callable, Optional, Tuple

from mxboard._format import files

log = logging.getLogger("tensorboard_bundle")

__all__ = ["assets_zip_provider", "data_server_binary"]


def assets_zip_provider() -> Optional[Callable[[], BinaryIO]]:
    """A callable returning TensorBoard's web assets (webfiles.zip) as an open binary file, read
    as package data (works from a zip); None if the package has none."""
    try:
        data = pkgutil.get_data("tensorboard", "webfiles.zip")
    except OSError:
        return None
    if data is None:
        return None
    return lambda: io.BytesIO(data)


def data_server_binary(cache_dir: Optional[str] = None) -> Tuple[Optional[str], Optional[str]]:
    """The path of an executable TensorBoard data server (the fast Rust loader), or None with
    the reason. The binary ships in the `tensorboard_data_server` package; where that package
    cannot give a runnable file (inside a zip, or installed without its exec bit), the binary is
    copied once to a cache directory, executable; a cached copy runs only if its content is
    byte for byte the package's (else it is written anew)."""
    try:
        import tensorboard_data_server
    except ImportError:
        return None, "the tensorboard-data-server package is not installed"
    path = tensorboard_data_server.server_binary()
    if path and os.access(path, os.X_OK):
        return path, None
    try:
        data = pkgutil.get_data("tensorboard_data_server", "bin/server")
    except OSError:
        data = None
    if not data:
        return None, "tensorboard-data-server has no binary for this platform"
    digest = hashlib.sha256(data).hexdigest()
    cache_dir = cache_dir or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "mxboard", "data-server")
    target = os.path.join(cache_dir, "server-%s-%s" % (tensorboard_data_server.__version__, digest[:16]))
    if not (os.access(target, os.X_OK) and _sha256(target) == digest):
        os.makedirs(cache_dir, exist_ok=True)
        files.replace_whole(target, data, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        log.info("data server binary copied to %s (executable)", target)
    return target, None


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
