"""Recursive doubling allreduce: lg p' exchanges of the whole buffer, with MPICH's fold for p not a
power of two; latency-optimal, bandwidth-poor."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.common import copy_into, scratch
from fabricprobe.collectives.blocks.halving_doubling import fold_reduce, reduce_to, unfold
from fabricprobe.collectives.cost import Cost, Formula, fold, lg, pof2

TAG = 121


def allreduce_recursive_doubling(comm, sendbuf, recvbuf, op, root=0) -> None:
    buf = recvbuf
    folded, data = fold_reduce(comm, buf, op, source=sendbuf)
    if folded.newrank >= 0:
        tmp = scratch(buf.size, buf)
        mask = 1
        while mask < folded.pof2:
            partner = folded.real(folded.newrank ^ mask)
            comm.Sendrecv(data, dest=partner, sendtag=TAG, recvbuf=tmp, source=partner, recvtag=TAG)
            reduce_to(buf, data, tmp, op)
            data = buf
            mask <<= 1
        if data is not buf and buf.size:  # p' = 1: nothing was exchanged
            copy_into(buf, data)
    unfold(comm, buf, folded)


def recursive_doubling_cost(n: float, p: int) -> Cost:
    k = lg(pof2(p))
    return Cost(messages=k, nbytes=k * n, reduced=k * n, reductions=k) + fold(n, p, True)


COST = Formula("lg p'·(α + nβ + nγ) (+ fold: 2α + 2nβ + nγ)", lambda s: recursive_doubling_cost(s.nbytes, s.p))

ALGORITHMS = (
    Algorithm(
        "recursive_doubling",
        "allreduce",
        "whole-buffer exchanges at distance 1, 2, 4, ... (latency-optimal)",
        run=allreduce_recursive_doubling,
        cost=COST,
    ),
)
