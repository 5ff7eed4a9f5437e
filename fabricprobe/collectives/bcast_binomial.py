"""Binomial-tree broadcast from any root. ⌈lg p⌉(α + nβ)."""

from __future__ import annotations

from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.binomial import bcast_binomial


def bcast_binomial_algorithm(comm, sendbuf, recvbuf, op=None, root=0) -> None:
    bcast_binomial(comm, recvbuf, root)


ALGORITHM = register(Algorithm("binomial", "bcast", "binomial tree from the root", run=bcast_binomial_algorithm))
