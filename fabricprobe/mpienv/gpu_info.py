"""What a run knows about GPUs and CUDA-aware MPI (recorded in every run's provenance).

CUDA-awareness is asked of the library itself, never assumed: Open MPI's MPIX_Query_cuda_support(),
MPICH's MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &ok), found in the libmpi this process has
loaded; Intel MPI documents NVIDIA buffers only with I_MPI_OFFLOAD=1 and I_MPI_OFFLOAD_MODE=cuda, so
that setting is reported as the library's own statement. Neither PyPI wheel (Open MPI, MPICH) is
built with CUDA: both answer "no" here."""

from __future__ import annotations

import ctypes
import os
from typing import Any

from fabricprobe.mpienv.library import loaded_libmpi_paths

MPIX_GPU_SUPPORT_CUDA = 0


def _libmpi() -> ctypes.CDLL | None:
    for path in loaded_libmpi_paths():
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def _query(lib: ctypes.CDLL) -> tuple[str, str] | None:
    """The library's own answer to "CUDA buffers?", or None when it exports no query."""
    if hasattr(lib, "MPIX_Query_cuda_support"):
        fn = lib.MPIX_Query_cuda_support
        fn.restype, fn.argtypes = ctypes.c_int, []
        return ("yes" if fn() == 1 else "no"), "MPIX_Query_cuda_support()"
    if hasattr(lib, "MPIX_GPU_query_support"):
        fn = lib.MPIX_GPU_query_support
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        ok = ctypes.c_int(0)
        rc = fn(MPIX_GPU_SUPPORT_CUDA, ctypes.byref(ok))
        if rc != 0:
            return "unknown", f"MPIX_GPU_query_support returned error {rc}"
        return ("yes" if ok.value else "no"), "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA)"
    return None


def cuda_aware(vendor: str) -> tuple[str, str]:
    """("yes" | "no" | "unknown", how it was found out). Call after MPI_Init."""
    lib = _libmpi()
    asked = _query(lib) if lib is not None else None
    if vendor == "Intel MPI":
        return intel_answer(os.environ, asked)
    if lib is None:
        return "unknown", "libmpi not found among the loaded libraries"
    return asked or ("unknown", "the library offers no CUDA-support query")


def intel_answer(env: Any, asked: tuple[str, str] | None) -> tuple[str, str]:
    """Intel MPI takes NVIDIA buffers only with I_MPI_OFFLOAD=1 and I_MPI_OFFLOAD_MODE=cuda (its documented
    switch); it also exports MPICH's query. Both must agree before "yes" is claimed."""
    switch = "I_MPI_OFFLOAD=1 with I_MPI_OFFLOAD_MODE=cuda"
    if not (env.get("I_MPI_OFFLOAD") == "1" and env.get("I_MPI_OFFLOAD_MODE", "").lower() == "cuda"):
        return "no", f"{switch} not set"
    if asked is None or asked[0] == "yes":
        return "yes", f"{switch} set" + (f"; {asked[1]} answers yes" if asked else "")
    return "unknown", f"{switch} set, but {asked[1]} answers {asked[0]}"


def devices() -> dict[str, Any]:
    """GPU model, driver and runtime versions and this process's device, from CuPy or Numba-CUDA;
    {} without a GPU (or without either package)."""
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            dev = cupy.cuda.Device()
            props = cupy.cuda.runtime.getDeviceProperties(dev.id)
            return {
                "gpu_model": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
                "gpu_device": int(dev.id),
                "gpu_count": int(cupy.cuda.runtime.getDeviceCount()),
                "cuda_driver": int(cupy.cuda.runtime.driverGetVersion()),
                "cuda_runtime": int(cupy.cuda.runtime.runtimeGetVersion()),
                "gpu_api": f"cupy {cupy.__version__}",
            }
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean "no GPU here"
        pass
    try:
        from numba import cuda

        if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" and cuda.is_available():
            dev = cuda.get_current_device()
            return {
                "gpu_model": dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
                "gpu_device": int(dev.id),
                "gpu_count": len(cuda.gpus),
                "cuda_driver": int(
                    cuda.cudadrv.driver.driver.get_version()[0] * 1000
                    + cuda.cudadrv.driver.driver.get_version()[1] * 10
                ),
                "cuda_runtime": int(cuda.runtime.get_version()[0] * 1000 + cuda.runtime.get_version()[1] * 10),
                "gpu_api": "numba-cuda",
            }
    except Exception:  # noqa: BLE001
        pass
    return {}
