"""Who may read what the server serves. A port is no proof of who is asking: every user of a
shared machine reaches 127.0.0.1, and so does a web page the user visits, through DNS rebinding
(its own name made to point at 127.0.0.1). So, as Jupyter does:

- a token, random (256 bits) unless the user gives one (MXBOARD_TOKEN or --token_file, never a
  flag's value, which `ps` shows to every user); the printed URL (`/?token=...`) trades it for a
  cookie and a redirect to the same URL without it; a script sends `Authorization: token ...`;
  any other request gets 401, whatever the route;
- the Host header must be a name the server was bound for (`Hosts`), token or not (403): a web
  page's request carries its own name there; an address written as numbers cannot come from
  DNS rebinding, and passes;
- a request that may change state from a page of another origin gets 403.

`Guard` is the WSGI application in front of TensorBoard's: a few microseconds a request.
"""
import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import socket
import stat
import urllib.parse
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

__all__ = ["ENV", "Guard", "Hosts", "allowed_names", "is_loopback", "read_token"]

# The environment variable that sets the token: the process's environment is readable by its
# owner only (/proc/PID/environ), unlike its argv.
ENV = "MXBOARD_TOKEN"
# A token the user gives is at least this long, and made of what secrets.token_urlsafe makes.
_SHORTEST = 16
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
_SAFE_METHODS = frozenset(("GET", "HEAD", "OPTIONS"))

_Environ = Dict[str, Any]
_StartResponse = Callable[..., Any]


def read_token(token_file: Optional[str], environ: Dict[str, str]) -> str:
    """The token: the one in `token_file` (a regular file of the user's own, readable by no one
    else), else MXBOARD_TOKEN, else a new random one. Raises ValueError, in one line, for a file
    others may read or replace, or a token too short or with spaces in it."""
    if token_file:
        path = os.path.expanduser(token_file)
        try:
            # Never through a link, and never waiting on a named pipe for a writer.
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise ValueError("--token_file %s: %s" % (token_file, exc.strerror or exc)) from None
        with os.fdopen(descriptor, "rb") as f:
            found = os.fstat(f.fileno())
            if not stat.S_ISREG(found.st_mode):
                raise ValueError("--token_file %s is not a regular file" % token_file)
            if hasattr(os, "getuid") and found.st_uid != os.getuid():
                raise ValueError("--token_file %s belongs to another user (uid %d): use a file of your own"
                                 % (token_file, found.st_uid))
            if found.st_mode & 0o077:
                raise ValueError("--token_file %s may be read by others (mode %03o): chmod 600 %s"
                                 % (token_file, stat.S_IMODE(found.st_mode), token_file))
            return _checked(f.read(1 << 12).decode("utf-8", "replace").strip(), "--token_file %s" % token_file)
    if environ.get(ENV):
        return _checked(environ[ENV].strip(), ENV)
    return secrets.token_urlsafe(32)


def _checked(token: str, source: str) -> str:
    if len(token) < _SHORTEST:
        raise ValueError("%s holds a token of %d characters: give one of at least %d (python -c \"import secrets; "
                         "print(secrets.token_urlsafe(32))\" makes one)" % (source, len(token), _SHORTEST))
    if not _TOKEN.fullmatch(token):
        raise ValueError("%s holds a token with a character other than a letter, a digit, _ or - (it goes in URLs "
                         "and scripts as it is)" % source)
    return token


def is_loopback(host: str) -> bool:
    """Whether a --host value is this machine's loopback (a name other than localhost, or a
    wildcard, is taken as reachable from the network)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Hosts:
    """The names a request's Host header may carry: localhost, the loopback addresses, this
    machine's names, the --host given and the names added with --allow_host; and any address
    written as numbers. This machine's fully qualified names are looked up once, at the first
    name not found otherwise (a lookup may wait on DNS)."""

    def __init__(self, host: Optional[str] = None, allowed: Iterable[str] = ()) -> None:
        names = {"localhost", socket.gethostname()}
        names.update(allowed)
        if host:
            names.add(host)
        self._names: Set[str] = {_bare(name) for name in names if name}
        self._looked_up = False

    def __contains__(self, header: str) -> bool:
        name = _bare(_name_of(header))
        if name in self._names or _is_address(name):
            return True
        if not self._looked_up:
            self._looked_up = True
            self._names.update(_bare(n) for n in _own_names())
            return name in self._names
        return False


def _own_names() -> List[str]:
    try:
        primary, aliases, _ = socket.gethostbyname_ex(socket.gethostname())
    except OSError:
        primary, aliases = "", []
    return [socket.getfqdn(), primary] + list(aliases)


def _name_of(header: str) -> str:
    """The name of a Host header (its port taken off): `[::1]:6006` is `::1`."""
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _bare(name: str) -> str:
    return name.strip().strip("[]").rstrip(".").lower()


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _cookie_value(token: str) -> str:
    """What the cookie holds: derived from the token, so that the browser's store keeps no
    string that works in a script's Authorization header."""
    return hmac.new(token.encode(), b"mxboard-tensorboard-cookie", hashlib.sha256).hexdigest()


class Guard:
    """The WSGI application in front of TensorBoard's (`app`): it answers 403 to a Host not in
    `hosts` (None: any Host, as behind a Unix socket, which no browser reaches but through a
    proxy) and to a cross-origin request that may change state, and with a `token`, 401 to a
    request without it. `cookie` names the cookie (one a port: browsers send a host's cookies to
    every port of it); `path` is where the cookie is sent (--path_prefix, or /); `secure` marks it
    for HTTPS only."""

    def __init__(self, app: Callable[[_Environ, _StartResponse], Iterable[bytes]], token: Optional[str],
                 hosts: Optional[Hosts], cookie: str, path: str = "/", secure: bool = False) -> None:
        self._app, self._token, self._hosts = app, token, hosts
        self._cookie = cookie
        self._token_bytes = token.encode() if token else b""
        self._cookie_value = _cookie_value(token).encode() if token else b""
        attributes = ["Path=%s" % (path or "/"), "HttpOnly", "SameSite=Strict"] + (["Secure"] if secure else [])
        self._set_cookie = "%s=%s; %s" % (cookie, self._cookie_value.decode(), "; ".join(attributes))

    def __call__(self, environ: _Environ, start_response: _StartResponse) -> Iterable[bytes]:
        refused = self._refused(environ)
        if refused:
            return _answer(start_response, "403 Forbidden", refused)
        if self._token is None or self._holds_token(environ):
            return self._app(environ, start_response)
        query = environ.get("QUERY_STRING", "")
        if "token=" in query:
            return self._exchange(environ, start_response, query)
        return _answer(start_response, "401 Unauthorized",
                       "This TensorBoard asks for its token: open the URL it printed (it ends in ?token=...), "
                       "or send the header 'Authorization: token ...'.")

    def _refused(self, environ: _Environ) -> Optional[str]:
        """Why the request is refused whatever its token, or None."""
        host = environ.get("HTTP_HOST", "")
        if self._hosts is not None and host not in self._hosts:
            return ("Host %r is not a name of this server (a web page of another site?). If it is this machine's "
                    "name, start the server with --allow_host NAME." % host)
        if environ.get("REQUEST_METHOD", "GET") not in _SAFE_METHODS:
            origin = environ.get("HTTP_ORIGIN")
            if origin is not None and urllib.parse.urlsplit(origin).netloc.lower() != host.lower():
                return "A request from a page of another origin (%r) may not change anything here." % origin
        return None

    def _holds_token(self, environ: _Environ) -> bool:
        header = environ.get("HTTP_AUTHORIZATION")
        if header:
            scheme, _, value = header.strip().partition(" ")
            # A header of another scheme (a proxy's Basic) or another token: the cookie may still hold.
            if scheme.lower() in ("token", "bearer") and hmac.compare_digest(value.strip().encode(), self._token_bytes):
                return True
        cookies = environ.get("HTTP_COOKIE")
        if cookies and self._cookie in cookies:
            for pair in cookies.split(";"):
                name, _, value = pair.strip().partition("=")
                if name == self._cookie and hmac.compare_digest(value.strip().encode(), self._cookie_value):
                    return True
        return False

    def _exchange(self, environ: _Environ, start_response: _StartResponse, query: str) -> Iterable[bytes]:
        """`?token=...`: right, a redirect to the same URL without it, with the cookie; wrong,
        401."""
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        given = [value for name, value in pairs if name == "token"]
        if len(given) != 1 or not hmac.compare_digest(given[0].encode(), self._token_bytes):
            return _answer(start_response, "401 Unauthorized",
                           "This token is not this TensorBoard's: open the URL it printed.")
        rest = urllib.parse.urlencode([(n, v) for n, v in pairs if n != "token"])
        # Relative to the URL the browser asked for: behind a proxy's path (jupyter-server-proxy's
        # /proxy/6006/) the redirect stays below it.
        name = environ.get("PATH_INFO", "").rsplit("/", 1)[-1]
        location = (urllib.parse.quote(name) or "./") + ("?" + rest if rest else "")
        return _answer(start_response, "302 Found", "", [("Location", location),
                                                        ("Set-Cookie", self._set_cookie),
                                                        ("Cache-Control", "no-store")])


def _answer(start_response: _StartResponse, status: str, text: str,
            headers: Optional[List[Tuple[str, str]]] = None) -> List[bytes]:
    body = (text + "\n").encode() if text else b""
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))),
                            ("X-Content-Type-Options", "nosniff")] + (headers or []))
    return [body]


def allowed_names(values: Iterable[str]) -> FrozenSet[str]:
    """--allow_host values (each may list names separated by commas) as names."""
    return frozenset(name.strip() for value in values for name in value.split(",") if name.strip())
