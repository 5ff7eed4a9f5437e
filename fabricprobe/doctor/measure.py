"""The doctor's two passes, run by every rank in the same order.

Pairwise: for each round and turn of the schedule, the pairs of that turn ping-pong at the same
time (a small message for latency, a large one for bandwidth), everybody else waits at the barrier
that opens the next turn. Each iteration is one round trip timed by the lower rank with MPI_Wtime,
as osu_latency does; the large size keeps the median half round trip (one scheduler hiccup in a
2-core machine moves a mean but not a median), the small one its 10th percentile (below).

Rank pass: a ring of reduce-scatter steps (send a chunk right, receive one from the left, reduce it
in place with the collectives' own kernel), timed on each rank around the exchange and around the
reduction; then every rank reduces the chunk in blocks (block_reductions: BLOCK_BYTES, and at
least BLOCK_MIN_S at the fastest rank's speed), timed per block (all ranks
at once, or one at a time where oversubscribed). The fastest block is the rank's own speed, which no
link affects (a scheduler's hiccup only adds time, so the fastest is what the rank can do): a slow
core, a CPU cap or a busy node raise every block, and the ring's step times show what it costs
everyone (each step waits for the slowest neighbour)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fabricprobe.doctor.schedule import Pair
from fabricprobe.kernels import reduce_into
from fabricprobe.mpienv.waiting import quiet_barrier

TAG = 4242
# A rank's speed is timed in blocks of back-to-back reductions of the ring's chunk, this many bytes
# reduced per block whatever the chunk (64 reductions of 4 MiB, about 13 ms here). A rank's single
# reduction inside a ring step fits in the slice a CPU quota gives it after waiting for its neighbour
# (seen: a host capped at 0.1 core reduced at full speed in the ring while the ring as a whole took
# 2.3× longer), and so do short blocks: blocks of 16 (3 ms)
# ran at full speed in 2 of 5 tries under the same cap, as CFS bandwidth control lets a group overrun
# its quota by about a scheduler tick and pays it back later; so did blocks of 64 reductions of a
# 2 MiB chunk (6 ms). A block of several ticks cannot.
BLOCK_BYTES = 256 << 20
# ...and bytes alone do not make a block long: a 2 MiB chunk stays in cache and 256 MiB of it took
# 6 ms on the CI machine, where the lab test's rank capped at 10% reduced at full speed in a block:
# once not named at all, once named and then "not confirmed" by the 15 blocks of the confirmation
# (2.49e-11 s/B against its peers' 2.30-2.38e-11). So a block is also at least this long at the
# fastest rank's speed: 3 periods of the lab's CPU cap, several of a busy core's time slices.
BLOCK_MIN_S = 0.03
# Latency is the 10th percentile of the half round trips: on a shared machine a small message waits
# for a core now and then (seen here: medians of one pair 2× its peers' while its 10th percentile
# matched them), and what the link can do is the low end. A large message's time is the median.
LATENCY_PERCENTILE = 10


def _pingpong(comm: Any, MPI: Any, peer: int, initiator: bool, buf: np.ndarray, iters: int, warmup: int) -> np.ndarray:
    """Half round trips in seconds (initiator), empty on the other side."""
    spec = [buf, MPI.BYTE]
    out = np.empty(iters)
    for i in range(warmup + iters):
        if initiator:
            t0 = MPI.Wtime()
            comm.Send(spec, dest=peer, tag=TAG)
            comm.Recv(spec, source=peer, tag=TAG)
            t = MPI.Wtime() - t0
            if i >= warmup:
                out[i - warmup] = t / 2
        else:
            comm.Recv(spec, source=peer, tag=TAG)
            comm.Send(spec, dest=peer, tag=TAG)
    return out if initiator else out[:0]


def _spread(x: np.ndarray) -> float:
    med = float(np.median(x))
    return float((np.percentile(x, 75) - np.percentile(x, 25)) / med) if med > 0 else 0.0


def _roles(comm: Any, pair: Pair) -> tuple[int, bool]:
    a, b = pair
    return (b, True) if comm.rank == a else (a, False)


def measure_small(comm: Any, MPI: Any, pair: Pair, small: int, iters: int, buf: np.ndarray) -> float | None:
    """The small size's half round trip (LATENCY_PERCENTILE) on the pair's lower rank; None elsewhere."""
    peer, initiator = _roles(comm, pair)
    s = _pingpong(comm, MPI, peer, initiator, buf[:small], iters, max(2, iters // 10))
    return float(np.percentile(s, LATENCY_PERCENTILE)) if initiator else None


def measure_large(comm: Any, MPI: Any, pair: Pair, large: int, iters: int, buf: np.ndarray) -> tuple | None:
    """(median half round trip, spread) at the large size on the pair's lower rank; None elsewhere."""
    peer, initiator = _roles(comm, pair)
    big = _pingpong(comm, MPI, peer, initiator, buf[:large], iters, max(1, iters // 5))
    return (float(np.median(big)), _spread(big)) if initiator else None


def block_slots(rank: int, size: int, oversubscribed: bool) -> tuple[int, int]:
    """(this rank's slot, number of slots) for the reduction blocks. Every rank at once where each has
    a core (all share their node's memory alike, as in training); where ranks outnumber the cores
    they run on, every rank takes its own turn: seen with 4 ranks on 2 cores, the two ranks that
    shared a core were 2× slower than the two that did not, and were named."""
    if oversubscribed:
        return rank, size
    return 0, 1


def block_reductions(comm: Any, MPI: Any, slot: int, slots: int, work: np.ndarray, incoming: np.ndarray) -> int:
    """Reductions of the chunk per timed block, the same on every rank: BLOCK_BYTES' worth, and at
    least BLOCK_MIN_S at the speed of the fastest rank (each slot times 3 reductions in its turn, the
    fastest of all is kept, so a slow rank's blocks are longer than that, never shorter)."""
    best = float("inf")
    for k in range(slots):
        quiet_barrier(comm)
        if k == slot:
            for _ in range(3):
                t0 = MPI.Wtime()
                reduce_into(work, incoming, "sum")
                best = min(best, MPI.Wtime() - t0)
            work.fill(1.0)
    fastest = max(comm.allreduce(best, op=MPI.MIN), 1e-7)
    return max(1, BLOCK_BYTES // work.nbytes, math.ceil(BLOCK_MIN_S / fastest))


def pairwise_pass(
    comm: Any,
    MPI: Any,
    plan: list[list[list[Pair]]],
    node_of: list[int],
    small: int,
    large: int,
    iters: tuple[int, int],
    oversubscribed: bool,
) -> list[tuple] | None:
    """Every pair of the plan, turn by turn; the rows (results.PAIR_FIELDS) on rank 0, None elsewhere.
    Where ranks outnumber cores, the pairs of a turn take the small size one after another: two
    pairs ping-ponging at once on 2 cores gave 13-54 µs for links that give 20-25 µs alone."""
    buf = np.zeros(max(small, large, 1), dtype=np.uint8)
    mine: list[tuple] = []
    for r, turns in enumerate(plan):
        for t, pairs in enumerate(turns):
            pair = next((p for p in pairs if comm.rank in p), None)
            lat = None
            for group in [[p] for p in pairs] if oversubscribed else [pairs]:
                quiet_barrier(comm)
                if pair in group:
                    lat = measure_small(comm, MPI, pair, small, iters[0], buf)
            quiet_barrier(comm)
            big = measure_large(comm, MPI, pair, large, iters[1], buf) if pair else None
            if lat is not None and big is not None:
                inter = node_of[pair[0]] != node_of[pair[1]]
                mine.append((pair[0], pair[1], r, t, inter, lat, *big, np.nan, np.nan))
    comm.Barrier()
    everyone = comm.gather(mine, root=0)
    return sorted(row for rows in everyone for row in rows) if comm.rank == 0 else None


def confirm_pass(
    comm: Any, MPI: Any, pairs: list[Pair], small: int, large: int, iters: tuple[int, int]
) -> dict[Pair, tuple[float, float]] | None:
    """The suspects again, one pair at a time (nothing else on the fabric), with longer counts."""
    buf = np.zeros(max(small, large, 1), dtype=np.uint8)
    mine = {}
    for pair in pairs:
        quiet_barrier(comm)
        if comm.rank in pair:
            lat = measure_small(comm, MPI, pair, small, iters[0], buf)
            big = measure_large(comm, MPI, pair, large, iters[1], buf)
            if lat is not None:
                mine[pair] = (lat, big[0])
    comm.Barrier()
    everyone = comm.gather(mine, root=0)
    if comm.rank != 0:
        return None
    return {k: v for d in everyone for k, v in d.items()}


# Ring steps timed per rep: the per-step average needs no full ring (p−1 steps, which at 65,536 ranks
# would make the rank pass minutes long); every rank still sends to its right and reduces its left's.
RING_STEPS = 16


def ring_pass(
    comm: Any, MPI: Any, node: int, slot: int, slots: int, chunk_bytes: int, reps: int, blocks: int = 5
) -> list[tuple] | None:
    """Ring steps, then every rank's reduction blocks, the ranks of slot k at the same time (see
    block_slots); rows (results.RANK_FIELDS) on rank 0, None elsewhere."""
    n = max(1, chunk_bytes // 4)
    work = np.ones(n, dtype=np.float32)
    incoming = np.ones(n, dtype=np.float32)
    p, me = comm.size, comm.rank
    right, left = (me + 1) % p, (me - 1) % p
    steps = max(1, min(p - 1, RING_STEPS))
    reduce_into(work, incoming, "sum")  # compile the kernel before anything is timed
    step_s = reduce_s = 0.0
    comm.Barrier()
    for _ in range(reps):
        for _ in range(steps):
            t0 = MPI.Wtime()
            if p > 1:
                comm.Sendrecv([work, MPI.FLOAT], dest=right, sendtag=TAG, recvbuf=[incoming, MPI.FLOAT], source=left)
            t1 = MPI.Wtime()
            reduce_into(work, incoming, "sum")
            t2 = MPI.Wtime()
            step_s += t2 - t0
            reduce_s += t2 - t1
        work.fill(1.0)  # keep the values small and finite
    per_block = block_reductions(comm, MPI, slot, slots, work, incoming)
    times = []
    for _ in range(blocks):  # every slot takes one block per sweep: a slow moment is not one rank's
        for k in range(slots):
            quiet_barrier(comm)
            if k == slot:
                t0 = MPI.Wtime()
                for _ in range(per_block):
                    reduce_into(work, incoming, "sum")
                times.append(MPI.Wtime() - t0)
                work.fill(1.0)
    quiet_barrier(comm)
    count = reps * steps
    row = (me, node, float(min(times)), float(n * 4 * per_block), step_s / count, reduce_s / count)
    rows = comm.gather((*row, np.nan, np.nan), root=0)
    return rows if comm.rank == 0 else None
