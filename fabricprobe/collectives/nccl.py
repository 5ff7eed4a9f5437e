"""NCCL's own collectives through CuPy's bindings (cupy.cuda.nccl): the baseline a GPU training job
uses instead of MPI. Runs on CuPy buffers when every rank of the communicator has its own GPU; NCCL
refuses two ranks on one GPU, so such points are recorded as not runnable (fabricprobe.engine.point asks
`unusable_reason` first). The NCCL communicator is made once per MPI communicator, its unique id
broadcast over MPI.
"""

from __future__ import annotations

from typing import Any, Callable

from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.mpienv.comm_cache import per_communicator
from fabricprobe.specs.base import Case

COLLECTIVES = ("allreduce", "reduce", "bcast", "allgather", "reduce_scatter")
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


def unusable_reason(case: Case) -> str:
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
        return (f"NCCL refuses two ranks on one GPU: {len(where)} ranks share {len(set(where))} GPU(s) "
                f"({', '.join(f'{h}:{b}' for h, b in shared)})")
    if case.dtype_name not in _DTYPES or (case.op not in _OPS and case.collective in ("allreduce", "reduce",
                                                                                       "reduce_scatter")):
        return f"NCCL has no {case.dtype_name} {case.op}"
    if case.in_place and case.collective == "reduce_scatter":
        return "MPI's in-place reduce_scatter_block keeps the result in block 0; NCCL's keeps it in the rank's block"
    return ""


def communicator(comm: Any) -> Any:
    def make() -> Any:
        from cupy.cuda import nccl

        uid = comm.bcast(nccl.get_unique_id() if comm.rank == 0 else None, root=0)
        return nccl.NcclCommunicator(comm.size, uid, comm.rank)

    return per_communicator(_communicators, comm, make)


def _ptr(arr: Any) -> int:
    return int(arr.__cuda_array_interface__["data"][0])


def nccl_call(case: Case) -> Callable[[], object]:
    """One NCCL call on case's device buffers, queued on the current stream (the caller synchronises)."""
    import cupy
    from cupy.cuda import nccl

    nc = communicator(case.comm)
    dt = getattr(nccl, _DTYPES[case.dtype_name])
    op = getattr(nccl, _OPS.get(case.op, "NCCL_SUM"))
    recv, n, itemsize = _ptr(case.recv), case.count, case.dtype.itemsize
    send = recv if case.send is None else _ptr(case.send)
    stream = cupy.cuda.get_current_stream().ptr
    coll = case.collective
    if coll == "allreduce":
        return lambda: nc.allReduce(send, recv, n, dt, op, stream)
    if coll == "reduce":
        return lambda: nc.reduce(send, recv, n, dt, op, case.root, stream)
    if coll == "bcast":
        return lambda: nc.bcast(recv, n, dt, case.root, stream)
    if coll == "allgather":
        # In place, NCCL finds this rank's block inside the receive buffer, where MPI keeps it too.
        mine = recv + case.rank * n * itemsize if case.send is None else send
        return lambda: nc.allGather(mine, recv, n, dt, stream)
    if coll == "reduce_scatter":
        return lambda: nc.reduceScatter(send, recv, n, dt, op, stream)
    raise ValueError(f"NCCL has no {coll}")


ALGORITHMS = [register(Algorithm("nccl", coll, "NCCL through CuPy (device buffers, one GPU per rank)",
                                 caller=nccl_call, buffers=("cupy",))) for coll in COLLECTIVES]
