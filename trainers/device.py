"""Where a trainer's arrays live — host memory (numpy) or a GPU (CuPy) — and how its gradient
collective reaches them there. The model, the data and the optimiser are written once against the
array module `xp`; only this file knows which one it is.

On a GPU the collective runs the way fabricprobe's sweep measures it (fabricprobe.engine.gpudirect):
`direct` when the library says it is CUDA-aware (the device buffers handed to it, the device's
queued work synchronised first, through a SyncComm), else `staged` (gradient down to pinned host
memory, the collective there, the sum back up: what a step without GPUDirect pays). Direct is never
assumed silently: --assume-cuda-aware claims it, as for the sweep.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from fabricprobe.engine.gpudirect import CommProxy, direct_reason, sync_comm
from fabricprobe.errors import UsageError
from fabricprobe.memory import DIRECT, STAGED, BufferUnavailable, memory_for, select_device
from trainers.data import Dataset

DEVICES = ("host", "cupy")


@dataclass
class Device:
    kind: str  # host or cupy
    xp: Any  # the array module
    memory: Any  # fabricprobe.memory's Memory: allocation, pinned host memory, copies
    transfer: str = ""  # device only: direct or staged
    why_staged: str = ""

    def put(self, data: Dataset) -> Dataset:
        """The dataset's arrays on this device (labels too: accuracy compares on the device)."""
        if self.kind == "host":
            return data
        a = self.xp.asarray
        return replace(
            data, x_train=a(data.x_train), y_train=a(data.y_train), x_test=a(data.x_test), y_test=a(data.y_test)
        )

    def index(self, idx: np.ndarray) -> Any:
        return idx if self.kind == "host" else self.xp.asarray(idx)

    def collective(self, fn: Callable[[Any, Any, Any], str]) -> Callable[[Any, Any, Any], str]:
        """fn(comm, send, recv) -> algorithm, made to work on this device's arrays."""
        if self.kind == "host":
            return fn
        if self.transfer == DIRECT:
            memory = self.memory
            return lambda comm, send, recv: fn(sync_comm(comm, memory), send, recv)
        return Staged(fn, self.memory)

    def comm(self, comm: Any) -> Any:
        """comm for a trainer's own buffer calls (Send, Recv, Allreduce, Bcast) on this device's
        arrays: itself on the host, a SyncComm when direct, a StagedComm when staged."""
        if self.kind == "host":
            return comm
        if self.transfer == DIRECT:
            return sync_comm(comm, self.memory)
        return StagedComm(comm, self.memory)

    def describe(self) -> dict[str, str]:
        return {"device": self.kind, "device_transfer": self.transfer, "device_why_staged": self.why_staged}


class PinnedPool:
    """Pinned host buffers for staging, one per (slot, shape, dtype), kept: a training step's buckets,
    activations and parameters repeat their shapes, so no step allocates. A blocking call is done
    with its buffers when it returns, so the next call may reuse them."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.buffers: dict[tuple, np.ndarray] = {}

    def like(self, slot: int, dev: Any) -> np.ndarray:
        key = (slot, tuple(dev.shape), str(dev.dtype))
        if key not in self.buffers:
            self.buffers[key] = self.memory.pinned(dev.size, dev.dtype).reshape(dev.shape)
        return self.buffers[key]

    def down(self, slot: int, dev: Any) -> np.ndarray:
        host = self.like(slot, dev)
        self.memory.download(dev, host)
        return host


class Staged:
    """The collective on pinned host copies: down, fn, up."""

    def __init__(self, fn: Callable[[Any, Any, Any], str], memory: Any) -> None:
        self.fn, self.memory, self.pool = fn, memory, PinnedPool(memory)

    def __call__(self, comm: Any, send: Any, recv: Any) -> str:
        h_recv = self.pool.like(1, recv)
        name = self.fn(comm, self.pool.down(0, send), h_recv)
        self.memory.upload(h_recv, recv)
        return name


class StagedComm(CommProxy):
    """A communicator whose blocking buffer calls take device arrays and move them through pinned host
    memory: Send copies down first, Recv copies up after, Allreduce and Bcast both. Every array it
    is given is a device array (a trainer on a device keeps none on the host); anything else passes
    through to the communicator."""

    def __init__(self, comm: Any, memory: Any) -> None:
        super().__init__(comm, memory)
        self._pool = PinnedPool(memory)

    def Send(self, buf: Any, dest: int, tag: int = 0) -> None:  # noqa: N802 (mpi4py's names)
        self._comm.Send(self._pool.down(0, buf), dest=dest, tag=tag)

    def Recv(self, buf: Any, source: int, tag: int = 0, status: Any = None) -> None:  # noqa: N802
        host = self._pool.like(1, buf)
        self._comm.Recv(host, source=source, tag=tag, status=status)
        self._memory.upload(host, buf)

    def Allreduce(self, send: Any, recv: Any, op: Any = None) -> None:  # noqa: N802
        from mpi4py import MPI

        host = self._pool.like(1, recv)
        self._comm.Allreduce(self._pool.down(0, send), host, op=MPI.SUM if op is None else op)
        self._memory.upload(host, recv)

    def Bcast(self, buf: Any, root: int = 0) -> None:  # noqa: N802
        host = self._pool.down(0, buf)
        self._comm.Bcast(host, root=root)
        self._memory.upload(host, buf)


def open_device(kind: str, local_rank: int, vendor: str, assume_cuda_aware: bool = False) -> Device:
    """The device for --device kind on this rank (GPU local_rank mod the node's GPUs); UsageError
    with the reason where it cannot be had."""
    if kind not in DEVICES:
        raise UsageError(f"invalid --device {kind!r}: choose from {', '.join(DEVICES)}")
    if kind == "host":
        return Device("host", np, memory_for("host"))
    try:
        memory = memory_for(kind)
    except BufferUnavailable as exc:
        raise UsageError(str(exc).replace("--buffer", "--device")) from None
    select_device(memory, local_rank)
    from fabricprobe.mpienv import gpu_info

    aware, how = gpu_info.cuda_aware(vendor)
    why = direct_reason(aware, how, assume_cuda_aware)
    return Device(kind, memory.cp, memory, STAGED if why else DIRECT, why)
