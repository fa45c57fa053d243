"""Issue 74: the bundled server behind a real proxy (nginx, a child process with a configuration
of its own), as headless Chromium sees it (tests/browser.py), and what the server writes in its
logs, which proxies (Open OnDemand, jupyter-server-proxy) keep in files.

- nginx with its defaults rewrites the Host (`proxy_pass http://127.0.0.1:PORT/;` sends `Host:
  127.0.0.1:PORT`), so the browser's Origin never matched it: every POST of the page (Time Series,
  HParams) got 403. The browser's Sec-Fetch-Site now decides, and Chromium draws both, through a
  proxy that rewrites the Host and through one that passes the browser's on.
- Servers behind one origin keep their own logins: two socket servers (each cookie was
  `mxboard-token`, Path=/: the second's login logged the first out), and two port servers of the
  same port on two machines (here two loopback addresses), as JupyterHub's users' servers are:
  the cookie's name is the server's own, and its Path the proxy's (the browser's default-path).
- No server writes an access log, on a port or a socket, and no line it writes holds the token.
"""
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest
from browser import Browser
from test_access import _status

from conftest import BUNDLE, needs
from mxboard import SummaryWriter

pytestmark = pytest.mark.slow

# nginx, where a user's PATH may leave out /usr/sbin.
NGINX = shutil.which("nginx") or next((path for path in ("/usr/sbin/nginx",) if os.access(path, os.X_OK)), None)
needs_nginx = pytest.mark.skipif(NGINX is None, reason="needs nginx (make test-tools installs it)")

# The routes of the two dashboards that POST, each to be answered 200 (Chromium 156, TensorBoard
# 2.21.0): Time Series, the page the app opens on, and HParams.
POSTING = {"timeseries": {"tags", "timeSeries"}, "hparams": {"experiment", "session_groups"}}
_PLUGIN_ROUTE = re.compile(r"/data/plugin/([^/?]+)/([^?]+)")


def plugin_routes(responses, plugin):
    """The routes of `plugin` among `responses` that were answered 200."""
    found = set()
    for response in responses:
        match = _PLUGIN_ROUTE.search(response.url)
        if match and match.group(1) == plugin and response.status == 200:
            found.add(match.group(2))
    return found


def refused(responses):
    return [response for response in responses if response.status in (401, 403)]


@pytest.fixture
def runs(tmp_path):
    """A logdir of two runs of a search: each logs its loss (4000 and up: the chart's axis then
    says the POST's answer was drawn) and its hparams (a name no other part of the page shows)."""
    logdir = str(tmp_path / "runs")
    for rate in (0.1, 0.01):
        with SummaryWriter(os.path.join(logdir, "run-%g" % rate)) as writer:
            for step in range(3):
                writer.add_scalar("loss", 4000 + 1000 * step, step)
            writer.add_hparams({"learning_rate": rate}, {"loss": None}, in_run=True)
    return logdir


# The text the page shows: its cards' (Time Series), and its shadow roots' (HParams is drawn in
# Polymer's; a shadow root's text holds no script).
_CARDS_TEXT = "Array.from(document.querySelectorAll('card-view')).map(card => card.innerText).join(' ')"
_SHADOWS_TEXT = ("(function text(node) { let all = ''; for (const e of node.querySelectorAll('*')) "
                 "{ if (e.shadowRoot) all += e.shadowRoot.textContent + text(e.shadowRoot); } return all; })(document)")


def _drawn(browser, expression, holds, what, seconds=30):
    """Wait (bounded) until `holds(the value of expression)`: what the page draws once its data came."""
    deadline = time.monotonic() + seconds
    while not holds(browser.evaluate(expression) or ""):
        assert time.monotonic() < deadline, "%s not drawn in %d s: %s" % (what, seconds,
                                                                         browser.evaluate("document.body.innerText"))
        time.sleep(0.2)


def _free_port(host="127.0.0.1"):
    with socket.create_server((host, 0)) as probe:
        return probe.getsockname()[1]


class Nginx:
    """nginx as a child process (one process: no workers of another user), its configuration,
    pid, logs and temporary files in `directory`, listening on a free port of 127.0.0.1 with
    one location a `{path: upstream}` (an upstream: `http://HOST:PORT/` or `http://unix:PATH:/`),
    each as written in `locations` (its own lines, e.g. Host passed on)."""

    def __init__(self, directory, locations, seconds=30):
        self.port = _free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        blocks = "".join("    location %s { proxy_pass %s; %s }\n" % (path, upstream, extra)
                         for path, (upstream, extra) in locations.items())
        temporary = " ".join("%s_temp_path %s;" % (kind, os.path.join(directory, kind))
                             for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        config = os.path.join(directory, "nginx.conf")
        with open(config, "w") as f:
            f.write("master_process off;\nerror_log %s/error.log;\npid %s/nginx.pid;\n"
                    "events { worker_connections 64; }\n"
                    "http {\n  access_log off;\n  %s\n  proxy_http_version 1.1;\n  server {\n"
                    "    listen 127.0.0.1:%d;\n%s  }\n}\n"
                    % (directory, directory, temporary, self.port, blocks))
        self._log = open(os.path.join(directory, "nginx.out"), "w+")
        self.proc = subprocess.Popen([NGINX, "-p", str(directory), "-c", config, "-g", "daemon off;"],
                                     stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + seconds
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise AssertionError("nginx did not listen: %s" % self.said(directory)) from None
                time.sleep(0.1)

    def said(self, directory):
        self._log.seek(0)
        errors = os.path.join(directory, "error.log")
        return self._log.read() + (open(errors).read() if os.path.exists(errors) else "")

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


class SocketServer:
    """The bundle serving `logdir` on the Unix socket `path`; its stdout and stderr in the file
    `output`, its token read from its banner; `env`: its environment. Never from this checkout,
    whose tensorboard_bundle/ has no patched files (as conftest's Server)."""

    def __init__(self, logdir, path, output, env=None, seconds=60):
        self.path, self.output = str(path), str(output)
        with open(self.output, "w") as out:
            self.proc = subprocess.Popen(BUNDLE + ["--logdir", logdir, "--sock", self.path, "--reload_interval", "1"],
                                         stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tempfile.gettempdir())
        deadline = time.monotonic() + seconds
        while True:
            found = re.search(r"http\+unix://\S+/\?token=([A-Za-z0-9_-]+)", self.said())
            if found:
                self.token = found.group(1)
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise AssertionError("the socket server did not start: %s" % self.said())
            time.sleep(0.1)

    def said(self):
        with open(self.output) as f:
            return f.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture
def closing():
    """Whatever a test hands it is closed at its end, last first."""
    things = []
    yield things.append
    for thing in reversed(things):
        thing.close()


def _loopback_alias():
    """127.0.0.2 where this machine answers it (Linux: all of 127/8), else None."""
    try:
        socket.create_server(("127.0.0.2", 0)).close()
    except OSError:
        return None
    return "127.0.0.2"


@needs_nginx
@needs("chromium")
@pytest.mark.timeout(300)
def test_chromium_draws_time_series_and_hparams_through_a_proxy_that_rewrites_the_host_or_keeps_it(
        runs, serve, tmp_path, closing):
    server = serve(runs)
    port = server.url.rsplit(":", 1)[1]
    server.json("/data/runs", until=lambda served: len(served) == 2)
    upstream = "http://127.0.0.1:%s/" % port
    nginx = Nginx(tmp_path, {"/rewritten/": (upstream, ""), "/kept/": (upstream, "proxy_set_header Host $host;")})
    closing(nginx)
    with Browser() as browser:
        for path in ("/rewritten/", "/kept/"):
            page = nginx.url + path
            opened = browser.navigate(page + "?token=" + server.token, settle_seconds=0.5,
                                      until=lambda seen: refused(seen) or plugin_routes(seen, "timeseries")
                                      >= POSTING["timeseries"])
            assert [(r.status, r.url) for r in opened[:2]] == [(302, page + "?token=" + server.token), (200, page)]
            assert not refused(opened), (path, opened)
            # Time Series draws a card for the loss, its axis fitted to the POST's answer (4000 to 6000).
            _drawn(browser, _CARDS_TEXT, lambda text: "loss" in text and "4500" in text,
                   "the loss chart through " + path)
            seen = browser.navigate(page + "#hparams", settle_seconds=0.5,
                                    until=lambda seen: refused(seen) or plugin_routes(seen, "hparams")
                                    >= POSTING["hparams"])
            assert not refused(seen), (path, seen)
            # HParams draws its table, the hparam's name in its header (from the POSTs' answers).
            _drawn(browser, _SHADOWS_TEXT, lambda text: "learning_rate" in text, "the hparams table through " + path)
        # Each proxy's path has the cookie of its own login, scoped to it by the browser.
        paths = sorted(c["path"] for c in browser.cookies())
        assert paths in (["/kept"], ["/kept", "/rewritten"]), browser.cookies()
    # A script's POST through the proxy that rewrites the Host, its page's Origin sent but no
    # Sec-Fetch-Site (as a browser over plain HTTP to a name other than localhost): refused, and
    # told the flag that lets the proxy's origin in.
    status, said = _status(nginx.url + "/rewritten/data/plugin/hparams/experiment", server.token,
                           {"Origin": nginx.url, "Content-Type": "application/json"}, b'{"experimentName": ""}')
    assert status == 403 and ("--allow_origin %s." % nginx.url).encode() in said, said


@needs_nginx
@needs("chromium")
@pytest.mark.timeout(300)
def test_servers_behind_one_origin_keep_their_own_logins(runs, serve, tmp_path, closing):
    """Two socket servers at /a/ and /b/, and two port servers of one port on two machines'
    addresses (JupyterHub's users' servers: one origin, a path each) at /c/ and /d/: logging in
    to each in turn logs none of the others out."""
    sockets = [SocketServer(runs, tmp_path / ("%s.sock" % name), tmp_path / ("%s.out" % name)) for name in "ab"]
    for server in sockets:
        closing(server)
    alias = _loopback_alias()
    if alias:
        # The port of the second machine's server, first: upstream's check of a port asks
        # localhost, where the first would stand. (Where another process took that port of
        # 127.0.0.1 meanwhile, the first serves on a free one, and says so: the logins are still
        # checked, their cookies' names then differing too.)
        second = serve(runs, "--host", alias)
        first = serve(runs, "--port", second.url.rsplit(":", 1)[1])
    else:
        second, first = serve(runs), serve(runs)
    upstreams = {"/a/": "http://unix:%s:/" % sockets[0].path, "/b/": "http://unix:%s:/" % sockets[1].path,
                 "/c/": first.url + "/", "/d/": second.url + "/"}
    tokens = {"/a/": sockets[0].token, "/b/": sockets[1].token, "/c/": first.token, "/d/": second.token}
    nginx = Nginx(tmp_path, {path: (upstream, "") for path, upstream in upstreams.items()})
    closing(nginx)
    with Browser() as browser:
        logged_in = []
        for path in ("/a/", "/b/", "/c/", "/d/"):
            opened = browser.navigate(nginx.url + path + "data/runs?token=" + tokens[path], settle_seconds=0.2)
            assert [r.status for r in opened[:2]] == [302, 200], (path, opened)
            logged_in.append(path)
            # Every server logged in to so far still answers with its own cookie.
            for earlier in logged_in:
                seen = browser.navigate(nginx.url + earlier + "data/runs", settle_seconds=0.2)
                assert [r.status for r in seen] == [200], (earlier, "after", path, seen)
        names = {c["name"] for c in browser.cookies()}
        assert names and all(name.startswith("mxboard-token-") for name in names), names


def _is_banner(line):
    return re.match(r"TensorBoard \S+ at \S+\?token=", line) is not None


def _raw(path_or_address, data):
    """What a server answers to the bytes `data`, sent raw over a Unix socket or TCP."""
    family = socket.AF_UNIX if isinstance(path_or_address, str) else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as connection:
        connection.settimeout(30)
        connection.connect(path_or_address)
        connection.sendall(data)
        answer = b""
        while True:
            chunk = connection.recv(1 << 16)
            if not chunk:
                return answer
            answer += chunk


@needs("curl")
def test_no_server_writes_an_access_log_or_a_token_in_its_output(runs, tmp_path):
    """The bundle on a port and on a socket, each asked for its token URL, its data, a wrong
    token, and a request line too odd to parse that holds the token (werkzeug's error line quotes
    it, at a level the server shows): its whole output holds no access line and no token."""
    token = "the-token-of-the-users-own-0123456789"
    environment = dict(os.environ, MXBOARD_TOKEN=token)
    port_output = tmp_path / "port.out"
    with open(port_output, "w") as out:
        port_server = subprocess.Popen(BUNDLE + ["--logdir", runs, "--port", "0", "--reload_interval", "1"],
                                       stdout=out, stderr=subprocess.STDOUT, env=environment,
                                       cwd=tempfile.gettempdir())
    try:
        socket_server = SocketServer(runs, tmp_path / "tb.sock", tmp_path / "sock.out", env=environment)
        try:
            deadline = time.monotonic() + 60
            while not re.search(r"http://127\.0\.0\.1:(\d+)/\?token=", port_output.read_text()):
                assert port_server.poll() is None and time.monotonic() < deadline, port_output.read_text()
                time.sleep(0.1)
            port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", port_output.read_text()).group(1))
            odd = b"GET /?token=" + token.encode() + b" one-word-too-many HTTP/1.1\r\n\r\n"
            for where in (("127.0.0.1", port), socket_server.path):
                for request in (b"GET /?token=" + token.encode() + b" HTTP/1.1\r\nHost: localhost\r\n"
                                b"Connection: close\r\n\r\n",
                                b"GET /data/runs?token=wrong HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
                                b"GET /data/runs HTTP/1.1\r\nHost: localhost\r\nAuthorization: token " + token.encode()
                                + b"\r\nConnection: close\r\n\r\n", odd):
                    # Answered (the odd one as HTTP/0.9 would be: a page without a status line).
                    assert _raw(where, request), (where, request)
            curl = subprocess.run(["curl", "-s", "-o", os.devnull, "-w", "%{http_code}", "--unix-socket",
                                   socket_server.path, "http://localhost/?token=" + token],
                                  capture_output=True, text=True, timeout=60)
            assert curl.stdout == "302", curl
        finally:
            socket_server.close()
    finally:
        port_server.send_signal(signal.SIGTERM)
        port_server.wait(30)
    for output in (port_output.read_text(), socket_server.said()):
        lines = output.splitlines()
        # The banner alone names the token: the line the user opens.
        assert [line for line in lines if token in line] == [line for line in lines if _is_banner(line)]
        assert len([line for line in lines if token in line]) == 1, output
        # No access line (`"GET /path HTTP/1.1" 200 -`); the odd request's error line, if any, redacted.
        assert not [line for line in lines if re.search(r'"[A-Z]+ \S+ HTTP/1\.[01]" \d{3}', line)], output
        assert all("token=[redacted]" in line for line in lines if "Bad request" in line), output


def test_a_verbose_log_of_the_socket_server_shows_no_token(tmp_path):
    """With werkzeug's logger at INFO (a program that logs verbosely around the server), every
    request is logged, each with `token=[redacted]`: the access line, and the error line of a
    request line too odd to parse."""
    from tensorboard_bundle import launcher, serving

    program = launcher.patched("program")
    token = "Zq3v8-the-token-0123456789"

    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    path = str(tmp_path / "tb.sock")
    server = serving._on_socket(program, serving.bind_unix(path), app, token, serving._request_handler(program))
    werkzeug = logging.getLogger("werkzeug")
    # Quiet by default: its level is TensorBoard's (the root's).
    assert werkzeug.level == logging.NOTSET
    lines = []

    class Kept(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    kept = Kept(logging.DEBUG)
    werkzeug.addHandler(kept)
    werkzeug.setLevel(logging.INFO)
    serving_thread = threading.Thread(target=server.serve_forever, daemon=True)
    serving_thread.start()
    try:
        for request in (b"GET /runs?x=1&token=" + token.encode() + b" HTTP/1.1\r\nConnection: close\r\n\r\n",
                        b"GET /?token=" + token.encode() + b" one-word-too-many HTTP/1.1\r\n\r\n"):
            assert _raw(path, request)
    finally:
        werkzeug.removeHandler(kept)
        werkzeug.setLevel(logging.NOTSET)
        server.shutdown()
        serving_thread.join(30)
    assert len(lines) >= 2 and not [line for line in lines if token in line], lines
    assert [line for line in lines if "/runs?x=1&token=[redacted] HTTP/1.1" in line], lines
    assert [line for line in lines if "Bad request syntax" in line and "token=[redacted]" in line], lines


