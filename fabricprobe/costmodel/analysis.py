"""Everything `fabricprobe model` reports, as plain data (rendered as tables or JSON)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricprobe.collectives import LIBRARY
from fabricprobe.costmodel.crossover import best, crossovers, measured_crossovers
from fabricprobe.costmodel.fit import Fitted
from fabricprobe.costmodel.predict import predict, supported, unmodelled
from fabricprobe.report.algorithms import comparison_groups
from fabricprobe.report.labels import describe

SCALE_SIZES = [8, 1 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20]
BANDWIDTH_REGIME = 64 << 10  # from here on, messages dominate the Python implementations' bookkeeping


@dataclass
class Comparison:
    collective: str
    dtype: str
    op: str
    rows: list[dict[str, Any]] = field(default_factory=list)  # size, algorithm, measured_s, predicted_s, error
    predicted_crossovers: list[tuple[float, str, str]] = field(default_factory=list)
    measured_crossovers: list[tuple[int, str, str]] = field(default_factory=list)
    unmodelled: list[str] = field(default_factory=list)  # measured algorithms without a cost formula
    measured: str = ""  # what the measured side is: timed region, timers, buffers, ranks (report.labels)

    def median_abs_error(self, algorithm: str | None = None, regime: str | None = None) -> float:
        """Median |relative error|; regime "latency" (< 64 KiB), "bandwidth" (≥ 64 KiB) or None (all)."""
        errs = [
            abs(r["error"])
            for r in self.rows
            if algorithm in (None, r["algorithm"])
            and (regime is None or (r["size"] >= BANDWIDTH_REGIME) == (regime == "bandwidth"))
        ]
        return float(np.median(errs)) if errs else math.nan


@dataclass
class ScalePrediction:
    collective: str
    nodes: int
    per_node: int
    table: dict[str, dict[int, float]]  # algorithm -> size -> seconds
    winners: dict[int, str]
    crossovers: list[tuple[float, str, str]]
    software: bool = False
    unmodelled: list[str] = field(default_factory=list)  # registered algorithms without a cost formula


def run_shape(attrs: dict[str, Any]) -> tuple[int, int]:
    """(nodes, ranks per node) of the topology a run used."""
    per_node = attrs.get("topology_ranks_per_node") or attrs.get("ranks_per_node") or [attrs.get("nranks", 1)]
    nodes = len(per_node)
    return nodes, max(1, round(int(attrs.get("nranks", 1)) / nodes))


def compare(
    points: list[dict[str, Any]], fitted: Fitted, nodes: int, per_node: int, collectives: list[str] | None = None
) -> list[Comparison]:
    """Measured against predicted for every modelled algorithm in the run (barrier mode, out of place)."""
    out = []
    chosen = [p for p in points if p["mode"] == "barrier" and not p["in_place"]]
    for case, by_algorithm in comparison_groups(chosen).items():
        collective, dtype, op = case.collective, case.dtype, case.op
        if collectives is not None and collective not in collectives:
            continue
        modelled = {a: rows for a, rows in by_algorithm.items() if supported(collective, a)}
        timers = [p["timer"] for rows in by_algorithm.values() for p in rows.values()]
        what = {k: v for k, v in case._asdict().items() if k not in ("dtype", "op")}
        comp = Comparison(
            collective,
            dtype,
            op,
            unmodelled=unmodelled(collective, sorted(by_algorithm)),
            measured=" · ".join(describe(what, timers)),
        )
        for algorithm, rows in sorted(modelled.items()):
            for size, point in sorted(rows.items()):
                if size == 0:
                    continue
                predicted = predict(collective, algorithm, size, nodes, per_node, fitted.params, software=True)
                comp.rows.append(
                    dict(
                        size=size,
                        algorithm=algorithm,
                        measured_s=point["median_s"],
                        predicted_s=predicted,
                        error=(predicted - point["median_s"]) / point["median_s"],
                    )
                )
        names = sorted(modelled)
        comp.predicted_crossovers = crossovers(
            lambda a, n, c=collective: predict(c, a, n, nodes, per_node, fitted.params, software=True), names
        )
        comp.measured_crossovers = measured_crossovers({a: r for a, r in modelled.items() if a != LIBRARY})
        out.append(comp)
    return out


def at_scale(
    collective: str,
    algorithms: list[str],
    nodes: int,
    per_node: int,
    fitted: Fitted,
    sizes: list[int] | None = None,
    software: bool = False,
) -> ScalePrediction:
    """Predictions on a machine of nodes × per_node ranks with this run's links (software=False:
    the algorithms themselves, without fabricprobe's Python overheads)."""
    sizes = sizes or SCALE_SIZES
    names = [a for a in algorithms if supported(collective, a)]
    missing = unmodelled(collective, algorithms)

    def time(a: str, n: float) -> float | None:
        return predict(collective, a, n, nodes, per_node, fitted.params, software=software)

    table = {a: {n: time(a, n) for n in sizes} for a in names}
    winners = {n: best([(table[a][n], a) for a in names]) for n in sizes} if names else {}
    return ScalePrediction(collective, nodes, per_node, table, winners, crossovers(time, names), software, missing)
