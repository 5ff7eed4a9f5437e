"""What rank 0 shows while a sweep runs: a rich progress bar on a terminal, one line per point
otherwise (logs go to stderr so stdout stays parseable)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from fabricprobe.console import make_console, user_sees_terminal

if TYPE_CHECKING:  # rich is imported where rank 0 draws the bar: the other ranks never load it
    from rich.progress import Progress


def _brief(row: dict[str, Any]) -> str:
    median = row.get("median_s", math.nan)
    if row.get("status") == "wrong":
        return f"FAILED validation: {row.get('wrong')} wrong elements"
    if row.get("status") != "ok":
        return f"{row.get('status')}: {row.get('note', '')}"
    return f"median {median * 1e6:.2f} µs ({row.get('stop_reason')}, {row.get('iterations')} it)"


def _shown(method):
    """A progress method that stops showing, never the sweep, when stderr is gone (a closed pipe: the
    sweep ended with exit 1 and no word; a full device)."""

    def guarded(self, *args, **kwargs):
        if self.style == "none":
            return None
        try:
            return method(self, *args, **kwargs)
        except (OSError, ValueError):
            self.style, self._bar = "none", None
            return None

    return guarded


class SweepProgress:
    def __init__(self, style: str, total: int) -> None:
        if style == "auto":
            style = "rich" if user_sees_terminal(stderr=True) else "plain"
        self.style = style
        self.total = total
        self.done = 0
        self.console = make_console(stderr=True) if style != "none" else None  # ranks other than 0 show nothing
        self._bar: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> "SweepProgress":
        if self.style == "rich":
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=False,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task("starting", total=self.total)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    @_shown
    def skip(self, count: int) -> None:
        """Points already measured (resume)."""
        self.done += count
        if self._bar is not None:
            self._bar.update(self._task, advance=count)

    @_shown
    def starting(self, label: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=label)

    @_shown
    def finished(self, label: str, row: dict[str, Any] | None) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1)
        if self.style == "plain" and row is not None:
            width = len(str(self.total))
            self.console.print(f"[{self.done:>{width}}/{self.total}] {label}: {_brief(row)}", markup=False)

    @_shown
    def note(self, text: str) -> None:
        if self.style != "none":
            self.console.print(f"[yellow]note:[/] {text}")
