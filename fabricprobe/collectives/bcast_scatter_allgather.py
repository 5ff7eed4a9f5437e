"""Broadcast as a binomial scatter of ⌈n/p⌉-element blocks and a ring allgather (MPICH's
scatter_ring_allgather, van de Geijn): for long messages."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.ring import ring_allgather
from fabricprobe.collectives.cost import Cost, Formula, lg

TAG = 141


def bcast_scatter_allgather(comm, sendbuf, recvbuf, op=None, root=0) -> None:
    p, n = comm.size, recvbuf.size
    if p == 1 or n == 0:
        return
    rel = (comm.rank - root) % p
    # Block b belongs to relative rank b: elements [b*block, (b+1)*block) clipped to n (may be empty).
    block = -(-n // p)
    disps = tuple(min(b * block, n) for b in range(p + 1))

    def blocks(first: int, last: int):
        return recvbuf[disps[first] : disps[min(last, p)]]

    # Binomial scatter: relative rank rel receives its subtree's blocks [rel, rel + lowbit(rel)).
    mask = 1
    while mask < p:
        if rel & mask:
            comm.Recv(blocks(rel, rel + mask), source=(rel - mask + root) % p, tag=TAG)
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if rel + mask < p:
            comm.Send(blocks(rel + mask, rel + 2 * mask), dest=(rel + mask + root) % p, tag=TAG)
        mask >>= 1
    ring_allgather(comm, recvbuf, disps, block_of=[(q - root) % p for q in range(p)])


def scatter_allgather_cost(n: float, p: int) -> Cost:
    return Cost(messages=lg(p) + p - 1, nbytes=2 * (p - 1) / p * n)


COST = Formula("(⌈lg p⌉ + p − 1)α + 2((p−1)/p)nβ", lambda s: scatter_allgather_cost(s.nbytes, s.p))

ALGORITHMS = (
    Algorithm(
        "scatter_allgather",
        "bcast",
        "binomial scatter + ring allgather (long messages)",
        run=bcast_scatter_allgather,
        cost=COST,
    ),
)
