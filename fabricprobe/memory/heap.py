"""Give the memory of a finished point back to the system (glibc's malloc; elsewhere nothing happens).

Why: a point's buffers (send, receive, expected result, the pattern's intermediates: tens of MiB per
rank at 4 MiB) are freed when the point ends, but glibc's dynamic mmap threshold rises after the first
large free, so later buffers of the same size come from the heap, and a heap whose top is pinned is
never shrunk: each rank's resident memory ratcheted up from phase to phase of a sweep. Measured: the
quick sweep at 64 ranks on this machine grew from 4.6 GB of PSS in all to 19.7 GB (308 MiB a rank),
and at 128 ranks it ran the 24 GiB machine out of memory at alltoall 4 MiB (issue 32's "abort at
point 57", which left nothing to tell a hang from thrashing). A fixed threshold (large arrays always
mmap'd, so unmapped when freed) and malloc_trim after each point give it back."""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter; setting it turns the dynamic threshold off
MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's initial default, kept fixed

_libc = None


def _glibc():
    global _libc
    if _libc is None:
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            lib.mallopt  # noqa: B018 - glibc has both, musl neither
            lib.malloc_trim  # noqa: B018
            _libc = lib
        except (OSError, AttributeError):
            _libc = False
    return _libc or None


def fix_mmap_threshold() -> bool:
    """Large allocations always mmap'd from now on; False where the C library is not glibc."""
    lib = _glibc()
    return bool(lib and lib.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))


def release_freed() -> None:
    """Return freed heap memory to the system (glibc's malloc_trim; under a millisecond here)."""
    lib = _glibc()
    if lib:
        lib.malloc_trim(0)
