"""Deterministic per-rank data whose collective results are known exactly, in closed form.

All values are small integers, so every sum, max, min and product is exact in float32,
float64, int32 and int64 whatever order an algorithm reduces in (sums stay below 2^24 for
up to 65,536 ranks). The index term varies along the buffer, so a block that lands in the
wrong place is caught; the rank term varies across ranks, so a contribution that is missing,
counted twice or taken from the wrong rank is caught.

Injective up to 64 ranks, and every op told from every other (the planted faults in
tests/test_mutations.py are all caught at p = 2, 3, 5, 8):
- sum: the rank term is (rank × m) mod 64 with m odd and changing with the index, a permutation
  of 0..63 at every index, so a rank's contribution is distinguishable from any other's below 64
  ranks (the old `rank % 4` let rank r+4's data pass for rank r's at p ≥ 8);
- prod: ±1 by (rank + index) mod 3, and a factor 2 from rank (index mod 64) alone, so a dropped,
  doubled or swapped rank below 64 changes the product, which never exceeds 2 in magnitude; its
  values -2..2 make prod differ from min, max and sum at some index for every p ≥ 2 (the old ±1
  inputs made prod and min agree at p ≤ 3);
- max/min: the rank holding the extreme rotates with the index, so every rank's data matters
  (a doubled contribution cannot show in an idempotent op).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

import numpy as np

_PERIOD = 251  # prime, so block boundaries rarely line up with the pattern
_SUM_PERIOD = 127  # the sum's index term: (127 + 64) × 65,536 ranks < 2^24
_RANKS = 64  # contributions are pairwise distinguishable up to this many ranks
_MULTIPLIERS = np.array([1, 3, 5, 7])  # odd: r -> r·m mod 64 is a permutation
# _PREFIX[j][k] = sum over r < k of (r · m_j) mod 64, for the closed-form sum
_PREFIX = np.array([np.concatenate([[0], np.cumsum((np.arange(_RANKS) * m) % _RANKS)]) for m in _MULTIPLIERS])


def _index_term(index: np.ndarray) -> np.ndarray:
    return index % _PERIOD


def _sum_rank_term(rank: int, index: np.ndarray) -> np.ndarray:
    return (rank * _MULTIPLIERS[index % len(_MULTIPLIERS)]) % _RANKS


def reduction_input(rank: int, nranks: int, index: np.ndarray, op: str) -> np.ndarray:
    """What `rank` contributes at global element positions `index` for reduction `op`."""
    index = np.asarray(index, dtype=np.int64)
    if op == "sum":
        return index % _SUM_PERIOD + 1 + _sum_rank_term(rank, index)
    if op in ("max", "min"):
        # The rank holding the extreme rotates with the index: every rank's data matters.
        return _index_term(index) + (rank + index) % nranks
    if op == "prod":
        sign = np.where((rank + index) % 3 == 0, -1, 1)
        return sign * np.where(index % _RANKS == rank, 2, 1)
    raise ValueError(f"unknown op {op!r}")


def reduction_result(nranks: int, index: np.ndarray, op: str) -> np.ndarray:
    """The exact reduction over ranks 0..nranks-1 of reduction_input, at positions `index`."""
    index = np.asarray(index, dtype=np.int64)
    if op == "sum":
        q, m = divmod(nranks, _RANKS)
        j = index % len(_MULTIPLIERS)
        return nranks * (index % _SUM_PERIOD + 1) + q * _PREFIX[j, _RANKS] + _PREFIX[j, m]
    if op == "max":
        return _index_term(index) + nranks - 1
    if op == "min":
        return _index_term(index)
    if op == "prod":
        k = (-index) % 3  # ranks r with (r + i) % 3 == 0 are r = k, k + 3, ...
        negatives = np.where(k < nranks, (nranks - 1 - k) // 3 + 1, 0)
        sign = np.where(negatives % 2 == 1, -1, 1)
        return sign * np.where(index % _RANKS < nranks, 2, 1)
    raise ValueError(f"unknown op {op!r}")


def data(source: int, index: np.ndarray, salt: int = 0) -> np.ndarray:
    """Values 1..251 that identify the rank (and block, via salt) they came from."""
    index = np.asarray(index, dtype=np.int64)
    return (source * 131 + salt * 37 + index) % _PERIOD + 1


RECV, SEND = 0, 1  # a sentinel's role: a receive buffer (or a window), or a send buffer's unsent tail


def sentinel_fill(buf: np.ndarray, owner: int = 0, role: int = RECV) -> None:
    """Mark a buffer as not yet written, with values no pattern produces (NaN for floats, negative
    integers, bytes outside 1..251) that differ by position, owner (the rank) and role: with one
    sentinel everywhere, a count one too large copied the sender's sentinel into the root's gap bit
    for bit, unseen (issue 53)."""
    if buf.size:
        buf[...] = sentinels(buf.dtype, buf.size, owner, role).reshape(buf.shape)


def sentinels(dtype: np.dtype, count: int, owner: int = 0, role: int = RECV) -> np.ndarray:
    """The sentinel_fill values (read-only, kept for the next caller)."""
    return _MEMO.get(
        ("sentinel", np.dtype(dtype).str, count, owner, role), lambda: _sentinels(dtype, count, owner, role)
    )


_NAN_BITS = {
    2: (np.uint16, 0x7E00, 0x1FF),
    4: (np.uint32, 0x7FC00000, 0x3FFFFF),
    8: (np.uint64, 0x7FF8 << 48, (1 << 51) - 1),
}


def _sentinels(dtype: np.dtype, count: int, owner: int, role: int) -> np.ndarray:
    """CHUNK positions at a time: over all of a 1 MiB buffer at once, the uint64 temporaries peaked at
    24 MiB on every rank of the bound probe (docs/scale.md, "Memory per rank")."""
    dtype = np.dtype(dtype)
    offset = np.uint64(((owner * 2 + role) * 0x9E3779B1) % (1 << 40))
    out = np.empty(count, dtype=dtype)
    for first in range(0, count, CHUNK):
        n = min(CHUNK, count - first)
        out[first : first + n] = _sentinel_values(dtype, np.arange(first, first + n, dtype=np.uint64) + offset)
    return out


def _sentinel_values(dtype: np.dtype, key: np.ndarray) -> np.ndarray:
    if dtype.kind == "f":  # quiet NaNs whose payload is the key
        utype, quiet, mask = _NAN_BITS[dtype.itemsize]
        return ((key & np.uint64(mask)) | np.uint64(quiet)).astype(utype).view(dtype)
    bits = 8 * dtype.itemsize
    if dtype.kind == "u":  # 252.. and 0: patterns give 1..251
        span = min((1 << bits) - 251, 1 << 30)
        return ((np.uint64(252) + key % np.uint64(span)) % np.uint64(1 << bits)).astype(dtype)
    # below -2**24: far from the patterns (1..251), their sums and the small products of ±1 and 2
    return (-(1 << 24) - 2 - (key % np.uint64(1 << 30)).astype(np.int64)).astype(dtype)


# ---- the same patterns over a range of positions, computed once ----
#
# A sweep measures every algorithm of a collective at one size back to back, and validates each twice
# (the first call and the steady state): the inputs and expected results of those points are the same
# arrays. Computed afresh they cost 140 ms a point at 1 Mi elements on 4 ranks (measured), which made a
# screened point (5 timed calls) cost half a full one. These are computed once per (pattern, range) and
# kept, read-only, least recently used first out beyond MEMO_BYTES, in the narrowest type that holds them
# (data 1..251 in uint8, reductions below 2^24 in int32): as int64 the arrays of the bound probe's
# 1 MiB point alone held 17 MiB on every rank (benchmarks/rank_memory.py, docs/scale.md).

MEMO_BYTES = 256 << 20  # per process
MEMO_LARGEST = 64 << 20  # arrays larger than this are computed every time, never kept


class _Memo:
    def __init__(self, limit: int, largest: int) -> None:
        self.limit, self.largest = limit, largest
        self.arrays: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self.bytes = 0

    def get(self, key: tuple, make: Callable[[], np.ndarray]) -> np.ndarray:
        found = self.arrays.get(key)
        if found is not None:
            self.arrays.move_to_end(key)
            return found
        array = make()
        array.flags.writeable = False  # shared by every caller: nobody may change it
        if array.nbytes <= self.largest:
            self.arrays[key] = array
            self.bytes += array.nbytes
            while self.bytes > self.limit:
                _, old = self.arrays.popitem(last=False)
                self.bytes -= old.nbytes
        return array


_MEMO = _Memo(MEMO_BYTES, MEMO_LARGEST)


def forget() -> None:
    """Drop every kept array. The sweep calls it when it moves to another (collective, size): kept
    past that, the arrays were memory held for nothing, up to MEMO_BYTES a rank (the 128-rank quick
    sweep ran the 24 GiB machine out of memory holding them: memory/heap.py)."""
    _MEMO.arrays.clear()
    _MEMO.bytes = 0


CHUNK = 1 << 16  # positions computed at a time: the int64 arithmetic's temporaries stay at a few MiB


def _over_range(start: int, count: int, dtype: type, values: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """values(positions) for positions start..start+count-1, computed CHUNK at a time into `dtype`."""
    out = np.empty(count, dtype=dtype)
    for first in range(0, count, CHUNK):
        n = min(CHUNK, count - first)
        out[first : first + n] = values(np.arange(start + first, start + first + n, dtype=np.int64))
    return out


def data_at(source: int, start: int, count: int, salt: int = 0) -> np.ndarray:
    """data() at positions start..start+count-1 (read-only, kept for the next caller)."""
    return _MEMO.get(
        ("data", source, start, count, salt),
        lambda: _over_range(start, count, np.uint8, lambda i: data(source, i, salt)),
    )


def reduction_input_at(rank: int, nranks: int, start: int, count: int, op: str) -> np.ndarray:
    """reduction_input() at positions start..start+count-1 (read-only, kept)."""
    return _MEMO.get(
        ("input", rank, nranks, start, count, op),
        lambda: _over_range(start, count, np.int32, lambda i: reduction_input(rank, nranks, i, op)),
    )


def reduction_result_at(nranks: int, start: int, count: int, op: str) -> np.ndarray:
    """reduction_result() at positions start..start+count-1 (read-only, kept)."""
    return _MEMO.get(
        ("result", nranks, start, count, op),
        lambda: _over_range(start, count, np.int32, lambda i: reduction_result(nranks, i, op)),
    )
