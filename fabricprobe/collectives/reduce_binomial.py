"""Binomial-tree reduce to any root. ⌈lg p⌉(α + nβ + nγ)."""

from __future__ import annotations

from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.binomial import reduce_binomial
from fabricprobe.collectives.common import copy_into, scratch


def reduce_binomial_algorithm(comm, sendbuf, recvbuf, op, root=0) -> None:
    if comm.rank == root:
        buf = recvbuf
        if sendbuf is not None and buf.size:
            copy_into(buf, sendbuf)
    else:  # the input must survive: accumulate in a scratch copy
        source = recvbuf if sendbuf is None else sendbuf
        buf = scratch(source.size, source, slot=2)
        if buf.size:
            copy_into(buf, source)
    reduce_binomial(comm, buf, op, root)


ALGORITHM = register(Algorithm("binomial", "reduce", "binomial tree to the root", run=reduce_binomial_algorithm))
