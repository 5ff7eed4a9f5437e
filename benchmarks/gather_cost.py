"""What collecting every rank's samples costs rank 0: the harness's gather + decide loop, and the
HDF5 write of the samples, for growing iteration counts, with rank 0's peak memory after each.

    mpiexec -n 64 --oversubscribe python benchmarks/gather_cost.py [--iterations 1000,10000,100000]

The timed batch writes random times (no MPI call inside), so what is measured is the harness alone:
Gather of iterations × ranks float64 per batch, the statistics rank 0 recomputes after every
batch, and gzip-compressed storage. The last row is the harness's cap (SAMPLE_CAP / ranks).
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time

import mpi4py

mpi4py.rc.thread_level = "single"
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from fabricprobe.engine import harness  # noqa: E402
from fabricprobe.store import ResultsWriter  # noqa: E402


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


RNG = np.random.default_rng(MPI.COMM_WORLD.rank)


def batch(out: np.ndarray, mode: int) -> None:
    out[:] = RNG.lognormal(np.log(1e-6), 0.5, out.size)  # noisy enough never to converge


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", default="1000,10000,100000")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    counts = [int(x) for x in args.iterations.split(",")]
    cap = harness.iteration_cap(harness.Budget(1, 0, 1e9, 0), comm.size)
    counts = sorted({min(c, cap) for c in counts} | {cap})
    path = os.path.join(tempfile.mkdtemp(), "g.h5") if comm.rank == 0 else None
    writer = ResultsWriter(path) if comm.rank == 0 else None
    if writer is not None:
        writer.start_run({"nranks": comm.size})
        print(f"{comm.size} ranks; cap {cap} iterations ({cap * comm.size * 8 / 2**20:.0f} MiB of samples)")
        print(
            f"{'iterations':>10} {'samples MiB':>12} {'gather+decide s':>16} {'write s':>8} {'file MiB':>9} "
            f"{'rank 0 peak RSS MiB':>20}"
        )
    for i, n in enumerate(counts):
        comm.Barrier()
        t0 = time.perf_counter()
        # adaptive, never converging (ci_target tiny): the doubling batches rank 0 decides on
        m = harness.measure(batch, comm, harness.Budget(max(n // 16, 10), 0, 1e9, 1e-12, max_iterations=n), 0)
        t1 = time.perf_counter()
        if writer is not None:
            writer.append_point({"index": i, "key": str(n), "status": "ok"}, m.samples)
            t2 = time.perf_counter()
            print(
                f"{m.iterations:>10} {m.samples.nbytes / 2**20:>12.1f} {t1 - t0:>16.3f} {t2 - t1:>8.3f} "
                f"{os.path.getsize(path) / 2**20:>9.1f} {rss_mib():>20.0f}",
                flush=True,
            )
    peak = comm.gather(rss_mib(), root=0)
    if comm.rank == 0:
        print(f"peak RSS: rank 0 {peak[0]:.0f} MiB, other ranks ≤ {max(peak[1:] or [0]):.0f} MiB")
        os.unlink(path)


if __name__ == "__main__":
    main()
