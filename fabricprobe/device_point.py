"""A point on device buffers: the device twin of the host case, why it may not run, and its Batch.

The host case keeps its role (the spec writes inputs and checks results there, untimed); its device
twin is what the collective works on. Validation copies inputs up before the call and the result
down after it; the timed calls see only device memory, plus whatever copies the transfer itself
makes (staged, pipelined), which is the point of measuring them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from fabricprobe import gpudirect
from fabricprobe.collectives import Algorithm, Batch
from fabricprobe.collectives.base import python_batch
from fabricprobe.specs.base import Case


@dataclass(frozen=True)
class DeviceContext:
    """What every device point of a sweep shares: the memory kind and whether direct may run."""

    memory: Any
    direct_reason: str  # why GPUDirect points cannot run here; "" when they can
    stage_chunk: int  # bytes per pipelined chunk


def twin(case: Case, memory: Any) -> Case:
    """The case with device buffers like the host ones (length and type) in their place."""
    return replace(case, send=_like(case.send, memory.empty), recv=_like(case.recv, memory.empty))


def _like(arr: Any, allocate: Any) -> Any:
    return None if arr is None else allocate(arr.size, arr.dtype)


def load(host: Case, dev: Case, memory: Any) -> None:
    """The host case's inputs (and the receive buffer's sentinels) into the device buffers."""
    if host.send is not None and host.send.size:
        memory.upload(host.send, dev.send)
    if host.recv.size:
        memory.upload(host.recv, dev.recv)


def fetch(host: Case, dev: Case, memory: Any) -> None:
    """The device result into the host case, for the spec to check."""
    if host.recv.size:
        memory.download(dev.recv, host.recv)


def unrunnable(point: Any, algorithm: Algorithm, dev: Case, ctx: DeviceContext) -> str:
    """Why this device point cannot run ("" when it can). Every rank reaches the same answer."""
    if point.transfer != gpudirect.DIRECT:
        return ""
    if algorithm.name == "nccl":
        from fabricprobe.collectives.nccl import unusable_reason

        return unusable_reason(dev)
    return ctx.direct_reason


def device_batch(point: Any, algorithm: Algorithm, dev: Case, ctx: DeviceContext) -> Batch:
    memory = ctx.memory
    if point.transfer in ("", gpudirect.DIRECT):  # local tests touch no MPI; direct hands MPI device memory
        target = dev if not point.transfer else replace(dev, comm=gpudirect.sync_comm(dev.comm, memory))
        call = gpudirect.finished(algorithm.call(target), memory)
    else:
        pinned = replace(dev, send=_like(dev.send, memory.pinned), recv=_like(dev.recv, memory.pinned))
        if point.transfer == gpudirect.STAGED:
            call = gpudirect.staged(algorithm.call(pinned), dev, pinned, memory)
        else:
            chunk = max(1, ctx.stage_chunk // dev.dtype.itemsize)
            call = gpudirect.pipelined(algorithm.call, dev, pinned, memory, chunk)
    return python_batch(call, dev.comm)
