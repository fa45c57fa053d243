"""Issue 67 in a real browser: headless Chromium (tests/browser.py) opens the URL the bundled
server prints, its token traded for a cookie, and every dashboard of the demo's logdir then
fetches its data with the cookie alone; a profile without the token gets 401. Over HTTPS with a
self-signed pair too, and a certificate that is none ends the launch in one line."""
import http.client
import os
import re
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from browser import Browser

from conftest import BUNDLE, authorized, needs

pytestmark = pytest.mark.slow

# What each dashboard of the demo's logdir asked for when Chromium opened it (its own routes under
# /data/plugin/<name>/, as Chromium 156 and TensorBoard 2.21.0 were seen to): each must be
# answered 200. Time Series is the page the app opens on; the projector is a page of its own in
# an iframe, its script and page served by its plugin too.
ROUTES = {
    "timeseries": {"tags", "timeSeries", "imageData"},
    "scalars": {"tags", "scalars_multirun"},
    "custom_scalars": {"layout", "scalars"},
    "images": {"tags", "images", "individualImage"},
    "audio": {"tags", "audio", "individualAudio"},
    "graphs": {"info", "graph"},
    "distributions": {"tags", "distributions"},
    "histograms": {"tags", "histograms"},
    "text": {"tags", "text"},
    "pr_curves": {"tags", "pr_curves"},
    "hparams": {"experiment", "session_groups"},
    "mesh": {"tags", "meshes", "data"},
    "projector": {"index.js", "projector_binary.html", "runs", "info", "tensor", "sprite_image", "metadata"},
}
# A route of a plugin, with or without the experiment's prefix the Angular dashboards put before it.
_PLUGIN_ROUTE = re.compile(r"/data/plugin/([^/?]+)/([^?]+)")


def plugin_routes(responses, plugin, status=200):
    """The routes of `plugin` among `responses` that were answered with `status`."""
    found = set()
    for response in responses:
        match = _PLUGIN_ROUTE.search(response.url)
        if match and match.group(1) == plugin and response.status == status:
            found.add(match.group(2))
    return found


def refused(responses):
    return [response for response in responses if response.status in (401, 403)]


def printed_url(server):
    """The URL of the server's banner, as the user copies it (its token in it)."""
    return re.search(r"https?://\S+", server.banner).group(0)


@pytest.fixture(scope="module")
def demo_logdir(tmp_path_factory):
    """The logdir of a short demo training, as tests/test_demo.py's demo_run makes it (its fixture
    lives in that module): the run `cnn`, its sub-runs below."""
    pytest.importorskip("mxnet")
    pytest.importorskip("sklearn")
    logdir = str(tmp_path_factory.mktemp("demo") / "runs")
    subprocess.run([sys.executable, "-m", "mxboard.demo", "--logdir", logdir, "--run", "cnn", "--epochs", "2",
                    "--batches", "3", "--histogram-every", "2", "--no-serve"], check=True, timeout=300,
                   capture_output=True)
    return logdir


def served_runs(logdir):
    """Every run below `logdir` as the server names it: the folders that hold an event file."""
    return {os.path.relpath(folder, logdir) for folder, _, names in os.walk(logdir)
            if any("tfevents" in name for name in names)}


@needs("chromium")
@pytest.mark.timeout(300)
def test_chromium_opens_the_printed_url_and_every_dashboard_loads_with_the_cookie(demo_logdir, serve):
    server = serve(demo_logdir)
    # The server has loaded the whole logdir before the browser comes (its loader reloads on its
    # own clock): every run, and the dashboards that show them.
    runs = served_runs(demo_logdir)
    server.json("/data/runs", until=lambda served: set(served) >= runs)
    listing = server.json("/data/plugins_listing",
                          until=lambda plugins: {name for name, p in plugins.items() if p["enabled"]} >= set(ROUTES))
    assert {name for name, plugin in listing.items() if plugin["enabled"]} == set(ROUTES)
    with Browser() as browser:
        # The control: without the token the page itself is refused, and no data is served.
        control = browser.navigate(server.url + "/#scalars")
        assert control[0].url == server.url + "/" and control[0].status == 401, control
        assert not [r for r in control if "/data/" in r.url and r.status == 200], control
        # The printed URL: a redirect to the app without the token, a cookie with it; the app
        # loads and opens Time Series, whose data it fetches.
        opened = browser.navigate(printed_url(server),
                                  until=lambda seen: plugin_routes(seen, "timeseries") >= ROUTES["timeseries"])
        assert [(r.status, r.url) for r in opened[:2]] == [(302, printed_url(server)), (200, server.url + "/")]
        assert not refused(opened), opened
        ((name, http_only, same_site, path),) = [(c["name"], c["httpOnly"], c["sameSite"], c["path"])
                                                 for c in browser.cookies()]
        assert (http_only, same_site, path) == (True, "Strict", "/"), name
        # Each dashboard, opened as a user does (the app follows the URL's fragment), asks for its
        # own routes with the cookie alone: no token in any URL after the first. navigate waits
        # (bounded) until each of its routes was answered 200: one missing or refused fails there,
        # with what was seen.
        for plugin, routes in ROUTES.items():
            if plugin == "timeseries":
                continue
            seen = browser.navigate(server.url + "/#" + plugin, settle_seconds=0.5,
                                    until=lambda seen, plugin=plugin, routes=routes:
                                    plugin_routes(seen, plugin) >= routes)
            assert not refused(seen), (plugin, seen)
            assert not [r for r in seen if "token=" in r.url], (plugin, seen)


def read(url, token, context=None):
    """The body of a GET that carries the token: an error's body where the server answered with
    one, nothing where the connection failed."""
    try:
        with urllib.request.urlopen(authorized(url, token), context=context, timeout=30) as answer:
            return answer.read()
    except urllib.error.HTTPError as exc:
        return exc.read()
    except (OSError, http.client.HTTPException):
        return b""


@pytest.fixture
def self_signed(tmp_path):
    """(certificate, key): a self-signed pair for 127.0.0.1 and localhost, made by openssl."""
    certfile, keyfile = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", keyfile, "-out", certfile, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=60)
    return certfile, keyfile


@needs("chromium", "openssl")
def test_https_with_a_self_signed_pair_serves_chromium(logdir, serve, self_signed):
    from mxboard import SummaryWriter

    with SummaryWriter(os.path.join(logdir, "train")) as writer:
        for step in range(3):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
    certfile, keyfile = self_signed
    server = serve(logdir, "--certfile", certfile, "--keyfile", keyfile)
    assert printed_url(server).startswith("https://127.0.0.1:"), server.banner
    # Python with the certificate as its one authority (its name checked too) reads the runs, once
    # the server's loader has found the run (it reloads on its own clock).
    context = ssl.create_default_context(cafile=certfile)
    deadline = time.monotonic() + 30
    while read(server.url + "/data/runs", server.token, context) != b'["train"]':
        assert time.monotonic() < deadline, "no run served over HTTPS in 30 s"
        time.sleep(0.25)
    # Plain HTTP to the same port reads nothing.
    assert b"train" not in read("http://" + server.url[len("https://"):] + "/data/runs", server.token)
    with Browser(ignore_certificate_errors=True) as browser:
        opened = browser.navigate(printed_url(server))
        assert [(r.status, r.url) for r in opened[:2]] == [(302, printed_url(server)), (200, server.url + "/")]
        seen = browser.navigate(server.url + "/#scalars", settle_seconds=0.5,
                                until=lambda seen: plugin_routes(seen, "scalars") >= ROUTES["scalars"])
        assert not refused(opened + seen), opened + seen
        assert all(r.url.startswith("https://") for r in opened + seen), opened + seen


@needs("openssl")
def test_a_certificate_that_is_none_ends_the_launch_in_one_line(logdir, self_signed, tmp_path):
    _, keyfile = self_signed
    not_a_certificate = tmp_path / "not_a_certificate.pem"
    not_a_certificate.write_text("not a certificate\n")
    os.makedirs(logdir)
    launch = subprocess.run(BUNDLE + ["--logdir", logdir, "--port", "0", "--certfile", str(not_a_certificate),
                                      "--keyfile", keyfile], capture_output=True, text=True, timeout=60)
    assert launch.returncode == 1, launch
    (line,) = launch.stderr.splitlines()
    assert str(not_a_certificate) in line and "Traceback" not in launch.stderr, launch.stderr
