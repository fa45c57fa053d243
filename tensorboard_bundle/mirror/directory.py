"""The mirror's directory, trusted no further than checked: every file the mirror writes,
replaces or removes is opened O_NOFOLLOW or checked with lstat first, and every directory on its
way is checked with lstat (a symlink or a file there is an error, never followed), so that
nothing planted in it (by anyone who can write there) makes the server write elsewhere."""
import errno
import os
import shutil
import stat
from typing import Callable, Optional, Set

__all__ = ["Directory", "ChangedError", "CutShortError", "STAGING", "NOFOLLOW", "remove"]

# Other files being fetched whole, before they replace theirs.
STAGING = ".mxboard-mirror-new"
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class ChangedError(Exception):
    """A local file is not as the mirror left it (deleted or changed by someone): copied anew."""


class CutShortError(OSError):
    """An append failed (its error's errno, text and file) after writing `kept` bytes, which stay."""

    def __init__(self, error: OSError, kept: int) -> None:
        super().__init__(error.errno, error.strerror, error.filename)
        self.kept = kept


def remove(path: str, how: Callable[[str], None] = os.remove) -> None:
    """`how(path)`, whatever it raises (the file or directory is gone, or stays)."""
    try:
        how(path)
    except OSError:
        pass


class Directory:
    """Files of the mirror at relative paths (`/` between components) below `path`."""

    def __init__(self, path: str) -> None:
        self.path = path
        # The directories checked this pass.
        self._checked: Set[str] = set()

    def new_pass(self) -> None:
        """Check every directory again (one may have been replaced since)."""
        self._checked = set()

    def place(self, local: str, create: bool = True) -> str:
        """The path of `local`, its directories made where `create`; OSError where one of them is
        not a directory of the mirror (a symlink, which is never written through, or a file)."""
        parts = local.split("/")
        path = self.path
        for part in parts[:-1]:
            path = os.path.join(path, part)
            if path in self._checked:
                continue
            try:
                if not stat.S_ISDIR(os.lstat(path).st_mode):
                    raise OSError(errno.ENOTDIR, "not a directory of the mirror (a symlink or a file)", path)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(path)
            self._checked.add(path)
        return os.path.join(path, parts[-1])

    def append(self, path: str, offset: int, data: bytes, keep: Optional[Callable[[int], int]] = None) -> None:
        """Append `data` to the file `path` (never through a symlink), which must hold `offset`
        bytes (ChangedError if not). On an error, the file is cut back to `offset`, or where
        `keep` is given, to `offset + keep(the bytes written)` (CutShortError says how many stay
        where any do): a reader may have taken the whole records that a short write left (a disk
        that fills does that), and a file that shrank under it is one it reads no more."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | NOFOLLOW, 0o644)
        try:
            if os.fstat(fd).st_size != offset:
                raise ChangedError(path)
            written = 0
            try:
                view = memoryview(data)
                while written < len(data):
                    written += os.write(fd, view[written:])
            except OSError as exc:
                kept = keep(written) if keep and written else 0
                os.ftruncate(fd, offset + kept)
                if kept:
                    raise CutShortError(exc, kept) from exc
                raise
        finally:
            os.close(fd)

    def unlink(self, local: str) -> None:
        """Remove the file `local`, and the directories it leaves empty."""
        try:
            os.unlink(self.place(local, create=False))
        except FileNotFoundError:
            return
        parts = local.split("/")[:-1]
        while parts:
            path = os.path.join(self.path, *parts)
            try:
                os.rmdir(path)
            except OSError:
                return
            self._checked.discard(path)
            parts.pop()

    def staging(self, name: str) -> str:
        """The file that the object `name` is fetched into before it replaces its own: in the
        mirror's own staging directory (a symlink or a file planted at its name is removed, never
        followed)."""
        path = os.path.join(self.path, STAGING)
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                # Removes a link itself, never what it points to.
                os.unlink(path)
                raise FileNotFoundError(path)
        except FileNotFoundError:
            os.mkdir(path, 0o700)
        return os.path.join(path, "%x" % (hash(name) & 0xFFFFFFFFFFFF))

    def put_in_place(self, staged: str, local: str) -> None:
        """Replace `local` by the staged file (which must still be a regular file: one planted
        there since is never put in place)."""
        # An empty object left no staged file: an empty one is made.
        if not os.path.lexists(staged):
            self.append(staged, 0, b"")
        if not stat.S_ISREG(os.lstat(staged).st_mode):
            raise OSError(errno.ELOOP, "not a file the mirror wrote (a symlink?)", staged)
        os.replace(staged, self.place(local))

    def end_staging(self, everything: bool = False) -> None:
        """Remove the staging directory where it is empty, or with `everything` in it (a link
        there is left: rmtree never follows one)."""
        path = os.path.join(self.path, STAGING)
        if everything:
            shutil.rmtree(path, ignore_errors=True)
        else:
            remove(path, os.rmdir)
