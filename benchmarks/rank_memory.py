"""docs/scale.md, "Memory per rank": what each thing a sweep rank loads costs, stage by stage.

    mpiexec -n 8 python benchmarks/rank_memory.py [FOLDER]   (the venv's mpiexec; FOLDER gets memory.h5)

Every rank runs the same stages in order, a barrier after each, and reads its own
/proc/self/smaps_rollup: PSS (pages shared with the other ranks counted as a share) and USS (the
rank's private pages: what one more rank adds). Rank 0 prints the mean over ranks after each stage
and the growth from the previous one. The stages follow a sweep rank's start: numpy, MPI_Init, the
engine's modules, the first native timing loop (llvmlite builds and compiles it), then a whole
one-point sweep in the same process (the library's loops and buffers, the bound probe, validation;
on rank 0 the writer and the report), and last what only a rank running fabricprobe's own
algorithms loads: Numba and its reduction kernel."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def rollup() -> tuple[float, float]:
    """(PSS, USS) of this process in MiB."""
    got = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split(":", 1)
        got[key] = int(value.split()[0])
    return got["Pss"] / 1024, (got["Private_Clean"] + got["Private_Dirty"]) / 1024


def _mpi():
    import mpi4py

    mpi4py.rc.thread_level = "single"
    from mpi4py import MPI

    return MPI


def _native_loop(MPI) -> None:
    from fabricprobe.timing import compiled, loops, native

    nat = native.load(MPI)
    comm = nat.handle(MPI.COMM_WORLD)
    out = np.empty(10)
    compiled.native_timed_calls(nat.wtime, nat.barrier, comm, nat.barrier, (comm,), loops.BARRIER, out)


def _kernel() -> None:
    from fabricprobe.kernels.cpu import reduce_into

    a, b = np.ones(1024, dtype=np.float32), np.ones(1024, dtype=np.float32)
    reduce_into(a, b, 0)


def _sweep(folder: str) -> None:
    from fabricprobe.cli.main import main as fabricprobe

    argv = ["sweep", "--collectives", "allreduce", "--sizes", "8", "--progress", "none", "--quiet"]
    fabricprobe([*argv, "-o", str(Path(folder) / "memory.h5")])


def main() -> int:
    MPI = _mpi()
    comm = MPI.COMM_WORLD
    folder = sys.argv[1] if len(sys.argv) > 1 else "."
    stages = [
        ("python, numpy, MPI_Init: the bare rank", lambda: None),
        ("a sweep rank's modules (engine.sweep)", lambda: __import__("fabricprobe.engine.sweep")),
        ("first native timing loop (llvmlite)", lambda: _native_loop(MPI)),
        ("then a one-point sweep (allreduce 8 B)", lambda: _sweep(folder)),
        ("Numba and its reduction kernel", _kernel),
    ]
    rows = []
    for name, step in stages:
        step()
        comm.Barrier()
        pss, uss = rollup()
        both = comm.gather((pss, uss), root=0)
        if comm.rank == 0:
            rows.append((name, *np.mean(both, axis=0)))
    if comm.rank == 0:
        print(f"{comm.size} ranks; mean over ranks, MiB")
        print(f"{'stage':42s} {'PSS':>7s} {'+PSS':>7s} {'USS':>7s} {'+USS':>7s}")
        last = (0.0, 0.0)
        for name, pss, uss in rows:
            print(f"{name:42s} {pss:7.1f} {pss - last[0]:+7.1f} {uss:7.1f} {uss - last[1]:+7.1f}")
            last = (pss, uss)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
