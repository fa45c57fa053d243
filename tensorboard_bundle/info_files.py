"""TensorBoard's info files (`pid-N.info`, which `tensorboard.notebook.list()` and `%tensorboard`
read): the bundle records in its own file who wrote it, and removes only files whose writer it
can prove gone, across PID namespaces (containers sharing a temporary directory) too."""
import json
import os
import stat
import sys
from typing import Any, Dict, NamedTuple, Optional

from mxboard._format import files

__all__ = ["forget_dead_servers", "record_writer"]

# Our key in the info file's JSON: upstream's reader ignores unknown keys.
KEY = "mxboard_writer"
# The kernel's inode of the initial PID namespace (PROC_PID_INIT_INO).
INITIAL_PID_NAMESPACE = 0xEFFFFFFC
# An info file is about 400 bytes.
_MOST = 1 << 16


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


def record_writer() -> None:
    """Make `manager.write_info_file` (which TensorBoard's program calls once it serves) add who
    wrote the file: the boot, the PID namespace and this process's start time, so that a later
    launcher anywhere can prove it gone. The file appears whole (written aside, then renamed):
    upstream's, opened then written, was empty when its server was killed in between, and no
    launcher could then prove that server gone."""
    from tensorboard import manager

    def write_info_file(info: Any) -> None:
        # Upstream's checks run first.
        payload = manager._info_to_string(info)
        record = _record()
        if record is not None:
            fields = json.loads(payload)
            fields[KEY] = record
            payload = json.dumps(fields, sort_keys=True, indent=4)
        # Only the owner may read it.
        files.replace_whole(manager._get_info_file_path(), (payload + "\n").encode(), 0o600)

    manager.write_info_file = write_info_file


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
    """Whether the server that wrote `path` (`pid-PID.info`) has provably ended."""
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
    `%tensorboard`'s reuse name only servers that run. Proof, on Linux: the file's record says the
    same boot and PID namespace as this process's, and its pid names no process with the recorded
    start time; or (seen from the initial PID namespace) no process is left in the recorded
    namespace. Another user's file, a link, a file without our record (upstream's own server
    wrote it) and one of another machine are left alone. Without /proc, only macOS, which has no
    PID namespaces, asks `kill(pid, 0)`."""
    from tensorboard import manager

    # On Windows, whose file it is cannot be told.
    if not hasattr(os, "getuid"):
        return
    try:
        directory = manager._get_info_dir()
        names = os.listdir(directory)
    except OSError:
        return
    view = _view()
    for name in names:
        if not (name.startswith("pid-") and name.endswith(".info") and name[4:-5].isdigit()):
            continue
        path = os.path.join(directory, name)
        try:
            found = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(found.st_mode) and found.st_uid == os.getuid() and _gone(path, int(name[4:-5]), view):
            try:
                os.unlink(path)
            except OSError:
                pass
