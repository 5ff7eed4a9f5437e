"""`fabricprobe model` output: rich tables, or JSON."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from fabricprobe.costmodel.analysis import Comparison, ScalePrediction
from fabricprobe.costmodel.fit import Fitted
from fabricprobe.report.export import json_safe
from fabricprobe.report.units import usec
from fabricprobe.sizes import format_size


def _gbps(seconds_per_byte: float) -> str:
    return "∞" if seconds_per_byte <= 0 else f"{1 / seconds_per_byte / 1e9:.2f}"


def params_table(fitted: Fitted) -> Table:
    t = Table(
        title="[bold]fitted parameters[/] (from this run's ping-pong and reduce_local points)",
        title_justify="left",
        show_edge=False,
    )
    for col in ("parameter", "value", "as bandwidth", "from", "fit rms error"):
        t.add_column(col, justify="right" if col != "parameter" else "left")
    p = fitted.params
    for level, link in (("intra", p.intra), ("inter", p.inter)):
        fit = fitted.fits.get(level)
        source = f"{fit.points} latency points ({level} pair)" if fit else "same as intra (one level)"
        rms = f"{fit.rel_rms * 100:.0f}%" if fit else ""
        t.add_row(f"α {level}", f"{link.alpha * 1e6:.3f} µs", "", source, rms)
        t.add_row(f"β {level}", f"{link.beta * 1e12:.2f} ps/B", f"{_gbps(link.beta)} GB/s", source, rms)
    g = fitted.fits["gamma"]
    t.add_row(
        "γ",
        f"{p.gamma * 1e12:.2f} ps/B",
        f"{_gbps(p.gamma)} GB/s reduced",
        f"{g.points} reduce_local points",
        f"{g.rel_rms * 100:.0f}%",
    )
    t.add_row("kernel call", f"{p.reduce_overhead * 1e6:.3f} µs", "", "reduce_local intercept", "")
    m = fitted.fits.get("mpi4py")
    t.add_row(
        "mpi4py message",
        f"{p.message_overhead * 1e6:.3f} µs",
        "",
        f"{m.points} mpi4py ping-pong points" if m else "not measured (latency/mpi4py)",
        "",
    )
    t.caption = (
        "the last two rows are fabricprobe's Python costs per message and per reduction: added when "
        "predicting this run's hand-written algorithms, left out of the larger-machine predictions"
    )
    t.caption_justify = "left"
    return t


def comparison_table(comp: Comparison) -> Table:
    algorithms = sorted({r["algorithm"] for r in comp.rows})
    sizes = sorted({r["size"] for r in comp.rows})
    cell = {(r["size"], r["algorithm"]): r for r in comp.rows}
    t = Table(
        title=f"[bold]{comp.collective}[/] {comp.dtype} {comp.op}: measured / predicted µs (error)"
        + (f" · measured: {comp.measured}" if comp.measured else ""),
        title_justify="left",
        show_edge=False,
    )
    t.add_column("size", justify="right")
    for a in algorithms:
        t.add_column(a, justify="right")
    for size in sizes:
        row = [format_size(size)]
        for a in algorithms:
            r = cell.get((size, a))
            row.append("-" if r is None else f"{usec(r['measured_s'])} / {usec(r['predicted_s'])} ({r['error']:+.0%})")
        t.add_row(*row)

    def errs(regime: str) -> str:
        per = ", ".join(f"{a} {comp.median_abs_error(a, regime):.0%}" for a in algorithms)
        return f"{per}; all {comp.median_abs_error(None, regime):.0%}"

    t.caption = (
        f"median |error| from 64 KiB: {errs('bandwidth')}\n"
        f"median |error| below 64 KiB: {errs('latency')} (Python bookkeeping per call, not modelled, "
        "dominates there)"
    )
    t.caption_justify = "left"
    return t


def _crossover_text(items: list[tuple[float, str, str]]) -> str:
    if not items:
        return "none"
    return "; ".join(f"{a} → {b} at {format_size(int(round(size)))}" for size, a, b in items)


def _unmodelled_text(names: list[str]) -> str:
    return f"not modelled (no cost formula): {', '.join(names)}" + (
        " — the library's own choice of algorithm is not known to the model" if "library" in names else ""
    )


def scale_table(pred: ScalePrediction) -> Table:
    p = pred.nodes * pred.per_node
    kind = "fabricprobe's Python implementations" if pred.software else "the algorithms, without Python overheads"
    t = Table(
        title=f"[bold]{pred.collective}[/] predicted at {pred.nodes} nodes × {pred.per_node} ranks = {p:,} ranks, "
        f"µs ({kind})",
        title_justify="left",
        show_edge=False,
    )
    t.add_column("size", justify="right")
    for a in pred.table:
        t.add_column(a, justify="right")
    t.add_column("winner")
    for n, winner in pred.winners.items():
        t.add_row(
            format_size(n),
            *[(f"[bold]{usec(pred.table[a][n])}[/]" if a == winner else usec(pred.table[a][n])) for a in pred.table],
            winner,
        )
    t.caption = f"predicted crossovers: {_crossover_text(pred.crossovers)}" + (
        f"\n{_unmodelled_text(pred.unmodelled)}" if pred.unmodelled else ""
    )
    t.caption_justify = "left"
    return t


def sparse_table(comp) -> Table:
    t = Table(
        title=f"[bold]sparse_allreduce[/] {comp.dtype}: measured / predicted µs (error)",
        title_justify="left",
        show_edge=False,
    )
    for col in ("size", "density", "algorithm", "measured µs", "predicted µs", "error"):
        t.add_column(col, justify="right" if col != "algorithm" else "left")
    for r in comp.rows:
        t.add_row(
            format_size(r["size"]),
            f"{r['density']:g}",
            r["algorithm"],
            usec(r["measured_s"]),
            usec(r["predicted_s"]),
            f"{r['error']:+.0%}",
        )
    t.caption = (
        f"median |error| {comp.median_abs_error():.0%} "
        "(supports assumed disjoint: an upper bound for the exact algorithms)"
    )
    t.caption_justify = "left"
    return t


def sparse_crossover_table(comp) -> Table:
    t = Table(
        title=f"[bold]crossover density[/] {comp.dtype}: above it the dense allreduce wins",
        title_justify="left",
        show_edge=False,
    )
    for col in ("size", "algorithm", "measured (vs the library)", "predicted (vs the best modelled dense)"):
        t.add_column(col, justify="right" if col != "algorithm" else "left")
    for c in comp.crossovers:
        pred = c["predicted"]
        t.add_row(
            format_size(c["size"]),
            c["algorithm"],
            c["measured"],
            "never (sparse wins up to 1)" if pred is None else f"{pred:.3g}",
        )
    return t


def scale_crossover_table(nodes: int, per_node: int, table: dict) -> Table:
    sizes = sorted(next(iter(table.values())))
    t = Table(
        title=f"[bold]sparse_allreduce[/] predicted crossover density at {nodes} × {per_node} = "
        f"{nodes * per_node:,} ranks (float32, without Python overheads)",
        title_justify="left",
        show_edge=False,
    )
    t.add_column("algorithm")
    for n in sizes:
        t.add_column(format_size(n), justify="right")
    for a, row in table.items():
        t.add_row(a, *["never" if row[n] is None else f"{row[n]:.2g}" for n in sizes])
    return t


def render(
    console: Console,
    fitted: Fitted,
    shape: tuple[int, int],
    comparisons: list[Comparison],
    scales: list[ScalePrediction],
    sparse: list | None = None,
    sparse_scales: list | None = None,
) -> None:
    console.print(params_table(fitted))
    console.print()
    nodes, per_node = shape
    for comp in comparisons:
        if comp.rows:
            console.print(comparison_table(comp))
            crossings = _crossover_text(comp.predicted_crossovers)
            console.print(f"  at this run's {nodes} × {per_node}: predicted crossovers: {crossings}")
            measured = "; ".join(f"{a} → {b} at {format_size(s)}" for s, a, b in comp.measured_crossovers) or "none"
            console.print(f"  measured crossovers (hand-written algorithms, measured sizes): {measured}")
        else:
            console.print(
                f"[bold]{comp.collective}[/] {comp.dtype} {comp.op}: no measured algorithm has a cost formula"
            )
        if comp.unmodelled:
            console.print(f"  {_unmodelled_text(comp.unmodelled)}")
        console.print()
    for pred in scales:
        console.print(scale_table(pred))
        console.print()
    for comp in sparse or []:
        console.print(sparse_table(comp))
        console.print(sparse_crossover_table(comp))
        console.print()
    for nodes, per_node, table in sparse_scales or []:
        console.print(scale_crossover_table(nodes, per_node, table))
        console.print()


def to_json(
    fitted: Fitted,
    shape: tuple[int, int],
    comparisons: list[Comparison],
    scales: list[ScalePrediction],
    sparse: list | None = None,
    sparse_scales: list | None = None,
) -> str:
    doc = {
        "params": fitted.params.as_dict(),
        "fits": {k: vars(v) for k, v in fitted.fits.items()},
        "run_shape": {"nodes": shape[0], "ranks_per_node": shape[1]},
        "comparisons": [
            dict(
                collective=c.collective,
                dtype=c.dtype,
                op=c.op,
                measured=c.measured,
                rows=c.rows,
                predicted_crossovers=c.predicted_crossovers,
                measured_crossovers=c.measured_crossovers,
                median_abs_error=c.median_abs_error(),
                median_abs_error_bandwidth=c.median_abs_error(regime="bandwidth"),
                median_abs_error_latency=c.median_abs_error(regime="latency"),
                unmodelled=c.unmodelled,
            )
            for c in comparisons
        ],
        "scales": [
            dict(
                collective=s.collective,
                nodes=s.nodes,
                ranks_per_node=s.per_node,
                predicted_s=s.table,
                winners=s.winners,
                crossovers=s.crossovers,
                unmodelled=s.unmodelled,
            )
            for s in scales
        ],
        "sparse": [
            dict(dtype=c.dtype, rows=c.rows, crossovers=c.crossovers, median_abs_error=c.median_abs_error())
            for c in sparse or []
        ],
        "sparse_scales": [dict(nodes=n, ranks_per_node=g, crossover_density=t) for n, g, t in sparse_scales or []],
    }
    return json.dumps(json_safe(doc), indent=1) + "\n"
