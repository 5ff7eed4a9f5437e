"""Where a point's buffers live: host (numpy), CuPy or Numba-CUDA device memory.

One allocation layer for the collectives, the staging paths and the validation: `memory_for(kind)`
gives a Memory that allocates device arrays and pinned host arrays, copies between them
(synchronously, or queued on a stream for the pipelined staging), and synchronises. CuPy and
Numba-CUDA are imported only when asked for; their absence is one clear BufferUnavailable line.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from fabricprobe.memory.host import aligned_empty

BUFFER_KINDS = ("host", "cupy", "numba")
# How a collective on device buffers reaches the wire (fabricprobe.engine.gpudirect does each): handed
# straight to the library (GPUDirect), or through pinned host memory, whole or in pipelined chunks.
DIRECT, STAGED, PIPELINED = "direct", "staged", "pipelined"
TRANSFERS = (DIRECT, STAGED, PIPELINED)


class BufferUnavailable(Exception):
    """The requested buffer kind cannot be used in this environment (the message says why)."""


class HostMemory:
    kind = "host"

    def empty(self, length: int, dtype: Any) -> np.ndarray:
        return aligned_empty(length, dtype)

    def pinned(self, length: int, dtype: Any) -> np.ndarray:
        return aligned_empty(length, dtype)

    def copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        np.copyto(dst, src)

    def synchronize(self) -> None:
        pass


class CupyMemory:
    """CuPy arrays on the current device; pinned host memory from cupyx.empty_pinned."""

    kind = "cupy"

    def __init__(self) -> None:
        try:
            import cupy
            import cupyx
        except ImportError as exc:
            raise BufferUnavailable(f"--buffer cupy needs CuPy (pip install 'fabricprobe[gpu]'): {exc}") from exc
        try:
            if cupy.cuda.runtime.getDeviceCount() < 1:
                raise BufferUnavailable("--buffer cupy: CuPy sees no GPU")
        except cupy.cuda.runtime.CUDARuntimeError as exc:
            raise BufferUnavailable(f"--buffer cupy: no usable GPU ({exc})") from exc
        self.cp, self.cupyx, self.rt = cupy, cupyx, cupy.cuda.runtime

    def empty(self, length: int, dtype: Any) -> Any:
        return self.cp.empty(length, dtype=dtype)

    def pinned(self, length: int, dtype: Any) -> np.ndarray:
        return self.cupyx.empty_pinned(length, dtype=dtype)

    # Raw cudaMemcpy(Async) on the arrays' pointers, as a C program copies: ndarray.get/set changed their
    # blocking semantics across CuPy versions. All arrays here are contiguous 1-D (slices included).
    def download(self, dev: Any, host: np.ndarray, stream: Any = None) -> None:
        self._copy(host.ctypes.data, dev.data.ptr, host.nbytes, self.rt.memcpyDeviceToHost, stream)

    def upload(self, host: np.ndarray, dev: Any, stream: Any = None) -> None:
        self._copy(dev.data.ptr, host.ctypes.data, host.nbytes, self.rt.memcpyHostToDevice, stream)

    def _copy(self, dst: int, src: int, nbytes: int, kind: int, stream: Any) -> None:
        if not nbytes:
            return
        if stream is None:
            self.synchronize()  # work queued on the current stream (kernels writing dev) comes first
            self.rt.memcpy(dst, src, nbytes, kind)
        else:
            self.rt.memcpyAsync(dst, src, nbytes, kind, stream.ptr)

    def copy(self, dst: Any, src: Any) -> None:
        self.cp.copyto(dst, src)

    def zero(self, dev: Any) -> None:
        dev.fill(0)

    def stream(self) -> Any:
        return self.cp.cuda.Stream(non_blocking=True)

    def record(self, stream: Any) -> Any:
        event = self.cp.cuda.Event(block=False, disable_timing=True)
        event.record(stream)
        return event

    def synchronize(self) -> None:
        self.cp.cuda.get_current_stream().synchronize()


def _compiles_a_kernel(cuda: Any) -> None:
    """Compile and run one tiny kernel, so a Numba-CUDA that cannot compile here stops the sweep in one
    line before it measures. The lent H100's image paired numba-cuda 0.30.4 with numpy 2.5.2, and the
    first kernel compiled died on `np.row_stack` (gone from numpy 2.5) with a traceback, mid-sweep."""

    def _add_one(a):  # pragma: no cover - device code
        a[0] += 1

    try:
        a = cuda.to_device(np.zeros(1, np.float32))
        cuda.jit(_add_one)[1, 1](a)
        ok = a.copy_to_host()[0] == 1
    except Exception as exc:  # noqa: BLE001 - any failure of the toolchain is the same answer
        import numba

        raise BufferUnavailable(
            f"--buffer numba: Numba-CUDA cannot compile a kernel here ({type(exc).__name__}: {exc}; "
            f"numba {numba.__version__}, numpy {np.__version__})"
        ) from exc
    if not ok:
        raise BufferUnavailable("--buffer numba: a test kernel ran but did not write its result")


class NumbaMemory:
    """Numba-CUDA device arrays (real, or host memory under NUMBA_ENABLE_CUDASIM=1)."""

    kind = "numba"

    def __init__(self) -> None:
        try:
            from numba import cuda
        except ImportError as exc:  # pragma: no cover - numba is a dependency
            raise BufferUnavailable(f"--buffer numba needs numba.cuda: {exc}") from exc
        if not cuda.is_available():
            raise BufferUnavailable("--buffer numba: Numba sees no CUDA GPU (NUMBA_ENABLE_CUDASIM=1 simulates one)")
        _compiles_a_kernel(cuda)
        self.cuda = cuda
        self.simulated = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

    def empty(self, length: int, dtype: Any) -> Any:
        return self.cuda.device_array(length, dtype=dtype)

    def pinned(self, length: int, dtype: Any) -> np.ndarray:
        return self.cuda.pinned_array(length, dtype=dtype)

    def download(self, dev: Any, host: np.ndarray, stream: Any = None) -> None:
        dev.copy_to_host(host, stream=stream or 0)

    def upload(self, host: np.ndarray, dev: Any, stream: Any = None) -> None:
        dev.copy_to_device(host, stream=stream or 0)

    def copy(self, dst: Any, src: Any) -> None:
        dst.copy_to_device(src)

    def zero(self, dev: Any) -> None:
        dev[:] = 0

    def stream(self) -> Any:
        return self.cuda.stream()

    def record(self, stream: Any) -> Any:
        # The simulator's event() takes no arguments; a real one without timing is cheaper to wait on.
        event = self.cuda.event() if self.simulated else self.cuda.event(timing=False)
        event.record(stream)
        return event

    def synchronize(self) -> None:
        self.cuda.synchronize()


_MADE: dict[str, Any] = {}


def memory_for(kind: str) -> Any:
    """The Memory for a --buffer kind; raises BufferUnavailable with the reason."""
    if kind not in BUFFER_KINDS:
        raise BufferUnavailable(f"unknown buffer kind {kind!r}: expected one of {', '.join(BUFFER_KINDS)}")
    if kind not in _MADE:
        _MADE[kind] = {"host": HostMemory, "cupy": CupyMemory, "numba": NumbaMemory}[kind]()
    return _MADE[kind]


def select_device(memory: Any, local_rank: int) -> int:
    """Give this rank GPU local_rank mod (GPUs on the node), the usual one-rank-per-GPU mapping; returns it."""
    if memory.kind == "cupy":
        device = local_rank % memory.cp.cuda.runtime.getDeviceCount()
        memory.cp.cuda.Device(device).use()
        return device
    if memory.kind == "numba":
        device = local_rank % max(1, len(memory.cuda.gpus))
        memory.cuda.select_device(device)
        return device
    return -1


def on_device(arr: Any) -> bool:
    """Whether an array lives in device memory (CuPy or Numba, real or simulated)."""
    return (
        arr is not None
        and not isinstance(arr, np.ndarray)
        and (hasattr(arr, "__cuda_array_interface__") or hasattr(arr, "copy_to_host"))
    )


def device_pointer(arr: Any) -> int:
    """The device address of a CUDA array (CuPy or Numba), as C libraries such as NCCL take it."""
    return int(arr.__cuda_array_interface__["data"][0])


def memory_of(arr: Any) -> Any:
    if not on_device(arr):
        return memory_for("host")
    return memory_for("cupy" if type(arr).__module__.startswith("cupy") else "numba")
