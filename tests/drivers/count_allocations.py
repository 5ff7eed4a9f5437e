"""Run under mpiexec: the unchanged sweep, and after each point's measurement K more calls of its
timed batch under tracemalloc (which numpy reports its data buffers to) and with the process's minor
page faults counted. A timed call that builds a result the size of the message (the old sparse
`np.zeros(n)` / `np.array(state.dense)`) shows here as a peak of about S bytes and fresh page faults.

    mpiexec -n P python tests/drivers/count_allocations.py RESULTS.h5 [sweep options...]

Rank 0 prints one JSON line: {label: {"bytes": S, "peak": max bytes allocated over ranks during the K
calls, "faults": max minor page faults over ranks}} for every point measured. A planted algorithm,
sparse_allreduce `m_fresh_result`, stores its result the way the sparse algorithms used to (a fresh
dense vector per call), to show the count can fail.
"""

from __future__ import annotations

import json
import resource
import sys
import tracemalloc

import mpi4py

mpi4py.rc.thread_level = "single"
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from fabricprobe import collectives  # noqa: E402
from fabricprobe.cli.main import main  # noqa: E402
from fabricprobe.collectives import Algorithm  # noqa: E402
from fabricprobe.collectives.sparse_sparcml import ALGORITHMS as SPARCML  # noqa: E402
from fabricprobe.engine import harness, sweep  # noqa: E402

CALLS = 8


def fresh_result(comm, sendbuf, recvbuf, op="sum", root=0):
    """SparCML, its result then copied into a new dense vector (the old `np.array(state.dense)`)."""
    SPARCML[0].run(comm, sendbuf, recvbuf, op, root)
    recvbuf.set_dense(recvbuf.to_dense())


collectives.register(
    Algorithm(
        "m_fresh_result",
        "sparse_allreduce",
        "planted: a fresh result per call",
        run=fresh_result,
        unrunnable=SPARCML[0].unrunnable,
    )
)
FOUND: dict[str, dict] = {}
CURRENT: list = [None]

measure, run_point = harness.measure, sweep.run_point


def measure_then_count(batch, comm, budget, mode):
    out = measure(batch, comm, budget, mode)
    samples = np.empty(CALLS)
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    batch(samples, mode)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    peak = tracemalloc.get_traced_memory()[1] - start
    tracemalloc.stop()
    peak, faults = comm.allreduce(peak, op=MPI.MAX), comm.allreduce(faults, op=MPI.MAX)
    point = CURRENT[0]
    FOUND[point.label] = {"bytes": point.layout.nbytes, "peak": peak, "faults": faults}
    return out


def run_and_name(point, *args, **kwargs):
    CURRENT[0] = point
    return run_point(point, *args, **kwargs)


harness.measure = measure_then_count
sweep.run_point = run_and_name

status = main(["sweep", "-o", sys.argv[1], "--quiet", "--progress", "none", *sys.argv[2:]])
if MPI.COMM_WORLD.rank == 0:
    print(json.dumps(FOUND), flush=True)
raise SystemExit(status)
