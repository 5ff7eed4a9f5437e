"""Open MPI's fixed decision: the algorithm coll/tuned runs for a call when no rule and no forced
algorithm says otherwise (coll_tuned_decision_fixed.c, read into openmpi_fixed_tree.py by
benchmarks/openmpi_fixed_gen.py). A rule naming the algorithm the fixed decision already runs at that
communicator and message size changes nothing, so `tune` writes none (docs/tuning.md, Decisive files).

Every such call is `do_this(..., alg, 0, 0)`: fan-in/out 0 and segment size 0, the MCA defaults a
forced algorithm is measured with, so the same id is the same code path. The tree holds for the
releases it was read from (4.1.0 to 5.0.x; Open MPI 6 changed it): on any other, None (not known)."""

from __future__ import annotations

import re

from fabricprobe.tuning.plan.openmpi_fixed_tree import TREES

# The releases whose coll_tuned_decision_fixed.c the tree was read from (the same file in each)
RELEASES = ((4, 1), (5, 0))
# The fixed decision's total_dsize is the per-rank block (scount or rcount × type size) for these; for
# the others it is count × type size. fabricprobe's message size S is the whole buffer (specs' nbytes).
PER_RANK_BLOCK = frozenset({"alltoall", "allgather", "reduce_scatter_block"})
DECIDED_BY = "Open MPI's fixed decision"


def release(library_version: str) -> tuple[int, int] | None:
    """(major, minor) of "Open MPI v5.0.11, package: ..."; None when not an Open MPI version."""
    m = re.search(r"Open MPI v(\d+)\.(\d+)", library_version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def fixed_algorithm(openmpi_name: str, nranks: int, nbytes: int, commutative: bool = True) -> int:
    """The algorithm id coll/tuned's fixed decision runs for a call of `nbytes` (fabricprobe's S) on
    `nranks` ranks, out of place."""
    size = nbytes // nranks if openmpi_name in PER_RANK_BLOCK else nbytes
    values = {
        "communicator_size": nranks,
        "total_dsize": size,
        "per_rank_dsize": size,
        "commutative": int(commutative),
        "in_place": 0,
    }
    node = TREES[openmpi_name]
    while node[0] == "if":
        _, branches, orelse = node
        node = next((then for test, then in branches if _holds(test, values)), orelse)
    return node[1]


def _holds(test: tuple[str, str, int], values: dict[str, int]) -> bool:
    variable, operator, bound = test
    return values[variable] < bound if operator == "<" else values[variable] == bound
