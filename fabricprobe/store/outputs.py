"""The one rule for every file a command writes (docs/cli.md): never the target of a symbolic link
(replacing the link's path would replace the target's contents through it, or the link itself),
never anything but a regular file (a device node, a pipe, a directory), never a results file (an
HDF5 file: a report, a plot or a JSON written over one lost every run in it), and only where its
folder is writable. Refused in one line (UsageError, exit 2) before anything is written; what is
written goes to a temporary file beside it and replaces it whole, so it is never half-written."""

from __future__ import annotations

import os
from typing import Callable

from fabricprobe.errors import UsageError

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
RESULTS_SUFFIXES = (".h5", ".hdf5", ".hdf")


def is_hdf5(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(HDF5_SIGNATURE)) == HDF5_SIGNATURE
    except OSError:
        return False


def check_file_output(path: str, what: str = "output") -> None:
    """Raise UsageError unless a command may write `path` (the rule above); touches nothing."""
    if not path or "\0" in path:
        raise UsageError(f"invalid {what} path {path!r}")
    if os.path.islink(path):
        raise UsageError(f"{path} is a symbolic link: the {what} is never written through one (give its target)")
    if os.path.exists(path):
        if not os.path.isfile(path):
            raise UsageError(f"{path} is not a regular file (a directory, device or pipe): the {what} is not written")
        if is_hdf5(path):
            raise UsageError(f"{path} is an HDF5 file (a results file?): the {what} never writes over one")
    if path.lower().endswith(RESULTS_SUFFIXES):
        raise UsageError(f"{path} names a results file ({os.path.splitext(path)[1]}): give the {what} another name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write {path}: directory {folder} is missing or not writable")


def write_file(path: str, write: Callable[[str], None], what: str = "output") -> None:
    """Check `path` (check_file_output), then write(tmp) beside it and replace it whole."""
    check_file_output(path, what)
    base, suffix = os.path.splitext(path)
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)), f".{os.path.basename(base)}.tmp{os.getpid()}{suffix}")
    try:
        write(tmp)
        check_file_output(path, what)  # nothing replaced it with a link or a device meanwhile
        os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: str | os.PathLike, text: str, what: str = "output", mode: int | None = None) -> None:
    """`text` written to `path` whole (write_file): a kill leaves the old file or the new, never half.
    `mode`: the file's permissions (a script another program runs: 0o755), set before it replaces."""
    path = os.fspath(path)

    def write(tmp: str) -> None:
        with open(tmp, "w") as f:
            f.write(text)
        if mode is not None:
            os.chmod(tmp, mode)

    write_file(path, write, what)
