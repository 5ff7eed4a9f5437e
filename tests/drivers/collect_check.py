"""Under mpiexec (tests/test_collect.py): the reduced collection of a point's timings
(engine/collect.SlowestOnly: MPI_MAXLOC per batch, each rank's summary and the kept ranks' samples at
the end) against every rank's samples gathered (EveryRank) and reduced on rank 0 (stats.reduced), for
the same planted times: a time that depends on the rank and the iteration (ties between ranks), one
rank that never times, iterations some rank left untimed (late windows in window mode), batches of
different lengths. Rank 0 prints one line: "ok windowed=<bool>" or what differs."""

from __future__ import annotations

import dataclasses
import sys

import mpi4py

mpi4py.rc.thread_level = "single"
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from fabricprobe.engine.collect import EveryRank, SlowestOnly  # noqa: E402
from fabricprobe.stats import reduced, summarize  # noqa: E402

BATCHES = (5, 40, 7)


def planted(rank: int, size: int, n: int, batch: int, windowed: bool) -> np.ndarray:
    i = np.arange(n) + 1000 * batch
    t = 1e-6 * (1 + (i * 7 + rank * 13) % 11)  # 11 values: ranks tie in many iterations
    if rank == size - 1 and size > 2 and not windowed:
        t[:] = np.nan  # a rank that never times (a point-to-point test's other side)
    t[(i + rank) % 17 == 0] = np.nan  # an iteration this rank did not time (or reached late)
    return t


def collected(kind, comm, windowed: bool):
    c = EveryRank(comm, windowed) if kind is EveryRank else SlowestOnly(comm, MPI, windowed)
    decided = []
    for b, n in enumerate(BATCHES):
        local = planted(comm.rank, comm.size, n, b, windowed)
        late = c.collect(local)
        decided.append(c.keep(local, late))
    return c.times(), decided


def differences(full, red, decided_full, decided_red) -> list[str]:
    want = reduced(full.samples)
    out = []
    for name in ("maxima", "per_rank", "samples"):
        try:
            np.testing.assert_array_equal(getattr(red, name), getattr(want, name))
        except AssertionError as exc:
            out.append(f"{name}: {exc}")
    if red.ranks != want.ranks:
        out.append(f"kept ranks {red.ranks} != {want.ranks}")
    for a, b in zip(decided_full, decided_red):
        if not np.array_equal(a, b):
            out.append("a batch's iteration times differ")
    try:
        np.testing.assert_equal(dataclasses.asdict(summarize(red)), dataclasses.asdict(summarize(full)))
    except AssertionError as exc:
        out.append(f"summary: {exc}")
    return out


def main() -> int:
    comm = MPI.COMM_WORLD
    failed = False
    for windowed in (False, True):
        full, decided_full = collected(EveryRank, comm, windowed)
        red, decided_red = collected(SlowestOnly, comm, windowed)
        if comm.rank == 0:
            diff = differences(full, red, decided_full, decided_red)
            print(f"ok windowed={windowed}" if not diff else "; ".join(diff)[:3000], flush=True)
            failed |= bool(diff)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
