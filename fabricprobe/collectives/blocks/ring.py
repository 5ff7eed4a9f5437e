"""Ring reduce-scatter and ring allgather over arbitrary blocks (Baidu's ring allreduce halves).

Block b of the buffer is elements [disps[b], disps[b+1]); blocks may differ in size or be empty.
Each step receives from the left neighbour and sends to the right one, with the receive posted
before the send, so no rank ever waits on an unposted receive. After the reduce-scatter rank r
owns block r fully reduced; the allgather then circulates every rank's block.
"""

from __future__ import annotations

from typing import Any

from fabricprobe import kernels
from fabricprobe.collectives.blocks.common import copy_into, largest_block, scratch

TAG_RS, TAG_AG = 111, 112


def ring_reduce_scatter(comm: Any, buf: Any, disps: tuple[int, ...], op: str, source: Any | None = None) -> None:
    """Rank r ends with block r of the reduction in buf.

    `source` holds this rank's input when it is not buf (out-of-place): every block is received
    exactly once, so its first write is `buf = source (op) incoming` and the first send reads
    source directly; the input is never copied into buf. Blocks other than r are left partial.
    """
    p, r = comm.size, comm.rank
    source = buf if source is None else source
    if p == 1:
        if source is not buf and buf.size:
            copy_into(buf, source)
        return
    right, left = (r + 1) % p, (r - 1) % p
    tmp = scratch(largest_block(disps), buf)
    for step in range(p - 1):
        send_block = (r - step - 1) % p
        recv_block = (r - step - 2) % p
        r0, r1 = disps[recv_block], disps[recv_block + 1]
        incoming = tmp[: r1 - r0]
        request = comm.Irecv(incoming, source=left, tag=TAG_RS)
        outgoing = source if step == 0 else buf  # the first block sent is still this rank's input
        comm.Send(outgoing[disps[send_block] : disps[send_block + 1]], dest=right, tag=TAG_RS)
        request.Wait()
        if source is buf:
            kernels.reduce_into(buf[r0:r1], incoming, op)
        else:
            kernels.reduce_pair(buf[r0:r1], source[r0:r1], incoming, op)


def ring_allgather(comm: Any, buf: Any, disps: tuple[int, ...], block_of: list[int] | None = None) -> None:
    """Circulate every rank's block; rank q's block is block_of[q] (default: block q)."""
    p, r = comm.size, comm.rank
    if p == 1:
        return
    right, left = (r + 1) % p, (r - 1) % p
    for step in range(p - 1):
        send_block = (r - step) % p
        recv_block = (r - step - 1) % p
        if block_of is not None:
            send_block, recv_block = block_of[send_block], block_of[recv_block]
        comm.Sendrecv(
            buf[disps[send_block] : disps[send_block + 1]],
            dest=right,
            sendtag=TAG_AG,
            recvbuf=buf[disps[recv_block] : disps[recv_block + 1]],
            source=left,
            recvtag=TAG_AG,
        )
