"""Predicted times: an algorithm's cost Formula (declared in its own file, fabricprobe.collectives)
evaluated on a machine shape and turned into seconds with fitted parameters. An algorithm without a
formula is not predicted (None) and the reports say so."""

from __future__ import annotations

import math

from fabricprobe import collectives
from fabricprobe.collectives.cost import Cost, Formula, Shape
from fabricprobe.costmodel.params import Params
from fabricprobe.specs import SPECS


def formula(collective: str, algorithm: str) -> Formula | None:
    found = collectives.get(collective, algorithm)
    return None if found is None else found.cost


def supported(collective: str, algorithm: str) -> bool:
    return formula(collective, algorithm) is not None


def modelled_collectives() -> tuple[str, ...]:
    """Collectives with at least one algorithm that has a cost formula, in the spec registry's order."""
    with_cost = {a.collective for a in collectives.algorithms() if a.cost is not None}
    return tuple(name for name in SPECS if name in with_cost)


def unmodelled(collective: str, names: list[str]) -> list[str]:
    """Of `names`, the algorithms of `collective` the model cannot predict (no cost formula)."""
    return [a for a in names if not supported(collective, a)]


def seconds(cost: Cost, params: Params, inter: bool, software: bool) -> float:
    """A cost vector in seconds on `params`; `inter`: the level-free terms use the inter-node link;
    `software`: add the Python implementations' per-message and per-reduction costs. The cost's
    concurrent inter-node flows share one link (β·flows) when params.nic_sharing."""
    link = params.inter if inter else params.intra
    beta = link.beta * (cost.flows if inter and params.nic_sharing else 1)
    extra = params.message_overhead if software else 0.0
    t = cost.messages * (link.alpha + extra) + cost.nbytes * beta + cost.reduced * params.gamma
    t += cost.intra_messages * (params.intra.alpha + extra) + cost.intra_bytes * params.intra.beta
    return t + (cost.reductions * params.reduce_overhead if software else 0.0)


def predict(
    collective: str,
    algorithm: str,
    nbytes: float,
    nodes: int,
    per_node: int,
    params: Params,
    software: bool = False,
    itemsize: int = 4,
    density: float = 0.0,
) -> float | None:
    """Predicted seconds, or None when the algorithm has no cost formula.

    software=True adds the per-message and per-reduction costs of fabricprobe's Python
    implementations (to compare with what this run measured); False predicts the algorithm itself.
    """
    found = formula(collective, algorithm)
    if found is None:
        return None
    if nodes * per_node == 1:
        return 0.0
    cost = found.of(Shape(nbytes, nodes, per_node, itemsize, density))
    return seconds(cost, params, inter=nodes > 1, software=software)


def predict_sparse(
    algorithm: str,
    nbytes: float,
    itemsize: int,
    density: float,
    nodes: int,
    per_node: int,
    params: Params,
    software: bool = True,
) -> float | None:
    return predict("sparse_allreduce", algorithm, nbytes, nodes, per_node, params, software, itemsize, density)


def crossover_density(
    algorithm: str,
    nbytes: float,
    itemsize: int,
    dense_time: float,
    nodes: int,
    per_node: int,
    params: Params,
    software: bool = True,
) -> float | None:
    """The density where the predicted sparse time reaches dense_time (None if it never does in (0, 1])."""
    n = nbytes / itemsize
    lo, hi = 1.0 / max(n, 1.0), 1.0

    def faster(d: float) -> bool:
        return predict_sparse(algorithm, nbytes, itemsize, d, nodes, per_node, params, software) < dense_time

    if not faster(lo):
        return lo
    if faster(hi):
        return None
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if faster(mid) else (lo, mid)
    return hi
