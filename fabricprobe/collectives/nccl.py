"""NCCL's own collectives through CuPy's bindings (cupy.cuda.nccl): the baseline a GPU training job
uses instead of MPI. Runs on CuPy buffers when every rank of the communicator has its own GPU; NCCL
refuses two ranks on one GPU, so such points are recorded as not runnable (fabricprobe.engine.point asks
`unusable_reason` first). The NCCL communicator is made once per MPI communicator, its unique id
broadcast over MPI.
"""

from __future__ import annotations

from typing import Any, Callable

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.mpienv.comm_cache import per_communicator
from fabricprobe.specs import SPECS
from fabricprobe.specs.base import Case

COLLECTIVES = tuple(name for name, spec in SPECS.items() if spec.vendor is not None and spec.vendor.nccl)
TRANSPORT = "nccl"
_DTYPES = {"float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "int32": "NCCL_INT32", "int64": "NCCL_INT64"}
_OPS = {"sum": "NCCL_SUM", "prod": "NCCL_PROD", "max": "NCCL_MAX", "min": "NCCL_MIN"}

_communicators: dict[tuple, tuple[Any, Any]] = {}
_gpu_maps: dict[tuple, tuple[Any, list]] = {}


def gpu_map(comm: Any) -> list[tuple[str, str]]:
    """(host, GPU PCI bus id) of every rank of comm; ("", "") for a rank without a GPU. Collective."""

    def make() -> list[tuple[str, str]]:
        from mpi4py import MPI

        mine = ("", "")
        try:
            import cupy

            mine = (MPI.Get_processor_name(), cupy.cuda.Device().pci_bus_id)
        except Exception:  # noqa: BLE001 - no CuPy or no device: this rank has no GPU
            pass
        return comm.allgather(mine)

    return per_communicator(_gpu_maps, comm, make)


def unusable_reason(case: Case, transfer: str = "direct") -> str:
    """Why NCCL cannot run this case ("" when it can). Collective over case.comm."""
    where = gpu_map(case.comm)
    if any(not bus for _, bus in where):
        return "NCCL needs CuPy and a GPU on every rank"
    try:
        from cupy.cuda import nccl
    except ImportError as exc:
        return f"CuPy has no NCCL bindings here ({exc})"
    if not getattr(nccl, "available", False):  # the module imports without libnccl, empty
        return "CuPy cannot load libnccl (pip install nvidia-nccl-cu12, part of the gpu extra)"
    if len(set(where)) < len(where):
        shared = sorted({bus for bus in where if where.count(bus) > 1})
        return (
            f"NCCL refuses two ranks on one GPU: {len(where)} ranks share {len(set(where))} GPU(s) "
            f"({', '.join(f'{h}:{b}' for h, b in shared)})"
        )
    if case.dtype_name not in _DTYPES or (case.op not in _OPS and SPECS[case.collective].reduces):
        return f"NCCL has no {case.dtype_name} {case.op}"
    return SPECS[case.collective].nccl_unusable(case)


def communicator(comm: Any) -> Any:
    def make() -> Any:
        from cupy.cuda import nccl

        uid = comm.bcast(nccl.get_unique_id() if comm.rank == 0 else None, root=0)
        return nccl.NcclCommunicator(comm.size, uid, comm.rank)

    return per_communicator(_communicators, comm, make)


def nccl_call(case: Case) -> Callable[[], object]:
    """One NCCL call on case's device buffers, queued on the current stream (the caller synchronises)."""
    import cupy
    from cupy.cuda import nccl

    dtype = getattr(nccl, _DTYPES[case.dtype_name])
    op = getattr(nccl, _OPS.get(case.op, "NCCL_SUM"))
    stream = cupy.cuda.get_current_stream().ptr
    return SPECS[case.collective].nccl_call(case, communicator(case.comm), dtype, op, stream)


ALGORITHMS = tuple(
    Algorithm(
        "nccl",
        coll,
        "NCCL through CuPy (device buffers, one GPU per rank)",
        call_on=nccl_call,
        unrunnable=unusable_reason,
        buffers=("cupy",),
        transport=TRANSPORT,
    )
    for coll in COLLECTIVES
)
