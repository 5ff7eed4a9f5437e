"""Binomial trees (MPICH's reduce_intra_binomial / bcast_intra_binomial), on relative ranks so
any root works. Every step moves the whole buffer: ⌈lg p⌉ steps each way."""

from __future__ import annotations

from typing import Any

from fabricprobe import kernels
from fabricprobe.collectives.blocks.common import scratch

TAG_REDUCE, TAG_BCAST = 131, 132


def binomial_reduce(comm: Any, buf: Any, op: str, root: int) -> None:
    """Reduce buf from every rank into buf at root (other ranks' buf becomes scratch)."""
    p = comm.size
    rel = (comm.rank - root) % p
    mask = 1
    tmp = None
    while mask < p:
        if rel & mask:
            comm.Send(buf, dest=(rel - mask + root) % p, tag=TAG_REDUCE)
            return
        if rel + mask < p:
            if tmp is None:
                tmp = scratch(buf.size, buf, slot=1)
            comm.Recv(tmp, source=(rel + mask + root) % p, tag=TAG_REDUCE)
            kernels.reduce_into(buf, tmp, op)
        mask <<= 1


def binomial_bcast(comm: Any, buf: Any, root: int) -> None:
    p = comm.size
    rel = (comm.rank - root) % p
    mask = 1
    while mask < p:
        if rel & mask:
            comm.Recv(buf, source=(rel - mask + root) % p, tag=TAG_BCAST)
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if rel + mask < p:
            comm.Send(buf, dest=(rel + mask + root) % p, tag=TAG_BCAST)
        mask >>= 1
