"""How a collective on device buffers reaches the wire: GPUDirect on, or staged through host memory.

    direct     device buffers handed straight to the communication library (a CUDA-aware MPI, or NCCL);
               the device's queued work is synchronised before every call that carries a device buffer
    staged     device -> pinned host copy, the collective on host memory, host -> device copy, all
               inside the timed call (a training step without GPUDirect pays these copies)
    pipelined  staged in chunks on two streams: chunk i+1 comes down and chunk i-1 goes up while the
               collective runs on chunk i (collectives whose spec marks them pipelinable: result
               element i depends on input element i only)

`--gpudirect on` measures direct, `off` staged and pipelined, `both` all three. Direct is claimed only
when the library says it is CUDA-aware (fabricprobe.mpienv.gpu_info); otherwise its points are recorded as
not runnable with the reason, never silently staged.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any, Callable

from fabricprobe.memory import DIRECT, PIPELINED, STAGED, TRANSFERS, on_device
from fabricprobe.specs import SPECS
from fabricprobe.specs.base import Case, Layout

GPUDIRECT = {"on": (DIRECT,), "off": (STAGED, PIPELINED), "both": TRANSFERS}

Call = Callable[[], object]


def direct_reason(cuda_aware: str, how: str, assumed: bool) -> str:
    """Why direct points cannot run here ("" when they can)."""
    if cuda_aware == "yes" or assumed:
        return ""
    return (
        f"GPUDirect needs a CUDA-aware MPI; this library answered {cuda_aware!r} ({how}); "
        "pass --assume-cuda-aware only if you know better"
    )


def _carries_device(args: tuple, kwargs: dict) -> bool:
    for value in (*args, *kwargs.values()):
        if isinstance(value, (list, tuple)) and value:
            value = value[0]
        if on_device(value):
            return True
    return False


class CommProxy:
    """An mpi4py communicator behind a wrapper that changes how buffers reach it (SyncComm here, the
    trainers' StagedComm): rank, size and whatever the wrapper does not define are the communicator's."""

    def __init__(self, comm: Any, memory: Any) -> None:
        self._comm, self._memory = comm, memory

    @property
    def rank(self) -> int:
        return self._comm.rank

    @property
    def size(self) -> int:
        return self._comm.size

    def __getattr__(self, name: str) -> Any:
        return getattr(self._comm, name)


class SyncComm(CommProxy):
    """The communicator a collective sees in direct mode: an mpi4py communicator whose buffer calls first
    wait for the device work queued before them (a CUDA-aware MPI reads device memory without
    synchronising the caller's stream). Sub-communicators it makes are wrapped the same way."""

    _SPLITS = ("Split", "Split_type", "Dup", "Create")

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._comm, name)
        if name in self._SPLITS:
            return lambda *a, **kw: SyncComm(attr(*a, **kw), self._memory)
        if not callable(attr) or not name[:1].isupper():
            return attr
        sync = self._memory.synchronize

        @functools.wraps(attr)  # its name too: the non-blocking and persistent specs derive calls from it
        def synced(*args: Any, **kwargs: Any) -> Any:
            if _carries_device(args, kwargs):
                sync()
            return attr(*args, **kwargs)

        return synced


_proxies: dict[tuple, tuple[Any, SyncComm]] = {}


def sync_comm(comm: Any, memory: Any) -> SyncComm:
    """One SyncComm per communicator and memory kind, on the communicator's active topology (so the
    hierarchical algorithms build their sub-communicators once, on the virtual nodes if any)."""
    from fabricprobe.mpienv import topology  # a device point's: the options' parser reads GPUDIRECT alone
    from fabricprobe.mpienv.comm_cache import per_communicator

    def make() -> SyncComm:
        proxy = SyncComm(comm, memory)
        topology.set_active(proxy, topology.active(comm))
        return proxy

    return per_communicator(_proxies, comm, make, memory.kind)


def _ends(case: Case) -> tuple[bool, bool]:
    """(copy the input down, copy the result up) on this rank, as the collective's spec says."""
    return SPECS[case.collective].ends(case.rank, case.root)


def _input(case: Case) -> Any:
    """The buffer a call reads its input from (the receive buffer when in place, or for bcast)."""
    return case.recv if case.send is None else case.send


def staged(run: Call, dev: Case, host: Case, memory: Any) -> Call:
    """One staged call: inputs down to the pinned host case, `run` on it, the result back up."""
    down, up = _ends(dev)
    src_dev, src_host = _input(dev), _input(host)
    download, upload = memory.download, memory.upload

    def call() -> None:
        if down and src_dev.size:
            download(src_dev, src_host)
        run()
        if up and dev.recv.size:
            upload(host.recv, dev.recv)

    return call


def chunk_bounds(count: int, chunk: int) -> list[tuple[int, int]]:
    return [(a, min(a + chunk, count)) for a in range(0, count, chunk)]


def pipelined(call_on: Callable[[Case], Call], dev: Case, host: Case, memory: Any, chunk: int) -> Call:
    """Staged in chunks of `chunk` elements, copies overlapped with the collective on two streams.
    call_on(case) gives one collective call on a case; it is made once per chunk here, not per call."""
    if not SPECS[dev.collective].pipelinable:
        raise ValueError(f"{dev.collective} cannot be pipelined: its result elements mix input positions")
    down, up = _ends(dev)
    src_dev, src_host = _input(dev), _input(host)
    bounds = chunk_bounds(dev.count, chunk)
    calls = []
    for a, b in bounds:
        n = b - a
        part = replace(
            host,
            send=None if host.send is None else host.send[a:b],
            recv=host.recv[a:b],
            layout=Layout(
                count=n, send_len=n if host.send is not None else 0, recv_len=n, nbytes=n * host.dtype.itemsize
            ),
        )
        calls.append(call_on(part))
    s_down, s_up = memory.stream(), memory.stream()
    download, upload, record, sync = memory.download, memory.upload, memory.record, memory.synchronize

    def call() -> None:
        sync()  # work queued on the input must finish before another stream reads it
        ready = []
        if down:
            for a, b in bounds:
                download(src_dev[a:b], src_host[a:b], s_down)
                ready.append(record(s_down))
        for i, (a, b) in enumerate(bounds):
            if down:
                ready[i].synchronize()
            calls[i]()
            if up:
                upload(host.recv[a:b], dev.recv[a:b], s_up)
        s_up.synchronize()

    return call


def finished(run: Call, memory: Any) -> Call:
    """`run`, then wait for the device: a timed call ends when its result is in device memory."""
    sync = memory.synchronize

    def call() -> None:
        run()
        sync()

    return call
