"""The implementations the top-k selection is measured with: fabricprobe's radix-select kernel and
numpy's argpartition (the usual Python way, for comparison)."""

from __future__ import annotations

import numpy as np

from fabricprobe import kernels
from fabricprobe.collectives.algorithm import Algorithm


def topk_numba(comm, sendbuf, recvbuf, op=None, root=0) -> None:
    kernels.topk_indices(sendbuf, recvbuf.size, recvbuf)


def topk_argpartition(comm, sendbuf, recvbuf, op=None, root=0) -> None:
    k, n = recvbuf.size, sendbuf.size
    if k:
        recvbuf[:] = np.argpartition(np.abs(sendbuf), n - k)[n - k :]


ALGORITHMS = (
    Algorithm("numba", "topk_local", "radix select on magnitude bits (Numba)", run=topk_numba),
    Algorithm("argpartition", "topk_local", "numpy.argpartition of |x|", run=topk_argpartition, buffers=("host",)),
)
