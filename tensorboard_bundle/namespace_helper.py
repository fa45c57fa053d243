"""The data server's helper (data_server.py starts it: `python -I -S`, the standard library only):
in a network namespace of its own (CLONE_NEWNET, or CLONE_NEWUSER|CLONE_NEWNET as a user) with its
loopback up, it starts the data server and forwards a Unix socket (mode 0600, in a directory of
mode 0700) to the data server's port there, until the data server ends; then it removes the
directory. Where no namespace can be made it exits REFUSED, the reason in words in a file."""
import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Optional, Sequence

__all__ = ["REFUSED", "START_SECS", "NoNamespaceError", "main", "read_small"]

# From <sched.h>: unshare(2)'s flags.
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
# From <linux/sockios.h> and <net/if.h>: read and set an interface's flags; the flag "up".
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
# struct ifreq: a 16-byte name, then a union of 24 bytes whose first member here is short flags.
IFREQ_BYTES = 40
# From <sys/prctl.h>: the signal a process gets when its parent ends.
PR_SET_PDEATHSIG = 1
# How long the data server may take to write its port file (upstream: 20 polls 0.5 s apart).
START_SECS = 10.0
# The most the forwarder moves at once, each direction of a connection (its pipe's size, where
# the kernel allows).
FORWARD_BUFFER_BYTES = 1 << 18
# From <fcntl.h>: set a pipe's size.
F_SETPIPE_SZ = 1031
# From <netinet/tcp.h> (Python names it on Linux only).
QUICKACK = getattr(socket, "TCP_QUICKACK", 12)
# The helper's exit status where the data server cannot be made private (the reason, in words, in
# the refusal file).
REFUSED = 75


class NoNamespaceError(Exception):
    """The data server cannot be made private here: the reason, in a few words."""


def read_small(path: str) -> str:
    """A small file's text, or "" where it does not exist (yet)."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def main(argv: Sequence[str]) -> None:
    """`python -I -S -c _HELPER_CODE ROOT SOCKET PORT_FILE REFUSAL_FILE -- DATA_SERVER ARGS...`:
    makes a network namespace, brings up its loopback, starts the data server (its stdin is this
    process's: TensorBoard's pipe) and forwards SOCKET to its port until it ends; then exits with
    its status, the directory removed. Without a namespace: exits REFUSED, the reason in REFUSAL_FILE."""
    socket_path, port_file, refusal_file, command = argv[0], argv[1], argv[2], list(argv[4:])
    # A Ctrl-C reaches the whole process group: the data server ends of it, and this process then.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _private_network()
    except NoNamespaceError as exc:
        _refuse(refusal_file, str(exc))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # The socket is the user's alone from the moment it exists (and its directory is 0700).
    umask = os.umask(0o177)
    try:
        listener.bind(socket_path)
    except OSError as exc:
        _refuse(refusal_file, "no Unix socket for its port at %s (%s)" % (socket_path, exc.strerror or exc))
    finally:
        os.umask(umask)
    listener.listen(64)
    server = subprocess.Popen(command, preexec_fn=_ends_with_parent)
    port = _helper_port(server, port_file)
    if port is not None:
        threading.Thread(target=_accept, args=(listener, port), name="accept", daemon=True).start()
    status = server.wait()
    listener.close()
    # The parent reads the error file of a server that never served: only a served one's is removed.
    if port is not None:
        shutil.rmtree(os.path.dirname(socket_path), ignore_errors=True)
    os._exit(status if status >= 0 else 128 - status)


def _refuse(refusal_file: str, reason: str) -> None:
    """Ends the helper, the reason (in words) where the parent reads it."""
    with open(refusal_file, "w") as f:
        f.write(reason)
    sys.exit(REFUSED)


def _private_network() -> None:
    """Moves this process into a network namespace of its own, its loopback up: as root (with
    CAP_SYS_ADMIN) a network namespace alone; else in a user namespace of its own too, where the
    user's uid and gid map to themselves. Raises NoNamespaceError, the reason in words, where
    the kernel refuses."""
    uid, gid = os.geteuid(), os.getegid()
    step = "unshare"
    try:
        try:
            _unshare(CLONE_NEWNET)
        except OSError as exc:
            if exc.errno != errno.EPERM:
                raise
            _unshare(CLONE_NEWUSER | CLONE_NEWNET)
            for step, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (uid, uid)),
                               ("gid_map", "%d %d 1" % (gid, gid))):
                with open("/proc/self/" + step, "w") as f:
                    f.write(text)
        step = "lo up"
        _loopback_up()
    except OSError as exc:
        raise NoNamespaceError("no private network namespace here for its port (%s: %s)"
                                % (step, exc.strerror or exc)) from exc


def _unshare(flags: int) -> None:
    """unshare(2): os.unshare from Python 3.12, libc's before."""
    if hasattr(os, "unshare"):
        os.unshare(flags)
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "unshare"):
        raise OSError(errno.ENOSYS, "this C library has no unshare")
    if libc.unshare(flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def _loopback_up() -> None:
    """Sets the flag "up" of the namespace's `lo` (a new namespace's loopback is down: nothing
    could connect to 127.0.0.1), as `ip link set lo up` does."""
    import fcntl
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh", b"lo", 0).ljust(IFREQ_BYTES, b"\0")
        flags = struct.unpack_from("16sh", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP).ljust(IFREQ_BYTES, b"\0"))


def _ends_with_parent() -> None:
    """In the data server's process before its exec: it is killed if the helper ends first
    (killed itself), and it ends on a Ctrl-C as upstream's does."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _helper_port(server: "subprocess.Popen[bytes]", port_file: str) -> Optional[int]:
    """The data server's port, once its port file is written; None where it ends first or takes
    longer than START_SECS (the parent then gives up on it, and ends this process)."""
    deadline = time.monotonic() + START_SECS
    while server.poll() is None and time.monotonic() < deadline:
        text = read_small(port_file)
        if text.endswith("\n"):
            return int(text)
        time.sleep(0.005)
    return None


def _accept(listener: socket.socket, port: int) -> None:
    """Forwards each connection to the Unix socket to the data server's port, in threads of its
    own (gRPC keeps one connection a channel)."""
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_forward, args=(client, port), name="forward", daemon=True).start()


def _forward(client: socket.socket, port: int) -> None:
    """Copies bytes both ways between `client` and a new connection to the data server. The data
    server binds the first address `localhost` gives (127.0.0.1 or ::1), and this tries both."""
    try:
        server = _connect(port)
    except OSError:
        client.close()
        return
    server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    back = threading.Thread(target=_pump, args=(server, client), name="forward-back", daemon=True)
    back.start()
    _pump(client, server)
    back.join()
    client.close()
    server.close()


def _connect(port: int) -> socket.socket:
    try:
        return socket.create_connection(("127.0.0.1", port))
    except ConnectionRefusedError:
        return socket.create_connection(("::1", port))


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copies what `source` sends to `sink` until it ends (then `sink` is told so) or fails (then
    both are shut, and the other direction ends too). With os.splice (Python 3.10 on Linux), the
    bytes go through a pipe in the kernel, never copied into this process."""
    try:
        if hasattr(os, "splice"):
            _spliced(source, sink)
        else:
            _copied(source, sink)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _acked_at_once(source: socket.socket) -> None:
    """What the data server sends is acknowledged at once (TCP_QUICKACK, which each read resets):
    it sets no TCP_NODELAY on the connections it accepts, and a delayed acknowledgement held its
    answers back 40 ms (upstream's gRPC channel meets that stall too)."""
    if source.family != socket.AF_UNIX:
        source.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1)


def _spliced(source: socket.socket, sink: socket.socket) -> None:
    import fcntl

    read_end, write_end = os.pipe()
    try:
        try:
            fcntl.fcntl(write_end, F_SETPIPE_SZ, FORWARD_BUFFER_BYTES)
        # Past the user's limit of pipe memory: the default size (64 KiB) moves it too.
        except OSError:
            pass
        while True:
            _acked_at_once(source)
            count = os.splice(source.fileno(), write_end, FORWARD_BUFFER_BYTES)
            if not count:
                return
            while count:
                count -= os.splice(read_end, sink.fileno(), count)
    finally:
        os.close(read_end)
        os.close(write_end)


def _copied(source: socket.socket, sink: socket.socket) -> None:
    buffer = bytearray(FORWARD_BUFFER_BYTES)
    view = memoryview(buffer)
    while True:
        _acked_at_once(source)
        count = source.recv_into(buffer)
        if not count:
            return
        sink.sendall(view[:count])
