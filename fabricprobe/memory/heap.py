"""Give the memory of a finished point back to the system (glibc's malloc_trim; elsewhere nothing).

Why: a point's buffers (send, receive, expected result, the pattern's intermediates: tens of MiB a
rank at 4 MiB) are freed when the point ends, but glibc keeps freed heap memory for the next
allocation, and the 128-rank quick sweep ran this 24 GiB machine out of memory (docs/performance.md,
Many ranks on one node). Trimming after a point, outside any timed region, returns what the heap holds
free. glibc's allocation policy itself (its dynamic mmap threshold) is left alone: the library's own
temporary buffers inside a collective come from the same heap, and a fixed threshold would make every
large call map fresh pages, which is not what an application's calls see."""

from __future__ import annotations

import ctypes

_libc = None


def _glibc():
    global _libc
    if _libc is None:
        try:
            # the process's own symbols, libc's among them (ctypes.util.find_library ran ldconfig -p
            # in a subprocess: a process spawned by every rank, and subprocess's imports)
            lib = ctypes.CDLL(None)
            lib.malloc_trim  # noqa: B018 - glibc has it, musl does not
            _libc = lib
        except (OSError, AttributeError):
            _libc = False
    return _libc or None


def release_freed() -> None:
    """Return freed heap memory to the system (glibc's malloc_trim; under a millisecond here)."""
    lib = _glibc()
    if lib:
        lib.malloc_trim(0)
