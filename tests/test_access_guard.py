"""The guard in front of TensorBoard's app (tensorboard_bundle/access.py), in process, over
requests that Hypothesis makes: the app is reached only with the token (the header or the cookie
the token was traded for), at a name the server answers to; nothing else gets past it. The real
server over HTTP is tests/test_access.py's."""
import threading
import time
import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorboard_bundle.access import Guard, Hosts, allowed_origins, cookie_name, redacted

TOKEN = "Zq3v8-tokenOfTheServer_0123456789abcdefghijk"
COOKIE = "mxboard-token-6006"


def _served(environ, token=TOKEN, hosts=None, origins=()):
    """(status, headers and the body under "body", whether TensorBoard's app was reached) for one
    request; `origins`: the --allow_origin values."""
    reached = []

    def app(environ, start_response):
        reached.append(True)
        start_response("200 OK", [])
        return [b"runs"]

    answer = {}

    def start_response(status, headers):
        answer.update(status=status, headers=dict(headers))

    guard = Guard(app, token, Hosts("127.0.0.1") if hosts is None else hosts, COOKIE, origins=origins)
    body = b"".join(guard(environ, start_response))
    assert body == b"runs" if reached else b"runs" not in body
    # The body, beside the headers: what a refusal says.
    answer["headers"]["body"] = body.decode()
    return answer["status"], answer["headers"], bool(reached)


def _environ(**headers):
    environ = {"REQUEST_METHOD": "GET", "HTTP_HOST": "127.0.0.1:6006", "PATH_INFO": "/data/runs", "QUERY_STRING": ""}
    environ.update(headers)
    return environ


def _traded_cookie():
    """The cookie value the server gives for the token (read from its answer to ?token=)."""
    status, headers, _ = _served(_environ(QUERY_STRING="token=" + TOKEN))
    assert status == "302 Found"
    return headers["Set-Cookie"].split(";")[0].split("=", 1)[1]


text = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60)


@settings(max_examples=300, deadline=None)
@given(authorization=st.one_of(st.none(), text, st.sampled_from(["token " + TOKEN, "Bearer " + TOKEN, "token",
                                                                 "token " + TOKEN[:-1], TOKEN])),
       cookie=st.one_of(st.none(), text, st.sampled_from(["right", "right-other-port", "right-wrong-value"])))
def test_the_app_is_reached_with_the_token_or_its_cookie_and_with_nothing_else(authorization, cookie):
    traded = _traded_cookie()
    cookies = {"right": "a=1; %s=%s" % (COOKIE, traded), "right-other-port": "mxboard-token-6007=" + traded,
               "right-wrong-value": "%s=%s" % (COOKIE, traded[:-1] + ("0" if traded[-1] != "0" else "1"))}
    headers = {}
    if authorization is not None:
        headers["HTTP_AUTHORIZATION"] = authorization
    if cookie is not None:
        headers["HTTP_COOKIE"] = cookies.get(cookie, cookie)
    status, _, reached = _served(_environ(**headers))
    holds = authorization in ("token " + TOKEN, "Bearer " + TOKEN) or cookie == "right"
    assert reached == holds and status == ("200 OK" if holds else "401 Unauthorized")


@settings(max_examples=200, deadline=None)
@given(path=st.lists(st.text(alphabet="abcdefgh_-", min_size=1, max_size=8), max_size=4),
       trailing=st.booleans(), rest=st.lists(st.tuples(st.sampled_from(["run", "tag", "x"]), text), max_size=3),
       given_token=st.one_of(st.just(TOKEN), text))
def test_the_token_in_a_url_is_traded_for_a_cookie_and_a_relative_redirect_without_it(path, trailing, rest,
                                                                                        given_token):
    path_info = "/" + "/".join(path) + ("/" if trailing and path else "")
    query = urllib.parse.urlencode(rest[:1] + [("token", given_token)] + rest[1:])
    status, headers, reached = _served(_environ(PATH_INFO=path_info, QUERY_STRING=query))
    assert not reached
    if given_token != TOKEN:
        assert status == "401 Unauthorized" and "Set-Cookie" not in headers
        return
    location = headers["Location"]
    assert status == "302 Found" and "token=" not in location and not location.startswith("/")
    # The redirect, resolved against the URL asked for (here below a proxy's path), is that URL less the token.
    asked = "http://h/proxy/6006" + path_info
    resolved = urllib.parse.urlsplit(urllib.parse.urljoin(asked, location))
    assert resolved.path == urllib.parse.urlsplit(asked).path or (resolved.path == asked.rsplit("/", 1)[0] + "/"
                                                                  and path_info.endswith("/"))
    assert urllib.parse.parse_qsl(resolved.query, keep_blank_values=True) == rest
    attributes = headers["Set-Cookie"].split("; ")
    assert attributes[0].startswith(COOKIE + "=") and TOKEN not in attributes[0]
    # No Path: the browser scopes the cookie to where the page is, a proxy's path included.
    assert {"HttpOnly", "SameSite=Strict"} <= set(attributes[1:])
    assert not [a for a in attributes[1:] if a.lower().startswith("path=")], attributes


names = st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9-]{0,10}){0,3}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(name=names, port=st.one_of(st.none(), st.integers(1, 65535)))
def test_a_name_the_server_was_not_bound_for_is_refused_even_with_the_token(name, port):
    hosts = Hosts("127.0.0.1", ["tb.lab.example"])
    # This machine's own names pass; any other is refused before the app, token or not.
    own = name in hosts
    header = name + (":%d" % port if port else "")
    status, _, reached = _served(_environ(HTTP_HOST=header, HTTP_AUTHORIZATION="token " + TOKEN), hosts=hosts)
    assert reached == own and status == ("200 OK" if own else "403 Forbidden")


@pytest.mark.parametrize("header, answered", [
    ("localhost:6006", True), ("LOCALHOST", True), ("127.0.0.1", True), ("[::1]:6006", True), ("10.2.3.4:80", True),
    ("[2001:db8::1]", True), ("tb.lab.example:443", True), ("tb.lab.example.", True), ("", False),
    ("evil.example.com", False), ("127.0.0.1.evil.example.com", False), ("localhost.evil.example", False),
    ("lab.example", False)])
def test_the_names_and_addresses_a_request_may_carry(header, answered):
    status, _, reached = _served(_environ(HTTP_HOST=header, HTTP_AUTHORIZATION="token " + TOKEN),
                                 hosts=Hosts("127.0.0.1", ["tb.lab.example"]))
    assert reached == answered


@pytest.mark.parametrize("method, origin, answered", [
    ("POST", None, True), ("POST", "http://127.0.0.1:6006", True), ("POST", "http://evil.example.com", False),
    ("POST", "null", False), ("PUT", "http://127.0.0.1:6007", False), ("GET", "http://evil.example.com", True)])
def test_a_request_that_may_change_state_from_another_origin_is_refused(method, origin, answered):
    headers = {"REQUEST_METHOD": method, "HTTP_AUTHORIZATION": "token " + TOKEN}
    if origin is not None:
        headers["HTTP_ORIGIN"] = origin
    status, _, reached = _served(_environ(**headers))
    assert reached == answered and status == ("200 OK" if answered else "403 Forbidden")


# (Sec-Fetch-Site, Origin, the --allow_origin values, whether a POST is answered). The proxy's
# page is at http://tb.lab.example:8080, which a proxy that rewrites the Host never tells.
PROXIED = "http://tb.lab.example:8080"


@pytest.mark.parametrize("site, origin, origins, answered", [
    # A browser says where the page is: its own page through any proxy, or a bookmark, passes.
    ("same-origin", PROXIED, (), True), ("none", None, (), True), ("Same-Origin", PROXIED, (), True),
    ("cross-site", "http://evil.example.com", (), False), ("same-site", "http://127.0.0.1:6007", (), False),
    ("cross-site", None, (), False), ("something-new", PROXIED, (), False),
    # An origin named with --allow_origin passes, however the browser calls it.
    ("cross-site", PROXIED, (PROXIED,), True), ("same-site", PROXIED, (PROXIED,), True),
    # No Sec-Fetch-Site (plain HTTP to a name other than localhost, an old browser): the Origin
    # must be the Host, or named.
    (None, PROXIED, (), False), (None, PROXIED, (PROXIED,), True), (None, PROXIED, ("http://tb.lab.example",), False),
    (None, "HTTP://TB.LAB.EXAMPLE:8080", (PROXIED,), True), (None, "http://tb.lab.example", ("http://tb.lab.example",),
                                                             True),
    (None, "null", (PROXIED,), False), (None, None, (), True)])
def test_the_browser_s_sec_fetch_site_or_a_named_origin_lets_a_proxied_page_change_state(site, origin, origins,
                                                                                        answered):
    headers = {"REQUEST_METHOD": "POST", "HTTP_AUTHORIZATION": "token " + TOKEN}
    if site is not None:
        headers["HTTP_SEC_FETCH_SITE"] = site
    if origin is not None:
        headers["HTTP_ORIGIN"] = origin
    status, _, reached = _served(_environ(**headers), origins=allowed_origins(origins))
    assert reached == answered and status == ("200 OK" if answered else "403 Forbidden")


odd = st.one_of(st.none(), text, st.sampled_from(["http://[::1", "http://[zz]:1", "http://a:b", "null", "", " ",
                                                  "same-origin", "cross-site", "http://127.0.0.1:6006"]))


@settings(max_examples=300, deadline=None)
@given(method=st.sampled_from(["POST", "PUT", "DELETE", "GET"]), origin=odd, site=odd, allowed=st.booleans())
def test_odd_origins_and_sec_fetch_sites_get_an_answer_or_one_line_naming_the_flag(method, origin, site, allowed):
    """A proxy's or a script's odd headers: the request is answered, or refused with one line that
    names --allow_origin; never an exception."""
    headers = {"REQUEST_METHOD": method, "HTTP_AUTHORIZATION": "token " + TOKEN}
    if origin is not None:
        headers["HTTP_ORIGIN"] = origin
    if site is not None:
        headers["HTTP_SEC_FETCH_SITE"] = site
    status, headers, _ = _served(_environ(**headers), origins=allowed_origins([PROXIED] if allowed else []))
    assert status in ("200 OK", "403 Forbidden")
    if status == "403 Forbidden":
        body = headers["body"]
        assert len(body.splitlines()) == 1 and "--allow_origin" in body, body


def test_a_refused_origin_is_told_the_flag_that_lets_it_in():
    answer = {}

    def start_response(status, headers):
        answer["status"] = status

    guard = Guard(lambda environ, start_response: [b""], TOKEN, Hosts("127.0.0.1"), COOKIE)
    body = b"".join(guard(_environ(REQUEST_METHOD="POST", HTTP_ORIGIN="http://TB.lab.example:80"), start_response))
    (line,) = body.decode().splitlines()
    assert answer["status"] == "403 Forbidden" and "--allow_origin http://tb.lab.example." in line, line


@pytest.mark.parametrize("values, origins", [
    (["http://tb.lab.example"], {"http://tb.lab.example"}),
    (["https://TB.lab.example:443/", "http://a.example:8080,http://b.example:80"],
     {"https://tb.lab.example", "http://a.example:8080", "http://b.example"}),
    (["http://[::1]:8888"], {"http://[::1]:8888"}), ([" , "], set())])
def test_allow_origin_values_are_written_as_a_browser_writes_an_origin(values, origins):
    assert allowed_origins(values) == origins


@pytest.mark.parametrize("value, said", [
    ("*", "any web page could then change state here"), ("tb.lab.example", "not an origin"),
    ("http://tb.lab.example/proxy/6006/", "not an origin"), ("ftp://tb.lab.example", "not an origin"),
    ("http://tb.lab.example:99999", "not an origin"), ("null", "not an origin")])
def test_a_value_of_allow_origin_that_is_no_origin_is_refused_in_one_line(value, said):
    with pytest.raises(ValueError) as refused:
        allowed_origins([value])
    message = str(refused.value)
    assert message.startswith("--allow_origin ") and said in message and "\n" not in message, message


def test_a_cookie_of_an_old_token_is_told_to_open_the_printed_url_again():
    stale = "%s=%s" % (COOKIE, "0" * 64)
    status, _, reached = _served(_environ(HTTP_COOKIE=stale))
    assert status == "401 Unauthorized" and not reached


def test_each_server_names_its_cookie_after_its_port_or_its_socket():
    names = {cookie_name("6006"), cookie_name("6007"), cookie_name("/tmp/a/tb.sock"), cookie_name("/tmp/b/tb.sock")}
    assert len(names) == 4 and cookie_name("6006") == "mxboard-token-6006"
    assert cookie_name("/tmp/a/tb.sock") == cookie_name("/tmp/a/tb.sock")


@pytest.mark.parametrize("line, shown", [
    ('"GET /?token=Zq3v8-abc_D HTTP/1.1" 302 -', '"GET /?token=[redacted] HTTP/1.1" 302 -'),
    ('"GET /tb/data/runs?x=1&token=Zq3v8&y=2 HTTP/1.1" 200 -',
     '"GET /tb/data/runs?x=1&token=[redacted]&y=2 HTTP/1.1" 200 -'),
    ("code 400, message Bad request syntax ('GET /?TOKEN=Zq3v8 x y z')",
     "code 400, message Bad request syntax ('GET /?TOKEN=[redacted] x y z')"),
    ('"GET /data/runs HTTP/1.1" 200 -', '"GET /data/runs HTTP/1.1" 200 -')])
def test_a_log_line_shows_no_token(line, shown):
    assert redacted(line) == shown


def test_names_looked_up_are_all_there_for_a_request_that_comes_while_they_are_looked_up():
    """The first name not found starts the lookup of this machine's names (DNS, slow here): a
    second request at the same moment waits for them, and neither is refused (round 8 marked
    the names looked up before they were filled: the second got 403)."""
    started = threading.Event()

    def slow_lookup():
        started.set()
        time.sleep(0.3)
        return ["node7.cluster.example", "node7"]

    hosts = Hosts("127.0.0.1", lookup=slow_lookup)
    answers = {}

    def ask(key, header):
        answers[key] = header in hosts

    first = threading.Thread(target=ask, args=("first", "node7.cluster.example:6006"))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=ask, args=("second", "node7"))
    second.start()
    first.join(10)
    second.join(10)
    assert answers == {"first": True, "second": True}
    assert "evil.example.com" not in hosts


def test_without_a_token_only_the_names_are_checked():
    assert _served(_environ(), token=None)[2]
    assert not _served(_environ(HTTP_HOST="evil.example.com"), token=None)[2]
