"""The implementations behind the local tests: fabricprobe's reduction kernel, and numpy's copy."""

from __future__ import annotations

import numpy as np

from fabricprobe import kernels
from fabricprobe.collectives.base import Algorithm, register


def reduce_local(comm, sendbuf, recvbuf, op, root=0) -> None:
    kernels.reduce_into(recvbuf, sendbuf, op)


def copy_local(comm, sendbuf, recvbuf, op=None, root=0) -> None:
    np.copyto(recvbuf, sendbuf)


ALGORITHMS = [
    register(Algorithm("numba", "reduce_local", "fabricprobe's reduction kernel (Numba, host arrays)",
                       run=reduce_local)),
    register(Algorithm("numpy", "copy_local", "numpy.copyto, the memory-copy reference", run=copy_local)),
]
