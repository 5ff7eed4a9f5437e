"""A folder of files written for a site (`tune -o DIR`): what goes into a site's MPI configuration must
never be written through a link, over another program's file, or readable-writable by others.

Before the first byte, `OwnedFolder.claim` checks every path the command may write (each declared
name, its folder, the folder itself) and refuses in one line (UsageError, exit 2), touching nothing:
- no symbolic link anywhere in the folder's own paths (the folder given may sit under linked parents,
  which are the user's to choose; the folder itself, `load/` and every file may not be links);
- nothing but directories and regular files;
- no folder every user may write to (anyone could replace the files after they are written);
- no existing file replaced that this tool did not write: the ledger (`.fabricprobe-files.json`)
  names each file written here with its SHA-256; a file listed there, unchanged since, is the previous
  run's and is replaced (the caller says so); one changed since, or not listed, is refused.

Writing goes through the folders' descriptors, never their paths again (a link planted between the
check and the write is not followed): a temporary file created exclusively, its mode set exactly
(0o644, or 0o755 for a script; folders 0o755, whatever the umask), synced, then renamed over the name.
The ledger names a file before it is written and records its hash after, so a run killed in between
leaves files the next run may replace. The files an earlier run wrote that this one did not write
again are removed at its end (`finish`): the folder then holds one run's files."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Callable, Iterable

from fabricprobe.errors import UsageError

LEDGER = ".fabricprobe-files.json"
FILE_MODE = 0o644
SCRIPT_MODE = 0o755
FOLDER_MODE = 0o755


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"cannot check {path}: {exc.strerror}") from None


class OwnedFolder:
    """The folder `root`, holding only the declared `names` (relative paths, at most one folder deep)."""

    def __init__(self, root: str | os.PathLike, names: Iterable[str], writer: str) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.names = set(names) | {LEDGER}
        self.writer = writer
        self.ledger: dict[str, str | None] = {}  # name -> SHA-256 of what was written (None: being written)
        self.replaced: list[str] = []  # the previous run's files found here under declared names
        self.stale: list[str] = []  # the previous run's files this one does not declare
        self.written: set[str] = set()  # what this run wrote (finish removes the previous run's others)
        self._fds: dict[str, int] = {}  # "" (the root) and each subfolder -> its descriptor
        self._opened = False

    # ---- the check: nothing touched ----

    def claim(self, legacy: Callable[[str], set[str]] | None = None) -> OwnedFolder:
        """Check every path (the rule above); `legacy(root)`: the names an earlier version's manifest
        says it wrote, for a folder without a ledger. Raises UsageError; writes nothing."""
        if not self.root or "\0" in self.root:
            raise UsageError(f"invalid output folder {self.root!r}")
        self._check_folder(self.root, "the output folder")
        for sub in sorted({n.split("/", 1)[0] for n in self.names if "/" in n}):
            self._check_folder(os.path.join(self.root, sub), "a folder of the output")
        self.ledger = self._read_ledger()
        if not self.ledger and legacy is not None and os.path.isdir(self.root):
            self.ledger = dict.fromkeys(legacy(self.root))
        for name in sorted(self.names | set(self.ledger)):
            self._check_file(name)
        return self

    def _check_folder(self, path: str, what: str) -> None:
        st = _lstat(path)
        if st is None:
            parent = os.path.dirname(path)
            while not os.path.lexists(parent):
                parent = os.path.dirname(parent)
            if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
                raise UsageError(f"cannot create {path}: {parent} is not a folder this user can write to")
            return
        if stat.S_ISLNK(st.st_mode):
            raise UsageError(f"{path} ({what}) is a symbolic link: {self.writer} never writes through one")
        if not stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{path} ({what}) exists and is not a folder")
        if st.st_mode & stat.S_IWOTH:
            raise UsageError(f"{path} ({what}) is writable by every user: anyone could replace its files; give another")
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"cannot write into {path} ({what}): permission denied")

    def _read_ledger(self) -> dict[str, str | None]:
        path = os.path.join(self.root, LEDGER)
        st = _lstat(path)
        if st is None:
            return {}
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{path} is not a regular file: move it away")
        try:
            with open(path, "rb") as f:
                data = json.loads(f.read())
            files = data["files"]
            if not isinstance(files, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in files.items()
            ):
                raise ValueError
        except (OSError, ValueError, KeyError, TypeError):
            raise UsageError(f"{path} (what {self.writer} wrote here) is unreadable: move the folder away") from None
        return {k: v for k, v in files.items() if self._inside(k)}

    @staticmethod
    def _inside(name: str) -> bool:
        parts = name.split("/")
        return 0 < len(parts) <= 2 and all(p not in ("", ".", "..") for p in parts)

    def _check_file(self, name: str) -> None:
        path = os.path.join(self.root, name)
        st = _lstat(path)
        if st is None:
            return
        if stat.S_ISLNK(st.st_mode):
            raise UsageError(f"{path} is a symbolic link: {self.writer} never writes through one")
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{path} exists and is not a regular file")
        if name == LEDGER:
            return
        if name not in self.ledger:
            raise UsageError(f"{path} exists and was not written by {self.writer}: move it away or give another folder")
        written = self.ledger[name]
        if written is not None and written != _digest(Path(path).read_bytes()):
            raise UsageError(
                f"{path} was changed after {self.writer} wrote it: move it away or give another folder "
                "(it is never replaced)"
            )
        (self.replaced if name in self.names else self.stale).append(name)

    # ---- writing, through the folders' descriptors ----

    def open(self) -> OwnedFolder:
        """Ready to write: the folder and its subfolders (mode 0o755) are made at the first change, so
        that a refusal before it (a rule the library lacks) leaves nothing behind either."""
        self._opened = True
        return self

    def _ready(self) -> None:
        """Create and open the folders once. A link or a file put in a checked place since the check is
        refused here (UsageError), never followed."""
        if self._fds:
            return
        if not self._opened:
            raise RuntimeError("the folder was not opened (claim, then open)")
        try:
            self._open()
        except OSError as exc:
            self.close()
            raise UsageError(
                f"cannot write into {self.root}: {exc.strerror} (was it changed since it was checked?)"
            ) from None

    def _open(self) -> OwnedFolder:
        _make_folders(self.root)
        self._fds[""] = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        for sub in sorted({n.split("/", 1)[0] for n in self.names if "/" in n}):
            with contextlib.suppress(FileExistsError):
                os.mkdir(sub, FOLDER_MODE, dir_fd=self._fds[""])
                fd = os.open(sub, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self._fds[""])
                os.fchmod(fd, FOLDER_MODE)
                os.close(fd)
            self._fds[sub] = os.open(
                sub, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self._fds[""]
            )
        return self

    def finish(self) -> list[str]:
        """Remove the previous run's files this one did not write again (an earlier `tune`'s verified
        file beside this one's unverified one would still be loaded by a site); their names."""
        gone = sorted(n for n in self.stale + self.replaced if n not in self.written and os.path.lexists(self.path(n)))
        for name in gone:
            self.remove(name)
        return gone

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}

    def __enter__(self) -> OwnedFolder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def path(self, name: str) -> Path:
        return Path(self.root, name)

    def name_of(self, path: str | os.PathLike) -> str:
        """The declared name of a path inside the folder (the inverse of path())."""
        return os.path.relpath(os.path.abspath(os.fspath(path)), self.root)

    def exists(self, name: str) -> bool:
        fd, base = self._where(name)
        try:
            return stat.S_ISREG(os.stat(base, dir_fd=fd, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            return False

    def read_bytes(self, name: str) -> bytes:
        fd, base = self._where(name)
        handle = os.open(base, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        with os.fdopen(handle, "rb") as f:
            return f.read()

    def write(self, name: str, data: str | bytes, mode: int = FILE_MODE) -> Path:
        """`data` as `name`, whole (a kill leaves the old file or the new), mode exactly `mode`."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        self.written.add(name)
        self._record(name, None)
        self._put(name, raw, mode)
        self._record(name, _digest(raw))
        return self.path(name)

    def rename(self, old: str, new: str) -> Path:
        self._declared(new)
        self.written.add(new)
        self._record(new, self.ledger.get(old))
        fd_old, base_old = self._where(old)
        fd_new, base_new = self._where(new)
        os.replace(base_old, base_new, src_dir_fd=fd_old, dst_dir_fd=fd_new)
        self._record(old, None, forget=True)
        return self.path(new)

    def remove(self, name: str) -> None:
        fd, base = self._where(name)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(base, dir_fd=fd)
        self._record(name, None, forget=True)

    def _declared(self, name: str) -> None:
        if name not in self.names and name not in self.stale:
            raise RuntimeError(f"{name} was not declared (and checked) before writing")

    def _where(self, name: str) -> tuple[int, str]:
        self._declared(name)
        self._ready()
        sub, _, base = name.rpartition("/")
        return self._fds[sub], base

    def _put(self, name: str, raw: bytes, mode: int) -> None:
        fd, base = self._where(name)
        tmp = f".{base}.tmp{secrets.token_hex(4)}"
        handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
        try:
            os.fchmod(handle, mode)
            with os.fdopen(handle, "wb") as f:
                f.write(raw)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, base, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise

    def _record(self, name: str, digest: str | None, forget: bool = False) -> None:
        if name == LEDGER:
            return
        if forget:
            self.ledger.pop(name, None)
        else:
            self.ledger[name] = digest
        body = json.dumps({"writer": self.writer, "files": dict(sorted(self.ledger.items()))}, indent=1) + "\n"
        self._put(LEDGER, body.encode("utf-8"), FILE_MODE)


def _make_folders(path: str) -> None:
    """mkdir -p with every folder it creates at mode 0o755 exactly (the umask may be 000)."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        path = os.path.dirname(path)
    for folder in reversed(missing):
        os.mkdir(folder, FOLDER_MODE)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        os.fchmod(fd, FOLDER_MODE)
        os.close(fd)
