"""What rank 0 shows while a sweep runs: a rich progress bar on a terminal, one line per point
otherwise (logs go to stderr so stdout stays parseable)."""

from __future__ import annotations

import math
import os
import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def _brief(row: dict[str, Any]) -> str:
    median = row.get("median_s", math.nan)
    if row.get("status") != "ok":
        return f"{row.get('status')}: {row.get('note', '')}"
    return f"median {median * 1e6:.2f} µs ({row.get('stop_reason')}, {row.get('iterations')} it)"


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def launcher_terminal(max_depth: int = 4) -> str | None:
    """The terminal the launching mpiexec writes its stderr to, if any.

    mpiexec hands a rank's output to the user through pipes (so the rank's stderr is never a
    terminal), and MPICH's hydra also detaches ranks from the controlling terminal; the
    launcher's own stderr still tells whether a person is watching.
    """
    pid = os.getpid()
    for _ in range(max_depth):
        try:
            pid = _parent(pid)
            target = os.readlink(f"/proc/{pid}/fd/2")
        except (OSError, ValueError, IndexError):
            return None
        if target.startswith(("/dev/pts/", "/dev/tty")):
            return target
        if pid <= 1:
            return None
    return None


def _console(style: str) -> Console:
    if style != "rich" or sys.stderr.isatty():
        return Console(stderr=True, highlight=False)
    width = 100
    tty = launcher_terminal()
    if tty is not None:
        try:
            fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY)
            try:
                width = os.get_terminal_size(fd).columns or width  # a pty may report 0 columns
            finally:
                os.close(fd)
        except OSError:
            pass
    return Console(stderr=True, highlight=False, force_terminal=True, width=width)


class SweepProgress:
    def __init__(self, style: str, total: int) -> None:
        if style == "auto":
            style = "rich" if sys.stderr.isatty() or launcher_terminal() else "plain"
        self.style = style
        self.total = total
        self.done = 0
        self.console = _console(style)
        self._bar: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> "SweepProgress":
        if self.style == "rich":
            self._bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=self.console, transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task("starting", total=self.total)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def skip(self, count: int) -> None:
        """Points already measured (resume)."""
        self.done += count
        if self._bar is not None:
            self._bar.update(self._task, advance=count)

    def starting(self, label: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=label)

    def finished(self, label: str, row: dict[str, Any] | None) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1)
        if self.style == "plain" and row is not None:
            width = len(str(self.total))
            print(f"[{self.done:>{width}}/{self.total}] {label}: {_brief(row)}", file=sys.stderr, flush=True)

    def note(self, text: str) -> None:
        if self.style != "none":
            self.console.print(f"[yellow]note:[/] {text}")
