"""Run under mpiexec: every sparse allreduce algorithm against its definition
(fabricprobe.oracle.sparse_reference): exact variants = Σ_r topk(g_r), gTop-k = the butterfly with
re-selection to k, computed independently in numpy.

    mpiexec -n P python tests/drivers/check_sparse.py [--ranks-per-node 3,3,2] [--each 1,2,3]

Inputs: the tie-heavy pattern, identical vectors on every rank (every index duplicated), all
zeros, and disjoint supports; n from 0 to 20,000; k from one element to all of them. The result
object is reused from case to case, soiled before its first (trainers/sparse_dp.py reuses one every
step), and the input pairs must be left as they were. A rank that raises names its case and aborts
the job. Rank 0 prints one JSON line {"checked": N, "failures": [...]}.
"""

from __future__ import annotations

import argparse
import json
import sys

import mpi4py

mpi4py.rc.thread_level = "single"
import each_size  # noqa: E402 - this folder is on the path when a driver runs
import numpy as np  # noqa: E402
from check_algorithms import abort_naming  # noqa: E402
from each_size import for_each_size  # noqa: E402
from mpi4py import MPI  # noqa: E402

from fabricprobe import collectives  # noqa: E402
from fabricprobe.mpienv import topology  # noqa: E402
from fabricprobe.oracle import sparse_reference  # noqa: E402
from fabricprobe.sparse.vector import SparseResult, SparseVector  # noqa: E402


def inputs_for(kind: str, n: int, dtype, p: int):
    if kind == "pattern":
        return lambda r: sparse_reference.gradient(r, n, dtype, salt=3)
    if kind == "same":
        return lambda r: sparse_reference.gradient(0, n, dtype, salt=5)
    if kind == "zeros":
        return lambda r: np.zeros(n, dtype)

    def disjoint(r):  # rank r's nonzeros only in its own block of the index space
        v = np.zeros(n, dtype)
        lo, hi = r * n // p, (r + 1) * n // p
        v[lo:hi] = sparse_reference.gradient(r, hi - lo, dtype) + 101  # all nonzero
        return v

    return disjoint


def _drops_one(comm, sendbuf, recvbuf, op="sum", root=0):
    collectives.get("sparse_allreduce", "sparcml").run(comm, sendbuf, recvbuf, op, root)
    if recvbuf.sparse is not None and recvbuf.sparse.nnz and comm.rank == 0:
        recvbuf.sparse.val[0] += 1


def adds_onto_result(comm, sendbuf, recvbuf, op="sum", root=0):
    """Every rank's pairs gathered and summed into the result's dense storage, which it forgets to zero:
    right on a fresh result, wrong on the one a trainer hands it again (tests/drivers/mutants.py plants
    it in the sweep too)."""
    full = recvbuf.dense_buffer()  # holds what the last call left
    for idx, val in comm.allgather((sendbuf.idx, sendbuf.val)):
        np.add.at(full, idx, val)


def main() -> int:
    each_size.keep_freed_memory()
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks-per-node", default=None)
    parser.add_argument("--each", default=None, help="communicator sizes to check in turn (each_size.py)")
    parser.add_argument("--layouts", default=None, help="P=NODES;...: virtual topologies to check in turn")
    parser.add_argument(
        "--plant-fault",
        nargs="?",
        const="wrong",
        choices=("wrong", "adds-onto-result"),
        help="check only a deliberately wrong sparse allreduce (the checker must report it)",
    )
    args = parser.parse_args()
    names = collectives.names_for("sparse_allreduce")
    if args.plant_fault:
        from fabricprobe.collectives import Algorithm, register

        if args.plant_fault == "wrong":
            register(Algorithm("planted_fault", "sparse_allreduce", "SparCML, wrong in one pair", run=_drops_one))
        else:
            register(Algorithm("planted_fault", "sparse_allreduce", "adds onto the result", run=adds_onto_result))
        names = ["planted_fault"]
    world = MPI.COMM_WORLD
    if args.layouts:  # one case per layout, each on a communicator of its size
        for size, layout in each_size.layouts(args.layouts):
            args.ranks_per_node = layout
            for_each_size(world, [size], lambda comm: check_all(comm, args, names))
        return 0
    for_each_size(world, each_size.sizes(args.each, world.size), lambda comm: check_all(comm, args, names))
    return 0


def check_all(comm, args, names: list[str]) -> None:
    """Every case of every sparse algorithm named on comm; rank 0 prints the report line."""
    p, r = comm.size, comm.rank
    if args.ranks_per_node:
        sizes = topology.node_sizes(topology.parse_ranks_per_node(args.ranks_per_node), p)
        topology.set_active(comm, topology.virtual(topology.detect(comm), sizes))
    checked, failures = 0, []
    for name in names:
        algorithm = collectives.get("sparse_allreduce", name)
        results: dict[tuple, SparseResult] = {}
        for dtype in (np.dtype(np.float32), np.dtype(np.float64)):
            for n in (0, 1, p, 97, 8000):
                for k in sorted({1, max(1, n // 100), max(1, n // 3), n} if n else {0}):
                    for kind in ("pattern", "same", "zeros", "disjoint"):
                        inputs = inputs_for(kind, n, dtype, p)
                        send = SparseVector.top_k(inputs(r), k)
                        kept = (send.idx.copy(), send.val.copy())
                        case = f"{name} {dtype} n={n} k={k} {kind}"
                        # One result object per (algorithm, dtype, n), reused from case to case as a
                        # trainer reuses it from step to step; soiled first (it held other data).
                        result = results.get((n, dtype))
                        if result is None:
                            result = results[(n, dtype)] = SparseResult(n, dtype)
                            result.soil()
                        try:
                            algorithm.run(comm, send, result, "sum", 0)
                        except Exception as exc:  # the other ranks wait in the call: name the case, end the job
                            abort_naming(comm, f"check_sparse: rank {r} raised in {case}: {type(exc).__name__}: {exc}")
                        error = None
                        got = result.to_dense()
                        want = sparse_reference.expected(algorithm.semantics, p, n, dtype, k, inputs)
                        bad = np.flatnonzero(~np.isclose(got, want, rtol=0, atol=0, equal_nan=False))
                        if bad.size:
                            i = int(bad[0])
                            error = f"{bad.size} wrong, first at {i}: got {got[i]!r}, expected {want[i]!r}"
                        elif algorithm.semantics == "gtopk" and result.nnz > k:
                            error = f"gTop-k result has {result.nnz} nonzeros > k={k}"
                        elif not (np.array_equal(kept[0], send.idx) and np.array_equal(kept[1], send.val)):
                            error = "changed its input pairs"
                        checked += 1
                        if error:  # gathered once at the end
                            failures.append(f"{case} rank {r}: {error}")
    failures = [f for per_rank in comm.gather(failures, root=0) or [] for f in per_rank]
    if r == 0:
        print(
            json.dumps(
                {
                    "nranks": p,
                    "layout": args.ranks_per_node,
                    "checked": checked,
                    "failures": failures[:40],
                    "nfailures": len(failures),
                }
            )
        )


if __name__ == "__main__":
    sys.exit(main())
