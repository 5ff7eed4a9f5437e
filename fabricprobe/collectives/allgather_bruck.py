"""Bruck allgather: ⌈lg p⌉ steps for any p, then a local rotation.

At step k a rank sends everything it has gathered so far (up to 2^k blocks, fewer at the last
step when p is not a power of two) to rank − 2^k and receives as much from rank + 2^k."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.common import scratch
from fabricprobe.collectives.cost import Cost, Formula, lg

TAG = 151


def allgather_bruck(comm, sendbuf, recvbuf, op=None, root=0) -> None:
    p, r = comm.size, comm.rank
    count = recvbuf.size // p
    if count == 0:
        return
    work = scratch(count * p, recvbuf, slot=4)  # work block j = rank (r + j) mod p's block
    work[:count] = recvbuf[r * count : (r + 1) * count] if sendbuf is None else sendbuf
    have = 1
    while have < p:
        nblocks = min(have, p - have)
        comm.Sendrecv(
            work[: nblocks * count],
            dest=(r - have) % p,
            sendtag=TAG,
            recvbuf=work[have * count : (have + nblocks) * count],
            source=(r + have) % p,
            recvtag=TAG,
        )
        have += nblocks
    # Rotate: work block j belongs at recv block (r + j) mod p.
    head = (p - r) * count
    recvbuf[r * count :] = work[:head]
    recvbuf[: r * count] = work[head : p * count]


COST = Formula("⌈lg p⌉α + ((p−1)/p)nβ", lambda s: Cost(messages=lg(s.p), nbytes=(s.p - 1) / s.p * s.nbytes))

ALGORITHMS = (Algorithm("bruck", "allgather", "Bruck: ⌈lg p⌉ steps for any p", run=allgather_bruck, cost=COST),)
