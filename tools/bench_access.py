"""The benchmark's access rows (tools/bench.py runs them; alone: python tools/bench_access.py):
what the server's token check costs, and how fast the server serves as it starts by default.

- the check alone: the guard (tensorboard_bundle/access.py) in front of a WSGI app that answers
  at once, for a request carrying the token in its Authorization header: microseconds a request
  (the best of 5 rounds of 20,000);
- a scalars request (/data/plugin/scalars/scalars, a tag of 1,000 points in a logdir of 10 runs)
  over HTTP, one kept-alive connection, the median of 300 after 30 to warm: the bundle as it
  starts by default (the token; its fast loader in a network namespace of its own, or
  TensorBoard's own loader where the kernel allows none: the row names which), with `--auth
  none`, with `--load_fast=false`, and upstream's launcher with its fast loader (whose port
  every local user reaches), the reference;
- the check over a scalars request (the target: at most 1%).
"""
import http.client
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS, POINTS = 10, 1_000
REQUESTS, WARM = 300, 30
TOKEN = secrets.token_urlsafe(32)
# The bundle's banner names its loader; upstream's launcher says only where it serves.
_BANNER = re.compile(r"TensorBoard \S+ at https?://[^:/]+:(\d+)/\S*(?: - data loader: (.+?) - logdir)?")


def make_logdir(directory):
    from mxboard import SummaryWriter

    for run in range(RUNS):
        with SummaryWriter(os.path.join(directory, "run%02d" % run)) as writer:
            for step in range(POINTS):
                writer.add_scalar("loss", 1.0 / (step + 1), step)
    return directory


def check_alone():
    """Microseconds of the guard for one request with the token, beside the app it guards."""
    from tensorboard_bundle.access import Guard, Hosts

    def app(environ, start_response):
        start_response("200 OK", [])
        return [b""]

    guard = Guard(app, TOKEN, Hosts("127.0.0.1"), "mxboard-token-6006")
    environ = {"REQUEST_METHOD": "GET", "HTTP_HOST": "127.0.0.1:6006", "PATH_INFO": "/data/plugin/scalars/scalars",
               "QUERY_STRING": "run=run00&tag=loss", "HTTP_AUTHORIZATION": "token " + TOKEN}

    def start(status, headers):
        return None

    rounds = 20_000
    guarded = min(timeit.repeat(lambda: guard(environ, start), number=rounds, repeat=5)) / rounds
    bare = min(timeit.repeat(lambda: app(environ, start), number=rounds, repeat=5)) / rounds
    return (guarded - bare) * 1e6


def scalars_request(command, logdir, token):
    """(median ms of a scalars request, the data loader the banner names) of a server started by
    `command` over `logdir`."""
    env = dict(os.environ, PYTHONSAFEPATH="1", MXBOARD_TOKEN=TOKEN)
    proc = subprocess.Popen(command + ["--logdir", logdir, "--port", "0", "--reload_interval", "1"],
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tempfile.gettempdir())
    try:
        port = loader = None
        deadline = time.monotonic() + 120
        for line in proc.stderr:
            match = _BANNER.search(line)
            if match:
                port, loader = int(match.group(1)), match.group(2) or "fast (its port open)"
                break
            if time.monotonic() > deadline:
                break
        if port is None:
            raise RuntimeError("the server did not start: %s" % command)
        headers = {"Authorization": "token " + TOKEN} if token else {}
        path = "/data/plugin/scalars/scalars?run=run00&tag=loss"
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

        def get():
            connection.request("GET", path, headers=headers)
            answer = connection.getresponse()
            body = answer.read()
            return answer.status, body

        while True:
            status, body = get()
            if status == 200 and body.count(b"],") >= POINTS - 1:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("not every point was served in time (%d)" % status)
            time.sleep(0.5)
        for _ in range(WARM):
            get()
        times = []
        for _ in range(REQUESTS):
            start = time.perf_counter()
            get()
            times.append(time.perf_counter() - start)
        connection.close()
        return statistics.median(times) * 1e3, loader
    finally:
        proc.terminate()
        proc.wait(30)
        proc.stderr.close()


def main(results=None):
    results = {} if results is None else results
    bundle = [sys.executable, "-m", "tensorboard_bundle"]
    upstream = [sys.executable, "-m", "tensorboard.main", "--host", "127.0.0.1"]
    with tempfile.TemporaryDirectory() as directory:
        logdir = make_logdir(os.path.join(directory, "logs"))
        rows = {}
        for name, command, token in (
                ("bundle, by default", bundle, True),
                ("bundle, --auth none", bundle + ["--auth", "none"], False),
                ("bundle, --load_fast=false", bundle + ["--load_fast=false"], True),
                ("upstream's launcher, fast loader", upstream + ["--load_fast=true"], False)):
            milliseconds, loader = scalars_request(command, logdir, token)
            rows[name] = {"ms": milliseconds, "loader": loader}
    check_us = check_alone()
    reference = rows["upstream's launcher, fast loader"]["ms"]
    for name, row in rows.items():
        print("%-44s %-34s %8.2f ms a scalars request (%d points), %.2f x upstream's fast loader" % (
            "serving: " + name, row["loader"][:34], row["ms"], POINTS, row["ms"] / reference))
    share = check_us / 1e3 / rows["bundle, by default"]["ms"]
    print("%-44s %-34s %8.2f us a request: %.2f%% of a scalars request (target <= 1%%)%s" % (
        "serving: the token check alone", "tensorboard_bundle.access", check_us, 100 * share,
        "" if share <= 0.01 else ": NOT met"))
    results.update(rows=rows, check_us=check_us, check_share=share)
    return results


if __name__ == "__main__":
    main()
