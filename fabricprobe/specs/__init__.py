"""The registry of collective specs, in the order a sweep measures them. Adding a collective is one spec
file and one line here; the sweep's option lists, the library and NCCL backends and the tuning all read
it from the registry."""

from __future__ import annotations

from fabricprobe.specs import (
    allgather,
    allgatherv,
    allreduce,
    alltoall,
    alltoallv,
    barrier,
    bcast,
    gather,
    gatherv,
    local,
    nonblocking,
    persistent,
    pt2pt,
    reduce,
    reduce_scatter,
    rma,
    scatter,
    scatterv,
    sparse,
    uneven,
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
        gather.SPEC,
        scatter.SPEC,
        gatherv.SPEC,
        scatterv.SPEC,
        allgatherv.SPEC,
        alltoallv.SPEC,
        *(uneven.even_form(v.SPEC) for v in (gatherv, scatterv, allgatherv, alltoallv)),  # OMB's layout
        barrier.SPEC,
        pt2pt.LATENCY,
        pt2pt.BW,
        pt2pt.BIBW,
        pt2pt.MULTI_LAT,
        pt2pt.MBW_MR,
        *rma.SPECS,
        local.REDUCE_LOCAL,
        local.COPY_LOCAL,
        sparse.SPARSE_ALLREDUCE,
        sparse.TOPK_LOCAL,
    )
}
# Every blocking collective's non-blocking and persistent twins (specs derived from it), after them all.
_BLOCKING = {name: spec for name, spec in SPECS.items() if spec.family == "collective"}
SPECS.update((s.name, s) for s in nonblocking.nonblocking_specs(_BLOCKING) + persistent.persistent_specs(_BLOCKING))


def family(name: str) -> tuple[str, ...]:
    """The specs of one family, in registry order: collective, pt2pt, kernel or sparse."""
    return tuple(n for n, spec in SPECS.items() if spec.family == name)


TUNABLE = tuple(n for n, spec in SPECS.items() if spec.vendor is not None)  # the libraries name them for tuning

__all__ = ["SPECS", "TUNABLE", "Case", "CollectiveSpec", "Layout", "family"]
