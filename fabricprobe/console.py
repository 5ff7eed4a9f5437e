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
from typing import TYPE_CHECKING

from fabricprobe.mpienv.launcher import env_rank, launched_by_mpiexec
from fabricprobe.text import as_text

if TYPE_CHECKING:  # rich is imported where a console is made: ranks other than 0 never make one
    from rich.console import Console

PLAIN_WIDTH = 160

_rank: int | None = None


def set_rank(rank: int) -> None:
    global _rank
    _rank = rank


def is_root() -> bool:
    return (env_rank() if _rank is None else _rank) == 0


def error_line(message: str) -> None:
    if is_root():
        text = " ".join(as_text(str(message)).split())  # one line, whatever the message holds
        _say(f"fabricprobe: error: {text}")


def warn_line(message: str) -> None:
    if is_root():
        _say(f"fabricprobe: warning: {as_text(str(message))}")


def _say(line: str) -> None:
    """A line on stderr; a closed or full stderr loses it, and nothing else (the run goes on)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


# The processes that relay a rank's output: mpiexec/mpirun and its daemons (Open MPI: prterun,
# prted, orterun, orted; MPICH/Intel: mpiexec.hydra, hydra_pmi_proxy, pmi_proxy), and Slurm's.
LAUNCHERS = frozenset(
    {
        "mpiexec",
        "mpirun",
        "prterun",
        "prted",
        "orterun",
        "orted",
        "mpiexec.hydra",
        "mpiexec.mpich",
        "mpirun.mpich",
        "mpiexec.openmpi",
        "mpirun.openmpi",
        "hydra_pmi_proxy",
        "pmi_proxy",
        "srun",
        "slurmstepd",
    }
)
_TERMINALS = ("/dev/pts/", "/dev/tty")


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _ancestors(fd: int, max_depth: int = 8) -> list[tuple[str, str | None]]:
    """(command name, where its fd points) for each ancestor, nearest first, as far as /proc shows."""
    chain: list[tuple[str, str | None]] = []
    pid = os.getpid()
    for _ in range(max_depth):
        try:
            pid = _parent(pid)
            with open(f"/proc/{pid}/comm") as f:
                name = f.read().strip()
        except (OSError, ValueError, IndexError):
            break
        try:
            target: str | None = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            target = None
        chain.append((name, target))
        if pid <= 1:
            break
    return chain


def outermost_launcher_stream(chain: list[tuple[str, str | None]]) -> str | None:
    """Where the outermost launcher of the nearest run of launchers writes: that is what the user sees.
    Ancestors above the launcher do not count (`mpiexec … | tee log` run from a terminal: the shell has
    the terminal, mpiexec has the pipe). None when no launcher is among the ancestors."""
    target = None
    seen = False
    for name, where in chain:
        if name in LAUNCHERS or name.startswith(("mpiexec", "mpirun")):
            seen, target = True, where
        elif seen:
            break
    return target


def launcher_terminal(fd: int = 2) -> str | None:
    """The terminal the launcher (mpiexec, srun) writes file descriptor fd to; None when it writes to a
    file or pipe, or when no launcher is found among this process's ancestors (a remote daemon under
    another name: plain text is the safe answer)."""
    target = outermost_launcher_stream(_ancestors(fd))
    return target if target is not None and target.startswith(_TERMINALS) else None


def _tty_size(tty: str) -> tuple[int | None, int | None]:
    try:
        fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY)
        try:
            return _fd_size(fd)
        finally:
            os.close(fd)
    except OSError:
        return 100, None


def _fd_size(fd: int) -> tuple[int | None, int | None]:
    """Columns and lines of the terminal on fd, COLUMNS and LINES first as every terminal program reads
    them; None for what is not known (a pty may report 0). Both go to rich, which otherwise draws 80
    columns whatever the terminal when TERM is dumb or unset (an emacs shell, a CI job's pty)."""
    try:
        size = os.get_terminal_size(fd)
        columns, lines = size.columns or None, size.lines or None
    except (AttributeError, ValueError, OSError):
        columns = lines = None
    given = [os.environ.get(name, "") for name in ("COLUMNS", "LINES")]
    columns = int(given[0]) if given[0].isdigit() and int(given[0]) > 0 else columns
    lines = int(given[1]) if given[1].isdigit() and int(given[1]) > 0 else lines
    return columns, lines


def _stream_size(stream) -> tuple[int | None, int | None]:
    try:
        return _fd_size(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return None, None


def _forced() -> bool | None:
    """The user's word, which beats detection: NO_COLOR (plain) and FORCE_COLOR (drawn), as rich reads them."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return None


def user_sees_terminal(stderr: bool = False) -> bool:
    forced = _forced()
    if forced is not None:
        return forced
    stream = sys.stderr if stderr else sys.stdout
    if not launched_by_mpiexec():
        return stream.isatty()
    return launcher_terminal(2 if stderr else 1) is not None


def make_console(stderr: bool = False) -> Console:
    """A console for what the user will see on stdout (or stderr): drawn in colour for a terminal,
    plain text (no escape codes) for a file or pipe, whatever the launcher does to the rank's streams."""
    from rich.console import Console

    if not user_sees_terminal(stderr):
        return Console(stderr=stderr, highlight=False, force_terminal=False, color_system=None, width=PLAIN_WIDTH)
    if not launched_by_mpiexec():
        width, height = _stream_size(sys.stderr if stderr else sys.stdout)
    else:
        tty = launcher_terminal(2 if stderr else 1)
        width, height = _tty_size(tty) if tty else (None, None)
    return Console(stderr=stderr, highlight=False, force_terminal=True, width=width, height=height or 25)


# A launcher relays a rank's stdout and stderr from two pipes (MPICH's hydra; Open MPI gives stdout a
# pseudo-terminal) and reads each as data arrives, so a line of one stream could be cut by the other:
# "full tables: fafabricprobe: results in …bricprobe report" (issue 69). Rank 0's two streams take
# turns: before one is written after the other was, the other is flushed and waited for until the
# launcher has read its pipe (FIONREAD: the bytes still in it), a pseudo-terminal for a moment.
_TURN_WAIT_S = 1.0
_TTY_PAUSE_S = 0.05


def _unread(fd: int) -> int:
    import array
    import fcntl
    import termios

    count = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, count, True)
    return count[0]


def _drained(stream) -> None:
    """`stream` flushed and, where it is a pipe, read by the launcher (at most _TURN_WAIT_S)."""
    import stat
    import time

    try:
        stream.flush()
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode):
            deadline = time.monotonic() + _TURN_WAIT_S
            while _unread(fd) and time.monotonic() < deadline:
                time.sleep(0.001)
        elif os.isatty(fd):
            time.sleep(_TTY_PAUSE_S)
    except (OSError, ValueError, AttributeError):
        pass


class TakingTurns:
    """One of rank 0's two streams under a launcher: writes wait for the other stream's turn to end."""

    last: list[object] = [None]

    def __init__(self, stream, partner: str) -> None:
        self._stream = stream
        self._partner = partner  # "stdout" or "stderr": the other stream's name in sys

    def write(self, text: str) -> int:
        if TakingTurns.last[0] is not self and TakingTurns.last[0] is not None:
            _drained(getattr(sys, self._partner))
        TakingTurns.last[0] = self
        return self._stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def take_turns_under_a_launcher() -> None:
    """Under a launcher, rank 0's stdout and stderr take turns (the other ranks say nothing but errors)."""
    if launched_by_mpiexec() and env_rank() == 0 and not isinstance(sys.stdout, TakingTurns):
        sys.stdout, sys.stderr = TakingTurns(sys.stdout, "stderr"), TakingTurns(sys.stderr, "stdout")
