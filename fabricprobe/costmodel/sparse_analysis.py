"""`fabricprobe model` for sparse allreduce: measured against predicted, and the crossover density
where the dense allreduce starts to win, measured and predicted, here and on larger machines.

The dense reference of the predictions is the model's best dense allreduce without Python
overheads (the library's is native C); the sparse algorithms keep theirs (they are Python), so
the predicted crossover compares what the run compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from fabricprobe import collectives
from fabricprobe.costmodel.fit import Fitted
from fabricprobe.costmodel.predict import crossover_density, predict, predict_sparse, supported
from fabricprobe.mpienv.datatypes import numpy_dtype
from fabricprobe.report.sparse import crossover_density as measured_crossover
from fabricprobe.store.schema import is_dense_baseline

DENSE_ALGORITHMS = ("ring", "recursive_doubling", "rabenseifner")


def best_dense(nbytes: float, nodes: int, per_node: int, fitted: Fitted) -> float:
    times = [predict("allreduce", a, nbytes, nodes, per_node, fitted.params, software=False) for a in DENSE_ALGORITHMS]
    return min(t for t in times if t is not None)


@dataclass
class SparseComparison:
    dtype: str
    rows: list[dict[str, Any]] = field(default_factory=list)  # size, density, algorithm, measured, predicted, error
    crossovers: list[dict[str, Any]] = field(default_factory=list)  # size, algorithm, measured, predicted

    def median_abs_error(self) -> float:
        errs = sorted(abs(r["error"]) for r in self.rows)
        return errs[len(errs) // 2] if errs else math.nan


def compare_sparse(points: list[dict[str, Any]], fitted: Fitted, nodes: int, per_node: int) -> list[SparseComparison]:
    sparse = [
        p
        for p in points
        if p["collective"] == "sparse_allreduce"
        and p["status"] == "ok"
        and supported("sparse_allreduce", p["algorithm"])
    ]
    dense = {(p["dtype"], p["bytes"]): p["median_s"] for p in points if is_dense_baseline(p)}
    out = []
    for dtype in sorted({p["dtype"] for p in sparse}):
        comp = SparseComparison(dtype)
        itemsize = numpy_dtype(dtype).itemsize
        rows = [p for p in sparse if p["dtype"] == dtype and p["bytes"] > 0]
        for p in sorted(rows, key=lambda q: (q["bytes"], q["algorithm"], q["density"])):
            predicted = predict_sparse(
                p["algorithm"], p["bytes"], itemsize, p["density"], nodes, per_node, fitted.params
            )
            comp.rows.append(
                dict(
                    size=p["bytes"],
                    density=p["density"],
                    algorithm=p["algorithm"],
                    measured_s=p["median_s"],
                    predicted_s=predicted,
                    error=(predicted - p["median_s"]) / p["median_s"],
                )
            )
        for size in sorted({p["bytes"] for p in rows}):
            dense_measured = dense.get((dtype, size))
            dense_predicted = best_dense(size, nodes, per_node, fitted)
            for algorithm in sorted({p["algorithm"] for p in rows}):
                series = [
                    (p["density"], dense_measured / p["median_s"])
                    for p in rows
                    if p["bytes"] == size and p["algorithm"] == algorithm and dense_measured
                ]
                comp.crossovers.append(
                    dict(
                        size=size,
                        algorithm=algorithm,
                        measured=measured_crossover(series)[0] if series else "-",
                        predicted=crossover_density(
                            algorithm, size, itemsize, dense_predicted, nodes, per_node, fitted.params
                        ),
                    )
                )
        out.append(comp)
    return out


def crossover_at_scale(
    nodes: int, per_node: int, fitted: Fitted, sizes: list[int], itemsize: int = 4, software: bool = False
) -> dict[str, dict[int, float | None]]:
    """algorithm -> size -> predicted crossover density on a nodes × per_node machine."""
    algorithms = [a for a in collectives.names_for("sparse_allreduce") if supported("sparse_allreduce", a)]
    return {
        a: {
            n: crossover_density(
                a,
                n,
                itemsize,
                best_dense(n, nodes, per_node, fitted),
                nodes,
                per_node,
                fitted.params,
                software=software,
            )
            for n in sizes
        }
        for a in algorithms
    }
