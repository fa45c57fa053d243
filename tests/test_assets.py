"""TensorBoard's web assets as the bundled server serves them (tensorboard_bundle/assets.py: each
gzip made from its zip entry's deflated bytes), against upstream's own server, over HTTP."""
import gzip
import io
import pkgutil
import urllib.request
import zipfile

import pytest

from conftest import UPSTREAM
from served import authorized

pytestmark = pytest.mark.slow


def _fetch(server, path, gzipped):
    headers = {"Accept-Encoding": "gzip"} if gzipped else {}
    with urllib.request.urlopen(authorized(server.url + path, server.token, headers=headers), timeout=30) as answer:
        return answer.headers.get("Content-Type"), answer.headers.get("Content-Encoding"), answer.read()


def _answer(server, path, gzipped):
    """`_fetch`'s answer, or the HTTP error's status."""
    import urllib.error

    try:
        return _fetch(server, path, gzipped)
    except urllib.error.HTTPError as exc:
        return exc.code, None, b""


def test_every_asset_is_served_as_upstream_serves_it_gzipped_or_not(tmp_path, serve):
    """Each entry of webfiles.zip, asked for with and without gzip: the same type, encoding and
    (inflated) bytes as upstream's server gives, the bytes those of the zip's entry."""
    assets = zipfile.ZipFile(io.BytesIO(pkgutil.get_data("tensorboard", "webfiles.zip")))
    ours, theirs = serve(str(tmp_path)), serve(str(tmp_path), command=UPSTREAM)
    names = [info.filename for info in assets.infolist()]
    assert len(names) > 50
    for name in names:
        for gzipped in (False, True):
            got, expected = _answer(ours, "/" + name, gzipped), _answer(theirs, "/" + name, gzipped)
            assert got[:2] == expected[:2], (name, gzipped)
            if got[1] == "gzip":
                got, expected = gzip.decompress(got[2]), gzip.decompress(expected[2])
            else:
                got, expected = got[2], expected[2]
            assert got == expected, (name, gzipped)
            if name != "index.html" and not name.endswith("/"):
                assert got == assets.read(name), name
