"""[shared-machine]: the bundled server answers only whoever holds its token, at a name it was
bound for, over the real server's HTTP (and its Unix socket). On 706ab3a every request that
reached the port got the data: as another user, and with a foreign Host (DNS rebinding)."""
import json
import os
import stat
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request

import pytest

from conftest import BUNDLE, needs
from mxboard import SummaryWriter
from served import authorized

pytestmark = pytest.mark.slow

# Another user of the machine (nobody), as the issue measured it.
OTHER_UID = 65534


@pytest.fixture
def run(logdir):
    with SummaryWriter(os.path.join(logdir, "run1")) as writer:
        for step in range(3):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
            writer.add_text("note", "step %d" % step, step)
    return logdir


def _routes():
    """Every route of TensorBoard's app as the bundle builds it (its plugins, its assets), read
    from the app's own routing table."""
    from tensorboard import program
    from tensorboard.backend import application
    from tensorboard.backend.event_processing import data_ingester

    from tensorboard_bundle import launcher, locate

    tensorboard = program.TensorBoard(plugins=launcher.plugins(), assets_zip_provider=locate.assets_zip_provider())
    tensorboard.configure(argv=["tensorboard", "--logdir", os.devnull, "--load_fast=false"])
    ingester = data_ingester.LocalDataIngester(tensorboard.flags)
    app = application.TensorBoardWSGIApp(tensorboard.flags, tensorboard.plugin_loaders, ingester.data_provider,
                                         tensorboard.assets_zip_provider, ingester.deprecated_multiplexer)
    routes = sorted(set(app.exact_routes) | {prefix + "x" for prefix in app.prefix_routes})
    assert len(routes) > 100 and "/data/plugin/scalars/scalars" in routes
    return routes


# Run as another user: the status of each route, asked without the token (which that user has
# no way to know: below, it cannot read the files that hold it).
_PROBE = textwrap.dedent("""
    import json, sys, urllib.error, urllib.request
    base, routes = sys.argv[1], json.loads(sys.stdin.read())
    statuses = {}
    for route in routes:
        try:
            with urllib.request.urlopen(base + route, timeout=30) as answer:
                statuses[route] = answer.status
        except urllib.error.HTTPError as exc:
            statuses[route] = exc.code
    print(json.dumps(statuses))
""")


def _status(url, token=None, headers=None, data=None, method=None):
    request = authorized(url, token, data=data, headers=headers)
    if method:
        request.method = method
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def _as_other_user(args, stdin=""):
    return subprocess.run(["setpriv", "--reuid", str(OTHER_UID), "--regid", str(OTHER_UID), "--clear-groups"] + args,
                          input=stdin, capture_output=True, text=True, timeout=120)


def test_every_route_answers_no_data_without_the_token_and_none_to_a_foreign_host(run, serve):
    """Each route of the app's routing table: 401 without the token; 403 with a Host that is not
    the server's, even with the token; and with the token, served (the check can fail: its
    answers are not 401 or 403)."""
    routes = _routes()
    server = serve(run)
    assert server.token and "/?token=%s " % server.token in server.banner
    without = {route: _status(server.url + route)[0] for route in routes}
    assert set(without.values()) == {401}, {r: s for r, s in without.items() if s != 401}
    foreign = {route: _status(server.url + route, server.token, {"Host": "evil.example.com"})[0] for route in routes}
    assert set(foreign.values()) == {403}, {r: s for r, s in foreign.items() if s != 403}
    held = {route: _status(server.url + route, server.token)[0] for route in routes}
    assert not {401, 403} & set(held.values()), held
    assert held["/data/plugin/scalars/scalars"] == 400 and held["/data/runs"] == 200
    status, body = _status(server.url + "/data/plugin/scalars/scalars?run=run1&tag=loss", server.token)
    assert status == 200 and [step for _, step, _ in json.loads(body)] == [0, 1, 2]


@needs("setpriv")
@pytest.mark.skipif(os.geteuid() != 0, reason="running as another user needs root")
def test_another_user_of_the_machine_gets_no_data_from_any_route(run, serve):
    routes = _routes()
    server = serve(run)
    probe = _as_other_user([sys.executable, "-c", _PROBE, server.url], json.dumps(routes))
    assert probe.returncode == 0, probe.stderr
    statuses = json.loads(probe.stdout)
    assert set(statuses) == set(routes) and set(statuses.values()) == {401}, statuses


def test_the_token_is_in_no_argv_and_in_no_file_others_can_read(run, serve):
    """Every process's command line is searched for the token, and every file under the
    server's temporary directory and home (its info file, the data server's files); each file
    that holds the token is readable by its owner only, in a directory no one else writes, and
    another user fails to read it. The two directories sit where any user may look (a sticky
    directory of mode 1777, as /tmp, and a home of mode 755): pytest's own are 0700."""
    import shutil
    import tempfile
    import time

    shared = tempfile.mkdtemp(prefix="mxboard-shared-")
    try:
        os.chmod(shared, 0o1777)
        home, temporary = os.path.join(shared, "home"), os.path.join(shared, "tmp")
        os.mkdir(home, 0o755)
        os.mkdir(temporary)
        os.chmod(temporary, 0o1777)
        server = serve(run, env=dict(os.environ, HOME=home, TMPDIR=temporary))
        token = server.token.encode()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    assert token not in f.read(), "the token is in the argv of process %s" % pid
            except (FileNotFoundError, ProcessLookupError):
                continue
        # The info file, which the notebook reads the token from, is written once the server serves.
        deadline = time.monotonic() + 30
        while True:
            holding = _files_holding(token, (home, temporary))
            if any(os.path.exists(path) for path in holding) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert holding, "no file holds the token: the notebook could not find it"
        for path, (mode, directory_mode) in holding.items():
            assert mode & 0o077 == 0 and directory_mode & 0o022 == 0, (path, oct(mode), oct(directory_mode))
        # Another user is asked to read each file still there (the info file, once written, stays).
        holding = sorted(path for path in holding if os.path.exists(path))
        assert holding, "no file holds the token for long: the notebook could not find it"
        if os.geteuid() == 0:
            reader = textwrap.dedent("""
                import sys
                for path in sys.argv[1:]:
                    try:
                        print("read", open(path).read())
                    except OSError as exc:
                        print("refused", exc.errno)
            """)
            read = _as_other_user([sys.executable, "-c", reader] + holding)
            assert read.returncode == 0 and read.stdout.split() == ["refused", "13"] * len(holding), read
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def _files_holding(token, roots):
    """{path: (its mode, its directory's mode)} of every regular file under `roots` that holds
    `token`, each read as found (a file written aside and renamed meanwhile is read where it is)."""
    holding = {}
    for root in roots:
        for directory, _, names in os.walk(root):
            for name in names:
                path = os.path.join(directory, name)
                try:
                    # A socket (the data server's) or a link is no file that holds it.
                    if not stat.S_ISREG(os.lstat(path).st_mode):
                        continue
                    with open(path, "rb") as f:
                        found = os.fstat(f.fileno())
                        if stat.S_ISREG(found.st_mode) and token in f.read():
                            holding[path] = (stat.S_IMODE(found.st_mode), stat.S_IMODE(os.stat(directory).st_mode))
                except FileNotFoundError:
                    continue
    return holding


def test_the_printed_url_sets_a_cookie_that_opens_every_page(run, serve):
    """The browser's path: the printed URL answers with a cookie (HttpOnly, SameSite=Strict, named
    after the port, with no Path: the browser keeps it for the directory of the URL that carried
    the token, here the path prefix) and a redirect to the same URL without the token; the cookie
    then opens the app and its data. A wrong token gets 401 and no cookie."""
    server = serve(run, "--path_prefix", "/tb")
    assert server.url.endswith("/tb")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as answer:
        opener.open(server.url + "/data/runs?token=%s&x=1" % server.token, timeout=30)
    answer.value.close()
    # Relative: behind a proxy's path (jupyter-server-proxy's /proxy/6006/) it stays below it.
    assert answer.value.code == 302 and answer.value.headers["Location"] == "runs?x=1"
    cookie = answer.value.headers["Set-Cookie"]
    attributes = [part.strip() for part in cookie.split(";")]
    assert {"HttpOnly", "SameSite=Strict"} <= set(attributes), cookie
    assert not [a for a in attributes if a.lower().startswith("path=")], cookie
    assert attributes[0].startswith("mxboard-token-%s=" % server.url.rsplit(":", 1)[1].split("/")[0]), cookie
    assert server.token not in cookie
    pair = attributes[0]
    for route in ("/", "/data/runs", "/data/plugin/scalars/tags"):
        assert _status(server.url + route, headers={"Cookie": "other=1; " + pair})[0] == 200, route
    altered = pair[:-1] + ("1" if pair.endswith("0") else "0")
    assert _status(server.url + "/data/runs", headers={"Cookie": altered})[0] == 401
    wrong, body = _status(server.url + "/?token=" + "x" * 43)
    assert wrong == 401 and b"not this TensorBoard's" in body


def test_a_request_from_another_origin_that_may_change_state_is_refused(run, serve):
    server = serve(run)
    route = server.url + "/data/plugin/hparams/experiment"
    body = json.dumps({"experimentName": ""}).encode()
    kinds = {"Content-Type": "application/json"}
    assert _status(route, server.token, dict(kinds, Origin="http://evil.example.com"), body)[0] == 403
    assert _status(route, server.token, dict(kinds, Origin=server.url), body)[0] == 200
    assert _status(route, server.token, kinds, body)[0] == 200
    # A browser's Sec-Fetch-Site decides where it is sent: a page of another site is refused, and
    # told the flag that lets a proxy's origin in; the server's own page passes, whatever its Origin.
    status, said = _status(route, server.token, dict(kinds, Origin="http://tb.lab.example",
                                                     **{"Sec-Fetch-Site": "cross-site"}), body)
    assert status == 403 and "--allow_origin http://tb.lab.example." in said.decode(), said
    assert _status(route, server.token, dict(kinds, Origin="http://tb.lab.example",
                                             **{"Sec-Fetch-Site": "same-origin"}), body)[0] == 200


def test_an_origin_named_with_allow_origin_may_change_state(run, serve):
    """A proxy that rewrites the Host, reached over plain HTTP at a name other than localhost
    (where browsers send no Sec-Fetch-Site): its origin, named, passes; another does not."""
    server = serve(run, "--allow_origin", "https://tb.lab.example,http://proxy.lab.example:8080")
    route = server.url + "/data/plugin/hparams/experiment"
    body = json.dumps({"experimentName": ""}).encode()
    for origin, answered in (("https://tb.lab.example", 200), ("http://proxy.lab.example:8080", 200),
                             ("http://tb.lab.example", 403), ("https://evil.example.com", 403)):
        status = _status(route, server.token, {"Content-Type": "application/json", "Origin": origin}, body)[0]
        assert status == answered, origin


def _launch(*args, env=None, timeout=60):
    import tempfile

    # Never from this checkout, whose tensorboard_bundle/ has no patched files (as conftest's Server).
    return subprocess.run(BUNDLE + list(args), capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=tempfile.gettempdir())


@pytest.mark.parametrize("how", ["environment", "file"])
def test_the_user_may_give_the_token(run, serve, tmp_path, how):
    token = "a-token-of-the-users-own-1234"
    if how == "environment":
        server = serve(run, env=dict(os.environ, MXBOARD_TOKEN=token))
    else:
        path = tmp_path / "token"
        path.write_text(token + "\n")
        path.chmod(0o600)
        server = serve(run, "--token_file", str(path))
    assert server.token == token
    assert _status(server.url + "/data/runs", token)[0] == 200
    assert _status(server.url + "/data/runs", token[:-1])[0] == 401


@pytest.mark.parametrize("case", ["shared file", "short", "a space", "auth none with a file",
                                  "bind_all without a token", "host without a token", "sock with a port", "bad auth",
                                  "missing file", "a token in argv", "a named pipe", "no origin", "any origin"])
def test_a_door_left_open_or_a_bad_token_ends_the_launch_in_one_line(run, tmp_path, case):
    path = tmp_path / "token"
    path.write_text("t" * 40)
    path.chmod(0o644 if case == "shared file" else 0o600)
    if case == "short":
        path.write_text("short")
    if case == "a space":
        path.write_text("a token of the user's own")
    if case == "a named pipe":
        path.unlink()
        os.mkfifo(path, 0o600)
    args = {"shared file": ["--token_file", str(path)],
            "short": ["--token_file", str(path)],
            "a space": ["--token_file", str(path)],
            "auth none with a file": ["--auth", "none", "--token_file", str(path)],
            "bind_all without a token": ["--auth", "none", "--bind_all"],
            "host without a token": ["--auth=none", "--host", "0.0.0.0"],
            "sock with a port": ["--sock", str(tmp_path / "s"), "--port", "0"],
            "bad auth": ["--auth", "password"],
            "missing file": ["--token_file", str(tmp_path / "nothing")],
            "a token in argv": ["--token", "t" * 40],
            "a named pipe": ["--token_file", str(path)],
            "no origin": ["--allow_origin", "tb.lab.example"],
            "any origin": ["--allow_origin=*"]}[case]
    said = _launch("--logdir", run, *args)
    assert said.returncode == 1 and "Traceback" not in said.stderr, said.stderr
    lines = said.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), said.stderr
    expected = {"shared file": "may be read by others (mode 644): chmod 600", "short": "at least 16",
                "a space": "other than a letter, a digit, _ or -",
                "auth none with a file": "asks for no token", "bind_all without a token": "anyone who reaches",
                "host without a token": "anyone who reaches", "sock with a port": "leave out --port",
                "bad auth": "token (the default) or none", "missing file": "No such file",
                "a token in argv": "there is no --token: every user of this machine sees a command line",
                "a named pipe": "is not a regular file",
                "no origin": "--allow_origin tb.lab.example: not an origin",
                "any origin": "--allow_origin *: any web page could then change state here"}[case]
    assert expected in lines[0], lines[0]


def test_auth_none_serves_without_a_token_and_says_who_can_read(run, serve):
    server = serve(run, "--auth", "none")
    assert server.token is None and "?token=" not in server.banner
    assert any("--auth none: no token is asked: every user of this machine" in line for line in server.output)
    assert _status(server.url + "/data/runs")[0] == 200
    # The Host check stays: a web page cannot read through DNS rebinding.
    assert _status(server.url + "/data/runs", headers={"Host": "evil.example.com:80"})[0] == 403


def test_names_added_with_allow_host_and_addresses_are_answered(run, serve):
    server = serve(run, "--allow_host", "tb.lab.example,other.example")
    for host in ("tb.lab.example", "other.example:6006", "localhost", "127.0.0.1:1", "[::1]:6006", "10.1.2.3"):
        assert _status(server.url + "/data/runs", server.token, {"Host": host})[0] == 200, host
    assert _status(server.url + "/data/runs", server.token, {"Host": "lab.example"})[0] == 403


@needs("curl")
def test_the_unix_socket_serves_curl_and_no_one_else(run, tmp_path):
    import re
    import signal

    sock = tmp_path / "tb.sock"
    proc = subprocess.Popen(BUNDLE + ["--logdir", run, "--sock", str(sock), "--reload_interval", "1"],
                            stderr=subprocess.PIPE, text=True)
    try:
        banner = proc.stderr.readline()
        assert banner.startswith("TensorBoard 2.21.0 at http+unix://%s/?token=" % str(sock).replace("/", "%2F")), \
            banner
        token = re.search(r"\?token=([A-Za-z0-9_-]+)", banner).group(1)
        assert stat.S_IMODE(os.lstat(sock).st_mode) == 0o600 and stat.S_ISSOCK(os.lstat(sock).st_mode)

        def curl(*extra):
            return subprocess.run(["curl", "-s", "-o", "/dev/stderr", "-w", "%{http_code}", "--unix-socket", str(sock)]
                                  + list(extra), capture_output=True, text=True, timeout=60)

        answer = curl("-H", "Authorization: token " + token, "http://localhost/data/plugin/scalars/tags")
        assert answer.stdout == "200" and "loss" in answer.stderr, answer
        assert curl("http://localhost/data/runs").stdout == "401"
        # A proxy passes the browser's Host: behind a socket no browser reaches it but through one.
        assert curl("-H", "Authorization: token " + token, "-H", "Host: ondemand.example.edu",
                    "http://localhost/data/runs").stdout == "200"
        if os.geteuid() == 0:
            # Another user cannot even connect (mode 0600).
            other = _as_other_user(["curl", "-s", "--unix-socket", str(sock), "http://localhost/data/runs"])
            assert other.returncode == 7, other
        again = _launch("--logdir", run, "--sock", str(sock))
        assert again.returncode == 1 and again.stderr.strip().endswith(
            "exists: remove it if no server listens there, or name another path"), again.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        proc.stderr.close()
    assert not os.path.lexists(sock)


@pytest.mark.skipif(os.geteuid() != 0, reason="a directory of another user needs root to make")
def test_a_socket_in_a_directory_another_user_owns_or_anyone_writes_is_refused(run, tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    os.chown(foreign, OTHER_UID, OTHER_UID)
    said = _launch("--logdir", run, "--sock", str(foreign / "tb.sock"))
    assert said.returncode == 1 and "belongs to another user (uid 65534)" in said.stderr, said.stderr
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    said = _launch("--logdir", run, "--sock", str(shared / "tb.sock"))
    assert said.returncode == 1 and "others may write in" in said.stderr, said.stderr
    assert os.listdir(foreign) == [] and os.listdir(shared) == []
