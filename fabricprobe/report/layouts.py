"""What the uneven layout of the vector collectives adds: each vector collective beside its even form
(OMB's layout, specs/uneven.py) at the same mean block, where a run measured both.

    ratio = uneven median / even median  (above 1: the uneven, gapped, reverse-ordered layout costs more)

The uneven form moves within n elements of the even form's bytes, so the ratio is the layout's cost,
not the data's; docs/performance.md has the measured figures beside OMB's binaries."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from rich.table import Table

from fabricprobe.mpienv.datatypes import numpy_dtype
from fabricprobe.report.labels import speedup, title
from fabricprobe.report.units import usec
from fabricprobe.sizes import format_size
from fabricprobe.specs import SPECS
from fabricprobe.store.schema import identity


def _ok(p: dict[str, Any]) -> bool:
    return p["status"] == "ok" and p["median_s"] > 0


def layout_groups(points: list[dict[str, Any]]) -> "OrderedDict[tuple, dict[int, dict[bool, dict]]]":
    """case (the uneven form's identity less size) -> mean block count -> even? -> point, for the vector
    collectives whose even form was measured beside them with the same everything else."""
    groups: OrderedDict[tuple, dict[int, dict[bool, dict]]] = OrderedDict()
    for p in points:
        spec = SPECS.get(p["collective"])
        if not hasattr(spec, "even") or not _ok(p):  # not a vector collective, or nothing to read
            continue
        case = identity({**p, "collective": spec.call_of or p["collective"]}, without=("bytes",))
        even = bool(spec.even)
        groups.setdefault(case, {}).setdefault(p["count"], {})[even] = p
    return OrderedDict(
        (case, {c: both for c, both in by_count.items() if len(both) == 2})
        for case, by_count in groups.items()
        if any(len(both) == 2 for both in by_count.values())
    )


def layout_table(case: tuple, by_count: dict[int, dict[bool, dict]]) -> Table:
    timers = (p["timer"] for both in by_count.values() for p in both.values())
    heading = title(f"[bold]{case.collective}[/]: uneven blocks against OMB's even ones", case._asdict(), timers)
    table = Table(title=heading, title_justify="left", show_edge=False, pad_edge=False)
    for name in ("mean block", "even µs", "uneven µs", "uneven / even"):
        table.add_column(name, justify="right", no_wrap=True)
    for count in sorted(by_count):
        even, uneven = by_count[count][True], by_count[count][False]
        itemsize = numpy_dtype(even["dtype"]).itemsize
        ratio = speedup(uneven["median_s"], even["median_s"])
        table.add_row(format_size(count * itemsize), usec(even["median_s"]), usec(uneven["median_s"]), f"{ratio:.2f}×")
    table.caption = "median times; the uneven form moves within n elements of the even form's bytes"
    table.caption_justify = "left"
    return table


def layout_tables(points: list[dict[str, Any]]) -> list[Table]:
    return [layout_table(case, by_count) for case, by_count in layout_groups(points).items()]
