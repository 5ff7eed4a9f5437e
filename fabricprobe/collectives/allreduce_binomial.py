"""Allreduce as a binomial reduce to rank 0 and a binomial broadcast back.
2⌈lg p⌉α + 2⌈lg p⌉nβ + ⌈lg p⌉nγ."""

from __future__ import annotations

from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.binomial import bcast_binomial, reduce_binomial
from fabricprobe.collectives.common import start


def allreduce_binomial(comm, sendbuf, recvbuf, op, root=0) -> None:
    buf = start(sendbuf, recvbuf)
    reduce_binomial(comm, buf, op, 0)
    bcast_binomial(comm, buf, 0)


ALGORITHM = register(Algorithm("binomial", "allreduce", "binomial reduce to rank 0 + binomial broadcast",
                               run=allreduce_binomial))
