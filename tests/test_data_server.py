"""The fast loader's data server answers no one but the server's own user (issue 67, item 3;
tensorboard_bundle/data_server.py). Upstream's rustboard listens on a TCP port of 127.0.0.1 and
answers gRPC `ListRuns` without credentials, to every user of the machine: the control of the
first test shows it. The bundle runs it in a network namespace of its own, behind a Unix socket of
mode 0600. The checks look at every TCP port that any process of the server's tree listens on
(from /proc: each process's socket inodes and its own namespace's LISTEN rows), and ask each for
the runs, from this test's namespace and as another user (uid 65534, with `setpriv`).

Where the kernel makes no namespace (here: a user namespace whose limits of network and user
namespaces are 0, so that unshare(2) fails with ENOSPC, as it fails in a container that forbids
it), the server serves with TensorBoard's Python loader and says why in its banner; with
`--load_fast=true` it starts the data server on its port, and says that the port is open.
"""
import glob
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import BUNDLE, UPSTREAM, needs, served_losses
from mxboard import SummaryWriter

pytestmark = pytest.mark.slow

EXPECTED = [(step, step * 0.5) for step in range(30)]

# A user namespace where no namespace can be made: its limits of network and user namespaces set
# to 0 (each user namespace has its own, /proc/sys/user/*), and then the bundle, as its root.
NO_NAMESPACES = ["unshare", "--user", "--map-root-user", "sh", "-c",
                 'echo 0 > /proc/sys/user/max_net_namespaces && echo 0 > /proc/sys/user/max_user_namespaces '
                 '&& exec "$0" "$@"'] + BUNDLE
# Root without CAP_SYS_ADMIN (as in a container): a network namespace alone is refused, and the
# bundle makes a user namespace too, as it does for any user who is not root.
NO_SYS_ADMIN = ["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin"] + BUNDLE

REFUSED = ("data loader: Python (the data server could not start: no private network namespace here for its "
           "port (unshare: No space left on device), and a port of its own would be open to every user of this "
           "machine; --load_fast=true uses it anyway)")
OPEN_PORT = re.compile(r"note: the data server's port \(127\.0\.0\.1:(\d+)\) is open to every user of this machine: "
                       r"no private network namespace here for its port \(unshare: No space left on device\)\n")

# What another user runs: gRPC's ListRuns on each target, its request and its answer as bytes (this
# process decodes them); grpc is imported from a copy that user can read.
FOREIGN_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import grpc
for target in sys.argv[2:]:
    channel = grpc.insecure_channel(target, options=[("grpc.default_authority", "localhost")])
    try:
        answer = channel.unary_unary("/tensorboard.data.TensorBoardDataProvider/ListRuns")(b"", timeout=5)
        print(json.dumps({"target": target, "answer": answer.hex()}))
    except grpc.RpcError as exc:
        print(json.dumps({"target": target, "error": str(exc.code())}))
    channel.close()
"""


def _logdir(tmp_path):
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "train")) as writer:
        for step, value in EXPECTED:
            writer.add_scalar("loss", value, step)
    return logdir


def _tree(pid):
    """The pid and those of all its descendants (/proc/PID/task/*/children)."""
    pids, todo = [], [pid]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        for children in glob.glob("/proc/%d/task/*/children" % pid):
            try:
                with open(children) as f:
                    todo.extend(int(child) for child in f.read().split())
            # The task ended meanwhile.
            except OSError:
                pass
    return pids


def _socket_inodes(pid):
    inodes = set()
    for fd in glob.glob("/proc/%d/fd/*" % pid):
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[len("socket:["):-1]))
    return inodes


def _address(hex_address):
    """An address of /proc/net/tcp or tcp6 (32-bit words in the host's order), as gRPC's target
    writes it; the unspecified one as the loopback, where a connection to it lands."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    if len(raw) == 4:
        host = socket.inet_ntop(socket.AF_INET, words)
        return "127.0.0.1" if host == "0.0.0.0" else host
    host = socket.inet_ntop(socket.AF_INET6, words)
    return "[%s]" % ("::1" if host == "::" else host)


def _tcp_listening(pids):
    """'HOST:PORT' of every TCP socket that a process of `pids` listens on, each read in that
    process's own network namespace (/proc/PID/net/tcp, tcp6: state 0A is LISTEN)."""
    found = set()
    for pid in pids:
        inodes = _socket_inodes(pid)
        for table in ("tcp", "tcp6"):
            try:
                with open("/proc/%d/net/%s" % (pid, table)) as f:
                    rows = [line.split() for line in f.readlines()[1:]]
            except OSError:
                continue
            for row in rows:
                if row[3] == "0A" and int(row[9]) in inodes:
                    host, port = row[1].split(":")
                    found.add("%s:%d" % (_address(host), int(port, 16)))
    return found


def _unix_listening(pids):
    """The paths of the Unix sockets that a process of `pids` listens on (flag __SO_ACCEPTCON)."""
    found = set()
    for pid in pids:
        inodes = _socket_inodes(pid)
        try:
            with open("/proc/%d/net/unix" % pid) as f:
                rows = [line.split() for line in f.readlines()[1:]]
        except OSError:
            continue
        for row in rows:
            if len(row) == 8 and int(row[3], 16) & 0x10000 and int(row[6]) in inodes and row[7].startswith("/"):
                found.add(row[7])
    return found


def _runs(target):
    """The run names gRPC's ListRuns answers at `target`, without credentials, from this
    process's network namespace; None where it fails."""
    import grpc
    from tensorboard.data import grpc_provider
    from tensorboard.data.proto import data_provider_pb2

    channel = grpc.insecure_channel(target, options=[("grpc.default_authority", "localhost")])
    try:
        answer = grpc_provider.make_stub(channel).ListRuns(data_provider_pb2.ListRunsRequest(), timeout=5)
        return sorted(run.name for run in answer.runs)
    except grpc.RpcError:
        return None
    finally:
        channel.close()


@pytest.fixture(scope="module")
def foreign():
    """A function that asks each target for its runs as uid 65534 (`setpriv`), from a Python that
    user can run, with a copy of grpc it can read; {target: run names, or None where it failed}."""
    import grpc

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to ask as another user")
    as_nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    version = "%d.%d" % sys.version_info[:2]
    pythons = [sys.executable, os.path.realpath(sys.executable), "/usr/bin/python" + version,
               "/usr/local/bin/python" + version]
    python = next((p for p in pythons if subprocess.run(
        as_nobody + [p, "-I", "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True, text=True, cwd="/").stdout.strip() == version), None)
    if python is None:
        pytest.skip("uid 65534 can run no Python %s here" % version)
    copy = tempfile.mkdtemp(prefix="foreign-grpc-")
    os.chmod(copy, 0o755)
    shutil.copytree(os.path.dirname(grpc.__file__), os.path.join(copy, "grpc"))
    # What grpc imports beside the standard library (grpc.aio, where its version has it).
    for name in ("typing_extensions",):
        spec = importlib.util.find_spec(name)
        if spec and spec.origin:
            shutil.copy(spec.origin, copy)

    def ask(targets):
        done = subprocess.run(as_nobody + [python, "-I", "-S", "-c", FOREIGN_PROBE, copy] + sorted(targets),
                              capture_output=True, text=True, timeout=120, cwd="/")
        assert done.returncode == 0, done.stderr
        answers = {}
        for line in done.stdout.splitlines():
            answer = json.loads(line)
            answers[answer["target"]] = _decoded(answer.get("answer"))
        return answers

    yield ask
    shutil.rmtree(copy)


def _decoded(answer_hex):
    from tensorboard.data.proto import data_provider_pb2

    if answer_hex is None:
        return None
    return sorted(run.name for run in data_provider_pb2.ListRunsResponse.FromString(bytes.fromhex(answer_hex)).runs)


def _listening_runs(server):
    """{target: runs} of every TCP port of the server's tree, asked from here."""
    return {target: _runs(target) for target in _tcp_listening(_tree(server.proc.pid))}


def _data_server(server):
    """The psutil Process of the server's data server (rustboard), or None."""
    import psutil

    for pid in _tree(server.proc.pid):
        try:
            command = psutil.Process(pid).cmdline()
            # Its command line (the helper's holds it too, after the helper's own arguments).
            if command[1:2] and command[1].startswith("--logdir=") and "--die-after-stdin" in command:
                return psutil.Process(pid)
        except psutil.NoSuchProcess:
            pass
    return None


def _until_ended(processes, timeout=10):
    """The processes of `processes` still running (zombies count as ended) after at most `timeout` s."""
    import psutil

    deadline = time.monotonic() + timeout
    while True:
        running = []
        for process in processes:
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    running.append(process)
            except psutil.NoSuchProcess:
                pass
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.1)


def test_no_port_of_the_server_answers_list_runs_without_credentials(tmp_path, serve, foreign):
    """The done-when of issue 67's third item. The control first: upstream's launcher with the
    data server (--load_fast=true) answers ListRuns on its port, here and to another user."""
    logdir = _logdir(tmp_path)
    control = serve(logdir, "--load_fast=true", command=UPSTREAM)
    assert served_losses(control, "train", until=lambda rows: len(rows) == 30) == EXPECTED
    open_ports = {target for target, runs in _listening_runs(control).items() if runs == ["train"]}
    assert open_ports
    assert foreign(open_ports) == dict.fromkeys(open_ports, ["train"])
    control.close()

    # The bundle's default loader is in its process: the HTTP port is its one port, and answers
    # no ListRuns.
    default = serve(logdir)
    assert "data loader: mxboard (in-process)" in default.banner
    assert served_losses(default, "train", until=lambda rows: len(rows) == 30) == EXPECTED
    assert _tree(default.proc.pid) == [default.proc.pid]
    ports = _listening_runs(default)
    assert len(ports) == 1 and all(runs is None for runs in ports.values()), ports
    assert foreign(set(ports)) == dict.fromkeys(ports)
    assert not _unix_listening(_tree(default.proc.pid))
    default.close()

    server = serve(logdir, "--load_fast=auto")
    assert "data loader: fast (Rust data server)" in server.banner
    assert served_losses(server, "train", until=lambda rows: len(rows) == 30) == EXPECTED
    tree = _tree(server.proc.pid)
    ports = _listening_runs(server)
    assert all(runs is None for runs in ports.values()), ports
    sockets = {"unix:" + path for path in _unix_listening(tree)}
    assert foreign(set(ports) | sockets) == dict.fromkeys(set(ports) | sockets)
    # What was asked: the HTTP port, and the data server's in its own namespace (no connection from
    # here reaches it); its socket, which the owner reads (root, as this test).
    assert len(tree) == 3 and len(ports) == 2  # TensorBoard, the helper, the data server
    assert os.readlink("/proc/%d/ns/net" % _data_server(server).pid) != os.readlink("/proc/self/ns/net")
    (path,) = _unix_listening(tree)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert _runs("unix:" + path) == ["train"]


@pytest.mark.each_python
@needs("setpriv")
def test_a_user_namespace_where_a_network_namespace_alone_is_refused(tmp_path, serve):
    """Root without CAP_SYS_ADMIN may not make a network namespace alone; a user namespace of its
    own (its uid and gid mapped to themselves) with one is what any user gets. Each Python runs it:
    the helper calls unshare(2) through ctypes before 3.12, and copies without os.splice in 3.9."""
    if os.geteuid() != 0:
        pytest.skip("needs root to drop CAP_SYS_ADMIN")
    server = serve(_logdir(tmp_path), "--load_fast=auto", command=NO_SYS_ADMIN)
    assert "data loader: fast (Rust data server)" in server.banner
    assert served_losses(server, "train", until=lambda rows: len(rows) == 30) == EXPECTED
    data_server = _data_server(server)
    for kind in ("net", "user"):
        assert os.readlink("/proc/%d/ns/%s" % (data_server.pid, kind)) != os.readlink("/proc/self/ns/" + kind)
    assert all(runs is None for runs in _listening_runs(server).values())


@needs("unshare")
def test_without_a_namespace_the_python_loader_serves_and_forced_the_port_is_said_open(tmp_path, serve):
    """unshare(2) refused for real (ENOSPC: the namespace limits are 0). By default: the Python
    loader (where the Rust one is asked for: --load_fast=auto), no second port, the reason in the
    banner. With --load_fast=true: the data server on a
    TCP port, and one line that says so (and it is so: the port answers)."""
    if subprocess.run(["unshare", "--user", "--map-root-user", "true"], capture_output=True).returncode != 0:
        pytest.skip("no user namespace can be made here to set its namespace limits")
    logdir = _logdir(tmp_path)
    server = serve(logdir, "--load_fast=auto", command=NO_NAMESPACES)
    assert REFUSED in server.banner
    assert served_losses(server, "train", until=lambda rows: len(rows) == 30) == EXPECTED
    assert _tcp_listening(_tree(server.proc.pid)) == {server.url.split("//")[1].split("/")[0]}
    assert _data_server(server) is None

    forced = serve(logdir, "--load_fast=true", command=NO_NAMESPACES)
    assert "data loader: fast (Rust data server)" in forced.banner
    said = [OPEN_PORT.fullmatch(line) for line in forced.output if "is open to every user" in line]
    assert len(said) == 1 and said[0], forced.output
    assert served_losses(forced, "train", until=lambda rows: len(rows) == 30) == EXPECTED
    assert _runs("127.0.0.1:" + said[0].group(1)) == ["train"]


def test_nothing_is_left_when_the_server_is_killed(tmp_path, serve):
    """SIGKILL to TensorBoard: its pipe closes, the data server ends (--die-after-stdin), the
    helper with it, and the helper's directory (the socket) is removed."""
    import psutil

    server = serve(_logdir(tmp_path), "--load_fast=auto")
    assert served_losses(server, "train", until=lambda rows: len(rows) == 30) == EXPECTED
    tree = [psutil.Process(pid) for pid in _tree(server.proc.pid)]
    (path,) = _unix_listening(_tree(server.proc.pid))
    assert len(tree) == 3
    server.proc.kill()
    server.proc.wait(30)
    assert _until_ended(tree[1:]) == []
    assert not os.path.exists(os.path.dirname(path))


def test_the_python_loader_takes_over_when_the_data_server_dies(tmp_path, serve):
    """watchdog.py through the socket: the data server killed, the channel fails UNAVAILABLE,
    and the Python loader serves, said once; the helper has ended with the data server."""
    server = serve(_logdir(tmp_path), "--load_fast=auto")
    assert served_losses(server, "train", until=lambda rows: len(rows) == 30) == EXPECTED
    data_server = _data_server(server)
    helper = data_server.parent()
    assert "_helper" in " ".join(helper.cmdline())
    data_server.send_signal(signal.SIGKILL)
    assert served_losses(server, "train", until=lambda rows: len(rows) == 30) == EXPECTED
    assert "".join(server.output).count("the fast data loader stopped answering") == 1
    assert _until_ended([helper, data_server]) == []
    assert server.proc.poll() is None
