"""The guard in front of TensorBoard's app (tensorboard_bundle/access.py), in process, over
requests that Hypothesis makes: the app is reached only with the token (the header or the cookie
the token was traded for), at a name the server answers to; nothing else gets past it. The real
server over HTTP is tests/test_access.py's."""
import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorboard_bundle.access import Guard, Hosts

TOKEN = "Zq3v8-tokenOfTheServer_0123456789abcdefghijk"
COOKIE = "mxboard-token-6006"


def _served(environ, token=TOKEN, hosts=None):
    """(status, headers, whether TensorBoard's app was reached) for one request."""
    reached = []

    def app(environ, start_response):
        reached.append(True)
        start_response("200 OK", [])
        return [b"runs"]

    answer = {}

    def start_response(status, headers):
        answer.update(status=status, headers=dict(headers))

    body = b"".join(Guard(app, token, Hosts("127.0.0.1") if hosts is None else hosts, COOKIE)(environ, start_response))
    assert body == b"runs" if reached else b"runs" not in body
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
    assert {"Path=/", "HttpOnly", "SameSite=Strict"} <= set(attributes[1:])


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


def test_without_a_token_only_the_names_are_checked():
    assert _served(_environ(), token=None)[2]
    assert not _served(_environ(HTTP_HOST="evil.example.com"), token=None)[2]
