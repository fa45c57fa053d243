"""Headless Chromium, driven over the DevTools protocol through --remote-debugging-pipe: JSON
messages, each ended by a NUL byte, written to Chromium's fd 3 and read from its fd 4. No package
beyond the standard library. `navigate` returns every response a page received (the redirects
too), until its network has been quiet for a while (and what a test awaits has come); every wait
is bounded, and a wait that runs out raises BrowserError with what was seen. Free of pytest."""
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import NamedTuple

# The flags of tests/test_summaries.py's Chromium: no network of its own (updates, sync, QUIC).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-device-scale-factor=1", "--window-size=1280,900"]


class Response(NamedTuple):
    """One HTTP answer a page received: a redirect's as well as a final one's."""

    url: str
    status: int
    mime_type: str


class BrowserError(AssertionError):
    pass


class Browser:
    """One headless Chromium with a fresh profile (its cookies its own) and one page in it.
    `close()` ends it, bounded; `with Browser() as browser:` closes it too."""

    def __init__(self, ignore_certificate_errors=False, seconds=60):
        self._profile = tempfile.mkdtemp(prefix="mxboard-chromium-")
        flags = FLAGS + ["--user-data-dir=" + self._profile, "--remote-debugging-pipe"]
        if ignore_certificate_errors:
            flags.append("--ignore-certificate-errors")
        # Chromium reads commands on its fd 3 and writes answers on its fd 4. Popen places a pipe
        # at a child's fd 0 or 1 only: a shell moves the two ends from there to 3 and 4.
        commands_read, self._commands = os.pipe()
        self._answers, answers_write = os.pipe()
        # Chromium's own messages, read only to say why it ended (a pipe unread could fill).
        self._stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                ["sh", "-c", 'exec "$@" 3<&0 4>&1 </dev/null >/dev/null', "sh", "chromium"] + flags,
                stdin=commands_read, stdout=answers_write, stderr=self._stderr)
        finally:
            os.close(commands_read)
            os.close(answers_write)
        os.set_blocking(self._answers, False)
        os.set_blocking(self._commands, False)
        self._buffer = b""
        self._events = []
        self._next_id = 0
        try:
            target = self._call("Target.createTarget", {"url": "about:blank"}, seconds=seconds)["targetId"]
            self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                       seconds=seconds)["sessionId"]
            self._call("Network.enable", session=True)
            self._call("Page.enable", session=True)
            # A worker's script is asked for by the page and answered to the worker: the page's
            # session sees it start and never end. Each worker is attached as it starts, its
            # network watched too.
            self._call("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": False,
                                                "flatten": True}, session=True)
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def navigate(self, url, settle_seconds=1.0, until=None, seconds=60):
        """Open `url` in the page and return every Response it received: the document's (and
        each redirect before it), then everything its scripts asked for, until no request has
        been open for `settle_seconds` after the page's load event, and `until(responses)`
        holds where it is given (what a page asks for once its scripts have run, on a busy
        machine late). More than `seconds` in all raises BrowserError, naming what was seen."""
        # What came after the last page was done is forgotten, but for a worker that started then
        # (its network is watched from here on).
        self._events = [m for m in self._events if m.get("method") == "Target.attachedToTarget"]
        deadline = time.monotonic() + seconds
        answer = self._call("Page.navigate", {"url": url}, session=True, seconds=seconds)
        if answer.get("errorText"):
            raise BrowserError("%s did not open: %s" % (url, answer["errorText"]))
        # A URL that differs from the page's in its fragment alone opens no document (no loaderId):
        # the page's scripts see a hash change, and no load event comes.
        return self._responses_until_quiet(settle_seconds, deadline, url, loaded="loaderId" not in answer,
                                           until=until)

    def cookies(self):
        """The cookies the page's URL would send (Network.getCookies), HttpOnly ones too."""
        return self._call("Network.getCookies", session=True)["cookies"]

    def evaluate(self, expression, seconds=30):
        """The value of a JavaScript `expression` in the page (a JSON value: a string, a number,
        a list...); an exception it raises is a BrowserError."""
        result = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                            session=True, seconds=seconds)
        if "exceptionDetails" in result:
            raise BrowserError("%s raised %s" % (expression, result["exceptionDetails"]))
        return result["result"].get("value")

    def close(self, seconds=10):
        """End Chromium (asked, then killed after `seconds`), close the pipes, remove the profile."""
        if self.proc.poll() is None:
            try:
                self._send("Browser.close", {})
            except (OSError, BrowserError):
                pass
            try:
                self.proc.wait(seconds)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(seconds)
        for fd in (self._commands, self._answers):
            try:
                os.close(fd)
            except OSError:
                pass
        self._commands = self._answers = -1
        self._stderr.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def _responses_until_quiet(self, settle_seconds, deadline, url, loaded, until):
        responses, open_requests = [], {}
        quiet_since = time.monotonic()
        while True:
            for message in self._take_events():
                method, params = message.get("method"), message.get("params", {})
                if method == "Target.attachedToTarget":
                    self._send("Network.enable", {}, params["sessionId"])
                elif method == "Network.requestWillBeSent":
                    if "redirectResponse" in params:
                        responses.append(_response(params["redirectResponse"]))
                    open_requests[params["requestId"]] = params["request"]["url"]
                elif method == "Network.responseReceived":
                    responses.append(_response(params["response"]))
                elif method in ("Network.loadingFinished", "Network.loadingFailed"):
                    open_requests.pop(params["requestId"], None)
                elif method == "Page.loadEventFired":
                    loaded = True
                else:
                    continue
                quiet_since = time.monotonic()
            now = time.monotonic()
            quiet = loaded and not open_requests and now - quiet_since >= settle_seconds
            if quiet and (until is None or until(responses)):
                return responses
            if now > deadline:
                raise BrowserError("%s: %s in time (%s); open: %s; seen: %s" % (
                    url, "what was awaited did not come" if quiet else "the network was not quiet",
                    "loaded" if loaded else "no load event", sorted(open_requests.values()), responses))
            # Only a message can change what is awaited, except the quiet time running out.
            settling = loaded and not open_requests and not quiet
            self._read(min(deadline, quiet_since + settle_seconds if settling else deadline) - now)

    def _take_events(self):
        taken, self._events = self._events, []
        return taken

    def _call(self, method, params=None, session=None, seconds=30):
        """Send one command and return its result; the events that come before it are kept."""
        sent = self._send(method, params or {}, session)
        deadline = time.monotonic() + seconds
        while True:
            for index, message in enumerate(self._events):
                if message.get("id") == sent:
                    del self._events[index]
                    if "error" in message:
                        raise BrowserError("%s: %s" % (method, message["error"]))
                    return message["result"]
            if time.monotonic() > deadline:
                raise BrowserError("Chromium did not answer %s within %d s" % (method, seconds))
            self._read(deadline - time.monotonic())

    def _send(self, method, params, session=None):
        """Send one command (to the browser, or to the session named, True: the page's); its id."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session if session is True else session
        data = json.dumps(message).encode() + b"\0"
        # A command is short: the pipe (64 KiB) takes it whole, unless Chromium has stopped reading.
        try:
            written = os.write(self._commands, data)
        except BlockingIOError:
            written = 0
        if written != len(data):
            raise BrowserError("Chromium reads no more commands (%s not sent)" % method)
        return self._next_id

    def _read(self, seconds):
        """Wait up to `seconds` for Chromium's messages and keep each one whole."""
        ready, _, _ = select.select([self._answers], [], [], max(0.0, seconds))
        if not ready:
            return
        chunk = os.read(self._answers, 1 << 20)
        if not chunk:
            self._stderr.seek(0)
            raise BrowserError("Chromium ended (status %s): %s" % (
                self.proc.wait(10), self._stderr.read()[-2000:].decode(errors="replace")))
        *messages, self._buffer = (self._buffer + chunk).split(b"\0")
        self._events.extend(json.loads(message) for message in messages)


def _response(answer):
    return Response(answer["url"], answer["status"], answer.get("mimeType", ""))

