"""Screenshots of TensorBoard's dashboards over the demo's run, taken by headless Chromium from
the bundled server, for the README (docs/*.png, reduced to a small palette).

    python tools/screenshots.py [--logdir runs/demo] [--out docs]
"""
import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.request

from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the README's (text, audio and mesh can be taken by name)
DASHBOARDS = ["scalars", "custom_scalars", "images", "graphs", "distributions", "histograms",
              "pr_curves", "projector", "hparams"]
CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", "--window-size=1280,800"]


def screenshot(url, path, wait_ms=15000):
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(CHROMIUM + ["--user-data-dir=" + profile, "--virtual-time-budget=%d" % wait_ms,
                                   "--screenshot=" + path, url], check=True, capture_output=True, timeout=180)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", default=os.path.join(ROOT, "runs", "demo"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs"))
    parser.add_argument("--port", type=int, default=6123)
    parser.add_argument("dashboards", nargs="*", default=DASHBOARDS)
    args = parser.parse_args()
    if not os.path.isdir(args.logdir):
        subprocess.run([sys.executable, "-m", "mxboard.demo", "--logdir", args.logdir, "--no-serve"], check=True)
    # The server answers only with its token: it is given one (MXBOARD_TOKEN), which this process
    # sends, and Chromium opens the URL with the token in it, as a user opens the printed one.
    token = secrets.token_urlsafe(32)
    server = subprocess.Popen([sys.executable, "-m", "tensorboard_bundle", "--logdir", args.logdir,
                               "--port", str(args.port)], stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, MXBOARD_TOKEN=token))
    try:
        print(server.stderr.readline().strip())
        url = "http://127.0.0.1:%d" % args.port
        tags = urllib.request.Request(url + "/data/plugin/scalars/tags", headers={"Authorization": "token " + token})
        for _ in range(100):  # until the run is loaded: its last tags are there
            with urllib.request.urlopen(tags) as response:
                if b"/loss/validation" in response.read():  # the sub-run of the last scalars
                    break
            time.sleep(0.2)
        os.makedirs(args.out, exist_ok=True)
        for dashboard in args.dashboards:
            path = os.path.join(args.out, dashboard + ".png")
            screenshot("%s/?token=%s#%s" % (url, token, dashboard), path)
            Image.open(path).convert("RGB").quantize(64).save(path, optimize=True)
            print(path, os.path.getsize(path))
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
