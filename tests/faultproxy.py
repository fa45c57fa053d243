"""An HTTP proxy in front of a real object store (SeaweedFS, fake-gcs-server, Azurite:
tests/object_stores.py) that injects the faults of a hostile network: it forwards every request
as it is (the Host header kept, so signatures hold), and by `mode` it stops answering
mid-request, answers late, or answers 504 after the store performed a request. No mock: the
store behind it is real."""
import http.client
import http.server
import socket
import struct
import threading
import time
import urllib.parse

MODES = ("pass", "hang", "reset", "slow", "stall", "lost_ack", "refuse_presigned", "refuse_objects", "forbid")


class FaultProxy:
    """`FaultProxy(endpoint)` listens on 127.0.0.1 (`self.endpoint`). `mode`: 'pass' forwards;
    'hang' reads a request and never answers (nor says 100 Continue); 'reset' drops the
    connection with a TCP reset instead of answering (a store restarting); 'slow' answers `delay`
    seconds late; 'lost_ack' forwards an upload (a PUT, or a POST to GCS's /upload/), then answers
    504 (its answer lost), for the next `lose_next` uploads; 'refuse_presigned' answers 403 to
    presigned requests (a signature in the query), as a store that does not take them;
    'refuse_objects' answers 403 InvalidObjectState to a GET whose path holds `refused` (an
    object archived to Glacier), counted in `refusals`, and forwards the rest; 'stall' forwards,
    then sends the answer's headers and half its body and never the rest (an answer that stalls
    mid-body); 'forbid' answers every request 403, as a store that refuses the credentials (GCS's
    JSON error). In any mode, `rate` (bytes a second, None: unlimited) limits how fast request
    bodies are read (a slow uplink: the client's sends wait on TCP's window), and `wire_bytes`
    counts the request bodies' bytes read, those of requests cut short included. `puts` counts
    the uploads the store performed, `put_bytes` their bodies' bytes, `presigned` the presigned
    requests forwarded."""

    def __init__(self, upstream):
        self.upstream = urllib.parse.urlsplit(upstream).netloc
        self.mode, self.delay, self.lose_next, self.refused, self.refusals = "pass", 25.0, 0, "", 0
        self.puts = self.put_bytes = self.presigned = self.wire_bytes = 0
        self.rate = None
        self._link_free = 0.0  # when the link has carried what it was given
        self._lock = threading.Lock()
        self._released = threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                if proxy.rate:  # a small window: the client waits on this reader, not on a deep buffer
                    self.request.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 10)
                super().setup()

            def handle_expect_100(self):
                if proxy.mode == "reset":
                    self._reset()
                    return False
                if proxy.mode == "hang":
                    proxy._released.wait()  # the client waits for 100 Continue for ever
                    return False
                return super().handle_expect_100()

            def _reset(self):
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

            def _any(self):
                if proxy.mode == "reset":  # mid-request: the client may still be sending the body
                    self._reset()
                    return
                body = self._read_body()
                if proxy.mode == "hang":
                    proxy._released.wait()
                    self.close_connection = True
                    return
                if proxy.mode == "forbid":
                    refusal = (b'{"error": {"code": 403, "message": "The caller does not have storage.objects.list '
                               b'access.", "errors": [{"reason": "forbidden"}]}}')
                    self.send_response(403)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(refusal)))
                    self.end_headers()
                    self.wfile.write(refusal)
                    return
                if proxy.mode == "slow":
                    time.sleep(proxy.delay)
                if proxy.mode == "refuse_objects" and self.command == "GET" and proxy.refused \
                        and proxy.refused in urllib.parse.unquote(self.path.split("?")[0]):
                    with proxy._lock:
                        proxy.refusals += 1
                    refusal = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>InvalidObjectState</Code>"
                               b"<Message>The operation is not valid for the object's storage class</Message></Error>")
                    self.send_response(403)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(refusal)))
                    self.end_headers()
                    self.wfile.write(refusal)
                    return
                if proxy.mode == "refuse_presigned" and "X-Amz-Signature=" in self.path:
                    self.send_response(403)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status, headers, data = proxy._forward(self.command, self.path, self.headers, body)
                with proxy._lock:
                    proxy.presigned += "X-Amz-Signature=" in self.path
                upload = self.command == "PUT" or self.command == "POST" and self.path.startswith("/upload/")
                if upload and status < 300:
                    with proxy._lock:
                        proxy.puts += 1
                        proxy.put_bytes += len(body)
                        lost = proxy.mode == "lost_ack" and proxy.lose_next > 0
                        proxy.lose_next -= lost
                    if lost:
                        status, headers, data = 504, [], b"gateway timeout"
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                # a HEAD's Content-Length is the object's size, as the store said (no body follows)
                length = dict((n.lower(), v) for n, v in headers).get("content-length", "0")
                self.send_header("Content-Length", length if self.command == "HEAD" else str(len(data)))
                self.end_headers()
                if proxy.mode == "stall" and self.command != "HEAD" and len(data) > 1:
                    self.wfile.write(data[:len(data) // 2])
                    self.wfile.flush()
                    proxy._released.wait()  # the rest never comes
                    self.close_connection = True
                    return
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _read_body(self):
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        chunks.append(self._read(size))
                        self.rfile.readline()
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b""):
                                pass  # trailers
                            return b"".join(chunks)
                return self._read(int(self.headers.get("Content-Length") or 0))

            def _read(self, size):
                """`size` bytes of the body, counted as they come, every connection's together at
                most `rate` a second (one link); ConnectionAbortedError if the client gave up
                before the end (a store never performs a request whose body did not all come)."""
                chunks, got = [], 0
                while got < size:
                    chunk = self.rfile.read(min(size - got, 16 << 10))
                    if not chunk:
                        raise ConnectionAbortedError("the client gave up after %d of %d bytes" % (got, size))
                    chunks.append(chunk)
                    got += len(chunk)
                    proxy._carry(len(chunk))
                return b"".join(chunks)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _any  # noqa: N815 - http.server's names

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a client that gave up mid-request (a cut put) is no error of the proxy's

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = "http://127.0.0.1:%d" % self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def _carry(self, size):
        """`size` bytes crossed the link: counted, and, at `rate`, their time on it waited (the
        link is one, whatever the number of connections)."""
        with self._lock:
            self.wire_bytes += size
            rate = self.rate
            if not rate:
                return
            now = time.monotonic()
            self._link_free = max(self._link_free, now) + size / rate
            wait = self._link_free - now
        time.sleep(wait)

    def _forward(self, method, path, headers, body):
        connection = http.client.HTTPConnection(self.upstream, timeout=60)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers.items():
                if name.lower() not in ("expect", "transfer-encoding", "content-length", "connection"):
                    connection.putheader(name, value)
            connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def set(self, mode, **knobs):
        assert mode in MODES, mode
        for name, value in knobs.items():
            setattr(self, name, value)
        if self.mode in ("hang", "stall") and mode not in ("hang", "stall"):
            self._released.set()
        if mode in ("hang", "stall"):
            self._released.clear()
        self.mode = mode

    def close(self):
        self._released.set()
        self._server.shutdown()
        self._server.server_close()
