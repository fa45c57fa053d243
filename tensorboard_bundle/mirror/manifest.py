"""What the mirror copied, kept in its directory (MANIFEST, which marks the directory as a
mirror, with the bytes read from the store), and the directory's claim: LOCK, an advisory lock
held by the one server using it (a second one is refused). A directory named by the user is
reused only when it is the user's own, and empty or a mirror of the same URL already; then each
file is checked against the manifest (`stale`)."""
import dataclasses
import json
import os
import stat
import weakref
from typing import Any, Dict, List, Optional

from mxboard._format import files

from .directory import NOFOLLOW, Directory
from .plan import Piece, is_event_file

__all__ = ["Entry", "Manifest", "MANIFEST", "LOCK"]

MANIFEST = ".mxboard-mirror.json"
LOCK = ".mxboard-mirror.lock"


@dataclasses.dataclass
class Entry:
    """One local file: `base` its name (where the disk can hold it), `local` where it is now
    (`<base>.~<generation>` once copied anew), the objects it was copied from, the bytes copied,
    whether its copy is done, and why an event file's copy ended (a hostile record), if it did."""

    base: str
    local: str
    generation: int
    pieces: List[Piece]
    copied: int
    done: bool
    ended: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        return dict(dataclasses.asdict(self), pieces=[list(p) for p in self.pieces])

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Entry":
        """Raises (KeyError, TypeError, ValueError) for what is not an entry of this version's."""
        pieces = [(str(key), int(size), str(tag)) for key, size, tag in data["pieces"]]
        return cls(str(data["base"]), str(data["local"]), int(data["generation"]), pieces, int(data["copied"]),
                   bool(data["done"]), data["ended"])


class Manifest:
    """The manifest of `directory` (a Directory), which this process now holds (its lock, until
    `release()` or the Manifest is gone): `files` {name in the store: Entry}, `bytes_read`."""

    def __init__(self, directory: Directory, url: str) -> None:
        self.directory, self.url = directory, url
        path = directory.path
        os.makedirs(path, exist_ok=True)
        owner = os.stat(path).st_uid
        if hasattr(os, "getuid") and owner != os.getuid():
            raise ValueError("%s belongs to another user (uid %d), who could make this server write where they "
                             "choose: name a directory of your own" % (path, owner))
        data: Dict[str, Any] = {}
        if os.path.lexists(os.path.join(path, MANIFEST)):
            # A link raises ELOOP.
            with os.fdopen(os.open(os.path.join(path, MANIFEST), os.O_RDONLY | NOFOLLOW)) as f:
                data = json.load(f)
            if data.get("url") != url:
                raise ValueError("%s mirrors %s, not %s: name another directory" % (path, data.get("url"), url))
        elif set(os.listdir(path)) - {LOCK}:
            raise ValueError("%s is not empty and not a mirror (no %s): name an empty directory" % (path, MANIFEST))
        fd = _lock(os.path.join(path, LOCK))
        self.release = weakref.finalize(self, os.close, fd)
        self.bytes_read = int(data.get("bytes_read", 0))
        self.files: Dict[str, Entry] = {}
        try:
            self.files = {str(name): Entry.from_json(entry) for name, entry in (data.get("files") or {}).items()}
        # An older mirror's manifest: its files are fetched anew.
        except (AttributeError, KeyError, TypeError, ValueError):
            for name in data.get("files") or ():
                directory.unlink(str(name))

    def stale(self) -> List[str]:
        """The names whose files are not as recorded: what was written after the last save is cut
        (an event file then continues from there); a file lost or shortened is stale (fetched
        anew). The staging directory's leftovers are removed."""
        self.directory.end_staging(everything=True)
        found = []
        for name, entry in self.files.items():
            try:
                path = self.directory.place(entry.local, create=False)
                size = os.lstat(path).st_size if stat.S_ISREG(os.lstat(path).st_mode) else -1
                if size > entry.copied and is_event_file(name):
                    with open(path, "r+b") as f:
                        f.truncate(entry.copied)
                    size = entry.copied
            except OSError:
                size = -1
            if size != entry.copied:
                found.append(name)
        return found

    def save(self) -> None:
        """Write the manifest whole: a new file (O_EXCL: never through a name planted there),
        renamed over the old one (a rename replaces a link itself)."""
        data = {"url": self.url, "bytes_read": self.bytes_read,
                "files": {name: entry.to_json() for name, entry in self.files.items()}}
        files.replace_whole(os.path.join(self.directory.path, MANIFEST), json.dumps(data).encode(), 0o600)


def _lock(path: str) -> int:
    """An open descriptor of `path` holding an exclusive advisory lock, the process id in it;
    ValueError if another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o644)
    if not files.lock(fd, wait=False):
        owner = os.read(fd, 32).decode("ascii", "replace").strip() or "?"
        os.close(fd)
        raise ValueError("%s is in use by another TensorBoard (process %s): stop it, or name another --mirror_dir"
                         % (os.path.dirname(path), owner))
    os.ftruncate(fd, 0)
    os.write(fd, b"%d\n" % os.getpid())
    return fd
