"""One job, several communicator sizes: a checker run on the first p ranks of the job for each p asked
(`--each 1,2,...,9`), so that p = 1..9 pays the start-up of 9 processes instead of 45. The algorithms take
their communicator as an argument and never use COMM_WORLD, so a communicator of p ranks is what a job
of p ranks is to them (tune-sweep measures communicator sizes the same way). The ranks outside it wait
without spinning (a test-and-sleep barrier), so the ranks at work have the cores.

Each checker's report line carries "nranks" (and "layout" with `--layouts 8=4;5=2,3`: virtual nodes of
those sizes on a communicator of that many ranks): the test reads one line per case."""

from __future__ import annotations

import ctypes
import time
from typing import Any, Callable

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def sizes(text: str | None, world_size: int) -> list[int]:
    """The sizes asked (every one at most the job's size), or the job's own."""
    if not text:
        return [world_size]
    asked = [int(p) for p in text.split(",")]
    if not all(1 <= p <= world_size for p in asked):
        raise SystemExit(f"--each {text}: every size between 1 and the job's {world_size} ranks")
    return asked


def layouts(text: str | None) -> list[tuple[int, str]]:
    """`8=4;8=3,3,2;5=2,3`: (communicator size, its virtual nodes' sizes) for each case."""
    return [(int(p), layout) for p, layout in (item.split("=") for item in (text or "").split(";") if item)]


def keep_freed_memory() -> None:
    """Let glibc keep the memory a case frees for the next case's buffers. A checker allocates fresh
    buffers for every case; glibc maps each block of 128 KiB or more anew and unmaps it when freed, so
    every large case page-faulted all its buffers in again: at p = 1..9 on 9 ranks the kernel's share
    was most of the run (docs/testing.md). Blocks up to 32 MiB (glibc's most) now come from the heap,
    which is not trimmed. What the checks compute is unchanged; only where the memory comes from."""
    libc = ctypes.CDLL(None)  # the process's own symbols: glibc's among them
    libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
    libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)


def quiet_barrier(comm: Any, poll_s: float = 0.002) -> None:
    """A barrier whose waiting ranks sleep between tests instead of polling the library flat out."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(poll_s)


def for_each_size(world: Any, asked: list[int], check: Callable[[Any], None]) -> None:
    """check(comm) on a communicator of the first p ranks of `world`, for each p in turn."""
    from mpi4py import MPI

    for p in asked:
        comm = world if p == world.size else world.Split(0 if world.rank < p else MPI.UNDEFINED, world.rank)
        if comm != MPI.COMM_NULL:
            check(comm)
        quiet_barrier(world)
