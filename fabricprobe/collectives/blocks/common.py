"""Pieces every hand-written algorithm needs: block partitions, reusable scratch buffers, and the
in-place / out-of-place entry. Messages go through mpi4py point-to-point calls on numpy (or
device) arrays; reductions go through fabricprobe.kernels."""

from __future__ import annotations

from functools import lru_cache
from itertools import accumulate
from typing import Any, Sequence

import numpy as np

from fabricprobe.memory import memory_of, on_device
from fabricprobe.memory.host import aligned_empty

# Offsets are tuples of Python ints, cached: at small sizes the algorithms' own bookkeeping is
# timed along with their messages, and numpy arrays of a few offsets cost microseconds.


@lru_cache(maxsize=1024)
def block_displacements(count: int, parts: int) -> tuple[int, ...]:
    """parts+1 offsets splitting count elements into parts blocks, the first count % parts one larger."""
    base, extra = divmod(count, parts)
    return tuple(accumulate((base + 1 if i < extra else base for i in range(parts)), initial=0))


def displacements_from_counts(counts: Sequence[int]) -> tuple[int, ...]:
    return tuple(accumulate((int(c) for c in counts), initial=0))


@lru_cache(maxsize=1024)
def largest_block(disps: tuple[int, ...]) -> int:
    return max((b - a for a, b in zip(disps, disps[1:])), default=0)


_scratch: dict[tuple, np.ndarray] = {}


def scratch(length: int, like: Any, slot: int = 0) -> Any:
    """A reusable work array of at least `length` elements of like's type, in like's memory.

    Allocating per call would put fresh page faults into every timed iteration of a large
    message; one buffer per (slot, dtype, memory kind) is kept and grown when needed.
    """
    key = (slot, like.dtype.str, type(like).__module__)
    buf = _scratch.get(key)
    if buf is None or buf.size < length:
        if on_device(like):  # in the same device memory, through the allocation layer
            buf = memory_of(like).empty(max(length, 1), like.dtype)
        else:
            buf = aligned_empty(max(length, 1), like.dtype)
            buf.fill(0)  # its pages are faulted in now, not inside a timed call
        _scratch[key] = buf
    return buf[:length]


def start(sendbuf: Any | None, recvbuf: Any) -> Any:
    """Make recvbuf hold this rank's input (copying sendbuf unless the call is in place)."""
    if sendbuf is not None and recvbuf.size:
        copy_into(recvbuf, sendbuf)
    return recvbuf


def copy_into(dst: Any, src: Any) -> None:
    """dst[...] = src in the arrays' own memory (a device-to-device copy for device arrays)."""
    if on_device(dst):
        memory_of(dst).copy(dst, src)
    else:
        dst[...] = src


def pof2_below(n: int) -> int:
    """The largest power of two <= n (n >= 1)."""
    return 1 << (n.bit_length() - 1)
