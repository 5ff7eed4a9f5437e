"""Run under mpiexec: a collective and two algorithms fabricprobe has never seen, added the way
docs/architecture.md says — a spec and its registry line, algorithm files that define ALGORITHMS — and
measured by the unchanged sweep engine, which validates them, times them and stores them.

    mpiexec -n P python tests/drivers/new_collective.py RESULTS.h5

Rank 0 prints one JSON line: the session's exit code and every stored point's (collective, algorithm,
status), and what the cost model and the docs table make of the new allreduce.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import mpi4py

mpi4py.rc.thread_level = "single"
import numpy as np  # noqa: E402

from fabricprobe.oracle import patterns  # noqa: E402
from fabricprobe.specs import SPECS  # noqa: E402
from fabricprobe.specs.base import Case, CollectiveSpec, Layout, mpi_buffers  # noqa: E402


# ---- specs/gather.py: MPI_Gather, the root ends with every rank's block in rank order ------------------
class Gather(CollectiveSpec):
    name = "gather"
    in_place_supported = False
    busbw_formula = "(n-1)/n"
    osu_title = "Gather Latency Test"
    osu_size_is_block = True

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // (itemsize * nranks)
        return Layout(count=count, send_len=count, recv_len=count * nranks, nbytes=count * nranks * itemsize)

    def busbw_factor(self, nranks: int) -> float:
        return (nranks - 1) / nranks

    def prepare(self, case: Case) -> None:
        case.send[:] = patterns.data(case.rank, np.arange(case.count))
        patterns.sentinel_fill(case.recv)

    def results(self, case: Case):
        if case.rank != case.root:
            return []
        return [(case.recv, np.concatenate([patterns.data(r, np.arange(case.count)) for r in range(case.nranks)]))]

    def mpi4py_call(self, case, MPI, op=None):
        send, recv = mpi_buffers(case, MPI)
        return partial(case.comm.Gather, send, recv, case.root)

    def ends(self, rank, root):
        return True, rank == root


# ---- the registry line (specs/__init__.py) --------------------------------------------------------------
SPECS["gather"] = Gather()

from fabricprobe import collectives  # noqa: E402  (the registry reads the specs when it is imported)
from fabricprobe.collectives import Algorithm  # noqa: E402
from fabricprobe.collectives.cost import Cost, Formula  # noqa: E402
from fabricprobe.kernels import reduce_into  # noqa: E402


# ---- collectives/gather_linear.py -----------------------------------------------------------------------
def gather_linear(comm, sendbuf, recvbuf, op=None, root=0, order=None) -> None:
    """Every rank sends its block to the root, which receives them in rank order."""
    count = sendbuf.size
    if comm.rank != root:
        if count:
            comm.Send(sendbuf, dest=root, tag=201)
        return
    for q in order or range(comm.size):
        block = recvbuf[q * count : (q + 1) * count]
        if q == root:
            block[:] = sendbuf
        elif count:
            comm.Recv(block, source=q, tag=201)
    if order is not None and count:  # the planted fault: blocks stored in reverse rank order
        recvbuf[:] = np.concatenate([recvbuf[q * count : (q + 1) * count] for q in reversed(range(comm.size))])


# ---- collectives/allreduce_linear.py --------------------------------------------------------------------
def allreduce_linear(comm, sendbuf, recvbuf, op, root=0) -> None:
    """Rank 0 receives every input and reduces it, then sends the result to every rank."""
    if sendbuf is not None and recvbuf.size:
        recvbuf[:] = sendbuf
    if comm.rank == 0:
        incoming = np.empty_like(recvbuf)
        for q in range(1, comm.size):
            comm.Recv(incoming, source=q, tag=202)
            reduce_into(recvbuf, incoming, op)
        for q in range(1, comm.size):
            comm.Send(recvbuf, dest=q, tag=203)
    else:
        comm.Send(recvbuf, dest=0, tag=202)
        comm.Recv(recvbuf, source=0, tag=203)


LINEAR = Formula(
    "2(p−1)(α + nβ) + (p−1)nγ, serialised at rank 0",
    lambda s: Cost(
        messages=2 * (s.p - 1), nbytes=2 * (s.p - 1) * s.nbytes, reduced=(s.p - 1) * s.nbytes, reductions=s.p - 1
    ),
)
for algorithm in (
    Algorithm("linear", "gather", "root receives every block in rank order", run=gather_linear),
    Algorithm("swapped", "gather", "planted fault: blocks in reverse rank order", run=partial(gather_linear, order=[])),
    Algorithm("linear", "allreduce", "reduce at rank 0, then send to everyone", run=allreduce_linear, cost=LINEAR),
):
    collectives.register(algorithm)

# ---- the unchanged engine -------------------------------------------------------------------------------
from fabricprobe.costmodel.predict import supported  # noqa: E402
from fabricprobe.costmodel.predict import unmodelled as without_formula  # noqa: E402
from fabricprobe.engine.config import SweepConfig  # noqa: E402
from fabricprobe.engine.session import run_sweep  # noqa: E402
from fabricprobe.store import load_runs  # noqa: E402


def main() -> int:
    path = sys.argv[1]
    config = SweepConfig(
        collectives=["gather", "allreduce"],
        algorithms=["library", "linear", "swapped"],
        sizes=[0, 8, 4096, 1 << 20],
        dtypes=["float32", "int64"],
        ops=["sum", "max"],
        iterations_small=10,
        iterations_large=5,
        warmup_small=2,
        warmup_large=1,
        max_time=0.05,
        ci_target=0,
        root=1,
    ).check()
    outcome = run_sweep(config, path, progress="none", warn=lambda text: None)
    if outcome.is_root:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs"))
        from gen_algorithms import table

        points = [(p["collective"], p["algorithm"], p["status"], p["bytes"]) for p in load_runs(path)[-1].points]
        print(
            json.dumps(
                {
                    "exit_code": outcome.exit_code,
                    "points": points,
                    "modelled": supported("allreduce", "linear"),
                    "gather_unmodelled": without_formula("gather", ["library", "linear"]),
                    "in_docs_table": "| allreduce | `linear` | reduce at rank 0, then send to everyone |" in table(),
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
