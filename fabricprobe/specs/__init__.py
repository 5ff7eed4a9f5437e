"""The registry of collective specs, in the order a sweep measures them."""

from __future__ import annotations

from fabricprobe.specs import (
                               allgather,
                               allreduce,
                               alltoall,
                               barrier,
                               bcast,
                               local,
                               pt2pt,
                               reduce,
                               reduce_scatter,
                               sparse,
)
from fabricprobe.specs.base import Case, CollectiveSpec, Layout

SPECS: dict[str, CollectiveSpec] = {
    spec.name: spec
    for spec in (
        allreduce.SPEC,
        reduce.SPEC,
        bcast.SPEC,
        allgather.SPEC,
        reduce_scatter.SPEC,
        alltoall.SPEC,
        barrier.SPEC,
        pt2pt.LATENCY,
        pt2pt.BW,
        pt2pt.BIBW,
        local.REDUCE_LOCAL,
        local.COPY_LOCAL,
        sparse.SPARSE_ALLREDUCE,
        sparse.TOPK_LOCAL,
    )
}

__all__ = ["SPECS", "Case", "CollectiveSpec", "Layout"]
