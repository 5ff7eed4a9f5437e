"""Run under mpiexec: every sparse allreduce algorithm against its definition
(fabricprobe.oracle.sparse_reference): exact variants = Σ_r topk(g_r), gTop-k = the butterfly with
re-selection to k, computed independently in numpy.

    mpiexec -n P python tests/drivers/check_sparse.py [--ranks-per-node 3,3,2]

Inputs: the tie-heavy pattern, identical vectors on every rank (every index duplicated), all
zeros, and disjoint supports; n from 0 to 20,000; k from one element to all of them. Rank 0
prints one JSON line {"checked": N, "failures": [...]}.
"""

from __future__ import annotations

import argparse
import json
import sys

import mpi4py

mpi4py.rc.thread_level = "single"
import numpy as np  # noqa: E402
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks-per-node", default=None)
    parser.add_argument(
        "--plant-fault",
        action="store_true",
        help="check only a deliberately wrong sparse allreduce (the checker must report it)",
    )
    args = parser.parse_args()
    names = collectives.names_for("sparse_allreduce")
    if args.plant_fault:
        sparcml = collectives.get("sparse_allreduce", "sparcml")

        def drops_one(comm, sendbuf, recvbuf, op="sum", root=0):
            sparcml.run(comm, sendbuf, recvbuf, op, root)
            if recvbuf.sparse is not None and recvbuf.sparse.nnz and comm.rank == 0:
                recvbuf.sparse.val[0] += 1

        from fabricprobe.collectives import Algorithm, register

        register(Algorithm("planted_fault", "sparse_allreduce", "SparCML, wrong in one pair", run=drops_one))
        names = ["planted_fault"]
    comm = MPI.COMM_WORLD
    p, r = comm.size, comm.rank
    if args.ranks_per_node:
        sizes = topology.node_sizes(topology.parse_ranks_per_node(args.ranks_per_node), p)
        topology.set_active(comm, topology.virtual(topology.detect(comm), sizes))
    checked, failures = 0, []
    for name in names:
        algorithm = collectives.get("sparse_allreduce", name)
        for dtype in (np.dtype(np.float32), np.dtype(np.float64)):
            for n in (0, 1, p, 97, 8000):
                for k in sorted({1, max(1, n // 100), max(1, n // 3), n} if n else {0}):
                    for kind in ("pattern", "same", "zeros", "disjoint"):
                        inputs = inputs_for(kind, n, dtype, p)
                        send = SparseVector.top_k(inputs(r), k)
                        result = SparseResult(n, dtype)
                        error = None
                        try:
                            algorithm.run(comm, send, result, "sum", 0)
                            got = result.to_dense()
                            want = sparse_reference.expected(algorithm.semantics, p, n, dtype, k, inputs)
                            bad = np.flatnonzero(~np.isclose(got, want, rtol=0, atol=0, equal_nan=False))
                            if bad.size:
                                i = int(bad[0])
                                error = f"{bad.size} wrong, first at {i}: got {got[i]!r}, expected {want[i]!r}"
                            elif algorithm.semantics == "gtopk" and result.nnz > k:
                                error = f"gTop-k result has {result.nnz} nonzeros > k={k}"
                        except Exception as exc:  # report, do not hang the other ranks
                            error = f"{type(exc).__name__}: {exc}"
                        checked += 1
                        if error:  # gathered once at the end
                            failures.append(f"{name} {dtype} n={n} k={k} {kind} rank {r}: {error}")
    failures = [f for per_rank in comm.gather(failures, root=0) or [] for f in per_rank]
    if r == 0:
        print(json.dumps({"nranks": p, "checked": checked, "failures": failures[:40], "nfailures": len(failures)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
