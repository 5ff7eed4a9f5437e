"""GPUDirect on vs off, side by side per size: the direct time, the staged and pipelined times, their
ratios to direct, and how much of the staging gap the pipelining recovers,
    recovered = (staged − pipelined) / (staged − direct).
Without a runnable direct point (MPI not CUDA-aware) the table still shows what pipelining saves."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from rich.table import Table

from fabricprobe.memory import DIRECT, PIPELINED, STAGED
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
    collective, algorithm, dtype, op, in_place, mode, pair, density, buffer, nranks = case
    title = " · ".join(
        x
        for x in (
            f"[bold]{collective}[/] {algorithm}: GPUDirect on vs off",
            f"{buffer} buffers",
            dtype if dtype != "byte" else "",
            op if op != "none" else "",
            "in-place" if in_place else "",
            f"{mode} mode",
            f"{pair} pair" if pair else "",
            f"density {density:g}" if density else "",
            f"{nranks} ranks",
        )
        if x
    )
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for name in (
        "size",
        "on (direct) µs",
        "off staged µs",
        "off pipelined µs",
        "staged / on",
        "pipelined / on",
        "gap recovered",
    ):
        table.add_column(name, justify="right")
    reasons = set()
    for size in sorted(by_size):
        row = by_size[size]
        d, s, q = (_time(row.get(t)) for t in (DIRECT, STAGED, PIPELINED))
        reasons.update(p["note"] for p in row.values() if p["status"] == "not_runnable")
        ratio = lambda x, d=d: f"{x / d:.2f}×" if x is not None and d else "-"
        if None not in (d, s, q):
            gain = percent(recovered(d, s, q))
        elif s and q:
            gain = f"pipelined {s / q:.2f}× faster" if q < s else f"pipelined {q / s:.2f}× slower"
        else:
            gain = "-"
        table.add_row(
            format_size(size),
            _cell(row.get(DIRECT)),
            _cell(row.get(STAGED)),
            _cell(row.get(PIPELINED)),
            ratio(s),
            ratio(q),
            gain,
        )
    table.caption = (
        "medians; staged = device→pinned host copy, MPI on host memory, host→device copy, all timed; "
        "gap recovered = (staged − pipelined) / (staged − on)"
        + "".join(f"\nnot runnable: {r}" for r in sorted(reasons))
    )
    table.caption_justify = "left"
    return table


def gpudirect_tables(points: list[dict[str, Any]]) -> list[Table]:
    return [gpudirect_table(case, by_size) for case, by_size in gpudirect_groups(points).items()]
