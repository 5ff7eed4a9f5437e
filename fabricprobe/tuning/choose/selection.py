"""fabricprobe's runtime selection: per (collective, communicator size, topology, message-size range
[, density]), whether fabricprobe's own algorithm beats the library's best clearly enough to be
called instead of it.

The library's best at a size is what the library's tuning files chose there (its default or a forced
algorithm, choose.choose), so a hand-written algorithm is named only where it beats every algorithm
of the library, by the same noise rule (both confidence intervals apart and `min_gain` faster).
Everywhere else the selection says "library": the library as launched with its tuning files. The
library's files keep the library's best for every size, also where fabricprobe's own wins, so an
application that does not use fabricprobe.tuned still gets the best library choice.

The sparse allreduce has no library algorithm: its candidates are compared with TopkA
(own.SPARSE_REFERENCE), per density.

Topology is part of the key: the first k ranks of a tune-sweep's world (its nodes, virtual or not)
are what a sub-communicator of k ranks spanned, and hierarchical algorithms are fast or slow by it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fabricprobe.collectives.algorithm import LIBRARY
from fabricprobe.errors import UsageError
from fabricprobe.mpienv.topology import layout_shape, prefix_sizes
from fabricprobe.store import Run
from fabricprobe.tuning.choose.rules import Decision, Range, Table, decide, extend, job_points, usable, winner_at
from fabricprobe.tuning.plan.library import DEFAULT
from fabricprobe.tuning.plan.own import SPARSE, SPARSE_REFERENCE, TUNE_COLLECTIVES, reference
from fabricprobe.tuning.plan.variants import variant_label


@dataclass
class Section:
    collective: str
    comm_size: int
    ranks_per_node: tuple[int, ...]  # the nodes the communicator's ranks were on
    density: float  # sparse_allreduce: fraction of entries each rank sends; 0 for dense collectives
    ranges: list[Range]  # winner: "library", or fabricprobe's algorithm (sparse: an algorithm's name)
    against: dict[int, str] = field(default_factory=dict)  # size -> what the winner was compared with

    @property
    def reference(self) -> str:
        return reference(self.collective)


@dataclass
class Selection:
    vendor: str
    library_version: str  # the library's version string, first line
    world_size: int
    world_ranks_per_node: tuple[int, ...]
    virtual: bool
    dtype: str
    sections: list[Section]

    def own_winners(self) -> list[tuple[Section, Range]]:
        """Every range where fabricprobe's own algorithm was chosen over the reference."""
        return [(s, r) for s in self.sections for r in s.ranges if r.winner != s.reference]


def _shape(attrs: dict) -> tuple[int, tuple[int, ...], bool]:
    n = int(attrs.get("nranks", 0) or 0)
    layout = attrs.get("topology_ranks_per_node") or attrs.get("ranks_per_node") or [n]
    return n, tuple(int(x) for x in layout), bool(attrs.get("virtual_topology", False))


def _world(runs: list[Run]) -> tuple[int, tuple[int, ...], bool]:
    """The job shape the runs were measured on; a file of several shapes is refused (a selection is
    for one shape, and which runs to leave out is the user's call)."""
    shapes = {_shape(r.attrs) for r in runs if r.points}
    if len(shapes) > 1:
        raise UsageError(
            "the file holds tune-sweeps of different job shapes ("
            + ", ".join(f"{n} ranks as {describe_layout(lay, v)}" for n, lay, v in sorted(shapes))
            + "): tune-sweep each shape into its own file"
        )
    return next(iter(shapes))


def _measured(runs: list[Run], dtype: str) -> dict[tuple, dict[str, dict]]:
    """(collective, comm size, density, bytes) -> {label: point}: "library" (as launched),
    "library:NAME" (forced), fabricprobe's names; the newest measurement wins."""
    out: dict[tuple, dict[str, dict]] = {}
    for run in runs:
        for p in job_points(run):
            if not usable(p, dtype, TUNE_COLLECTIVES):
                continue
            density = float(p["density"]) if p["collective"] == SPARSE else 0.0
            key = (p["collective"], int(p["nranks"]), density, int(p["bytes"]))
            out.setdefault(key, {})[p["algorithm"]] = p
    return out


def library_label(table: Table, collective: str, n: int, size: int) -> str:
    """The label of the library's best measurement at this point: what its tuning file runs there."""
    ranges = table.rules.get(collective, {}).get(n)
    winner = winner_at(ranges, size) if ranges else DEFAULT
    return LIBRARY if winner == DEFAULT else f"{LIBRARY}:{variant_label(winner)}"


def choose_selection(
    runs: list[Run], table: Table, dtype: str = "float32", min_gain: float = 0.05, collectives: list[str] | None = None
) -> Selection:
    """The selection from a tune-sweep's runs and the library's rules `table` (choose.choose)."""
    world_size, world, virtual = _world(runs)
    sections: dict[tuple, Section] = {}
    for (coll, n, density, size), by_label in sorted(_measured(runs, dtype).items()):
        if collectives is not None and coll not in collectives:
            continue
        own = {k: p for k, p in by_label.items() if not k.startswith(LIBRARY)}
        if coll == SPARSE:
            ref_label = SPARSE_REFERENCE
            own.pop(SPARSE_REFERENCE, None)
        else:
            ref_label = library_label(table, coll, n, size)
        ref_point = by_label.get(ref_label) or by_label.get(LIBRARY)
        if ref_point is None or not own:
            continue
        decision = decide({DEFAULT: ref_point, **own}, size, min_gain)
        if decision is None:
            continue
        same = by_label.get(LIBRARY)
        if decision.winner != DEFAULT and same is not None and same is not ref_point:
            # The library's best was forced in a launch of its own, fabricprobe's algorithm ran beside
            # the library's default: it must also beat that default, measured under the same
            # conditions (a slow phase during one launch is 2-3× here), and its speedup is the smaller.
            again = decide({DEFAULT: same, decision.winner: own[decision.winner]}, size, min_gain)
            if again is None or again.winner == DEFAULT:
                decision = Decision(size, DEFAULT, ref_point["median_s"], ref_point["median_s"], decision.noise)
            elif again.speedup < decision.speedup:
                decision = again
        if decision.winner == DEFAULT:
            decision = Decision(size, reference(coll), decision.default_s, decision.winner_s, decision.noise)
        key = (coll, n, density)
        if key not in sections:
            sections[key] = Section(coll, n, tuple(prefix_sizes(list(world), n)), density, [])
        extend(sections[key].ranges, decision)
        sections[key].against[size] = ref_label
    return Selection(
        table.vendor,
        library_line(table.library_version),
        world_size,
        world,
        virtual,
        dtype,
        list(sections.values()),
    )


def library_line(version: str) -> str:
    """The first line of a library's version string, as compared (MPI_Get_library_version may end
    in a NUL and trailing blanks that the stored copy lost)."""
    lines = version.replace("\x00", "").strip().splitlines()
    return lines[0].strip() if lines else ""


def describe_layout(ranks_per_node: tuple[int, ...] | list[int], virtual: bool = False) -> str:
    """2 × 2 (virtual nodes), 3 + 3 + 2, 1 × 4: how a message names a topology."""
    return layout_shape(ranks_per_node) + (" (virtual nodes)" if virtual else "")


def as_rows(selection: Selection) -> list[dict[str, Any]]:
    """One row per range, for the report."""
    return [
        dict(
            collective=s.collective,
            comm_size=s.comm_size,
            layout=describe_layout(s.ranks_per_node),
            density=s.density,
            span=r.span,
            winner=r.winner,
            reference=s.reference,
            speedup=r.speedup,
            noise=max(d.noise for d in r.decisions),
        )
        for s in selection.sections
        for r in s.ranges
    ]
