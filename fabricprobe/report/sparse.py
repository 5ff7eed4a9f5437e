"""Sparse allreduce against the library's dense allreduce: per size and density, each algorithm's
time, its speedup over dense, the bytes it sent, the top-k selection time beside it, and the
crossover density where dense starts to win."""

from __future__ import annotations

import math
from typing import Any

from rich.table import Table

from fabricprobe.report.labels import speedup, title
from fabricprobe.report.summary import log_crossing
from fabricprobe.report.units import usec
from fabricprobe.sizes import format_size
from fabricprobe.store.schema import is_dense_baseline


def _kib(nbytes: float) -> str:
    return "-" if nbytes is None or nbytes < 0 else f"{nbytes / 1024:.1f}"


def crossover_density(speedups: list[tuple[float, float]]) -> tuple[str, float | None]:
    """From (density, dense time / sparse time) pairs: where the speedup falls through 1.

    Returns a description and the interpolated density (log-log between the two measured
    densities around the crossing), or None when every measured density is on one side."""
    pts = sorted((d, s) for d, s in speedups if s > 0 and math.isfinite(s))
    if not pts:
        return "-", None
    if all(s >= 1 for _, s in pts):
        return f"sparse wins up to {pts[-1][0]:g}", None
    if all(s < 1 for _, s in pts):
        return f"dense wins from {pts[0][0]:g}", None
    for (d0, s0), (d1, s1) in zip(pts, pts[1:]):
        if s0 >= 1 > s1:
            d = log_crossing(d0, s0, d1, s1)
            return f"{d:.3g}", d
    return "-", None


def sparse_tables(points: list[dict[str, Any]]) -> list[Table]:
    # The dense baseline is timed between barriers, so sparse points are read against it in that mode only
    # (a loop-mode sparse point keeps its own series table).
    sparse = [
        p for p in points if p["collective"] == "sparse_allreduce" and p["status"] == "ok" and p["mode"] == "barrier"
    ]
    if not sparse:
        return []
    dense = {
        (p["nranks"], p["dtype"], p["buffer"], p["transfer"], p["bytes"]): p for p in points if is_dense_baseline(p)
    }
    # top-k selection is local to a rank, the same whatever the communicator
    select = {
        (p["dtype"], p["bytes"], p["density"], p["algorithm"]): p["median_s"]
        for p in points
        if p["collective"] == "topk_local" and p["status"] == "ok"
    }
    tables = []
    for nranks, dtype, buffer, transfer in sorted(
        {(p["nranks"], p["dtype"], p["buffer"], p["transfer"]) for p in sparse}
    ):
        rows = [
            p
            for p in sparse
            if (p["nranks"], p["dtype"], p["buffer"], p["transfer"]) == (nranks, dtype, buffer, transfer)
        ]
        algorithms = sorted({p["algorithm"] for p in rows})
        what = dict(collective="sparse_allreduce", dtype=dtype, mode="barrier", buffer=buffer, transfer=transfer)
        timers = [p["timer"] for p in rows]
        t = Table(
            title=title(
                "[bold]sparse allreduce against the library's dense allreduce[/]", {**what, "nranks": nranks}, timers
            ),
            title_justify="left",
            show_edge=False,
            pad_edge=False,
        )
        for col in ("size", "density", "k", "dense µs", "dense KiB/rank"):
            t.add_column(col, justify="right")
        for a in algorithms:
            t.add_column(f"{a}\nµs (speedup = dense / this) KiB", justify="right")
        t.add_column("top-k select µs\nnumba / argpartition", justify="right")
        crossings = []
        for size in sorted({p["bytes"] for p in rows}):
            d = dense.get((nranks, dtype, buffer, transfer, size))
            dense_s = d["median_s"] if d else math.nan
            ring_bytes = 2 * (nranks - 1) / nranks * size if nranks > 1 else 0
            by_alg: dict[str, list[tuple[float, float]]] = {a: [] for a in algorithms}
            for density in sorted({p["density"] for p in rows if p["bytes"] == size}):
                here = {p["algorithm"]: p for p in rows if p["bytes"] == size and p["density"] == density}
                best = min(here.values(), key=lambda p: p["median_s"])["algorithm"]
                any_point = next(iter(here.values()))
                k = max(1, round(density * any_point["count"])) if any_point["count"] else 0
                cells = [format_size(size), f"{density:g}", str(k), usec(dense_s), _kib(ring_bytes)]
                for a in algorithms:
                    p = here.get(a)
                    if p is None:
                        cells.append("-")
                        continue
                    gain = speedup(dense_s, p["median_s"])
                    by_alg[a].append((density, gain))
                    colour = "green" if gain >= 1 else "red"
                    text = f"{usec(p['median_s'])} ([{colour}]{gain:.2f}[/]) {_kib(p['bytes_sent'])}"
                    cells.append(f"[bold]{text}[/]" if a == best else text)
                cells.append(
                    f"{usec(select.get((dtype, size, density, 'numba'), math.nan))} / "
                    f"{usec(select.get((dtype, size, density, 'argpartition'), math.nan))}"
                )
                t.add_row(*cells)
            crossings.append(
                f"{format_size(size)}: " + ", ".join(f"{a} {crossover_density(v)[0]}" for a, v in by_alg.items() if v)
            )
        t.caption = (
            "speedup = dense library time / sparse time (above 1: sparse is faster); KiB = bytes the busiest "
            "rank sent per call (dense: a ring's 2(n−1)/n·S); pairs selected before timing.\n"
            "crossover density (dense wins above): " + "; ".join(crossings)
        )
        t.caption_justify = "left"
        tables.append(t)
    return tables
