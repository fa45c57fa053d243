"""Where and how the server listens: a TCP port (upstream's server, which never fails on a port
taken at the last moment), over HTTPS with --certfile/--keyfile, or a Unix socket of mode 0600
(--sock, for proxies such as Open OnDemand and jupyter-server-proxy). Every request first passes
the guard (access.py). The URL the server prints carries its token.

Neither server writes an access log unless TensorBoard's logging asks for INFO (upstream's fix to
werkzeug's logging, made for the socket's server too), and every line either writes has the
token taken out of its URLs: proxies (Open OnDemand, jupyter-server-proxy) keep the output in
files."""
import contextlib
import errno
import os
import socket
import socketserver
import ssl
import stat
import sys
import urllib.parse
from types import ModuleType
from typing import Any, Callable, Iterator, Optional, Tuple, cast

from tensorboard_bundle import upstream
from tensorboard_bundle.access import cookie_name, redacted

__all__ = ["PORT_HINT", "SAVED", "bind_unix", "check_port", "factory", "remove_socket", "tls_context"]

# How the user picks a port, in their terms (`make demo PORT=N`); default --port N.
PORT_HINT = "MXBOARD_PORT_HINT"
# A run the process that started this server saved (the demo's), said if the port is busy.
SAVED = "MXBOARD_SAVED_RUN"
# Seconds a client has for its TLS handshake, made in the request's own thread.
_HANDSHAKE_SECS = 10

_App = Callable[..., Any]


def tls_context(certfile: str, keyfile: Optional[str]) -> ssl.SSLContext:
    """The server's TLS context from a certificate and its key (PEM). Raises ValueError in one
    line where either cannot be read or they do not belong together."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(os.path.expanduser(certfile), keyfile and os.path.expanduser(keyfile))
    except (OSError, ssl.SSLError) as exc:
        what = "--certfile %s%s" % (certfile, " --keyfile %s" % keyfile if keyfile else "")
        reason = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc)
        raise ValueError("%s: not a certificate and its private key in PEM (%s)" % (what, reason)) from None
    return context


def bind_unix(path: str) -> socket.socket:
    """A listening Unix socket at `path`, mode 0600 from its creation, in a directory that no other
    user could replace it in (the user's own, or root's with the sticky bit if others may write
    there). Raises ValueError in one line for a path that exists or a directory of another user."""
    path = os.path.abspath(os.path.expanduser(path))
    directory = os.path.dirname(path)
    try:
        found = os.stat(directory)
    except OSError as exc:
        raise ValueError("--sock %s: its directory %s: %s" % (path, directory, exc.strerror)) from None
    owner_ok = not hasattr(os, "getuid") or found.st_uid in (os.getuid(), 0)
    if not owner_ok:
        raise ValueError("--sock %s: %s belongs to another user (uid %d): put the socket in a directory of your own"
                         % (path, directory, found.st_uid))
    if found.st_mode & 0o022 and not found.st_mode & stat.S_ISVTX:
        raise ValueError("--sock %s: others may write in %s (mode %03o), and could replace the socket: put it in a "
                         "directory of your own" % (path, directory, stat.S_IMODE(found.st_mode)))
    if os.path.lexists(path):
        raise ValueError("--sock %s exists: remove it if no server listens there, or name another path" % path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # The socket's file is made with the mode the umask leaves: 0600, never more for a moment.
    umask = os.umask(0o177)
    try:
        listener.bind(path)
    except OSError as exc:
        listener.close()
        raise ValueError("--sock %s: %s" % (path, exc.strerror or exc)) from None
    finally:
        os.umask(umask)
    listener.listen(128)
    return listener


def remove_socket(path: str, inode: int) -> None:
    """The socket's file, removed at the server's end, unless another file has taken its name."""
    with contextlib.suppress(OSError):
        if os.stat(path).st_ino == inode:
            os.unlink(path)


def check_port(port: Optional[str], host: str) -> None:
    """An explicit --port that cannot be used for another reason than a server on it (a port
    below 1024, a host that is not this machine's) ends the launch with one line and a way out.
    A port in use is taken care of when the server binds (`factory`): a check now could not
    hold it until then."""
    if not port or not port.isdigit() or int(port) == 0:
        return
    try:
        socket.create_server((host, int(port))).close()
    # A host name that does not resolve: TensorBoard says so itself.
    except socket.gaierror:
        return
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return
        where = "port %s%s" % (port, " on " + host if host else "")
        sys.exit("Error: %s cannot be used (%s): %s, or 0 for a free one"
                 % (where, os.strerror(exc.errno) if exc.errno else exc, _port_hint()))


def _port_hint() -> str:
    return os.environ.get(PORT_HINT) or "pass another --port N"


def _with_token(url: str, token: Optional[str]) -> str:
    return url + "?" + urllib.parse.urlencode({"token": token}) if token else url


class _ServingUntilCtrlC(socketserver.BaseServer):
    """werkzeug's serve_forever, less its catch of a Ctrl-C: the process then ended without a word
    (under make, only make's "Interrupt" was said). The KeyboardInterrupt reaches main(), which
    says what was kept. First among a server's bases."""

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        try:
            socketserver.BaseServer.serve_forever(self, poll_interval)
        finally:
            self.server_close()


def _request_handler(program: ModuleType) -> type:
    """Upstream's request handler, whose log lines (the access log's, a bad request's) never
    hold a token."""

    # A class known at run time.
    class RequestHandler(upstream.private(program, "_WSGIRequestHandler")):  # type: ignore[misc]
        def log(self, type: str, message: str, *args: Any) -> None:
            super().log(type, "%s", redacted(message % args if args else message))

    return RequestHandler


def factory(program: ModuleType, guard: Callable[[_App, str], _App], token: Optional[str],
            tls: Optional[ssl.SSLContext], sock: Optional[socket.socket],
            on_bound: Callable[[], None]) -> Callable[[Any, Any], Any]:
    """TensorBoard's server factory. `guard(app, cookie name)` puts the access check in front of
    TensorBoard's app; `tls` serves HTTPS; `sock` (a bound Unix socket) serves there instead of
    a port; `on_bound()` runs once the server listens.

    On a port: upstream's server with its port scanning where no --port was given; where the port
    asked for is taken when the server binds (another TensorBoard, started at the same moment or
    before), it binds a free one instead and says so, in the user's terms: two servers started
    together never collide."""
    handler = _request_handler(program)
    port_server = _port_server(program, guard, token, tls, handler)
    scanning = program.with_port_scanning(port_server)

    def server(wsgi_app: Any, flags: Any) -> Any:
        if sock is not None:
            bound = _on_socket(program, sock, guard(wsgi_app, cookie_name(sock.getsockname())), token, handler)
        else:
            try:
                bound = scanning(wsgi_app, flags)
            except program.TensorBoardPortInUseError:
                bound = _on_a_free_port(port_server, wsgi_app, flags)
        on_bound()
        return bound

    return server


def _port_server(program: ModuleType, guard: Callable[[_App, str], _App], token: Optional[str],
                 tls: Optional[ssl.SSLContext], handler: type) -> type:
    """Upstream's server class, answered by `handler`, guarded, over TLS where `tls` is given."""

    # A module known at run time.
    class Server(_ServingUntilCtrlC, program.WerkzeugServer):  # type: ignore[misc,name-defined]
        """Upstream's server, whose bind and listen report a taken port as TensorBoard's own error
        (upstream checks the port with a connect first, which a server that has bound it but not
        started listening passes: werkzeug then printed two lines and exited, status 1)."""

        def __init__(self, wsgi_app: Any, flags: Any) -> None:
            super().__init__(wsgi_app, flags)
            # Upstream's handler, whose log lines never hold the token.
            self.RequestHandlerClass = handler
            # The cookie's name holds the port bound, known only now (port 0: a free one).
            self.app = guard(wsgi_app, cookie_name(str(self.server_port)))
            if tls is not None:
                # The handshake is made in the request's thread (`finish_request`), never in the
                # loop that accepts: a client that connects and says nothing stalls no one.
                # The base class is upstream's, which mypy sees as Any.
                listener: socket.socket = self.socket  # type: ignore[has-type]
                self.socket = tls.wrap_socket(listener, server_side=True, do_handshake_on_connect=False)
                self.ssl_context = tls

        def server_bind(self) -> None:
            with self._taken():
                super().server_bind()

        # listen(): where two binds with SO_REUSEADDR met, the second fails here.
        def server_activate(self) -> None:
            with self._taken():
                super().server_activate()

        def finish_request(self, request: Any, client_address: Any) -> None:
            if tls is not None and not _handshaken(request):
                return
            super().finish_request(request, client_address)

        def get_url(self) -> str:
            url = super().get_url()
            return _with_token("https" + url[len("http"):] if tls is not None else url, token)

        @contextlib.contextmanager
        def _taken(self) -> Iterator[None]:
            try:
                yield
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    port = cast(Tuple[str, int], self.server_address)[1]
                    raise program.TensorBoardPortInUseError(
                        "TensorBoard could not bind to port %d, it was already in use" % port) from exc
                raise

    return Server


def _on_a_free_port(port_server: Any, wsgi_app: Any, flags: Any) -> Any:
    """The server on a free port, where the one asked for was taken when it bound, said in the
    user's terms."""
    import argparse

    free = argparse.Namespace(**vars(flags))
    free.port = 0
    bound = port_server(wsgi_app, free)
    where = "port %d%s" % (flags.port, " on " + flags.host if flags.host else "")
    message = ("note: %s is in use (another TensorBoard?): serving on port %d instead (to choose: %s)\n"
               % (where, bound.server_port, _port_hint().replace("pass another ", "")))
    saved = os.environ.get(SAVED)
    if saved:
        message += "note: the run is saved in %s: a TensorBoard already serving its logdir shows it too\n" % saved
    sys.stderr.write(message)
    sys.stderr.flush()
    return bound


def _handshaken(request: Any) -> bool:
    """The TLS handshake of a connection, bounded in time; False (the connection closed) where
    the client speaks no TLS or gives up."""
    try:
        request.settimeout(_HANDSHAKE_SECS)
        request.do_handshake()
        request.settimeout(None)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            request.close()
        return False
    return True


def _on_socket(program: ModuleType, sock: socket.socket, app: _App, token: Optional[str], handler: type) -> Any:
    """A threaded werkzeug server on the bound Unix socket `sock`, its requests answered by
    `handler`; its URL is written as Jupyter writes one (`http+unix://` and the socket's path,
    quoted), with the token."""
    from werkzeug import serving

    path = sock.getsockname()

    class SocketServer(_ServingUntilCtrlC, serving.ThreadedWSGIServer):
        daemon_threads = True

        def get_url(self) -> str:
            return _with_token("http+unix://%s/" % urllib.parse.quote(path, safe=""), token)

    server = SocketServer("unix://" + path, 0, app, handler, fd=sock.fileno())
    # werkzeug listens on a duplicate of the descriptor.
    sock.close()
    # Upstream's fix to werkzeug's logging, which its own server makes: werkzeug's logger, made at
    # its first line, would log at INFO (a line a request); it inherits TensorBoard's level instead
    # (WARNING: no access log).
    upstream.private(program, "WerkzeugServer._fix_werkzeug_logging")(server)
    return server
