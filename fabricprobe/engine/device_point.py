"""A point on device buffers: the device twin of the host case, why it may not run, and its Batch.

The host case keeps its role (the spec writes inputs and checks results there, untimed); its device
twin is what the collective works on. Validation copies inputs up before the call and the result
down after it; the timed calls see only device memory, plus whatever copies the transfer itself
makes (staged, pipelined), which is the point of measuring them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fabricprobe import kernels
from fabricprobe.collectives.algorithm import MPI_TRANSPORT, Algorithm
from fabricprobe.engine import gpudirect
from fabricprobe.memory import DIRECT, STAGED
from fabricprobe.sparse.vector import INDEX, SparseResult, SparseVector
from fabricprobe.specs import SPECS
from fabricprobe.specs.base import Case
from fabricprobe.timing.batch import Batch, idle, python_batch


@dataclass(frozen=True)
class DeviceContext:
    """What every device point of a sweep shares: the memory kind and whether direct may run."""

    memory: Any
    direct_reason: str  # why GPUDirect points cannot run here; "" when they can
    stage_chunk: int  # bytes per pipelined chunk


def twin(case: Case, memory: Any) -> Case:
    """The case with device buffers like the host ones (length and type) in their place. A sparse
    allreduce's input pairs go to the device as they are; its result there is the dense sum."""
    if isinstance(case.send, SparseVector):
        send = SparseVector(case.send.n, _like(case.send.idx, memory.empty), _like(case.send.val, memory.empty))
        return replace(case, send=send, recv=memory.empty(case.count, case.dtype))
    return _mirror(case, memory.empty)


def _mirror(case: Case, allocate: Any) -> Case:
    """The case with buffers from `allocate` (device or pinned host) like its own, length and type."""
    return replace(case, send=_like(case.send, allocate), recv=_like(case.recv, allocate))


def _like(arr: Any, allocate: Any) -> Any:
    return None if arr is None else allocate(arr.size, arr.dtype)


def load(host: Case, dev: Case, memory: Any) -> None:
    """The host case's inputs (and the receive buffer's sentinels) into the device buffers."""
    if isinstance(host.send, SparseVector):
        for src, dst in ((host.send.idx, dev.send.idx), (host.send.val, dev.send.val)):
            if src.size:
                memory.upload(src, dst)
        memory.zero(dev.recv)
        return
    if host.send is not None and host.send.size:
        memory.upload(host.send, dev.send)
    if host.recv.size:
        memory.upload(host.recv, dev.recv)


def fetch(host: Case, dev: Case, memory: Any) -> None:
    """The device result into the host case, for the spec to check."""
    if isinstance(host.recv, SparseResult):
        dense = np.empty(host.count, host.dtype)
        if dense.size:
            memory.download(dev.recv, dense)
        host.recv.set_dense(dense)
        return
    if host.recv.size:
        memory.download(dev.recv, host.recv)


def unrunnable(point: Any, algorithm: Algorithm, dev: Case, ctx: DeviceContext) -> str:
    """Why this device point cannot run ("" when it can): the algorithm's own answer first (NCCL's needs,
    the sparse algorithms' host-built messages), then, for direct points carried by MPI, whether the
    library is CUDA-aware. Every rank reaches the same answer."""
    reason = algorithm.why_not(dev, point.transfer)
    if reason or point.transfer != DIRECT or algorithm.transport != MPI_TRANSPORT:
        return reason
    return ctx.direct_reason


def device_batch(point: Any, algorithm: Algorithm, dev: Case, ctx: DeviceContext) -> Batch:
    memory = ctx.memory
    if SPECS[dev.collective].pt2pt:
        return _pt2pt_batch(point, dev, memory)
    if point.transfer in ("", DIRECT):  # local tests touch no MPI; direct hands MPI device memory
        target = dev if not point.transfer else replace(dev, comm=gpudirect.sync_comm(dev.comm, memory))
        call = gpudirect.finished(algorithm.call(target), memory)
    else:
        if isinstance(dev.send, SparseVector):
            return python_batch(_sparse_staged(algorithm, dev, memory), dev.comm)
        pinned = _mirror(dev, memory.pinned)
        if point.transfer == STAGED:
            call = gpudirect.staged(algorithm.call(pinned), dev, pinned, memory)
        else:
            chunk = max(1, ctx.stage_chunk // dev.dtype.itemsize)
            call = gpudirect.pipelined(algorithm.call, dev, pinned, memory, chunk)
    return python_batch(call, dev.comm)


def _sparse_staged(algorithm: Algorithm, dev: Case, memory: Any) -> Any:
    """The pairs down to pinned host memory, the sparse algorithm on the host, its result up into the
    dense device vector: dense results copied whole, sparse ones as pairs scatter-added on the device
    (what a training step without GPUDirect does with a sparse gradient sum)."""
    send = dev.send
    pinned = SparseVector(
        send.n, memory.pinned(send.idx.size, send.idx.dtype), memory.pinned(send.val.size, send.val.dtype)
    )
    result = SparseResult(send.n, dev.dtype)
    run = algorithm.call(replace(dev, send=pinned, recv=result))
    pairs_idx, pairs_val = memory.empty(max(send.n, 1), INDEX), memory.empty(max(send.n, 1), dev.dtype)
    download, upload = memory.download, memory.upload

    def call() -> None:
        if send.idx.size:
            download(send.idx, pinned.idx)
            download(send.val, pinned.val)
        result.clear()
        run()
        if result.dense is not None:
            if result.n:
                upload(np.ascontiguousarray(result.dense), dev.recv)
            return
        memory.zero(dev.recv)
        m = result.sparse.nnz if result.sparse is not None else 0
        if m:
            upload(np.ascontiguousarray(result.sparse.idx, INDEX), pairs_idx[:m])
            upload(np.ascontiguousarray(result.sparse.val), pairs_val[:m])
            kernels.scatter_add(dev.recv, pairs_idx[:m], pairs_val[:m])

    return gpudirect.finished(call, memory)  # the scatter-add kernel is part of the step


def _pt2pt_batch(point: Any, dev: Case, memory: Any) -> Batch:
    """OMB's loops on device buffers: direct hands MPI the device memory (osu_latency -d cuda D D);
    staged copies each message through pinned host memory, inside the timed region."""
    from mpi4py import MPI

    from fabricprobe.collectives.library import python_pt2pt

    if dev.role < 0:  # this rank sits the point out
        return idle
    if point.transfer == DIRECT:
        return python_pt2pt(dev, MPI)
    pinned = _mirror(dev, memory.pinned)
    return python_pt2pt(
        pinned, MPI, lambda: memory.download(dev.send, pinned.send), lambda: memory.upload(pinned.recv, dev.recv)
    )
