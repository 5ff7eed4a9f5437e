"""fabricprobe's own algorithms as tuning candidates: the hand-written implementations a runtime
selection (fabricprobe.tuned) can call in place of the library's, measured by tune-sweep beside the
library's forced algorithms in the same launch as the library's default.

A candidate runs on host buffers over MPI and gives the exact result (gTop-k's approximate sum is
never chosen on speed: an application picks it knowingly). The sparse allreduce has no library
algorithm to compare with; its candidates are compared with the sparse trainer's default, TopkA."""

from __future__ import annotations

from fabricprobe import collectives
from fabricprobe.collectives.algorithm import LIBRARY, MPI_TRANSPORT
from fabricprobe.errors import UsageError
from fabricprobe.specs import TUNABLE

SPARSE = "sparse_allreduce"
SPARSE_REFERENCE = "topk_allgather"  # the reference a sparse candidate must beat (the trainer's default)
TUNE_COLLECTIVES = (*TUNABLE, SPARSE)  # what tune-sweep can measure


def reference(collective: str) -> str:
    """What a selection names where fabricprobe's own does not win: the library (as launched with
    its tuning files), or TopkA for the sparse allreduce, which the library does not have."""
    return SPARSE_REFERENCE if collective == SPARSE else LIBRARY


def candidates(collective: str) -> list[str]:
    """The hand-written algorithms of a collective that a selection may name, by name."""
    return sorted(
        a.name
        for a in collectives.algorithms()
        if a.collective == collective
        and a.name != LIBRARY
        and a.run is not None
        and "host" in a.buffers
        and a.semantics == "exact"
        and a.transport == MPI_TRANSPORT
    )


def chosen(collectives_: list[str], spec: str) -> dict[str, list[str]]:
    """--algorithms: "all" (every candidate), "none" (the library's only) or a list of names, each a
    candidate of at least one of the collectives. Returns collective -> names to measure."""
    if spec == "all":
        return {c: candidates(c) for c in collectives_}
    if spec == "none":
        if SPARSE in collectives_:
            raise UsageError("--algorithms none leaves nothing to measure for sparse_allreduce")
        return {c: [] for c in collectives_}
    names = [t.strip() for t in spec.split(",") if t.strip()]
    known = {n for c in collectives_ for n in candidates(c)}
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        raise UsageError(
            f"--algorithms {spec!r}: {', '.join(unknown) or 'empty'} is not a fabricprobe algorithm of "
            f"{', '.join(collectives_)} (it has: {', '.join(sorted(known)) or 'none'}; or all, none)"
        )
    out = {c: [n for n in candidates(c) if n in names] for c in collectives_}
    if SPARSE in out and not out[SPARSE]:
        out[SPARSE] = [SPARSE_REFERENCE]
    if SPARSE in out and SPARSE_REFERENCE not in out[SPARSE]:
        out[SPARSE] = sorted([SPARSE_REFERENCE, *out[SPARSE]])
    return out
