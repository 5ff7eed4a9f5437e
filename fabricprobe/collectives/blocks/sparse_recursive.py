"""Recursive-doubling sparse exchanges, the core of gTop-k and SparCML, with MPICH's fold for p
not a power of two (even ranks below 2r hand their state to rank + 1 first and get the result back).

Both partners of an exchange merge the same two states, so they hold the same state afterwards
(the merge is commutative and the re-selection deterministic), and every rank ends with the same result.
"""

from __future__ import annotations

from typing import Any

from fabricprobe.collectives.blocks import sparse_state as st
from fabricprobe.collectives.blocks.halving_doubling import Fold
from fabricprobe.collectives.cost import Cost, Shape, lg, pof2

HEADER = 8  # bytes of every sparse message's header (fabricprobe.sparse.vector's wire format)


def recursive_exchange(comm: Any, state: st.State, reselect: int | None, switch: bool) -> st.State:
    """Sum (reselect=None) or global top-k (reselect=k) of every rank's state."""
    fold = Fold.of(comm.rank, comm.size)
    cap = reselect if reselect is not None else state.length
    if fold.rank < 2 * fold.rem:
        if fold.rank % 2 == 0:
            st.send(comm, fold.rank + 1, state)
        else:
            incoming = st.recv(comm, fold.rank - 1, state.offset, state.length, state.dtype, cap)
            state = _combine(state, incoming, reselect, switch)
    if fold.newrank >= 0:
        mask = 1
        while mask < fold.pof2:
            partner = fold.real(fold.newrank ^ mask)
            state = _combine(state, st.exchange(comm, partner, state, cap), reselect, switch)
            mask <<= 1
    if fold.rank < 2 * fold.rem:
        if fold.rank % 2 == 1:
            st.send(comm, fold.rank - 1, state)
        else:
            state = st.recv(comm, fold.rank + 1, state.offset, state.length, state.dtype, cap)
    return state


def _combine(a: st.State, b: st.State, reselect: int | None, switch: bool) -> st.State:
    merged = st.merge(a, b, reselect=reselect)
    return merged.switch_if_full() if switch else merged


# Costs, as the sparse algorithm files declare them. k pairs per rank of w = 4 + itemsize bytes (plus the
# header); the dense vector has n elements. Supports are assumed disjoint across ranks, so a union of j
# vectors has j·k pairs (capped at n): the worst case for the exact algorithms, whose messages grow with
# the union, and the case the published formulas use. Merging m pairs costs m·itemsize of γ.


def terms(s: Shape) -> tuple[float, float]:
    """(n elements, k pairs per rank) of a sparse allreduce of S bytes at density d."""
    n = s.nbytes / s.itemsize
    return n, (max(1.0, s.density * n) if n else 0.0)


def pairs_bytes(pairs: float, itemsize: int, n: float) -> float:
    """Wire bytes of a state with `pairs` pairs (dense once that is smaller)."""
    return HEADER + min(pairs * (4 + itemsize), n * itemsize)


def recursive_cost(n: float, k: float, p: int, itemsize: int, reselect: bool) -> Cost:
    """Fold + recursive doubling of sparse states (gTop-k keeps k pairs; SparCML's union doubles)."""
    q = pof2(p)
    cost = Cost()
    state = k
    if q != p:  # fold: one state in, merged; at the end one state out
        cost += Cost(messages=2, nbytes=2 * pairs_bytes(state, itemsize, n), reduced=2 * state * itemsize, reductions=1)
        state = k if reselect else min(2 * k, n)
    for _ in range(lg(q)):
        cost += Cost(messages=1, nbytes=pairs_bytes(state, itemsize, n), reduced=2 * state * itemsize, reductions=1)
        state = k if reselect else min(2 * state, n)
    return cost
