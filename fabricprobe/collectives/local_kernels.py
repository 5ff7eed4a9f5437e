"""The implementations behind the local tests: fabricprobe's reduction kernel, and numpy's copy."""

from __future__ import annotations

from fabricprobe import kernels
from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.common import copy_into


def reduce_local(comm, sendbuf, recvbuf, op, root=0) -> None:
    kernels.reduce_into(recvbuf, sendbuf, op)


def copy_local(comm, sendbuf, recvbuf, op=None, root=0) -> None:
    copy_into(recvbuf, sendbuf)


ALGORITHMS = (
    Algorithm(
        "numba",
        "reduce_local",
        "fabricprobe's reduction kernel (Numba on host arrays, the GPU kernels on device arrays)",
        run=reduce_local,
    ),
    Algorithm(
        "numpy",
        "copy_local",
        "numpy.copyto, the memory-copy reference (a device-to-device copy on device arrays)",
        run=copy_local,
    ),
)
