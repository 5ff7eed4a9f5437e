"""What the user sees: rank-aware lines (only rank 0 speaks; errors are one line on stderr) and rich
consoles that do the right thing under mpiexec.

A rank's stdout/stderr reach the user through the launcher: MPICH pipes them, Open MPI gives
ranks a pseudo-terminal even when mpiexec's own output goes to a file. What the user sees is
decided by mpiexec's streams, so that is what is asked: if the launcher writes to a terminal,
the console draws for that terminal's width; otherwise it writes plain, uncoloured text wide
enough for the tables.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

from fabricprobe.mpienv.launcher import env_rank, launched_by_mpiexec

PLAIN_WIDTH = 160

_rank: int | None = None


def set_rank(rank: int) -> None:
    global _rank
    _rank = rank


def is_root() -> bool:
    return (env_rank() if _rank is None else _rank) == 0


def error_line(message: str) -> None:
    if is_root():
        text = " ".join(str(message).split())  # one line, whatever the message holds
        print(f"fabricprobe: error: {text}", file=sys.stderr, flush=True)


def warn_line(message: str) -> None:
    if is_root():
        print(f"fabricprobe: warning: {message}", file=sys.stderr, flush=True)


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def launcher_terminal(fd: int = 2, max_depth: int = 4) -> str | None:
    """The terminal an ancestor launcher (mpiexec, its proxy) writes file descriptor fd to."""
    pid = os.getpid()
    for _ in range(max_depth):
        try:
            pid = _parent(pid)
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except (OSError, ValueError, IndexError):
            return None
        if target.startswith(("/dev/pts/", "/dev/tty")):
            return target
        if pid <= 1:
            return None
    return None


def _terminal_width(tty: str, default: int = 100) -> int:
    try:
        fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY)
        try:
            return os.get_terminal_size(fd).columns or default  # a pty may report 0 columns
        finally:
            os.close(fd)
    except OSError:
        return default


def user_sees_terminal(stderr: bool = False) -> bool:
    stream = sys.stderr if stderr else sys.stdout
    if not launched_by_mpiexec():
        return stream.isatty()
    return launcher_terminal(2 if stderr else 1) is not None


def make_console(stderr: bool = False) -> Console:
    """A console for what the user will see on stdout (or stderr)."""
    if not launched_by_mpiexec():
        console = Console(stderr=stderr, highlight=False)
        return console if console.is_terminal else Console(stderr=stderr, highlight=False, width=PLAIN_WIDTH)
    tty = launcher_terminal(2 if stderr else 1)
    if tty is not None:
        return Console(stderr=stderr, highlight=False, force_terminal=True, width=_terminal_width(tty))
    return Console(stderr=stderr, highlight=False, force_terminal=False, color_system=None, width=PLAIN_WIDTH)
