"""MPI_Bcast: every rank ends with the root's buffer."""

from __future__ import annotations

import numpy as np

from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec, Layout


class Bcast(CollectiveSpec):
    name = "bcast"
    rooted = True
    in_place_supported = False
    has_send = False  # a broadcast has one buffer
    busbw_formula = "1"

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // itemsize
        return Layout(count=count, send_len=0, recv_len=count, nbytes=count * itemsize)

    def prepare(self, case: Case) -> None:
        if case.rank == case.root:
            case.recv[:] = patterns.data(case.root, np.arange(case.count))
        else:
            patterns.sentinel_fill(case.recv)

    def results(self, case: Case):
        return [(case.recv, patterns.data(case.root, np.arange(case.count)))]


SPEC = Bcast()
