"""Host buffers with an explicit, recorded placement.

Placement changes large-message results: on the test machine Open MPI's 4 MiB allreduce ran
~1.5x faster on 2 MiB-aligned transparent huge pages than on 4 KiB pages. So nothing is left
to the allocator: by default buffers are page-aligned with no huge-page hint (what OMB's
posix_memalign and a plain C malloc give); with hugepages=True, buffers of 2 MiB and more
are 2 MiB-aligned and madvise(MADV_HUGEPAGE)d. Large buffers come from an anonymous mmap,
so numpy's own huge-page hint for arrays >= 4 MiB never applies implicitly. Every buffer is
written before use (untouched pages all map the kernel's zero page). What the process had written
before its message buffers matters too, and `--early-buffers` gives OMB's setting (arena.py).
"""

from __future__ import annotations

import mmap

import numpy as np

from fabricprobe.memory import arena

PAGE = mmap.PAGESIZE
HUGE_PAGE = 2 << 20
_MMAP_FROM = 1 << 20  # below this numpy's allocator is used (it never hints huge pages there)


class BufferPool:
    """Buffers kept between consecutive points with the same layout, so the algorithms compared at
    one size run on the very same memory. One buffer per role; a new shape replaces the old.

    These are the message buffers: with `--early-buffers` they come from the memory mapped and written
    at the process's start (arena.py, OMB's setting), a replaced one's block going back to it."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[tuple, np.ndarray, int | None]] = {}

    def get(self, role: str, length: int, dtype: np.dtype, hugepages: bool = False) -> np.ndarray:
        key = (length, np.dtype(dtype).str, hugepages)
        held = self._held.get(role)
        if held is None or held[0] != key:
            if held is not None:
                self._give_back(held)
            held = (key, *message_buffer(length, dtype, hugepages))
            self._held[role] = held
            arena.note_held(sum(arena.pages(h[1].nbytes) for h in self._held.values()))
        return held[1]

    def clear(self) -> None:
        for held in self._held.values():
            self._give_back(held)
        self._held.clear()

    @staticmethod
    def _give_back(held: tuple[tuple, np.ndarray, int | None]) -> None:
        if held[2] is not None:
            arena.give(held[2])


POOL = BufferPool()


def message_buffer(length: int, dtype: np.dtype, hugepages: bool = False) -> tuple[np.ndarray, int | None]:
    """A message buffer and, when it came from the early memory (arena.py), its block's offset there."""
    dtype = np.dtype(dtype)
    nbytes = length * dtype.itemsize
    block = arena.take(nbytes) if nbytes and not hugepages else None
    if block is None:
        arena.note_buffer(nbytes)
        return aligned_empty(length, dtype, hugepages), None
    view, offset = block
    return np.frombuffer(view, dtype=np.uint8).view(dtype), offset


def aligned_empty(length: int, dtype: np.dtype, hugepages: bool = False) -> np.ndarray:
    """A 1-D array of `length` elements, page-aligned (2 MiB-aligned huge pages if asked)."""
    dtype = np.dtype(dtype)
    nbytes = length * dtype.itemsize
    huge = hugepages and nbytes >= HUGE_PAGE
    if nbytes < _MMAP_FROM and not huge:
        raw = np.empty(nbytes + PAGE, dtype=np.uint8)
        offset = (-raw.ctypes.data) % PAGE
        return raw[offset : offset + nbytes].view(dtype)
    align = HUGE_PAGE if huge else PAGE
    # Private, like malloc: shared anonymous memory is shmem, which has its own (usually off) THP policy.
    region = mmap.mmap(-1, nbytes + align, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    raw = np.frombuffer(region, dtype=np.uint8)  # keeps the mapping alive as long as the array
    offset = (-raw.ctypes.data) % align
    if huge and hasattr(mmap, "MADV_HUGEPAGE"):
        region.madvise(mmap.MADV_HUGEPAGE, offset, nbytes)
    return raw[offset : offset + nbytes].view(dtype)
