"""What a reader could not read, said once on stderr and kept with the runs, so that nothing damaged is
passed over in silence: a journal record that fails its checksum is skipped (journal.read), and each
reader (report, compare, plot, tune, tune-eval, sweep --resume) names which run it costs and exits
with EXIT_DAMAGED (cli.main) once what could be read is shown. `fabricprobe repair` keeps the rest."""

from __future__ import annotations

from typing import Any

from fabricprobe.console import warn_line
from fabricprobe.store import journal

_said: set[tuple[str, tuple[str, ...]]] = set()


def journal_damage(path: str, found: journal.Journal, orphans: dict[str, int], runs: dict[str, Any]) -> list[str]:
    """One phrase per loss: each damaged record (with its run when the header still names it, and the
    point indices that run is missing when it is complete), each run whose start record is lost."""
    out = []
    for (offset, size), run in zip(found.damaged, found.damaged_runs):
        what = f"journal record at byte {offset} ({size} bytes)"
        if run is not None:
            what += f" of run {run}" + _missing(runs.get(run))
        out.append(what)
    for run, points in sorted(orphans.items()):
        out.append(f"run {run}'s start record, so its {points} intact point records cannot be shown")
    return out


def _missing(run: Any) -> str:
    """The point indices a complete run lacks (its points are numbered from 0 in the plan)."""
    if run is None or run.status != "complete" or not run.points:
        return ""
    have = {int(p["index"]) for p in run.points}
    gone = sorted(set(range(max(have) + 1)) - have)
    return f" (points {', '.join(map(str, gone))} lost)" if gone else ""


def say(path: str, losses: list[str]) -> None:
    """Once per file and loss in this process: one warning line naming every loss."""
    key = (path, tuple(losses))
    if not losses or key in _said:
        return
    _said.add(key)
    warn_line(
        f"{path} is damaged, what it lost is not shown: {'; '.join(losses)} "
        f"(fabricprobe repair {path} keeps the rest and the damaged bytes)"
    )


def seen() -> bool:
    """Whether a reader in this process met damage (cli.main's exit status)."""
    return bool(_said)


def forget() -> None:
    """A new command starts with nothing said (several commands run in one process in the tests)."""
    _said.clear()
