"""Recursive doubling allreduce: lg p' exchanges of the whole buffer, with MPICH's fold for
p not a power of two. lg p·α + n·lg p·(β + γ); latency-optimal, bandwidth-poor."""

from __future__ import annotations

from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.common import copy_into, scratch
from fabricprobe.collectives.halving_doubling import fold_reduce, reduce_to, unfold

TAG = 121


def allreduce_recursive_doubling(comm, sendbuf, recvbuf, op, root=0) -> None:
    buf = recvbuf
    fold, data = fold_reduce(comm, buf, op, source=sendbuf)
    if fold.newrank >= 0:
        tmp = scratch(buf.size, buf)
        mask = 1
        while mask < fold.pof2:
            partner = fold.real(fold.newrank ^ mask)
            comm.Sendrecv(data, dest=partner, sendtag=TAG, recvbuf=tmp, source=partner, recvtag=TAG)
            reduce_to(buf, data, tmp, op)
            data = buf
            mask <<= 1
        if data is not buf and buf.size:  # p' = 1: nothing was exchanged
            copy_into(buf, data)
    unfold(comm, buf, fold)


ALGORITHM = register(Algorithm("recursive_doubling", "allreduce",
                               "whole-buffer exchanges at distance 1, 2, 4, ... (latency-optimal)",
                               run=allreduce_recursive_doubling))
