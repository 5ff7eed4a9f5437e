"""Costs of the sparse allreduce algorithms, as cost vectors like the dense ones (formulas.py).

k pairs per rank of w = 4 + itemsize bytes (plus an 8-byte header per message); the dense vector
has n elements, S = n·itemsize bytes. Supports are assumed disjoint across ranks, so a union of j
vectors has j·k pairs (capped at n): the worst case for the exact algorithms, whose messages grow
with the union, and the case the published formulas use. Merging m pairs costs m·itemsize of γ.
"""

from __future__ import annotations

import math

from fabricprobe.costmodel.formulas import Cost, _lg, _pof2
from fabricprobe.costmodel.params import Params

_HEADER = 8


def _pairs_bytes(pairs: float, itemsize: int, n: float) -> float:
    """Wire bytes of a state with `pairs` pairs (dense once that is smaller)."""
    return _HEADER + min(pairs * (4 + itemsize), n * itemsize)


def _recursive(n: float, k: float, p: int, itemsize: int, reselect: bool) -> Cost:
    """Fold + recursive doubling of sparse states (gTop-k keeps k; SparCML's union doubles)."""
    q = _pof2(p)
    cost = Cost()
    state = k
    if q != p:  # fold: one state in, merged; at the end one state out
        cost += Cost(messages=2, nbytes=2 * _pairs_bytes(state, itemsize, n), reduced=2 * state * itemsize,
                     reductions=1)
        state = k if reselect else min(2 * k, n)
    for _ in range(_lg(q)):
        cost += Cost(messages=1, nbytes=_pairs_bytes(state, itemsize, n), reduced=2 * state * itemsize, reductions=1)
        state = k if reselect else min(2 * state, n)
    return cost


def topk_allgather(n, k, p, itemsize):
    return Cost(messages=_lg(p) + p - 1, nbytes=(p - 1) * _pairs_bytes(k, itemsize, math.inf),
                reduced=p * k * itemsize, reductions=max(p - 1, 0))


def gtopk(n, k, p, itemsize):
    return _recursive(n, k, p, itemsize, reselect=True)


def sparcml(n, k, p, itemsize):
    return _recursive(n, k, p, itemsize, reselect=False)


SPARSE = {"topk_allgather": topk_allgather, "gtopk": gtopk, "sparcml": sparcml}


def _hier_leader(n, k, nodes, g, itemsize) -> Cost:
    intra = Cost()
    state = k
    for _ in range(_lg(g)):  # binomial reduce, then broadcast of the node's union
        intra += Cost(intra_messages=1, intra_bytes=_pairs_bytes(state, itemsize, n), reduced=2 * state * itemsize,
                      reductions=1)
        state = min(2 * state, n)
    inter = sparcml(n, min(g * k, n), nodes, itemsize) if nodes > 1 else Cost()
    final = min(nodes * g * k, n)
    bcast = Cost(intra_messages=_lg(g), intra_bytes=_lg(g) * _pairs_bytes(final, itemsize, n))
    return intra + inter + bcast


def _hier_index(n, k, nodes, g, itemsize) -> Cost:
    region = n / g
    scatter = Cost(intra_messages=g - 1, intra_bytes=(g - 1) * _pairs_bytes(k / g, itemsize, region),
                   reduced=g * k / g * itemsize, reductions=max(g - 1, 0))
    inter = sparcml(region, min(k, region), nodes, itemsize) if nodes > 1 else Cost()
    final = min(nodes * k, region)
    gather = Cost(intra_messages=g - 1, intra_bytes=(g - 1) * _pairs_bytes(final, itemsize, region))
    return scatter + inter + gather


def supported(algorithm: str) -> bool:
    return algorithm in SPARSE or algorithm in ("sparse_hier_leader", "sparse_hier_index")


def predict_sparse(algorithm: str, nbytes: float, itemsize: int, density: float, nodes: int, per_node: int,
                   params: Params, software: bool = True) -> float | None:
    n = nbytes / itemsize
    k = max(1.0, density * n) if n else 0.0
    p = nodes * per_node
    if p == 1:
        return 0.0
    if algorithm == "sparse_hier_leader":
        return _hier_leader(n, k, nodes, per_node, itemsize).time(params, inter=nodes > 1, software=software)
    if algorithm == "sparse_hier_index":
        return _hier_index(n, k, nodes, per_node, itemsize).time(params, inter=nodes > 1, software=software,
                                                                 flows=per_node)
    formula = SPARSE.get(algorithm)
    if formula is None:
        return None
    return formula(n, k, p, itemsize).time(params, inter=nodes > 1, software=software)


def crossover_density(algorithm: str, nbytes: float, itemsize: int, dense_time: float, nodes: int, per_node: int,
                      params: Params, software: bool = True) -> float | None:
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
