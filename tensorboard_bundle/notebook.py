"""Upstream's notebook (`%tensorboard`, `tensorboard.notebook.display`), as a Jupyter or Colab
kernel imports it, made to open the bundle's server with its token: the kernel imports upstream's
`tensorboard.notebook`, never the bundle. The start-up module (_mxboard_startup, which the wheel's
.pth file runs) calls `after` once `tensorboard.manager` or `tensorboard.notebook` has run:
`tensorboard.manager` gets the private info directory (`info_files.install`) and
`tensorboard.notebook` the display functions below, which add the token of the server on the port
shown (read from its info file in that directory). A server without a token (--auth none,
upstream's own) is shown as upstream shows it."""
import importlib
import json
import re
from types import ModuleType
from typing import Any, Callable

from tensorboard_bundle import info_files, upstream

__all__ = ["after", "install"]
# The frame's URL in upstream's _display_ipython: "/" on the notebook's host, or the proxy's.
_FRAME_URL = re.compile(r'new URL\(("(?:[^"\\]|\\.)*"), window\.location\)')
# The line of upstream's _display_colab after which the frame's URL gets the token.
_COLAB_URL = "url.searchParams.set('tensorboardColab', 'true');"


def _with_token(url: str, token: str) -> str:
    path, hash_mark, fragment = url.partition("#")
    return "%s%stoken=%s%s%s" % (path, "&" if "?" in path else "?", token, hash_mark, fragment)


def _frame_with_token(html: str, token: str) -> str:
    """Upstream's frame, its URL (a JSON string in the script) with ?token=TOKEN."""
    shown, count = _FRAME_URL.subn(
        lambda m: "new URL(%s, window.location)" % json.dumps(_with_token(json.loads(m.group(1)), token)), html)
    if count != 1:
        raise RuntimeError("tensorboard_bundle.notebook: upstream's frame has no URL to add the token to")
    return shown


def _colab_with_token(script: str, token: str) -> str:
    """Upstream's Colab script, which sets the frame's URL at run time: one line more sets the token."""
    if _COLAB_URL not in script:
        raise RuntimeError("tensorboard_bundle.notebook: upstream's Colab frame has no URL to add the token to")
    return script.replace(_COLAB_URL, "%s\n            url.searchParams.set('token', %s);"
                          % (_COLAB_URL, json.dumps(token)), 1)


class _Kept:
    """A display handle that keeps what upstream's display function shows, for it to be changed."""

    shown: Any = None

    def update(self, obj: Any) -> None:
        self.shown = obj


def _shown(upstream: Callable[..., Any], change: Callable[[str, str], str], port: int, height: int,
           display_handle: Any) -> None:
    """What upstream's display function shows, changed by `change` to carry the token of the
    server on `port`; as upstream shows it where that server has none."""
    token = info_files.token_for(port)
    if token is None:
        upstream(port=port, height=height, display_handle=display_handle)
        return
    kept = _Kept()
    upstream(port=port, height=height, display_handle=kept)
    shown = type(kept.shown)(change(kept.shown.data, token))
    if display_handle:
        display_handle.update(shown)
    else:
        # The kernel's IPython (no dependency of the wheel), as upstream's function imports it.
        importlib.import_module("IPython.display").display(shown)


def install(notebook: Any) -> None:
    """Put the display functions that carry the token into upstream's `notebook` module, where
    `_display` (which `start`, its reuse of a running server, and `display` call) looks them up.
    The server answers 401 to a URL without the token."""
    upstream_ipython, upstream_colab, upstream_cli = (upstream.private(notebook, "_display_ipython"),
                                                      upstream.private(notebook, "_display_colab"),
                                                      upstream.private(notebook, "_display_cli"))

    def _display_ipython(port: int, height: int, display_handle: Any) -> None:
        """Upstream's frame (Jupyter, VS Code), its URL with ?token=TOKEN: "/" on the notebook's
        host at the server's port, or TENSORBOARD_PROXY_URL."""
        _shown(upstream_ipython, _frame_with_token, port, height, display_handle)

    def _display_colab(port: int, height: int, display_handle: Any) -> None:
        """Upstream's frame in Colab (through its port proxy), its URL with the token."""
        _shown(upstream_colab, _colab_with_token, port, height, display_handle)

    def _display_cli(port: int, height: int, display_handle: Any) -> None:
        """Upstream's line outside a notebook, the URL it names with the token."""
        token = info_files.token_for(port)
        if token is None:
            upstream_cli(port=port, height=height, display_handle=display_handle)
        else:
            print("Please visit http://localhost:%d/?token=%s in a web browser." % (port, token))

    upstream.replace(notebook, "_display_ipython", _display_ipython)
    upstream.replace(notebook, "_display_colab", _display_colab)
    upstream.replace(notebook, "_display_cli", _display_cli)


def after(name: str, module: ModuleType) -> None:
    """What the start-up module calls once `name` has run: the private info directory into
    `tensorboard.manager`, the display functions into `tensorboard.notebook`."""
    if name == "tensorboard.manager":
        info_files.install(module)
    else:
        install(module)
