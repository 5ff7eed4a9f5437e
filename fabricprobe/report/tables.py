"""Rich terminal tables: one header per run, one table per series (collective, algorithm,
datatype, op, in-place, mode), shaped like nccl-tests/OMB output."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from fabricprobe.report.algorithms import comparison_groups, comparison_table
from fabricprobe.report.bound import (
    FASTER_MARK,
    Fabric,
    beyond,
    describe,
    doubts,
    fabric_of,
    furthest,
    percents,
    shown,
    trust_line,
)
from fabricprobe.report.buffers import header_line
from fabricprobe.report.fit import Column, fitted_table, left_out_line
from fabricprobe.report.gpudirect import gpudirect_tables
from fabricprobe.report.groups import group_series
from fabricprobe.report.kernels import kernel_tables
from fabricprobe.report.labels import (
    DEFAULT_WINDOW,
    OUTLIER_RATIO,
    on_device_buffers,
    row_name,
    run_window,
    timer_label,
    title,
)
from fabricprobe.report.layouts import layout_tables
from fabricprobe.report.served import served_lines
from fabricprobe.report.sparse import sparse_tables
from fabricprobe.report.summary import Crossover, SizeRange, summarize
from fabricprobe.report.units import gbps, percent, usec
from fabricprobe.report.warnings import run_notes, run_warnings
from fabricprobe.sizes import format_size
from fabricprobe.specs import SPECS
from fabricprobe.stats import point_noise
from fabricprobe.store import Run, being_written
from fabricprobe.store.damage import held
from fabricprobe.store.schema import EMPTY, STATUS_RUNNING


def _status(run: Run) -> str:
    """The run's status, and for a "running" run that no process writes, what that means."""
    text = f"status [bold]{run.status}[/]"
    if run.status == STATUS_RUNNING and not being_written(run.path):
        text += f" (no process is writing it: it was killed; {held(run)}; `fabricprobe sweep --resume` finishes it)"
    return text


def run_header(run: Run, fabric: Fabric | None = None, of_bound: dict[int, float] | None = None) -> Panel:
    """The run's panel; `fabric` and `of_bound`: its bounds (report/bound.py), when the caller has them."""
    a = run.attrs
    lines = [
        f"[bold]run {run.id}[/] of {run.path}  {_status(run)}  started {a.get('started', '?')}",
        f"MPI: {a.get('mpi_vendor', '?')} {a.get('mpi_version', '')}   mpi4py {a.get('mpi4py_version', '?')}   "
        f"thread level {a.get('thread_level_requested', '?')} → provided {a.get('thread_level_provided', '?')}",
        f"ranks: {a.get('nranks', '?')} on {a.get('topology', '?')}   "
        f"hosts: {', '.join(sorted(set(a.get('hosts') or [])))}"
        + (
            f"   hardware: {a.get('nnodes')} node(s), {a.get('ranks_per_node')} ranks on "
            f"{a.get('cores_per_node')} cores"
            if a.get("virtual_topology")
            else ""
        )
        + (f"   [bold magenta]{a['lab']}[/] (fabric lab)" if a.get("lab") else ""),
    ]
    cost = _cost(a)
    if cost:
        lines.append(cost)
    lines += served_lines(run)
    startup = a.get("startup") or {}
    if startup:
        init, first = startup["init_ms"], startup["first_collective_ms"]
        lines.append(
            f"MPI start-up: MPI_Init {min(init):.3g}–{max(init):.3g} ms (mean {sum(init) / len(init):.3g}) over "
            f"{len(init)} ranks; to the end of the first barrier {min(first):.3g}–{max(first):.3g} ms"
        )
    if a.get("cuda_library") == "yes" or a.get("gpu"):
        lines.append(f"CUDA-aware MPI: {a.get('cuda', a.get('cuda_aware', '?'))}")
    buffers = header_line(a)
    if buffers:
        lines.append(buffers)
    sync = a.get("clock_sync") or {}
    if sync:
        worst = lambda key: max((abs(x) for x in sync.get(key) or [0.0]), default=0.0) * 1e6  # noqa: E731
        lines.append(
            f"clock sync (window mode): residual {worst('residual_after_sync_s'):.3g} µs after it, "
            f"{worst('residual_at_end_s'):.3g} µs at the end ({sync.get('end_after_s', 0):.0f} s later); "
            f"drift up to {max((abs(d) for d in sync.get('drift_ppm') or [0.0]), default=0.0):.3g} ppm"
        )
    floors = [p for p in run.points if p["collective"] == EMPTY and p["status"] == "ok"]
    if floors:
        text = ", ".join(
            f"{p['algorithm']} {usec(p['median_s'])} µs" + (f" ({p['mode']})" if p["mode"] != "barrier" else "")
            for p in floors
        )
        lines.append(f"harness floor (empty timed region, median): {text}")
    fabric = fabric if fabric is not None else fabric_of(run)
    trust = trust_line(run, fabric, of_bound if of_bound is not None else percents(run, fabric))
    if trust:
        lines.append(trust)
    body: list[Any] = [Text.from_markup(line) for line in lines]
    for warning in run_warnings(run):
        body.append(Text.from_markup(f"[bold yellow]warning:[/] {warning}"))
    for note in run_notes(run):
        body.append(Text.from_markup(f"[cyan]note:[/] {note}"))
    return Panel(Group(*body), title="fabricprobe results", expand=False)


def _cost(a: dict[str, Any]) -> str:
    """Wall time and peak memory of the run, where recorded."""
    from datetime import datetime

    parts = []
    try:
        took = datetime.fromisoformat(a["ended"]) - datetime.fromisoformat(a["started"])
        parts.append(f"wall time {took.total_seconds():.0f} s")
    except (KeyError, TypeError, ValueError):
        pass
    if a.get("peak_rss_mib"):
        parts.append(f"peak memory: rank 0 {a['rank0_peak_rss_mib']:.0f} MiB, largest rank {a['peak_rss_mib']:.0f} MiB")
    return "   ".join(parts)


# The series table's columns, in their order, with how long each is kept on a narrow terminal (1 =
# longest: what a user acts on; the spread of the times and the overlap's parts go first).
SERIES_COLUMNS = {
    "size": 1,
    "count": 8,
    "min µs": 10,
    "median µs": 1,
    "mean µs": 13,
    "p99 µs": 12,
    "max µs": 11,
    "±CI": 5,
    "algbw GB/s": 9,
    "busbw GB/s": 2,
    "% bound": 3,
    "overall µs": 14,
    "compute µs": 15,
    "overlap": 6,
    "#wrong": 1,
    "iters": 7,
}


def _series_cells(p: dict[str, Any], of_bound: dict[int, float] | None) -> dict[str, str]:
    """One row of a series table: column header -> cell (every column it could have)."""
    cells = {"size": format_size(p["bytes"]), "count": str(p["count"])}
    if p["status"] in ("error", "not_runnable"):
        cells["median µs"] = f"[red]{p['status'].replace('_', ' ')}[/]"
    else:
        for name in ("min", "median", "mean", "p99", "max"):
            cells[f"{name} µs"] = usec(p[f"{name}_s"])
        if p["median_s"] > 0 and p["mean_s"] > OUTLIER_RATIO * p["median_s"]:
            cells["mean µs"] += "†"
        cells["±CI"] = percent(point_noise(p))
    cells["algbw GB/s"], cells["busbw GB/s"] = gbps(p["algbw_gbps"]), gbps(p["busbw_gbps"])
    if of_bound is not None and p["index"] in of_bound:
        cells["% bound"] = shown(of_bound[p["index"]])
    if p.get("overall_s", 0) > 0:
        cells["overall µs"], cells["compute µs"] = usec(p["overall_s"]), usec(p["compute_s"])
        cells["overlap"] = f"{p['overlap_pct']:.0f}%"
    wrong = p["wrong"]
    cells["#wrong"] = "n/a" if wrong < 0 else (f"[bold red]{wrong}[/]" if wrong else "0")
    cells["iters"] = f"{p['iterations']}{'' if p['stop_reason'] in ('converged', 'fixed') else '*'}"
    return cells


def series_table(
    key: tuple,
    rows: list[dict[str, Any]],
    nranks: int,
    window: int = DEFAULT_WINDOW,
    of_bound: dict[int, float] | None = None,
    width: int | None = None,
) -> Table:
    """One series' table; `of_bound`: point index -> % of bound (report/bound.py), a column where any row
    has one; `width`: the console's, which the table fits by leaving out its least important columns."""
    collective = key[0]
    spec = SPECS.get(collective)
    heading = title(f"[bold]{collective}[/]", key._asdict(), (p["timer"] for p in rows), window)
    sized = spec is None or spec.sized
    bounded = of_bound is not None and any(p["index"] in of_bound for p in rows)
    overlapped = any(p.get("overall_s", 0) > 0 for p in rows)
    absent = set()
    if not sized:
        absent |= {"size", "count", "algbw GB/s", "busbw GB/s"}
    if not bounded:
        absent.add("% bound")
    if not overlapped:
        absent |= {"overall µs", "compute µs", "overlap"}
    columns = [Column(name, keep) for name, keep in SERIES_COLUMNS.items() if name not in absent]
    outliers = False
    for p in rows:
        cells = _series_cells(p, of_bound)
        outliers = outliers or cells.get("mean µs", "").endswith("†")
        for column in columns:
            column.cells.append(cells.get(column.header, ""))
    table, left_out = fitted_table(columns, width, title=heading, title_justify="left")
    outliers = outliers and "mean µs" not in left_out
    if spec is not None and sized:
        device = on_device_buffers(rows)
        factor = spec.busbw_factor_on(nranks, device)
        table.caption = (
            f"busbw = algbw × {spec.busbw_formula_for(device)} = algbw × {factor:.3g} (n={nranks}); "
            "algbw = size / median; iteration time = slowest rank; * = time cap before CI target"
            + ("\n% bound = the fabric's lower bound for the row / its median (100% = at the bound)" if bounded else "")
            + (
                f"\n{FASTER_MARK} faster than its bound, which cannot hold in this run (why: the header)"
                if bounded and any(of_bound.get(p["index"], 0.0) > 100.0 for p in rows)
                else ""
            )
        )
        table.caption_justify = "left"
    if outliers:
        table.caption = (
            table.caption + "\n" if table.caption else ""
        ) + f"† mean above {OUTLIER_RATIO} × median: outliers dominate the mean (and OMB's Avg, a mean)"
        table.caption_justify = "left"
    if overlapped:
        table.caption = (table.caption + "\n" if table.caption else "") + (
            "overall = started, computation as long as the median, waited (OMB's Overall); compute = the "
            "computation; overlap = 1 − (overall − compute) / median, at least 0 (engine/overlap.py)"
        )
        table.caption_justify = "left"
    windowed = [p for p in rows if p.get("window_s", 0) > 0]
    if windowed:
        widths = [p["window_s"] * 1e6 for p in windowed]
        missed = sum(p["windows_missed"] for p in windowed)
        table.caption = (table.caption + "\n" if table.caption else "") + (
            f"window mode: call i starts at t0 + i·w on every rank's synchronized clock, w {min(widths):.3g}–"
            f"{max(widths):.3g} µs; {missed} window(s) some rank reached late, left untimed"
        )
        table.caption_justify = "left"
    reasons = sorted({p["note"] for p in rows if p["status"] == "not_runnable"})
    if reasons:
        table.caption = "\n".join([table.caption or ""] + [f"not runnable: {r}" for r in reasons]).strip()
        table.caption_justify = "left"
    if left_out:
        table.caption = "\n".join([table.caption or "", left_out_line(left_out, width)]).strip()
        table.caption_justify = "left"
    return table


def _row_names(rows: list) -> str:
    """Rows faster than their bound, named without their % (which would read above 100%)."""
    return "; ".join(row_name(p) for p, _ in rows)


def _at_percent(rows: list) -> str:
    """Rows and their % of bound, for the report's bound lines: "allreduce 1 MiB on 2 at 77%; ..."."""
    return "; ".join(f"{row_name(p)} at {pct:.0f}%" for p, pct in rows)


def _fabric_first(collective: str) -> int:
    """The order of a report's series: what the fabric does first (point-to-point 0, collectives 1),
    what one process does (reduction kernels, copies) after (2)."""
    spec = SPECS.get(collective)
    if spec is None or spec.local:
        return 2
    return 0 if spec.pt2pt else 1


def render_run(run: Run, console: Console, collectives: list[str] | None = None) -> None:
    """The whole report of a run: its header, then the fabric's tables (point-to-point, collectives,
    algorithms compared), then sparse and device transfers, then the kernels; each fits console.width."""
    fabric = fabric_of(run)
    of_bound = percents(run, fabric)
    console.print(run_header(run, fabric, of_bound))
    points = [
        p for p in run.points if p["collective"] != EMPTY and (collectives is None or p["collective"] in collectives)
    ]
    if not points:
        console.print("(no measured points)")
    window = run_window(run.config)
    series = sorted(group_series(points).items(), key=lambda item: _fabric_first(item[0].collective))
    fabric_series = [item for item in series if _fabric_first(item[0].collective) < 2]
    others = [item for item in series if _fabric_first(item[0].collective) == 2]
    tables = [series_table(key, rows, key.nranks, window, of_bound, console.width) for key, rows in fabric_series]
    tables += [comparison_table(case, by_alg, window) for case, by_alg in comparison_groups(points).items()]
    tables += sparse_tables(points) + gpudirect_tables(points) + layout_tables(points)
    tables += [series_table(key, rows, key.nranks, window, of_bound, console.width) for key, rows in others]
    for table in tables + kernel_tables(points):
        console.print(table)
        console.print()
    far = furthest(run, collectives, found=of_bound)
    if far:
        console.print(f"[bold]bound[/] ({describe(fabric)}; docs/methodology.md)")
        console.print("furthest from their bound: " + _at_percent(far))
    impossible = beyond(run, collectives, found=of_bound)
    if impossible:
        console.print(
            f"[bold yellow]faster than their bound[/] ({FASTER_MARK}, {len(impossible)} row(s); "
            + "; ".join(doubts(run, fabric, of_bound))
            + "): "
            + _row_names(impossible[:3])
        )


def _case_labels(cases: list[dict[str, Any]]) -> list[str]:
    """A summary row's case in a few words: its collective, then only what tells it from the other
    cases of that collective (the pair kind, the mode, the datatype where there are several); `report`
    has the full titles."""

    def word(key: str, value: Any) -> str:
        if isinstance(value, bool) or key == "in_place":
            return "in-place" if value else ""
        return "" if value in ("", None, "none") else str(value)

    labels = []
    for case in cases:
        same = [c for c in cases if c["collective"] == case["collective"]]
        varying = [k for k in case if k not in ("collective", "nranks") and len({str(c.get(k)) for c in same}) > 1]
        words = filter(None, (word(k, case.get(k)) for k in varying))
        labels.append(" ".join([f"[bold]{case['collective']}[/]", *words]))
    return labels


def _range_text(r: SizeRange, baseline: str, only: bool = False) -> str:
    """`only`: the one range of the case, every size measured ("all: library" keeps the row to one line
    at 80 columns, where "8 B–4 MiB: library" folded every row in two)."""
    span = "all" if only else format_size(r.lo) if r.lo == r.hi else f"{format_size(r.lo)}–{format_size(r.hi)}"
    if r.winner == baseline:
        return f"{span}: {r.winner}"
    gain = (
        f"{r.speedup_min:.2f}×"
        if abs(r.speedup_max - r.speedup_min) < 0.005
        else f"{r.speedup_min:.2f}–{r.speedup_max:.2f}×"
    )
    return f"{span}: [green]{r.winner}[/] ({gain})"


def _crossover_text(algorithm: str, crossings: list[Crossover]) -> str:
    """The size intervals, bounded by crossovers, where the algorithm beats the baseline."""
    spans, start = [], None
    for c in crossings:
        if c.faster == "above":
            start = c.estimate
        else:
            spans.append(f"{'≈' + format_size(start) if start else 'up to'} – ≈{format_size(c.estimate)}")
            start = None
    if start is not None:
        spans.append(f"from ≈{format_size(start)}")
    return f"{algorithm} faster {', '.join(spans)}"


def summary_table(
    run: Run, collectives: list[str] | None = None, width: int | None = None, of_bound: dict[int, float] | None = None
) -> Table:
    """One row per collective case: latency, peak busbw, n½, winners per size range, crossovers; fitted
    to `width` (report/fit.py); `of_bound`: the run's percents(), when the caller has them."""
    points = [p for p in run.points if collectives is None or p["collective"] in collectives]
    heading = (
        f"[bold]summary of run {run.id}[/] ({run.attrs.get('mpi_vendor', '?')}, "
        f"{run.attrs.get('nranks', '?')} ranks, {timer_label(p['timer'] for p in points if p['status'] == 'ok')})"
    )
    columns = [
        Column("case", 1, "left", wrap=True),
        Column("ranks", 2),
        Column("latency µs", 1),
        Column("peak busbw", 1),
        Column("n½", 4),
        Column("winner by size", 1, "left", wrap=True),
        Column("crossovers", 3, "left", wrap=True),
    ]
    summaries = sorted(summarize(points), key=lambda s: _fabric_first(s.case["collective"]))
    labels = _case_labels([s.case for s in summaries])
    for label, s in zip(labels, summaries):
        cells = [
            label,
            str(s.case["nranks"]),
            f"{usec(s.latency_s)} @ {format_size(s.latency_bytes)}",
            f"{gbps(s.peak_busbw_gbps)} GB/s @ {format_size(s.peak_bytes)}",
            format_size(s.half_peak_bytes) if s.half_peak_bytes is not None else "-",
            "\n".join(_range_text(r, s.baseline, only=len(s.ranges) == 1) for r in s.ranges),
            "\n".join(
                _crossover_text(a, [c for c in s.crossovers if c.algorithm == a])
                for a in dict.fromkeys(c.algorithm for c in s.crossovers)
            )
            or ("-" if len(s.algorithms) > 1 else "(one algorithm)"),
        ]
        for column, cell in zip(columns, cells):
            column.cells.append(cell)
    table, left_out = fitted_table(columns, width, title=heading, title_justify="left")
    of_bound = of_bound if of_bound is not None else percents(run)
    far, impossible = furthest(run, collectives, found=of_bound), beyond(run, collectives, found=of_bound)
    bound_line = ("\nfurthest from their bound (lower bound / median): " + _at_percent(far) if far else "") + (
        f"\nfaster than their bound ({FASTER_MARK}: a premise of the bound failed; the header says which): "
        + _row_names(impossible[:3])
        if impossible
        else ""
    )
    table.caption = (
        "latency: the baseline (the library's own) at the smallest size; n½: smallest size reaching half "
        "the peak busbw.\nA range goes to another algorithm only where its median's 95% CI lies wholly "
        "below the baseline's (× = speedup over the baseline); crossovers likewise ignore noise."
        + bound_line
        + ("\n" + left_out_line(left_out, width) if left_out else "")
    )
    table.caption_justify = "left"
    return table


def render_summary(run: Run, console: Console, collectives: list[str] | None = None) -> None:
    """What fits one screen: the run's header and its summary table, fitted to the console."""
    fabric = fabric_of(run)
    of_bound = percents(run, fabric)
    console.print(run_header(run, fabric, of_bound))
    console.print(summary_table(run, collectives, console.width, of_bound))


def render_end_of_sweep(run: Run, console: Console) -> None:
    """What a sweep prints when it ends: the summary, and where the full tables are."""
    render_summary(run, console)
    console.print(f"full tables: [bold]fabricprobe report {run.path} --run {run.id}[/]")
