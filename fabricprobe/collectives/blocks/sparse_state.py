"""The working state of a sparse allreduce and the messages that carry it.

A State covers the global index range [offset, offset + length) and holds it either sparse
(index-sorted pairs, global indices) or dense (length values). Merging two states of the same range
sums them; a state switches to dense once its pairs would take more bytes than the dense values
(SparCML's switch). Every message is one MPI message whose size the receiver reads from the status,
and every byte sent is counted in fabricprobe.sparse.traffic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fabricprobe import kernels
from fabricprobe.collectives.blocks.common import scratch
from fabricprobe.memory import DIRECT
from fabricprobe.sparse import traffic
from fabricprobe.sparse.vector import INDEX, SparseResult, capacity, decode, encode_dense, encode_sparse

TAG = 171


def _scatter_add_offset(dense, idx, val, offset) -> None:
    """dense[idx - offset] += val (kernels/sparse_cpu.py), Numba loaded on the first call only: a rank
    that never runs a sparse algorithm never imports it (docs/scale.md, "Start-up")."""
    from fabricprobe.kernels import sparse_cpu

    sparse_cpu.scatter_add_offset(dense, idx, val, offset)


class Arena:
    """Work buffers for one call: handed out in order, never reused within the call (states made
    earlier stay valid), kept across calls (no fresh page faults in every timed iteration)."""

    def __init__(self) -> None:
        self._buffers: list[np.ndarray] = []
        self._next = 0

    def begin(self) -> None:
        self._next = 0

    def get(self, length: int, dtype: np.dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        nbytes = max(length * dtype.itemsize, 8)
        if self._next == len(self._buffers):
            self._buffers.append(np.empty(0, np.uint8))
        buf = self._buffers[self._next]
        if buf.size < nbytes:
            buf = np.empty(max(nbytes, 2 * buf.size), np.uint8)
            self._buffers[self._next] = buf
        self._next += 1
        return buf[: length * dtype.itemsize].view(dtype)


ARENA = Arena()


def staged_only(case: Any, transfer: str) -> str:
    """The sparse algorithms build their messages in host memory: on device buffers they run staged only."""
    if transfer == DIRECT:
        return (
            "the sparse algorithms build their messages in host memory: on device buffers they run staged "
            "only (docs/gpu.md)"
        )
    return ""


def begin() -> None:
    """Call at the start of every sparse algorithm."""
    ARENA.begin()


@dataclass
class State:
    offset: int
    length: int
    dtype: np.dtype
    idx: np.ndarray | None = None  # sparse: global indices, ascending
    val: np.ndarray | None = None
    dense: np.ndarray | None = None

    @property
    def is_dense(self) -> bool:
        return self.dense is not None

    @property
    def nnz(self) -> int:
        return self.length if self.is_dense else int(self.idx.size)

    def wire_bytes(self) -> int:
        itemsize = self.dtype.itemsize
        return 8 + (
            self.length * itemsize if self.is_dense else (self.nnz * INDEX.itemsize + 7) // 8 * 8 + self.nnz * itemsize
        )

    def densify(self) -> "State":
        if self.is_dense:
            return self
        dense = _buffer(self.length, self.dtype)
        dense.fill(0)
        _scatter_add_offset(dense, self.idx, self.val, self.offset)
        return State(self.offset, self.length, self.dtype, dense=dense)

    def switch_if_full(self) -> "State":
        """Dense once the pairs would outweigh the dense values."""
        if not self.is_dense and self.nnz * (INDEX.itemsize + self.dtype.itemsize) >= self.length * self.dtype.itemsize:
            return self.densify()
        return self


def _buffer(length: int, dtype: np.dtype) -> np.ndarray:
    return ARENA.get(length, dtype)


def from_pairs(idx: np.ndarray, val: np.ndarray, offset: int, length: int) -> State:
    return State(offset, length, val.dtype, idx=idx, val=val)


def merge(a: State, b: State, reselect: int | None = None) -> State:
    """a + b over the same range; with reselect=k, only the k largest magnitudes are kept."""
    if a.is_dense or b.is_dense:
        dense, other = (a, b) if a.is_dense else (b, a)
        out = _buffer(a.length, a.dtype)
        out[:] = dense.dense
        if other.is_dense:
            kernels.reduce_into(out, other.dense, "sum")
        else:
            _scatter_add_offset(out, other.idx, other.val, a.offset)
        return State(a.offset, a.length, a.dtype, dense=out)
    total = a.nnz + b.nnz
    out_i = _buffer(total, INDEX)
    out_v = _buffer(total, a.dtype)
    m = kernels.merge_sum(a.idx, a.val, b.idx, b.val, out_i, out_v)
    idx, val = out_i[:m], out_v[:m]
    if reselect is not None and m > reselect:
        keep = _buffer(reselect, np.int64)
        kernels.topk_indices(val, reselect, keep)
        kept_i, kept_v = _buffer(reselect, INDEX), _buffer(reselect, a.dtype)
        kernels.pack(idx, keep, kept_i)  # keep is ascending, so indices stay sorted
        kernels.pack(val, keep, kept_v)
        idx, val = kept_i, kept_v
    return State(a.offset, a.length, a.dtype, idx=idx, val=val)


def merge_all(states: list[State]) -> State:
    """Sum of many states by pairwise rounds (O(total · log count) for sparse ones)."""
    while len(states) > 1:
        states = [
            merge(states[i], states[i + 1]) if i + 1 < len(states) else states[i] for i in range(0, len(states), 2)
        ]
    return states[0]


def encode(state: State, out: np.ndarray) -> int:
    if state.is_dense:
        return encode_dense(state.dense, out)
    return encode_sparse(state.idx, state.val, out)


def decode_state(buf: np.ndarray, offset: int, length: int, dtype: np.dtype) -> State:
    idx, values = decode(buf, length, dtype)
    if idx is None:
        return State(offset, length, np.dtype(dtype), dense=values)
    return State(offset, length, np.dtype(dtype), idx=idx, val=values)


def message_buffer(length: int, dtype: np.dtype, pairs: int, slot: int) -> np.ndarray:
    return scratch(capacity(length, dtype, pairs), np.empty(0, np.uint8), slot=slot)


def exchange(comm: Any, partner: int, state: State, pairs_cap: int) -> State:
    """Swap states with partner (one message each way); returns the partner's state."""
    from mpi4py import MPI

    out = message_buffer(state.length, state.dtype, max(state.nnz, pairs_cap), slot=30)
    inbox = message_buffer(state.length, state.dtype, pairs_cap, slot=31)
    nbytes = encode(state, out)
    status = MPI.Status()
    comm.Sendrecv(out[:nbytes], dest=partner, sendtag=TAG, recvbuf=inbox, source=partner, recvtag=TAG, status=status)
    traffic.add(nbytes)
    return decode_state(inbox[: status.Get_count(MPI.BYTE)], state.offset, state.length, state.dtype)


def send(comm: Any, dest: int, state: State) -> None:
    out = message_buffer(state.length, state.dtype, state.nnz, slot=30)
    nbytes = encode(state, out)
    comm.Send(out[:nbytes], dest=dest, tag=TAG)
    traffic.add(nbytes)


def recv(comm: Any, source: int, offset: int, length: int, dtype: np.dtype, pairs_cap: int) -> State:
    from mpi4py import MPI

    inbox = message_buffer(length, dtype, pairs_cap, slot=31)
    status = MPI.Status()
    comm.Recv(inbox, source=source, tag=TAG, status=status)
    return decode_state(inbox[: status.Get_count(MPI.BYTE)], offset, length, dtype)


def store(state: State, result: SparseResult) -> None:
    """Leave the final state (covering the whole vector) in the caller's result."""
    store_regions([state], result)


def store_regions(pieces: list[State], result: SparseResult) -> None:
    """Leave states of consecutive regions that cover the vector in the caller's result (dense if any
    of them is), copied into the result's own storage (the states live in scratch; nothing is allocated)."""
    if any(p.is_dense for p in pieces):
        full = result.dense_buffer()
        if not all(p.is_dense for p in pieces):  # dense pieces alone overwrite every element
            full.fill(0)
        for p in pieces:
            if p.is_dense:
                full[p.offset : p.offset + p.length] = p.dense
            else:
                _scatter_add_offset(full, p.idx, p.val, 0)
        return
    idx, val = result.sparse_buffers(sum(p.nnz for p in pieces))
    at = 0
    for p in pieces:
        idx[at : at + p.nnz] = p.idx
        val[at : at + p.nnz] = p.val
        at += p.nnz
