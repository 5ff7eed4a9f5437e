"""What an algorithm costs in the α-β-γ model (Hockney; Thakur, Rabenseifner & Gropp 2005), as a vector
of counts the cost model turns into seconds with fitted parameters: messages and bytes on each link
level, bytes through the reduction kernel and kernel calls. Each algorithm file declares its Formula
beside its code, written to match that implementation (fold steps for non-powers of two included);
the cost model and the algorithm table in docs/algorithms.md are generated from them.

Flat algorithms on a two-level machine pay the inter-node link on every step (each step waits for its
slowest pair), so their messages count as inter-node whenever there is more than one node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Callable


@dataclass(frozen=True)
class Shape:
    """What a cost depends on: S bytes (the size a point is reported under) on nodes × per_node ranks;
    sparse algorithms also on the element size and the density (k = density · n pairs per rank)."""

    nbytes: float
    nodes: int
    per_node: int
    itemsize: int = 4
    density: float = 0.0

    @property
    def p(self) -> int:
        return self.nodes * self.per_node


@dataclass(frozen=True)
class Cost:
    messages: float = 0.0  # latency terms on the level the algorithm runs on
    nbytes: float = 0.0  # bytes on that level
    reduced: float = 0.0  # bytes through the reduction kernel
    reductions: float = 0.0  # reduction-kernel calls
    intra_messages: float = 0.0  # two-level algorithms: the intra-node part
    intra_bytes: float = 0.0
    flows: int = 1  # concurrent inter-node flows leaving one node (they share its link)

    def __add__(self, other: Cost) -> Cost:
        values = {f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self) if f.name != "flows"}
        return Cost(**values, flows=max(self.flows, other.flows))


@dataclass(frozen=True)
class Formula:
    text: str  # the cost in the usual notation, for docs/algorithms.md (n = S bytes, p ranks)
    of: Callable[[Shape], Cost]


def lg(p: int) -> int:
    """⌈lg p⌉ (0 for one rank)."""
    return math.ceil(math.log2(p)) if p > 1 else 0


def pof2(p: int) -> int:
    """The largest power of two ≤ p."""
    return 1 << (p.bit_length() - 1)


def fold(n: float, p: int, reduces: bool) -> Cost:
    """MPICH's fold and unfold for p not a power of two: two messages of n, one reduction."""
    if p == pof2(p):
        return Cost()
    return Cost(messages=2, nbytes=2 * n, reduced=n if reduces else 0, reductions=1 if reduces else 0)


def as_intra(cost: Cost) -> Cost:
    """A flat cost paid on the intra-node links (the node-local steps of a two-level algorithm)."""
    return Cost(
        reduced=cost.reduced,
        reductions=cost.reductions,
        intra_messages=cost.messages + cost.intra_messages,
        intra_bytes=cost.nbytes + cost.intra_bytes,
    )
