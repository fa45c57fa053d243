"""The fast loader's data server (rustboard), started so that no other user of the machine can read
from it. Upstream starts it on a TCP port of 127.0.0.1 that answers gRPC without credentials. Here
a helper process (namespace_helper.py, a bare Python) moves into a network namespace of its own,
starts the data server there and forwards a Unix socket (mode 0600, in a directory of mode 0700)
to its port: TensorBoard's gRPC channel connects to that socket. Where no namespace can be made,
`--load_fast=auto` gets DataServerStartupError, and so TensorBoard's Python loader;
`--load_fast=true` (or a gs:// logdir the data server reads itself, which nothing else reads)
starts it upstream's way, and says that its port is open. The data server ends with TensorBoard
(its stdin, as upstream's), the helper with the data server."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any, List, Optional

from tensorboard_bundle.namespace_helper import REFUSED, START_SECS, NoNamespaceError, read_small

__all__ = ["start_ingester", "DataServerIngester"]

# The longest path of a Unix socket (sun_path holds 108 bytes, its last a NUL).
SOCKET_PATH_BYTES = 107

# The helper's command line: it imports its module from the place this process imported it from
# (a site directory or a zip), whatever the working directory and the environment say.
_HELPER_CODE = ("import sys; sys.path.insert(0, sys.argv[1]); "
                "from tensorboard_bundle.namespace_helper import main; main(sys.argv[2:])")


class DataServerIngester:
    """A started data server and the gRPC data provider that reads from it (the contract of
    TensorBoard's `ingester.DataIngester`). It keeps the pipe of the data server's stdin: the
    server ends when this process ends and the pipe closes."""

    def __init__(self, data_provider: Any, address: str, stdin: Optional[IO[bytes]]) -> None:
        self._data_provider, self._stdin = data_provider, stdin
        # Where the channel connects: unix:PATH, or localhost:PORT.
        self.address = address

    @property
    def data_provider(self) -> Any:
        return self._data_provider

    def start(self) -> None:
        """Nothing to do: `start_ingester` gives it started."""


def start_ingester(program_self: Any) -> DataServerIngester:
    """What TensorBoard's `_start_subprocess_data_ingester` does, privately: the data server for
    `program_self.flags`, started and answering. Raises server_ingester's NoDataServerError (no
    binary) or DataServerStartupError (it did not start, or could not be made private with
    --load_fast=auto: the message says why, as the banner's reason)."""
    import shlex

    from tensorboard.data import server_ingester

    flags = program_self.flags
    binary = server_ingester.get_server_binary()
    directory = _private_directory()
    # The helper removes it once it has served; this is for the other ends.
    atexit.register(shutil.rmtree, directory, True)
    command = _data_server_command(binary, flags, directory, shlex.split(flags.extra_data_server_flags or ""))
    logdir = flags.logdir or ""
    why_not = _why_not_private(logdir)
    if why_not is None:
        try:
            return _started(command, directory, flags.grpc_creds_type, private=True)
        except NoNamespaceError as exc:
            why_not = str(exc)
    # A logdir that only the data server reads (gs:// without gcsfs: no mirror, and TensorBoard's
    # Python loader cannot read it either) is served, its port said to be open.
    if flags.load_fast != "true" and "://" not in logdir:
        shutil.rmtree(directory, ignore_errors=True)
        raise server_ingester.DataServerStartupError(
            "%s, and a port of its own would be open to every user of this machine; --load_fast=true uses it anyway"
            % why_not)
    ingester = _started(command, directory, flags.grpc_creds_type, private=False)
    sys.stderr.write("note: the data server's port (%s) is open to every user of this machine: %s\n"
                     % (ingester.address.replace("localhost", "127.0.0.1"), why_not))
    sys.stderr.flush()
    return ingester


def _private_directory() -> str:
    """A new directory of mode 0700 for the port file, the error file and the socket; in /tmp
    where the temporary directory's path is too long for a socket's."""
    directory = tempfile.mkdtemp(prefix="tensorboard_data_server_")
    if len(os.path.join(directory, "socket").encode()) > SOCKET_PATH_BYTES and os.path.isdir("/tmp"):
        os.rmdir(directory)
        directory = tempfile.mkdtemp(prefix="tensorboard_data_server_", dir="/tmp")
    return directory


def _why_not_private(logdir: str) -> Optional[str]:
    """Why the data server cannot run without a network (a logdir it reads over the network
    itself), or None."""
    if "://" in logdir:
        return ("it reads %s over the network itself, which a private network namespace has none of (gcsfs, "
                "mxboard[gcs], serves gs:// from a private mirror)" % logdir)
    if not sys.platform.startswith("linux"):
        return "no private network namespace here for its port (%s has none)" % sys.platform
    return None


def _data_server_command(binary: Any, flags: Any, directory: str, extra: List[str]) -> List[str]:
    """The data server's command line, as upstream's SubprocessServerDataIngester makes it, its
    port file and error file in `directory`."""
    import logging

    from tensorboard.util import tb_logging

    logger = tb_logging.get_logger()
    reload = "once" if flags.reload_interval <= 0 else str(int(flags.reload_interval))
    samples = ",".join("%s=%s" % (k, "all" if v == 0 else v) for k, v in (flags.samples_per_plugin or {}).items())
    command = [binary.path, "--logdir=%s" % os.path.expanduser(flags.logdir or ""), "--reload=%s" % reload,
               "--samples-per-plugin=%s" % samples, "--port=0",
               "--port-file=%s" % os.path.join(directory, "port"), "--die-after-stdin"]
    if binary.at_least_version("0.5.0a0"):
        command.append("--error-file=%s" % os.path.join(directory, "startup_error"))
    if logger.isEnabledFor(logging.INFO):
        command.append("--verbose")
    if logger.isEnabledFor(logging.DEBUG):
        command.append("--verbose")
    return command + extra


def _started(command: List[str], directory: str, creds_type: Any, private: bool) -> DataServerIngester:
    """The data server started (behind the helper where `private`), its port file polled, its
    error file read and its GetExperiment answered, as upstream checks it. Raises NoNamespaceError
    where the helper could make no namespace, DataServerStartupError where the server failed."""
    import grpc
    from tensorboard.data import grpc_provider, server_ingester
    from tensorboard.data.proto import data_provider_pb2

    port_file, socket_path = os.path.join(directory, "port"), os.path.join(directory, "socket")
    refusal_file = os.path.join(directory, "refused")
    if private:
        if not sys.executable:
            raise NoNamespaceError("no Python interpreter to run its helper")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        command = [sys.executable, "-I", "-S", "-c", _HELPER_CODE, root, socket_path, port_file, refusal_file,
                   "--"] + command
    process = subprocess.Popen(command, stdin=subprocess.PIPE)
    try:
        _wait_for_port(process, directory)
    except NoNamespaceError:
        _stop(process)
        raise
    except server_ingester.DataServerStartupError:
        _stop(process)
        shutil.rmtree(directory, ignore_errors=True)
        raise
    if private:
        address = "unix:" + socket_path
        creds, options = creds_type.channel_config()
        # Local credentials over a Unix socket: the channel is the user's own socket file.
        if creds_type.value == "local":
            creds = grpc.local_channel_credentials(grpc.LocalConnectionType.UDS)
        # gRPC's authority for a socket is its path, which the data server's HTTP/2 refuses.
        options.append(("grpc.default_authority", "localhost"))
    else:
        address = "localhost:%s" % read_small(port_file).strip()
        creds, options = creds_type.channel_config()
    options.append(("grpc.max_receive_message_length", 1024 * 1024 * 256))
    stub = grpc_provider.make_stub(grpc.secure_channel(address, creds, options=options))
    try:
        stub.GetExperiment(data_provider_pb2.GetExperimentRequest(), timeout=5)
    except grpc.RpcError as exc:
        _stop(process)
        raise server_ingester.DataServerStartupError(
            "Failed to communicate with data server at %s: %s" % (address, exc)) from exc
    # The process is waited for when it ends (the data server died): no zombie is left under TensorBoard.
    threading.Thread(target=process.wait, name="data-server-wait", daemon=True).start()
    return DataServerIngester(grpc_provider.GrpcDataProvider(address, stub), address, process.stdin)


def _wait_for_port(process: "subprocess.Popen[bytes]", directory: str) -> None:
    """Returns once the data server has written its port file; raises what upstream raises
    where it ends first (the message of its error file) or takes longer than START_SECS."""
    from tensorboard.data.server_ingester import DataServerStartupError

    deadline = time.monotonic() + START_SECS
    pause = 0.005
    while True:
        if process.poll() is not None:
            refused = read_small(os.path.join(directory, "refused")).strip()
            if process.returncode == REFUSED and refused:
                raise NoNamespaceError(refused)
            message = read_small(os.path.join(directory, "startup_error")).strip()
            raise DataServerStartupError(message or "exited with %d; check stderr for details" % process.returncode)
        if read_small(os.path.join(directory, "port")).endswith("\n"):
            return
        if time.monotonic() > deadline:
            raise DataServerStartupError("Timed out while waiting for data server to start (%d s)" % START_SECS)
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


def _stop(process: "subprocess.Popen[bytes]") -> None:
    """Ends a data server (or its helper, whose end ends the server) that will not serve."""
    if process.poll() is None:
        process.kill()
    process.wait()
    if process.stdin:
        process.stdin.close()
