"""Costs of each algorithm, written to match fabricprobe's implementations (fold steps for
non-powers of two included), as vectors: messages and bytes on each link level, bytes reduced,
and reduction-kernel calls. n is S, the size a point is reported under, in bytes; p the ranks;
on two levels N nodes of g ranks (p = N·g).

Flat algorithms on a two-level machine pay the inter-node link on every step (each step waits
for its slowest pair), so their messages count as inter-node whenever N > 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from fabricprobe.costmodel.params import Params


@dataclass(frozen=True)
class Cost:
    messages: float = 0.0  # latency terms on the level the algorithm runs on
    nbytes: float = 0.0  # bytes on that level
    reduced: float = 0.0  # bytes through the reduction kernel
    reductions: float = 0.0  # reduction-kernel calls
    intra_messages: float = 0.0  # two-level algorithms: the intra-node part
    intra_bytes: float = 0.0

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(*(a + b for a, b in zip(vars(self).values(), vars(other).values())))

    def time(self, params: Params, inter: bool, software: bool, flows: int = 1) -> float:
        """Seconds on `params`; `inter`: the level-free terms use the inter-node link;
        `software`: add the Python implementations' per-message and per-reduction costs;
        `flows`: concurrent inter-node flows sharing one link."""
        link = params.inter if inter else params.intra
        beta = link.beta * (flows if inter and params.nic_sharing else 1)
        extra = params.message_overhead if software else 0.0
        t = self.messages * (link.alpha + extra) + self.nbytes * beta + self.reduced * params.gamma
        t += self.intra_messages * (params.intra.alpha + extra) + self.intra_bytes * params.intra.beta
        return t + (self.reductions * params.reduce_overhead if software else 0.0)


def _lg(p: int) -> int:
    return math.ceil(math.log2(p)) if p > 1 else 0


def _pof2(p: int) -> int:
    return 1 << (p.bit_length() - 1)


def _fold(n: float, p: int, reduces: bool) -> Cost:
    """MPICH's fold and unfold for p not a power of two: two messages of n, one reduction."""
    if p == _pof2(p):
        return Cost()
    return Cost(messages=2, nbytes=2 * n, reduced=n if reduces else 0, reductions=1 if reduces else 0)


def allreduce_ring(n: float, p: int) -> Cost:
    return Cost(messages=2 * (p - 1), nbytes=2 * (p - 1) / p * n, reduced=(p - 1) / p * n, reductions=p - 1)


def allreduce_recursive_doubling(n: float, p: int) -> Cost:
    k = _lg(_pof2(p))
    return Cost(messages=k, nbytes=k * n, reduced=k * n, reductions=k) + _fold(n, p, True)


def allreduce_rabenseifner(n: float, p: int) -> Cost:
    q = _pof2(p)
    k = _lg(q)
    return Cost(messages=2 * k, nbytes=2 * (q - 1) / q * n, reduced=(q - 1) / q * n, reductions=k) + _fold(n, p, True)


def allreduce_binomial(n: float, p: int) -> Cost:
    k = _lg(p)
    return Cost(messages=2 * k, nbytes=2 * k * n, reduced=k * n, reductions=k)


def reduce_scatter_ring(n: float, p: int) -> Cost:
    return Cost(messages=p - 1, nbytes=(p - 1) / p * n, reduced=(p - 1) / p * n, reductions=p - 1)


def reduce_scatter_recursive_halving(n: float, p: int) -> Cost:
    q = _pof2(p)
    k = _lg(q)
    fold = Cost() if q == p else Cost(messages=2, nbytes=n + n / p, reduced=n, reductions=1)
    return Cost(messages=k, nbytes=(q - 1) / q * n, reduced=(q - 1) / q * n, reductions=k) + fold


def allgather_ring(n: float, p: int) -> Cost:
    return Cost(messages=p - 1, nbytes=(p - 1) / p * n)


def allgather_bruck(n: float, p: int) -> Cost:
    return Cost(messages=_lg(p), nbytes=(p - 1) / p * n)


def allgather_recursive_doubling(n: float, p: int) -> Cost:
    q = _pof2(p)
    fold = Cost() if q == p else Cost(messages=2, nbytes=n / p + n)
    return Cost(messages=_lg(q), nbytes=(q - 1) / q * n) + fold


def bcast_binomial(n: float, p: int) -> Cost:
    return Cost(messages=_lg(p), nbytes=_lg(p) * n)


def bcast_scatter_allgather(n: float, p: int) -> Cost:
    return Cost(messages=_lg(p) + p - 1, nbytes=2 * (p - 1) / p * n)


def reduce_binomial(n: float, p: int) -> Cost:
    k = _lg(p)
    return Cost(messages=k, nbytes=k * n, reduced=k * n, reductions=k)


FLAT: dict[tuple[str, str], Callable[[float, int], Cost]] = {
    ("allreduce", "ring"): allreduce_ring,
    ("allreduce", "recursive_doubling"): allreduce_recursive_doubling,
    ("allreduce", "rabenseifner"): allreduce_rabenseifner,
    ("allreduce", "binomial"): allreduce_binomial,
    ("reduce_scatter", "ring"): reduce_scatter_ring,
    ("reduce_scatter", "recursive_halving"): reduce_scatter_recursive_halving,
    ("allgather", "ring"): allgather_ring,
    ("allgather", "bruck"): allgather_bruck,
    ("allgather", "recursive_doubling"): allgather_recursive_doubling,
    ("bcast", "binomial"): bcast_binomial,
    ("bcast", "scatter_allgather"): bcast_scatter_allgather,
    ("reduce", "binomial"): reduce_binomial,
}

_INTER = {"hierarchical": allreduce_ring, "hierarchical_rab": allreduce_rabenseifner,
          "hierarchical_rd": allreduce_recursive_doubling}


def _as_intra(cost: Cost) -> Cost:
    return Cost(reduced=cost.reduced, reductions=cost.reductions, intra_messages=cost.messages + cost.intra_messages,
                intra_bytes=cost.nbytes + cost.intra_bytes)


def hierarchical(n: float, nodes: int, g: int, inter: Callable[[float, int], Cost]) -> Cost:
    """Multi-leader: intra ring reduce-scatter, g concurrent inter-node allreduces of n/g, intra ring allgather."""
    intra = _as_intra(reduce_scatter_ring(n, g) + allgather_ring(n, g))
    return intra + (inter(n / g, nodes) if nodes > 1 else Cost())


def single_leader(n: float, nodes: int, g: int) -> Cost:
    intra = _as_intra(reduce_binomial(n, g) + bcast_binomial(n, g))
    return intra + (allreduce_ring(n, nodes) if nodes > 1 else Cost())


def supported(collective: str, algorithm: str) -> bool:
    return (collective, algorithm) in FLAT or (collective == "allreduce" and algorithm in (*_INTER, "single_leader"))


def predict(collective: str, algorithm: str, nbytes: float, nodes: int, per_node: int, params: Params,
            software: bool = False) -> float | None:
    """Predicted seconds, or None when the model has no formula for this algorithm.

    software=True adds the per-message and per-reduction costs of fabricprobe's Python
    implementations (to compare with what this run measured); False predicts the algorithm itself.
    """
    p = nodes * per_node
    if p == 1:
        return 0.0
    if collective == "allreduce" and algorithm in _INTER:
        cost, flows = hierarchical(nbytes, nodes, per_node, _INTER[algorithm]), per_node
    elif collective == "allreduce" and algorithm == "single_leader":
        cost, flows = single_leader(nbytes, nodes, per_node), 1
    elif (collective, algorithm) in FLAT:
        cost, flows = FLAT[(collective, algorithm)](nbytes, p), 1
    else:
        return None
    return cost.time(params, inter=nodes > 1, software=software, flows=flows)
