"""Who may read what the server serves. A port is no proof of who is asking: every user of a
shared machine reaches 127.0.0.1, and so does a web page, through DNS rebinding. So, as Jupyter:

- a token, random unless the user gives one (MXBOARD_TOKEN or --token_file, never a flag's value,
  which `ps` shows); the printed URL (`/?token=...`) trades it for a cookie and a redirect to the
  same URL without it; a script sends `Authorization: token ...`; anything else gets 401;
- the Host must be a name the server was bound for (`Hosts`), or an address (403);
- a request that may change state from another origin gets 403: the browser's Sec-Fetch-Site
  says (no page can set it); without it, the Origin must match the Host or --allow_origin;
- the cookie is named after the server (`cookie_name`) and has no Path: the browser keeps it for
  the directory of the token's URL, a proxy's path too (RFC 6265's default-path);
- no log line holds the token (`redacted`).

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
import threading
import urllib.parse
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple

__all__ = ["ENV", "Guard", "Hosts", "allowed_names", "allowed_origins", "cookie_name", "is_loopback", "read_token",
           "redacted"]

# The environment variable that sets the token: the process's environment is readable by its
# owner only (/proc/PID/environ), unlike its argv.
ENV = "MXBOARD_TOKEN"
# A token the user gives is at least this long, and made of what secrets.token_urlsafe makes.
_SHORTEST = 16
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
_SAFE_METHODS = frozenset(("GET", "HEAD", "OPTIONS"))
# The Sec-Fetch-Site values of a request the user made: from the server's own page, or typed in
# the address bar (a bookmark).
_OWN_SITE = frozenset(("same-origin", "none"))
# A token's value in a URL (a query's `token=`), as a log line would hold it.
_TOKEN_IN_URL = re.compile(r"(token=)[^&\s\"'#;]+", re.IGNORECASE)

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
    written as numbers. This machine's fully qualified names (`lookup()`) are looked up once, at
    the first name not found otherwise (a lookup may wait on DNS); a request that comes meanwhile
    waits for them, and the names are published whole, so none is refused for coming early."""

    def __init__(self, host: Optional[str] = None, allowed: Iterable[str] = (),
                 lookup: Optional[Callable[[], List[str]]] = None) -> None:
        names = {"localhost", socket.gethostname()}
        names.update(allowed)
        if host:
            names.add(host)
        self._names: FrozenSet[str] = frozenset(_bare(name) for name in names if name)
        self._lookup = lookup or _own_names
        self._looked_up = False
        self._lock = threading.Lock()

    def __contains__(self, header: str) -> bool:
        name = _bare(_name_of(header))
        if name in self._names or _is_address(name):
            return True
        if not self._looked_up:
            with self._lock:
                if not self._looked_up:
                    # Filled, then marked: a request that reads the flag reads every name.
                    self._names = self._names | {_bare(n) for n in self._lookup() if n}
                    self._looked_up = True
        return name in self._names


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


def _origin(value: str) -> Optional[str]:
    """An origin as a browser's Origin header writes it (`scheme://host`, and `:port` unless the
    scheme's default), lowercased; None for anything else (`null`, a path, a scheme other than
    http and https)."""
    try:
        parts = urllib.parse.urlsplit(value.strip())
        port = parts.port
    # A bracketed address that is none, a port that is no number.
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
            or parts.query or parts.fragment or parts.username is not None:
        return None
    scheme, host = parts.scheme.lower(), parts.hostname.lower()
    host = "[%s]" % host if ":" in host else host
    default = 80 if scheme == "http" else 443
    return "%s://%s%s" % (scheme, host, "" if port in (None, default) else ":%d" % port)


def cookie_name(where: str) -> str:
    """The cookie's name for a server at `where` (a port's number, or a socket's path): each
    server its own, so that two behind one origin (a proxy's) never replace each other's."""
    if where.isdigit():
        return "mxboard-token-%s" % where
    return "mxboard-token-%s" % hashlib.sha256(where.encode()).hexdigest()[:12]


def redacted(line: str) -> str:
    """`line` with any token in a URL's query shown as `token=[redacted]`."""
    return _TOKEN_IN_URL.sub(r"\1[redacted]", line)


def _cookie_value(token: str) -> str:
    """What the cookie holds: derived from the token, so that the browser's store keeps no
    string that works in a script's Authorization header."""
    return hmac.new(token.encode(), b"mxboard-tensorboard-cookie", hashlib.sha256).hexdigest()


class Guard:
    """The WSGI application in front of TensorBoard's (`app`): it answers 403 to a Host not in
    `hosts` (None: any Host, as behind a Unix socket, which no browser reaches but through a
    proxy) and to a cross-origin request that may change state (`origins`: the origins besides
    the server's own that may, --allow_origin), and with a `token`, 401 to a request without it.
    `cookie` names the cookie (`cookie_name`); `secure` marks it for HTTPS only."""

    def __init__(self, app: Callable[[_Environ, _StartResponse], Iterable[bytes]], token: Optional[str],
                 hosts: Optional[Hosts], cookie: str, secure: bool = False,
                 origins: Iterable[str] = ()) -> None:
        self._app, self._token, self._hosts = app, token, hosts
        self._cookie = cookie
        self._origins = frozenset(origins)
        self._token_bytes = token.encode() if token else b""
        self._cookie_value = _cookie_value(token).encode() if token else b""
        # No Path: the browser scopes the cookie to the directory of the URL that carried the
        # token (RFC 6265 5.1.4), where the server's page is as the browser sees it: / here,
        # --path_prefix's, or a proxy's path that the server never sees.
        attributes = ["HttpOnly", "SameSite=Strict"] + (["Secure"] if secure else [])
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
        if self._cookie + "=" in environ.get("HTTP_COOKIE", ""):
            return _answer(start_response, "401 Unauthorized",
                           "This TensorBoard's cookie holds an old token (the server was restarted with a new one): "
                           "open the URL it printed now (it ends in ?token=...).")
        return _answer(start_response, "401 Unauthorized",
                       "This TensorBoard asks for its token: open the URL it printed (it ends in ?token=...), "
                       "or send the header 'Authorization: token ...'.")

    def _refused(self, environ: _Environ) -> Optional[str]:
        """Why the request is refused whatever its token, or None."""
        host = environ.get("HTTP_HOST", "")
        if self._hosts is not None and host not in self._hosts:
            return ("Host %r is not a name of this server (a web page of another site?). If it is this machine's "
                    "name, start the server with --allow_host NAME." % host)
        if environ.get("REQUEST_METHOD", "GET") not in _SAFE_METHODS and self._cross_origin(environ, host):
            origin = environ.get("HTTP_ORIGIN")
            named = _origin(origin or "")
            return ("A request from a page of another origin (%s) may not change anything here. If this TensorBoard's "
                    "page is served there (through a proxy), start the server with --allow_origin %s."
                    % (repr(origin) if origin is not None else "Sec-Fetch-Site: %s"
                       % environ.get("HTTP_SEC_FETCH_SITE"), named or "ORIGIN"))
        return None

    def _cross_origin(self, environ: _Environ, host: str) -> bool:
        """Whether a request that may change state comes from a page of another origin, as Go's
        CrossOriginProtection decides: an origin named with --allow_origin may; else the browser's
        Sec-Fetch-Site, which no page can set, says; where it is absent (plain HTTP to a name
        other than localhost, an old browser, a script) the Origin must be the Host, or absent."""
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and self._origins and _origin(origin) in self._origins:
            return False
        site = environ.get("HTTP_SEC_FETCH_SITE")
        if site is not None:
            return site.strip().lower() not in _OWN_SITE
        if origin is None:
            return False
        try:
            return urllib.parse.urlsplit(origin).netloc.lower() != host.lower()
        # An Origin no browser sends (`http://[::1`): no page of this server's.
        except ValueError:
            return True

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


def allowed_origins(values: Iterable[str]) -> FrozenSet[str]:
    """--allow_origin values (each may list origins separated by commas) as origins, written as
    a browser's Origin header writes them. Raises ValueError, in one line, for one that is no
    origin, and for `*`: every web page could then change state here."""
    origins = set()
    for value in (origin.strip() for listed in values for origin in listed.split(",")):
        if not value:
            continue
        if value == "*":
            raise ValueError("--allow_origin *: any web page could then change state here; name the origin the "
                             "page is served from (through a proxy), as scheme://host[:port]")
        origin = _origin(value)
        if origin is None:
            raise ValueError("--allow_origin %s: not an origin; write it as the browser's address bar shows the "
                             "proxy, scheme://host[:port] (http or https, no path)" % value)
        origins.add(origin)
    return frozenset(origins)
