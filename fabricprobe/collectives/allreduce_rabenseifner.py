"""Rabenseifner allreduce: reduce-scatter by recursive halving, allgather by recursive doubling,
with MPICH's fold for p not a power of two. 2lg p·α + 2((p−1)/p)nβ + ((p−1)/p)nγ.

Blocks may be empty, so counts below p' need no fallback to recursive doubling."""

from __future__ import annotations

from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.common import block_displacements
from fabricprobe.collectives.halving_doubling import allgather_doubling, fold_reduce, reduce_scatter_halving, unfold


def allreduce_rabenseifner(comm, sendbuf, recvbuf, op, root=0) -> None:
    fold, data = fold_reduce(comm, recvbuf, op, source=sendbuf)
    if fold.newrank >= 0:
        disps = block_displacements(recvbuf.size, fold.pof2)
        reduce_scatter_halving(comm, recvbuf, disps, fold, op, data=data)
        allgather_doubling(comm, recvbuf, disps, fold)
    unfold(comm, recvbuf, fold)


ALGORITHM = register(Algorithm("rabenseifner", "allreduce",
                               "recursive-halving reduce-scatter + recursive-doubling allgather",
                               run=allreduce_rabenseifner))
