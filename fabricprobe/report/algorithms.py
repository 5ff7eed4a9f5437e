"""Side by side: every algorithm measured for the same collective, datatype, op and mode, per size,
with its time relative to the library's and the winner."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from rich.table import Table

from fabricprobe.collectives import LIBRARY
from fabricprobe.report.labels import DEFAULT_WINDOW, speedup, title
from fabricprobe.report.units import usec
from fabricprobe.sizes import format_size
from fabricprobe.store.schema import identity

CASE_WITHOUT = ("algorithm", "bytes")  # a case: everything that identifies a point but the algorithm and size


def case_of(point: dict[str, Any]) -> tuple:
    return identity(point, without=CASE_WITHOUT)


def comparison_groups(points: list[dict[str, Any]]) -> "OrderedDict[tuple, dict[str, dict[int, dict]]]":
    """case -> algorithm -> size -> point, for cases measured with more than one algorithm."""
    groups: OrderedDict[tuple, dict[str, dict[int, dict]]] = OrderedDict()
    for p in points:
        if p["status"] != "ok":
            continue
        case = case_of(p)
        groups.setdefault(case, {}).setdefault(p["algorithm"], {})[p["bytes"]] = p
    return OrderedDict((k, v) for k, v in groups.items() if len(v) > 1)


def winners(by_algorithm: dict[str, dict[int, dict]]) -> dict[int, str]:
    """size -> fastest algorithm by median (ties go to the library)."""
    out = {}
    for size in sorted({s for rows in by_algorithm.values() for s in rows}):
        timed = [(rows[size]["median_s"], name != LIBRARY, name) for name, rows in by_algorithm.items() if size in rows]
        out[size] = min(timed)[2]
    return out


def comparison_table(case: tuple, by_algorithm: dict[str, dict[int, dict]], window: int = DEFAULT_WINDOW) -> Table:
    names = sorted(by_algorithm, key=lambda n: (n != LIBRARY, n))
    timers = (p["timer"] for rows in by_algorithm.values() for p in rows.values())
    heading = title(f"[bold]{case.collective}[/]: algorithms side by side", case._asdict(), timers, window)
    table = Table(title=heading, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("size", justify="right")
    for name in names:
        table.add_column(f"{name} µs" if name == LIBRARY else f"{name} µs (speedup = lib / this)", justify="right")
    table.add_column("winner")
    best = winners(by_algorithm)
    library = by_algorithm.get(LIBRARY, {})
    for size, winner in best.items():
        cells = [format_size(size)]
        for name in names:
            p = by_algorithm[name].get(size)
            if p is None:
                cells.append("-")
                continue
            text = usec(p["median_s"])
            base = library.get(size)
            if name != LIBRARY and base is not None and p["median_s"] > 0:
                gain = speedup(base["median_s"], p["median_s"])
                colour = "green" if gain > 1 else ("red" if gain < 0.5 else "")
                text += f" ([{colour}]{gain:.2f}[/])" if colour else f" ({gain:.2f})"
            if name == winner:
                text = f"[bold]{text}[/]"
            cells.append(text)
        cells.append(winner)
        table.add_row(*cells)
    table.caption = (
        "median times; speedup = library time / this algorithm's time (above 1: faster than the library); "
        "winner by median"
    )
    table.caption_justify = "left"
    return table
