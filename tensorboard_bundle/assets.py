"""TensorBoard's web assets, served from its webfiles.zip as upstream's CorePlugin serves them (each
asset gzipped, index.html as it is), each asset's gzip made from its zip entry's deflated bytes.

Upstream inflates every entry of the zip and deflates it again at each start: 0.22 s of CPU for
its 4.4 MB (14.8 MB inflated), while the loader reads the logdir on the same cores. A zip entry
and a gzip member hold the same kind of stream (raw DEFLATE, RFC 1951) and the same CRC-32 of
the inflated bytes, so a gzip member is the entry's bytes between a gzip header and trailer. An
entry stored, or encrypted, is gzipped as upstream gzips it.
"""
import functools
import gzip
import struct
import zipfile
from typing import IO, Any, Callable, Dict, Optional

from tensorboard.plugins.core import core_plugin

from tensorboard_bundle import upstream

__all__ = ["CorePluginLoader", "gzipped", "resource_apps"]

# A gzip member's header: deflate, no flags, no mtime (as upstream's, for the same answer at
# every start), no extra flags, an unknown OS.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
# A zip's local file header: its signature, then (at 26) the lengths of its name and extra field.
_LOCAL_HEADER = struct.Struct("<4s22xHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"


class CorePluginLoader(core_plugin.CorePluginLoader):  # type: ignore[misc]
    """Upstream's loader of the core plugin, its assets' gzips made without compressing them again.

    The plugin is upstream's own (upstream's application serves the core plugin's routes at the
    top only for an object of exactly its class): its `get_resource_apps` is replaced on it."""

    def __init__(self, include_debug_info: Optional[bool] = None) -> None:
        super().__init__(include_debug_info)
        self._debug_info = include_debug_info

    def load(self, context: Any) -> Any:
        plugin = core_plugin.CorePlugin(context, include_debug_info=self._debug_info)
        plugin.get_resource_apps = functools.partial(resource_apps, plugin, context.assets_zip_provider)
        return plugin


def resource_apps(plugin: Any, assets: Optional[Callable[[], IO[bytes]]]) -> Dict[str, Any]:
    """What upstream's `plugin.get_resource_apps()` gives, from the zip that `assets` opens: {"/" +
    each entry's name: what serves it}, "/" serving index.html."""
    apps: Dict[str, Any] = {}
    if not assets:
        return apps
    serve_index = upstream.private(core_plugin, "CorePlugin._serve_index")
    serve_asset = upstream.private(core_plugin, "CorePlugin._serve_asset")
    with assets() as fp, zipfile.ZipFile(fp) as found:
        for info in found.infolist():
            if info.filename == "index.html":
                # Not gzipped, as upstream serves it.
                apps["/index.html"] = functools.partial(serve_index, plugin, found.read(info))
            else:
                apps["/" + info.filename] = functools.partial(serve_asset, plugin, info.filename,
                                                              gzipped(found, fp, info))
    apps["/"] = apps["/index.html"]
    return apps


def gzipped(assets: zipfile.ZipFile, fp: IO[bytes], info: zipfile.ZipInfo) -> bytes:
    """The entry `info` of `assets` (read from `fp`) as one gzip member: its deflated bytes where
    it is deflated and not encrypted, else its bytes gzipped as upstream gzips them."""
    if info.compress_type == zipfile.ZIP_DEFLATED and not info.flag_bits & 0x1:
        fp.seek(info.header_offset)
        signature, name_length, extra_length = _LOCAL_HEADER.unpack(fp.read(_LOCAL_HEADER.size))
        if signature == _LOCAL_SIGNATURE:
            fp.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
            deflated = fp.read(info.compress_size)
            if len(deflated) == info.compress_size:
                return b"".join([_GZIP_HEADER, deflated, struct.pack("<II", info.CRC, info.file_size & 0xFFFFFFFF)])
    return gzip.compress(assets.read(info), compresslevel=3, mtime=0)
