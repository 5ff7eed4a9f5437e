"""GPUDirect on vs off, side by side per size: the direct time, the staged and pipelined times, their
ratios to direct, and how much of the staging gap the pipelining recovers,
    recovered = (staged − pipelined) / (staged − direct).
Without a runnable direct point (MPI not CUDA-aware) the table still shows what pipelining saves."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from rich.table import Table

from fabricprobe.memory import DIRECT, PIPELINED, STAGED
from fabricprobe.report.labels import speedup, title
from fabricprobe.report.units import percent, usec
from fabricprobe.sizes import format_size
from fabricprobe.store.schema import identity


def gpudirect_groups(points: list[dict[str, Any]]) -> "OrderedDict[tuple, dict[int, dict[str, dict]]]":
    """case -> size -> transfer -> point, for device-buffer cases measured with more than one transfer."""
    groups: OrderedDict[tuple, dict[int, dict[str, dict]]] = OrderedDict()
    for p in points:
        if p.get("transfer") in (DIRECT, STAGED, PIPELINED):
            groups.setdefault(identity(p, without=("transfer", "bytes")), {}).setdefault(p["bytes"], {})[
                p["transfer"]
            ] = p
    return OrderedDict((k, v) for k, v in groups.items() if len({t for by in v.values() for t in by}) > 1)


def recovered(direct: float, staged: float, pipelined: float) -> float:
    """The fraction of the staged-vs-direct gap that pipelining wins back (NaN without a gap)."""
    gap = staged - direct
    return (staged - pipelined) / gap if gap > 0 else float("nan")


def _time(p: dict | None) -> float | None:
    return p["median_s"] if p is not None and p["status"] == "ok" and p["median_s"] > 0 else None


def _cell(p: dict | None) -> str:
    if p is None:
        return "-"
    if p["status"] == "not_runnable":
        return "[yellow]not runnable[/]"
    t = _time(p)
    return usec(t) if t is not None else f"[red]{p['status']}[/]"


def gpudirect_table(case: tuple, by_size: dict[int, dict[str, dict]]) -> Table:
    timers = (p["timer"] for row in by_size.values() for p in row.values())
    what = {k: v for k, v in case._asdict().items() if k != "algorithm"}
    heading = title(f"[bold]{case.collective}[/] {case.algorithm}: GPUDirect on vs off", what, timers)
    table = Table(title=heading, title_justify="left", show_edge=False, pad_edge=False)
    for name in (
        "size",
        "on (direct) µs",
        "off staged µs",
        "off pipelined µs",
        "on: speedup (staged / on)",
        "pipelined: speedup (staged / pipelined)",
        "gap recovered",
    ):
        table.add_column(name, justify="right")
    reasons = set()
    for size in sorted(by_size):
        row = by_size[size]
        d, s, q = (_time(row.get(t)) for t in (DIRECT, STAGED, PIPELINED))
        reasons.update(p["note"] for p in row.values() if p["status"] == "not_runnable")
        gain = lambda ref, x: f"{speedup(ref, x):.2f}×" if ref is not None and x else "-"
        recovery = percent(recovered(d, s, q)) if None not in (d, s, q) else "-"
        table.add_row(
            format_size(size),
            _cell(row.get(DIRECT)),
            _cell(row.get(STAGED)),
            _cell(row.get(PIPELINED)),
            gain(s, d),
            gain(s, q),
            recovery,
        )
    table.caption = (
        "medians; staged = device→pinned host copy, MPI on host memory, host→device copy, all timed; "
        "speedup = staged time / this time (above 1: faster than staging); "
        "gap recovered = (staged − pipelined) / (staged − on)"
        + "".join(f"\nnot runnable: {r}" for r in sorted(reasons))
    )
    table.caption_justify = "left"
    return table


def gpudirect_tables(points: list[dict[str, Any]]) -> list[Table]:
    return [gpudirect_table(case, by_size) for case, by_size in gpudirect_groups(points).items()]
