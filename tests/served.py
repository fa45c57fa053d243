"""How a test reaches a served TensorBoard: the base URL and token of its banner, a request that
carries the token, and the URL that a browser opens. Free of pytest: conftest.py's `Server` uses
it, and offline_check.py imports it in its sandbox."""
import re
import urllib.parse
import urllib.request

# The URL of a server's banner, `TensorBoard 2.21.0 at http://127.0.0.1:PORT/?token=TOKEN - ...`
# (https with --certfile, a --path_prefix before the last `/`); upstream's launcher and `--auth
# none` print no token. Only the banner's: upstream's notes before it hold URLs of their own.
_BANNER_URL = re.compile(r"TensorBoard \S+ at (https?://[^\s?]+?)/?(?:\?token=([A-Za-z0-9_-]+))?(?=\s|$)")


def banner_url(line):
    """(the base URL, without its last `/`; the token, or None) of a server's banner, or None when
    `line` is not its banner."""
    match = _BANNER_URL.search(line)
    return (match.group(1), match.group(2)) if match else None


def token_header(token):
    """The header that carries a server's token on a request: {} without a token."""
    return {"Authorization": "token " + token} if token else {}


def authorized(url, token, data=None, headers=None):
    """A urllib Request for `url` that carries `token` (None: no header) as the bundled server asks."""
    return urllib.request.Request(url, data=data, headers=dict(headers or {}, **token_header(token)))


def with_token(url, token):
    """`url` as a browser opens it: the token in its query (None: the URL as it is). The server
    answers with a cookie and a redirect to `url`, so the page's own requests carry the token."""
    if not token:
        return url
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.urlencode([("token", token)])
    return urllib.parse.urlunsplit(parts._replace(query=parts.query + "&" + query if parts.query else query))
