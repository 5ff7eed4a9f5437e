"""Run under mpiexec: wrong implementations planted beside correct ones and measured by the unchanged sweep
engine, so the test can show that validation catches every one (the mutation score in docs/testing.md).

    mpiexec -n P python tests/drivers/mutants.py RESULTS.h5

Each mutant is a small, realistic bug in a hand-written collective. Rank 0 prints one JSON line: for
every algorithm, how many of its points were validated ok and how many were caught wrong.
"""

from __future__ import annotations

import json
import sys

import mpi4py

mpi4py.rc.thread_level = "single"
import numpy as np  # noqa: E402

# the same planted sparse bug the sparse checker's --plant-fault adds-onto-result uses (this folder is
# on the path when a driver runs)
from check_sparse import adds_onto_result  # noqa: E402

from fabricprobe import collectives  # noqa: E402
from fabricprobe.collectives import Algorithm  # noqa: E402
from fabricprobe.collectives.allgather_ring import allgather_ring  # noqa: E402
from fabricprobe.collectives.allreduce_ring import allreduce_ring  # noqa: E402
from fabricprobe.collectives.blocks.binomial import binomial_reduce  # noqa: E402
from fabricprobe.collectives.blocks.common import block_displacements, copy_into  # noqa: E402
from fabricprobe.collectives.blocks.ring import TAG_AG  # noqa: E402
from fabricprobe.collectives.reduce_binomial import reduce_binomial  # noqa: E402
from fabricprobe.collectives.sparse_topk_allgather import sparse_topk_allgather  # noqa: E402
from fabricprobe.kernels import reduce_into  # noqa: E402

IDENTITY = {"sum": 0, "prod": 1}


def _input(sendbuf, recvbuf):
    return recvbuf.copy() if sendbuf is None else sendbuf.copy()


def wrong_op(comm, sendbuf, recvbuf, op, root=0):
    """A kernel table with prod wired to min (the bug the old patterns let through at p = 3)."""
    allreduce_ring(comm, sendbuf, recvbuf, {"prod": "min"}.get(op, op), root)


def dropped(comm, sendbuf, recvbuf, op, root=0):
    """The last rank's contribution never enters the reduction."""
    mine = _input(sendbuf, recvbuf)
    if comm.rank == comm.size - 1:
        mine[:] = IDENTITY[op]
    allreduce_ring(comm, mine, recvbuf, op, root)


def duplicated(comm, sendbuf, recvbuf, op, root=0):
    """Rank 0's contribution is reduced twice."""
    mine = _input(sendbuf, recvbuf)
    if comm.rank == 0:
        reduce_into(mine, mine.copy(), op)
    allreduce_ring(comm, mine, recvbuf, op, root)


def allgather_off_by_one(comm, sendbuf, recvbuf, op=None, root=0):
    """Ring allgather that stores each received block one slot further along."""
    p, r = comm.size, comm.rank
    count = recvbuf.size // p
    if sendbuf is not None and count:
        recvbuf[r * count : (r + 1) * count] = sendbuf
    disps = block_displacements(count * p, p)
    for step in range(p - 1):
        send_block, recv_block = (r - step) % p, (r - step - 1) % p
        store = (recv_block + 1) % p
        incoming = np.empty(disps[recv_block + 1] - disps[recv_block], recvbuf.dtype)
        comm.Sendrecv(
            recvbuf[disps[send_block] : disps[send_block + 1]],
            dest=(r + 1) % p,
            sendtag=TAG_AG,
            recvbuf=incoming,
            source=(r - 1) % p,
            recvtag=TAG_AG,
        )
        recvbuf[disps[store] : disps[store] + incoming.size] = incoming


def reduce_scatter_off_by_one(comm, sendbuf, recvbuf, op, root=0):
    """Reduce-scatter that hands each rank its right neighbour's block."""
    p, r = comm.size, comm.rank
    full = _input(sendbuf, recvbuf)
    count = full.size // p
    total = np.empty_like(full)
    allreduce_ring(comm, full, total, op, root)
    block = (r + 1) % p
    recvbuf[:count] = total[block * count : (block + 1) * count]


def wrong_root(comm, sendbuf, recvbuf, op=None, root=0):
    """Broadcast from rank 0 whatever root was asked for."""
    comm.Bcast(recvbuf, root=0)


def fold_skipped(comm, sendbuf, recvbuf, op, root=0):
    """Recursive doubling that forgets to fold the ranks beyond the largest power of two (an equivalent
    mutant where p is a power of two: there is nothing to fold)."""
    p, r = comm.size, comm.rank
    recvbuf[:] = _input(sendbuf, recvbuf)
    pof2 = 1 << (p.bit_length() - 1)
    if r < pof2:
        incoming = np.empty_like(recvbuf)
        mask = 1
        while mask < pof2:
            partner = r ^ mask
            comm.Sendrecv(recvbuf, dest=partner, sendtag=301, recvbuf=incoming, source=partner, recvtag=301)
            reduce_into(recvbuf, incoming, op)
            mask <<= 1
        if r + pof2 < p:
            comm.Send(recvbuf, dest=r + pof2, tag=302)
    else:
        comm.Recv(recvbuf, source=r - pof2, tag=302)


_STALE: dict[str, np.ndarray] = {}


def stale_buffer(comm, sendbuf, recvbuf, op, root=0):
    """Keeps the first call's scratch buffer and reuses it when a later call is larger: only the first
    elements are reduced, the rest keep what the scratch held."""
    scratch = _STALE.setdefault(op, np.empty(recvbuf.size, recvbuf.dtype))
    n = min(scratch.size, recvbuf.size)
    if scratch.dtype != recvbuf.dtype:
        scratch = _STALE[op] = np.empty(recvbuf.size, recvbuf.dtype)
        n = recvbuf.size
    mine = _input(sendbuf, recvbuf)
    allreduce_ring(comm, mine[:n], scratch[:n], op, root)
    recvbuf[:n] = scratch[:n]


def wrong_width(comm, sendbuf, recvbuf, op, root=0):
    """Reduces float64 data as if it were float32 (a datatype table off by one entry)."""
    mine = _input(sendbuf, recvbuf)
    if mine.dtype == np.float64:
        view = mine.view(np.float32)
        out = np.empty_like(view)
        allreduce_ring(comm, view, out, op, root)
        recvbuf[:] = out.view(np.float64)
    else:
        allreduce_ring(comm, mine, recvbuf, op, root)


_CALLS: dict[tuple, int] = {}


def late_switch(comm, sendbuf, recvbuf, op, root=0):
    """Right for the first three calls of a shape, then another (wrong) path: what a library that changes
    algorithm after a few calls looks like, caught only by validating the timed calls' output."""
    shape = (recvbuf.size, recvbuf.dtype.str, op)
    _CALLS[shape] = _CALLS.get(shape, 0) + 1
    if _CALLS[shape] <= 3:
        allreduce_ring(comm, sendbuf, recvbuf, op, root)
    else:
        dropped(comm, sendbuf, recvbuf, op, root)


def nonroot_input(comm, sendbuf, recvbuf, op, root=0):
    """Binomial reduce that accumulates in a non-root's own input buffer to save a copy: the root's
    result is right, the caller's send buffer is not (an equivalent mutant on 2 and 3 ranks, where
    every non-root of the tree is a leaf and accumulates nothing)."""
    if comm.rank == root:
        if sendbuf is not None and recvbuf.size:
            copy_into(recvbuf, sendbuf)
        buf = recvbuf
    else:
        buf = recvbuf if sendbuf is None else sendbuf
    binomial_reduce(comm, buf, op, root)


MUTANTS = (
    Algorithm("m_wrong_op", "allreduce", "planted: prod computed as min", run=wrong_op),
    Algorithm("m_dropped", "allreduce", "planted: last rank's contribution dropped", run=dropped),
    Algorithm("m_duplicated", "allreduce", "planted: rank 0 counted twice", run=duplicated),
    Algorithm("m_off_by_one", "allgather", "planted: ring stores blocks one slot off", run=allgather_off_by_one),
    Algorithm("m_off_by_one", "reduce_scatter", "planted: neighbour's block", run=reduce_scatter_off_by_one),
    Algorithm("m_wrong_root", "bcast", "planted: always from rank 0", run=wrong_root),
    Algorithm("m_fold_skipped", "allreduce", "planted: extra ranks not folded", run=fold_skipped),
    Algorithm("m_stale_buffer", "allreduce", "planted: first call's scratch reused", run=stale_buffer),
    Algorithm("m_wrong_width", "allreduce", "planted: float64 reduced as float32", run=wrong_width),
    Algorithm("m_late_switch", "allreduce", "planted: wrong after three calls", run=late_switch),
    Algorithm("m_nonroot_input", "reduce", "planted: a non-root's input used as accumulator", run=nonroot_input),
    Algorithm("m_adds_onto_result", "sparse_allreduce", "planted: result not zeroed", run=adds_onto_result),
    # controls: the same engine must pass correct code
    Algorithm("control", "allreduce", "correct ring", run=allreduce_ring),
    Algorithm("control", "allgather", "correct ring", run=allgather_ring),
    Algorithm("control", "reduce", "correct binomial", run=reduce_binomial),
    Algorithm("control", "sparse_allreduce", "correct TopkA", run=sparse_topk_allgather),
)
for algorithm in MUTANTS:
    collectives.register(algorithm)

from fabricprobe.engine.config import SweepConfig  # noqa: E402
from fabricprobe.engine.session import run_sweep  # noqa: E402
from fabricprobe.store import load_runs  # noqa: E402


def main() -> int:
    path = sys.argv[1]
    config = SweepConfig(
        collectives=["allreduce", "allgather", "reduce_scatter", "bcast", "reduce", "sparse_allreduce"],
        algorithms=sorted({a.name for a in MUTANTS}),
        sizes=[64, 8192],
        dtypes=["float32", "float64"],
        ops=["sum", "prod"],
        iterations_small=5,
        iterations_large=5,
        warmup_small=1,
        warmup_large=1,
        max_time=0.02,
        ci_target=0,
        root=1,
    ).check()
    outcome = run_sweep(config, path, progress="none", warn=lambda text: None)
    if outcome.is_root:
        verdicts: dict[str, dict[str, int]] = {}
        for p in load_runs(path)[-1].points:
            if p["algorithm"] in {a.name for a in MUTANTS}:
                name = f"{p['collective']}/{p['algorithm']}"
                tally = verdicts.setdefault(name, {"ok": 0, "wrong": 0, "other": 0, "steady_only": 0, "input": 0})
                tally[p["status"] if p["status"] in ("ok", "wrong") else "other"] += 1
                tally["steady_only"] += p["note"].startswith("wrong only after the timed calls")
                tally["input"] += "send buffers the standard leaves untouched" in p["note"]
        print(json.dumps({"exit_code": outcome.exit_code, "verdicts": verdicts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
