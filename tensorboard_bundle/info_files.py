"""TensorBoard's info files (which `tensorboard.notebook.list()` and `%tensorboard` read): kept
where only their user can touch them, one for each server even across containers that share the
temporary directory, holding the server's token for the notebook, and removed only where their
writer is provably gone, across PID namespaces too.

Upstream keeps them in `<tempdir>/.tensorboard-info`, mode 0777 without the sticky bit: any user
of the machine may delete, replace or plant a file there, and a planted one points the notebook at
a port of the planter's choosing. The bundle's live in `<tempdir>/.tensorboard-info-<uid>`, mode
0700 (`info_dir`); `install` points `tensorboard.manager` there, in every process of the
environment that imports it (the wheel's .pth file, tensorboard_bundle/notebook.py) and in the
launcher (`record_writer`)."""
import json
import os
import re
import stat
import sys
import tempfile
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Set

from tensorboard_bundle import upstream

__all__ = ["forget_dead_servers", "info_dir", "install", "record_writer", "token_for"]

# Our keys in the info file's JSON: upstream's reader ignores unknown keys.
KEY = "mxboard_writer"
TOKEN_KEY = "mxboard_token"
# The kernel's inode of the initial PID namespace (PROC_PID_INIT_INO).
INITIAL_PID_NAMESPACE = 0xEFFFFFFC
# An info file is about 400 bytes.
_MOST = 1 << 16
# `pid-PID-NAMESPACE.info`, or an older bundle's (and upstream's) `pid-PID.info`.
_NAME = re.compile(r"pid-(\d+)(?:-\d+)?\.info")
# What a token is made of (secrets.token_urlsafe): nothing that needs quoting in a URL or a script.
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
# The directories whose refusal was said: one line each, once per process.
_SAID: Set[str] = set()


def _directory_name() -> str:
    return os.path.join(tempfile.gettempdir(), ".tensorboard-info-%d" % os.getuid())


def _refusal(path: str) -> Optional[str]:
    """None where `path` is a directory of this user's that no one else may write (made, mode
    0700, where missing); otherwise what it is instead."""
    try:
        os.mkdir(path, 0o700)
        # Exactly 0700, whatever the umask. In a sticky directory (/tmp) no one else can have put
        # another file in its place meanwhile; elsewhere the check below sees one.
        os.chmod(path, 0o700)
    except FileExistsError:
        pass
    found = os.lstat(path)
    if stat.S_ISLNK(found.st_mode):
        return "is a link"
    if not stat.S_ISDIR(found.st_mode):
        return "is not a directory"
    if found.st_uid != os.getuid():
        return "belongs to uid %d" % found.st_uid
    if found.st_mode & 0o022:
        return "is writable by its group or others (mode %03o)" % stat.S_IMODE(found.st_mode)
    return None


def info_dir() -> Optional[str]:
    """This user's info directory, `<tempdir>/.tensorboard-info-<uid>`, made with mode 0700 where
    missing. None where that name is taken by something else (a link, another user's directory,
    one that others may write: planted, say): then no info file is written or read, and one line
    on stderr says why, once. Where there are no uids (Windows, whose temporary directory is the
    user's own), upstream's directory."""
    if not hasattr(os, "getuid"):
        path = os.path.join(tempfile.gettempdir(), ".tensorboard-info")
        os.makedirs(path, exist_ok=True)
        return path
    path = _directory_name()
    try:
        why = _refusal(path)
    except OSError as exc:
        why = "cannot be made (%s)" % (exc.strerror or exc)
    if why is None:
        return path
    if path not in _SAID:
        _SAID.add(path)
        sys.stderr.write("note: TensorBoard's info directory %s %s; it must be a directory that only you can "
                         "write: no info file is written or read, so %%tensorboard and tensorboard.notebook find no "
                         "server; remove it if it is yours, or set TMPDIR to a directory of your own\n" % (path, why))
        sys.stderr.flush()
    return None


def file_name() -> str:
    """`pid-PID-NAMESPACE.info`: the pid and the inode of this process's PID namespace. Two
    servers, each pid 1 in a container of its own that shares the temporary directory, shared
    upstream's `pid-1.info`: the second replaced the first's while the first served.
    `pid-PID.info` where /proc does not say (macOS, which has no PID namespaces)."""
    try:
        return "pid-%d-%d.info" % (os.getpid(), os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "pid-%d.info" % os.getpid()


class _View(NamedTuple):
    """What this process's /proc shows: the boot and the PID namespace it is in."""
    boot_id: str
    namespace: int


def _view() -> Optional[_View]:
    """None where /proc cannot judge: not Linux, no /proc, or a /proc mounted for another PID
    namespace (its pids are not the ones that info files are named by here)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        if int(os.readlink("/proc/self")) != os.getpid():
            return None
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot_id = f.read().strip()
        return _View(boot_id, os.stat("/proc/self/ns/pid").st_ino)
    except (OSError, ValueError):
        return None


def _start_ticks(pid: int) -> Optional[int]:
    """Field 22 of /proc/PID/stat (the start time, in clock ticks after boot); None where this
    namespace has no such process. Raises OSError or ValueError where /proc does not say."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # Field 3 (the state) is the first after the name.
    return int(text[text.rindex(b")") + 2:].split()[19])


def _record() -> Optional[Dict[str, Any]]:
    view = _view()
    if view is None:
        return None
    try:
        ticks = _start_ticks(os.getpid())
    except (OSError, ValueError):
        return None
    if ticks is None:
        return None
    return {"boot_id": view.boot_id, "pid_namespace": view.namespace, "start_ticks": ticks}


def _servers(directory: str, from_string: Callable[[str], Any]) -> List[Any]:
    """The TensorBoardInfo of each info file in `directory`, read with upstream's `from_string`.
    Upstream's get_all lists the directory, then opens each file, and raised FileNotFoundError
    where one went in between (a server's file renamed into place, or removed as it ends): such a
    file is skipped here, as is a file being written aside (a dot file: `replace_whole`'s)."""
    found = []
    for name in os.listdir(directory):
        if name.startswith("."):
            continue
        try:
            with open(os.path.join(directory, name)) as f:
                found.append(from_string(f.read()))
        # Gone since the listing, not readable (another's mode, a directory), or no info file.
        except (OSError, ValueError):
            continue
    return found


def install(manager: Any, token: Optional[str] = None) -> None:
    """Point TensorBoard's `manager` (the one module that writes, reads and removes info files)
    at this user's private directory. Each function replaced says why in its docstring; the rest
    (the file's format, `start`, the reuse by cache key) stays upstream's. `token`: the server's,
    written in its file under "mxboard_token" for the notebook (None: no such key)."""
    upstream_get_all = getattr(manager.get_all, "upstream", manager.get_all)
    written: List[str] = []

    def get_info_dir() -> str:
        """The private directory, in place of upstream's shared one."""
        directory = info_dir()
        if directory is None:
            raise OSError("no private TensorBoard info directory (%s)" % _directory_name())
        return directory

    def get_info_file_path() -> str:
        """A name of its own for each server, across PID namespaces (`file_name`)."""
        return os.path.join(get_info_dir(), file_name())

    def get_all() -> Any:
        """Upstream's, less its errors: no directory, no file gone meanwhile (`_servers`)."""
        directory = info_dir()
        return [] if directory is None else _servers(directory, upstream.private(manager, "_info_from_string"))

    def write_info_file(info: Any) -> None:
        """Upstream's file plus who wrote it (the boot, the PID namespace and this process's start
        time, so that a later launcher anywhere can prove it gone) and the token, mode 0600, and
        whole the moment it appears (written aside, then renamed: upstream's, opened then written,
        was empty when its server was killed in between). None where the directory is refused:
        the server serves on."""
        from mxboard._format import files

        # Upstream's checks run first.
        fields = json.loads(upstream.private(manager, "_info_to_string")(info))
        record = _record()
        if record is not None:
            fields[KEY] = record
        if token is not None:
            fields[TOKEN_KEY] = token
        directory = info_dir()
        if directory is None:
            return
        path = os.path.join(directory, file_name())
        files.replace_whole(path, (json.dumps(fields, sort_keys=True, indent=4) + "\n").encode(), 0o600)
        written.append(path)

    def remove_info_file() -> None:
        """The file this process wrote, if any (at exit: an error is no reason for a traceback)."""
        while written:
            try:
                os.unlink(written.pop())
            except OSError:
                pass

    get_all.upstream = upstream_get_all  # type: ignore[attr-defined]
    upstream.replace(manager, "_get_info_dir", get_info_dir)
    upstream.replace(manager, "_get_info_file_path", get_info_file_path)
    upstream.replace(manager, "get_all", get_all)
    upstream.replace(manager, "write_info_file", write_info_file)
    upstream.replace(manager, "remove_info_file", remove_info_file)


def record_writer(token: Optional[str] = None) -> None:
    """The launcher's: `install` into its `tensorboard.manager` (where the wheel's .pth file did
    not, mxboard found through PYTHONPATH, say), with the server's token (None: --auth none)."""
    from tensorboard import manager

    install(manager, token)


def _read_own(path: str) -> Optional[Dict[str, Any]]:
    """The JSON object in `path`, a regular file of this user's (never through a link); None
    where it is not one, or holds none."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or (hasattr(os, "getuid") and found.st_uid != os.getuid()):
            return None
        fields = json.loads(os.read(fd, _MOST))
        return fields if isinstance(fields, dict) else None
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def token_for(port: int) -> Optional[str]:
    """The token of the server on `port`, from its info file in the private directory (the newest
    such file whose writer is not provably gone: a port may have been taken since by someone
    else); None where that server has none (--auth none, or upstream's own TensorBoard)."""
    directory = info_dir()
    if directory is None:
        return None
    view = _view()
    newest: Optional[Dict[str, Any]] = None
    for name in os.listdir(directory):
        match = _NAME.fullmatch(name)
        fields = _read_own(os.path.join(directory, name)) if match else None
        if match is None or fields is None or fields.get("port") != port:
            continue
        started = fields.get("start_time")
        if not isinstance(started, int) or (newest is not None and started <= newest["start_time"]):
            continue
        if not _gone(os.path.join(directory, name), int(match.group(1)), view):
            newest = fields
    token = newest.get(TOKEN_KEY) if newest is not None else None
    return token if isinstance(token, str) and _TOKEN.fullmatch(token) else None


def _namespace_in_use(namespace: int) -> bool:
    """Whether any process is in that PID namespace, seen from the initial one (which sees every
    process). A process that has a pid in one namespace only (its status's NSpid line) is in the
    initial one; True where a nested one's namespace cannot be read (another user's, say)."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/status" % name, "rb") as f:
                    nested = any(line.startswith(b"NSpid:") and len(line.split()) > 2 for line in f)
                if nested and os.stat("/proc/%s/ns/pid" % name).st_ino == namespace:
                    return True
            # The process ended meanwhile.
            except FileNotFoundError:
                continue
            except OSError:
                return True
    return False


def _gone(path: str, pid: int, view: Optional[_View]) -> bool:
    """Whether the server that wrote `path` (`pid-PID[-NAMESPACE].info`) has provably ended."""
    # No /proc to judge by: only where no PID namespaces exist may a signal say.
    if view is None:
        # Elsewhere os.kill(pid, 0) may cross a jail, or end the process (Windows).
        if sys.platform != "darwin":
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except (OSError, OverflowError):
            pass
        return False
    try:
        with open(path) as f:
            fields = json.loads(f.read(_MOST))
        record = fields.get(KEY) if isinstance(fields, dict) else None
        if not isinstance(record, dict) or fields.get("pid") != pid:
            # Upstream's own tensorboard, or an older bundle: who wrote it is unknown.
            return False
        boot_id, namespace, ticks = record["boot_id"], record["pid_namespace"], record["start_ticks"]
        if boot_id != view.boot_id:
            # Another machine sharing the directory (or an earlier boot).
            return False
        if namespace == view.namespace:
            # No such process, or another one under its pid.
            return bool(_start_ticks(pid) != ticks)
        # another PID namespace: gone with it, which only the initial namespace can see
        return view.namespace == INITIAL_PID_NAMESPACE and not _namespace_in_use(namespace)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def forget_dead_servers() -> None:
    """Remove this user's info files whose server has provably ended (killed, say, by SIGKILL:
    upstream removes its file at a clean exit only), so that `tensorboard.notebook.list()` and
    `%tensorboard`'s reuse name only servers that run: in the private directory, and an older
    bundle's in upstream's shared one. Proof, on Linux: the file's record says the same boot and
    PID namespace as this process's, and its pid names no process with the recorded start time;
    or (seen from the initial PID namespace) no process is left in the recorded namespace. Another
    user's file, a link, a file without our record (upstream's own server wrote it) and one of
    another machine are left alone. Without /proc, only macOS, which has no PID namespaces, asks
    `kill(pid, 0)`."""
    # On Windows, whose file it is cannot be told.
    if not hasattr(os, "getuid"):
        return
    view = _view()
    directories = [info_dir(), os.path.join(tempfile.gettempdir(), ".tensorboard-info")]
    for directory in [d for d in directories if d is not None]:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            match = _NAME.fullmatch(name)
            if match is None:
                continue
            path = os.path.join(directory, name)
            try:
                found = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(found.st_mode) and found.st_uid == os.getuid() and _gone(path, int(match.group(1)), view):
                try:
                    os.unlink(path)
                except OSError:
                    pass
