"""Recursive-doubling sparse exchanges, the core of gTop-k and SparCML, with MPICH's fold for p
not a power of two (even ranks below 2r hand their state to rank + 1 first and get the result back).

Both partners of an exchange merge the same two states, so they hold the same state afterwards
(the merge is commutative and the re-selection deterministic), and every rank ends with the same result.
"""

from __future__ import annotations

from typing import Any

from fabricprobe.collectives import sparse_state as st
from fabricprobe.collectives.halving_doubling import Fold


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
