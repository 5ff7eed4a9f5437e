"""Deterministic per-rank data whose collective results are known exactly, in closed form.

All values are small integers, so every sum, max, min and product is exact in float32,
float64, int32 and int64 whatever order an algorithm reduces in (sums stay below 2^24 for
up to 65,536 ranks). The index term varies along the buffer, so a block that lands in the
wrong place is caught; the rank term varies across ranks, so a contribution that is missing
or counted twice is caught.
"""

from __future__ import annotations

import numpy as np

_PERIOD = 251  # prime, so block boundaries rarely line up with the pattern


def _index_term(index: np.ndarray) -> np.ndarray:
    return index % _PERIOD


def reduction_input(rank: int, nranks: int, index: np.ndarray, op: str) -> np.ndarray:
    """What `rank` contributes at global element positions `index` for reduction `op`."""
    index = np.asarray(index, dtype=np.int64)
    if op == "sum":
        return _index_term(index) + 1 + (rank % 4)
    if op in ("max", "min"):
        # The rank holding the extreme rotates with the index: every rank's data matters.
        return _index_term(index) + (rank + index) % nranks
    if op == "prod":
        return np.where((rank + index) % 3 == 0, -1, 1)
    raise ValueError(f"unknown op {op!r}")


def reduction_result(nranks: int, index: np.ndarray, op: str) -> np.ndarray:
    """The exact reduction over ranks 0..nranks-1 of reduction_input, at positions `index`."""
    index = np.asarray(index, dtype=np.int64)
    if op == "sum":
        q, m = divmod(nranks, 4)
        return nranks * (_index_term(index) + 1) + 6 * q + m * (m - 1) // 2
    if op == "max":
        return _index_term(index) + nranks - 1
    if op == "min":
        return _index_term(index)
    if op == "prod":
        k = (-index) % 3  # ranks r with (r + i) % 3 == 0 are r = k, k + 3, ...
        negatives = np.where(k < nranks, (nranks - 1 - k) // 3 + 1, 0)
        return np.where(negatives % 2 == 1, -1, 1)
    raise ValueError(f"unknown op {op!r}")


def data(source: int, index: np.ndarray, salt: int = 0) -> np.ndarray:
    """Values 1..251 that identify the rank (and block, via salt) they came from."""
    index = np.asarray(index, dtype=np.int64)
    return (source * 131 + salt * 37 + index) % _PERIOD + 1


def sentinel_fill(buf: np.ndarray) -> None:
    """Mark a receive buffer as not yet written: NaN for floats, a value no pattern produces otherwise."""
    if buf.dtype.kind == "f":
        buf.fill(np.nan)
    elif buf.dtype.kind == "u":
        buf.fill(0)
    else:
        buf.fill(-7777)
