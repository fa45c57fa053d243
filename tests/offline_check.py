"""Run inside a network namespace with no network (`unshare -n`): bring loopback up, prove there
is no other route, log a run with mxboard, serve it with the bundled `tensorboard` given on the
command line, read it back over the HTTP API and screenshot the scalars dashboard with headless
Chromium, which opens the printed URL (its token then in a cookie). Prints a JSON report on its
last line.

    unshare -n PYTHON tests/offline_check.py "TENSORBOARD COMMAND" WORKDIR
"""
import json
import os
import shlex
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np

import mxboard

# served.py, beside this file (a script run with PYTHONSAFEPATH has no directory of its own on sys.path)
sys.path.append(os.path.dirname(os.path.abspath(__file__)))
from served import authorized, banner_url, with_token


def main():
    tensorboard, work = sys.argv[1], sys.argv[2]
    report = {"mxboard": mxboard.__file__}
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    try:
        socket.create_connection(("192.0.2.1", 443), timeout=3)  # TEST-NET-1: never routable
        report["network"] = "reachable"
    except OSError as exc:
        report["network"] = "unreachable: %s" % exc.__class__.__name__
    logdir = os.path.join(work, "logs")
    with mxboard.SummaryWriter(logdir) as w:
        for step in range(50):
            w.add_scalar("loss", np.exp(-step / 10.0), step)
            w.add_histogram("weights", np.random.default_rng(step).normal(size=500), step)
        w.add_image("digits", np.random.default_rng(0).random((4, 1, 8, 8)), 49)
        w.add_text("config", "offline run", 49)
        w.add_embedding("points", np.random.default_rng(1).random((8, 3)), labels=list("abcdefgh"))
    args = shlex.split(tensorboard) + ["--logdir", logdir, "--port", "6006", "--reload_interval", "1"]
    server = subprocess.Popen(args,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              cwd=work, env=dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache")))
    try:
        # upstream's `tensorboard` command prints its TensorFlow notice before it hands over
        report["banner"] = next(line for line in server.stdout if banner_url(line)).strip()
        base, token = banner_url(report["banner"])

        def get(path, until=lambda d: True):
            deadline = time.monotonic() + 30
            while True:
                try:
                    with urllib.request.urlopen(authorized(base + path, token), timeout=10) as r:
                        data = json.loads(r.read())
                    if until(data) or time.monotonic() > deadline:
                        return data
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                time.sleep(0.25)

        report["scalars"] = len(get("/data/plugin/scalars/scalars?run=.&tag=loss", lambda d: len(d) == 50))
        report["histograms"] = len(get("/data/plugin/histograms/histograms?run=.&tag=weights", lambda d: len(d) == 50))
        report["images"] = len(get("/data/plugin/images/images?run=.&tag=digits"))
        report["text"] = get("/data/plugin/text/text?run=.&tag=config")[0]["text"]
        report["projector"] = [e["tensorName"] for e in get("/data/plugin/projector/info?run=.")["embeddings"]]
        shot = os.path.join(work, "scalars.png")
        chrome = subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", "--user-data-dir=" + os.path.join(work, "chrome"), "--window-size=1200,900",
             "--virtual-time-budget=20000", "--screenshot=" + shot, with_token(base + "/#scalars", token)],
            capture_output=True, text=True, timeout=120)
        report["screenshot"] = shot if os.path.exists(shot) else chrome.stderr[-2000:]
    finally:
        server.terminate()
        server.wait(10)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
