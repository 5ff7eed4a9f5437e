"""What a reader could not read, said once on stderr and kept with the runs, so that nothing damaged is
passed over in silence: a journal record that fails its checksum is skipped (journal.read), and each
reader (report, compare, plot, tune, tune-eval, sweep --resume) names which run it costs and exits
with EXIT_DAMAGED (cli.main) once what could be read is shown. `fabricprobe repair` keeps the rest."""

from __future__ import annotations

from typing import Any

from fabricprobe.console import warn_line
from fabricprobe.store import journal

_said: set[tuple[str, tuple[str, ...]]] = set()


def journal_damage(path: str, found: journal.Journal, orphans: dict[str, list[int]], runs: dict[str, Any]) -> list[str]:
    """One phrase per loss: each damaged record (with its run when the header still names it, and the
    point indices that run is missing when it is complete), each run whose start record is lost."""
    out = []
    started = {r.run for r in found.records if r.kind == journal.START}
    kinds = found.damaged_kinds or [None] * len(found.damaged)
    for (offset, size), run, kind in zip(found.damaged, found.damaged_runs, kinds):
        what = f"journal record at byte {offset} ({size} bytes)"
        if run is None:
            what += ", not shown"
        elif run is not None and kind == journal.START and run in started:
            what += f": a copy of run {run}'s start record, the other copy intact (nothing lost)"
        elif run is not None:
            what += f" of run {run}, not shown" + _missing(runs.get(run))
        out.append(what)
    for run, indices in sorted(orphans.items()):
        out.append(
            f"run {run}'s start record (every copy), so its {len(indices)} intact point records "
            f"({point_spans(indices)}) cannot be shown"
        )
    return out


def point_spans(indices: list[int]) -> str:
    """Point indices as ranges: "points 0-5, 7"."""
    ordered = sorted(set(indices))
    if not ordered:
        return "no points"
    out, start, prev = [], ordered[0], ordered[0]
    for i in ordered[1:] + [None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return "points " + ", ".join(out)


def _missing(run: Any) -> str:
    """The point indices a complete run lacks (its points are numbered from 0 in the plan)."""
    if run is None or run.status != "complete" or not run.points:
        return ""
    have = {int(p["index"]) for p in run.points}
    gone = sorted(set(range(max(have) + 1)) - have)
    return f" (points {', '.join(map(str, gone))} lost)" if gone else ""


def cut_short(path: str, found: journal.Journal, runs: dict[str, Any]) -> str:
    """The line for a journal that ends inside a record (a kill while writing it: that one record was
    never complete), with what its run's plan expected; "" when it ends on a record's end."""
    if not found.torn_bytes:
        return ""
    line = (
        f"{journal.journal_path(path)} ends inside a record ({found.torn_bytes} bytes after the last "
        "whole one): a write cut short, that record was never complete"
    )
    run = runs.get(found.records[-1].run) if found.records else None
    if run is not None:
        line += "; " + held(run)
    return line


def held(run: Any) -> str:
    """How many points a run holds, of those its plan expected when it says."""
    planned = run.attrs.get("planned_points")
    have = len(run.points)
    if isinstance(planned, int) and planned > 0:
        return f"run {run.id} holds {have} of the {planned} points its plan expected"
    return f"run {run.id} holds {have} points (its plan's count was not recorded)"


def say(path: str, losses: list[str]) -> None:
    """Once per file and loss in this process: one warning line naming every loss."""
    key = (path, tuple(losses))
    if not losses or key in _said:
        return
    _said.add(key)
    warn_line(
        f"{path} is damaged: {'; '.join(losses)} (fabricprobe repair {path} keeps the rest and the damaged bytes)"
    )


def say_cut_short(path: str, line: str) -> None:
    """Once per file in this process: a journal cut short, said (not damage: a kill does it)."""
    key = (path, ("cut short", line))
    if not line or key in _said_cut:
        return
    _said_cut.add(key)
    warn_line(f"{line} (fabricprobe sweep --resume {path} measures what is missing)")


_said_cut: set[tuple[str, tuple[str, ...]]] = set()


def seen() -> bool:
    """Whether a reader in this process met damage (cli.main's exit status)."""
    return bool(_said)


def forget() -> None:
    """A new command starts with nothing said (several commands run in one process in the tests)."""
    _said.clear()
    _said_cut.clear()
