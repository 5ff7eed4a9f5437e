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
from fabricprobe.report.served import served_lines
from fabricprobe.report.sparse import sparse_tables
from fabricprobe.report.summary import Crossover, SizeRange, summarize
from fabricprobe.report.units import gbps, percent, usec
from fabricprobe.report.warnings import run_notes, run_warnings
from fabricprobe.sizes import format_size
from fabricprobe.specs import SPECS
from fabricprobe.stats import point_noise
from fabricprobe.store import Run, being_written
from fabricprobe.store.schema import EMPTY, STATUS_RUNNING


def _status(run: Run) -> str:
    """The run's status, and for a "running" run that no process writes, what that means."""
    text = f"status [bold]{run.status}[/]"
    if run.status == STATUS_RUNNING and not being_written(run.path):
        text += " (no process is writing it: it was killed; `fabricprobe sweep --resume` finishes it)"
    return text


def run_header(run: Run) -> Panel:
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
    fabric = fabric_of(run)
    trust = trust_line(run, fabric, percents(run, fabric))
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


def series_table(
    key: tuple,
    rows: list[dict[str, Any]],
    nranks: int,
    window: int = DEFAULT_WINDOW,
    of_bound: dict[int, float] | None = None,
) -> Table:
    """One series' table; `of_bound`: point index -> % of bound (report/bound.py), a column where any row has one."""
    collective = key[0]
    spec = SPECS.get(collective)
    heading = title(f"[bold]{collective}[/]", key._asdict(), (p["timer"] for p in rows), window)
    table = Table(title=heading, title_justify="left", show_edge=False, pad_edge=False)
    sized = spec is None or spec.sized
    if sized:
        table.add_column("size", justify="right")
        table.add_column("count", justify="right")
    for name in ("min", "median", "mean", "p99", "max"):
        table.add_column(f"{name} µs", justify="right")
    table.add_column("±CI", justify="right")
    if sized:
        table.add_column("algbw GB/s", justify="right")
        table.add_column("busbw GB/s", justify="right")
    bounded = of_bound is not None and any(p["index"] in of_bound for p in rows)
    if bounded:
        table.add_column("% bound", justify="right")
    overlapped = any(p.get("overall_s", 0) > 0 for p in rows)
    if overlapped:
        for name in ("overall µs", "compute µs", "overlap"):
            table.add_column(name, justify="right")
    table.add_column("#wrong", justify="right")
    table.add_column("iters", justify="right")
    outliers = False
    for p in rows:
        cells = []
        if sized:
            cells += [format_size(p["bytes"]), str(p["count"])]
        if p["status"] in ("error", "not_runnable"):
            cells += [f"[red]{p['status'].replace('_', ' ')}[/]"] + [""] * 5
        else:
            cells += [usec(p[f]) for f in ("min_s", "median_s", "mean_s", "p99_s", "max_s")]
            if p["median_s"] > 0 and p["mean_s"] > OUTLIER_RATIO * p["median_s"]:
                cells[-3] += "†"
                outliers = True
            cells.append(percent(point_noise(p)))
        if sized:
            cells += [gbps(p["algbw_gbps"]), gbps(p["busbw_gbps"])]
        if bounded:
            cells.append(shown(of_bound[p["index"]]) if p["index"] in of_bound else "")
        if overlapped:
            measured = p.get("overall_s", 0) > 0
            cells += [usec(p["overall_s"]), usec(p["compute_s"]), f"{p['overlap_pct']:.0f}%"] if measured else [""] * 3
        wrong = p["wrong"]
        cells.append("n/a" if wrong < 0 else (f"[bold red]{wrong}[/]" if wrong else "0"))
        stop = "" if p["stop_reason"] in ("converged", "fixed") else "*"
        cells.append(f"{p['iterations']}{stop}")
        table.add_row(*cells)
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
    return table


def _row_names(rows: list) -> str:
    """Rows faster than their bound, named without their % (which would read above 100%)."""
    return "; ".join(row_name(p) for p, _ in rows)


def _at_percent(rows: list) -> str:
    """Rows and their % of bound, for the report's bound lines: "allreduce 1 MiB on 2 at 77%; ..."."""
    return "; ".join(f"{row_name(p)} at {pct:.0f}%" for p, pct in rows)


def render_run(run: Run, console: Console, collectives: list[str] | None = None) -> None:
    console.print(run_header(run))
    points = [
        p for p in run.points if p["collective"] != EMPTY and (collectives is None or p["collective"] in collectives)
    ]
    if not points:
        console.print("(no measured points)")
    for table in sparse_tables(points) + gpudirect_tables(points) + kernel_tables(points):
        console.print(table)
        console.print()
    window = run_window(run.config)
    for case, by_algorithm in comparison_groups(points).items():
        console.print(comparison_table(case, by_algorithm, window))
        console.print()
    fabric = fabric_of(run)
    of_bound = percents(run, fabric)
    for key, rows in group_series(points).items():
        console.print(series_table(key, rows, key.nranks, window, of_bound))
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


def _case_title(case: dict[str, Any], window: int) -> str:
    return title(f"[bold]{case['collective']}[/]", {k: v for k, v in case.items() if k != "nranks"}, (), window)


def _range_text(r: SizeRange, baseline: str) -> str:
    span = format_size(r.lo) if r.lo == r.hi else f"{format_size(r.lo)}–{format_size(r.hi)}"
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


def summary_table(run: Run, collectives: list[str] | None = None) -> Table:
    """One row per collective case: latency, peak busbw, n½, winners per size range, crossovers."""
    points = [p for p in run.points if collectives is None or p["collective"] in collectives]
    table = Table(
        title=f"[bold]summary of run {run.id}[/] ({run.attrs.get('mpi_vendor', '?')}, "
        f"{run.attrs.get('nranks', '?')} ranks, {timer_label(p['timer'] for p in points if p['status'] == 'ok')})",
        title_justify="left",
        show_lines=True,
        show_edge=False,
        pad_edge=False,
    )
    for col, just in (
        ("case", "left"),
        ("ranks", "right"),
        ("latency µs", "right"),
        ("peak busbw", "right"),
        ("n½", "right"),
        ("winner per size range", "left"),
        ("crossovers", "left"),
    ):
        table.add_column(col, justify=just)
    for s in summarize(points):
        table.add_row(
            _case_title(s.case, run_window(run.config)),
            str(s.case["nranks"]),
            f"{usec(s.latency_s)} @ {format_size(s.latency_bytes)}",
            f"{gbps(s.peak_busbw_gbps)} GB/s @ {format_size(s.peak_bytes)}",
            format_size(s.half_peak_bytes) if s.half_peak_bytes is not None else "-",
            "\n".join(_range_text(r, s.baseline) for r in s.ranges),
            "\n".join(
                _crossover_text(a, [c for c in s.crossovers if c.algorithm == a])
                for a in dict.fromkeys(c.algorithm for c in s.crossovers)
            )
            or ("-" if len(s.algorithms) > 1 else "(one algorithm)"),
        )
    far, impossible = furthest(run, collectives), beyond(run, collectives)
    bound_line = ("\nfurthest from their bound (lower bound / median): " + _at_percent(far) if far else "") + (
        f"\nfaster than their bound ({FASTER_MARK}: a premise of the bound failed; the header says which): "
        + _row_names(impossible[:3])
        if impossible
        else ""
    )
    table.caption = (
        "latency: the baseline (the library's own) at the smallest size; n½: smallest size reaching half "
        "the peak busbw.\nA range goes to another algorithm only where its median's 95% CI lies wholly "
        "below the baseline's (× = speedup over the baseline); crossovers likewise ignore noise." + bound_line
    )
    table.caption_justify = "left"
    return table
