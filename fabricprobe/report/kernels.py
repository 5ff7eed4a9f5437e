"""The reduction kernel against a copy, per size: both times, both bandwidths as the memory really moves
the bytes (on the host 3 × S each: the copy's destination is read before it is written; on a GPU the
copy moves 2 × S, specs/local.py), and the kernel's speedup over the copy from the two points measured
back to back at that size (the plan interleaves them)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from fabricprobe.report.labels import speedup, title
from fabricprobe.report.units import gbps, usec
from fabricprobe.sizes import format_size

KERNEL, COPY = "reduce_local", "copy_local"


def kernel_tables(points: list[dict[str, Any]]) -> list[Table]:
    ok = [p for p in points if p["status"] == "ok" and p["collective"] in (KERNEL, COPY)]
    cases = sorted({(p["nranks"], p["dtype"], p["mode"], p["buffer"]) for p in ok if p["collective"] == KERNEL})
    tables = []
    for nranks, dtype, mode, buffer in cases:
        here = [p for p in ok if (p["nranks"], p["dtype"], p["mode"], p["buffer"]) == (nranks, dtype, mode, buffer)]
        copies = {p["bytes"]: p for p in here if p["collective"] == COPY}
        kernels = [p for p in here if p["collective"] == KERNEL and p["bytes"] in copies]
        if not kernels:
            continue
        what = dict(collective=KERNEL, dtype=dtype, mode=mode, buffer=buffer, transfer="", nranks=nranks)
        heading = title("[bold]reduction kernel against a copy[/]", what, (p["timer"] for p in kernels))
        t = Table(title=heading, title_justify="left", show_edge=False, pad_edge=False)
        for col in ("size", "op", "kernel µs", "copy µs", "kernel GB/s", "copy GB/s", "kernel speedup (copy / kernel)"):
            t.add_column(col, justify="left" if col == "op" else "right")
        for p in sorted(kernels, key=lambda q: (q["bytes"], q["op"])):
            c = copies[p["bytes"]]
            t.add_row(
                format_size(p["bytes"]),
                p["op"],
                usec(p["median_s"]),
                usec(c["median_s"]),
                gbps(p["busbw_gbps"]),
                gbps(c["busbw_gbps"]),
                f"{speedup(c['median_s'], p['median_s']):.2f}",
            )
        moves = (
            "the kernel moves 3 × S (reads dst and src, writes dst), the copy 2 × S (a GPU writes whole "
            "sectors without reading them)"
            if buffer != "host"
            else "both move 3 × S (kernel: reads dst and src, writes dst; copy: reads src, reads dst's lines "
            "before writing them)"
        )
        t.caption = (
            f"medians, every rank at once; {moves}; speedup = copy time / kernel time, from the two points "
            "measured back to back at each size"
        )
        t.caption_justify = "left"
        tables.append(t)
    return tables
