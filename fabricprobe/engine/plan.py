"""The ordered list of points a sweep measures, and notes on what it leaves out and why."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from fabricprobe import collectives
from fabricprobe.collectives.algorithm import MPI_TRANSPORT, Algorithm
from fabricprobe.engine.config import SweepConfig
from fabricprobe.engine.gpudirect import GPUDIRECT
from fabricprobe.memory import DIRECT, PIPELINED
from fabricprobe.mpienv.datatypes import BYTE, NO_OP, numpy_dtype
from fabricprobe.mpienv.topology import Topology
from fabricprobe.sizes import format_size
from fabricprobe.specs import SPECS
from fabricprobe.specs.base import Layout
from fabricprobe.store.schema import EMPTY, PAIR_LABELS, point_key

_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class PlannedPoint:
    """One point of the plan: its identity, and the algorithm that implements it (looked up once, here)."""

    index: int
    collective: str
    algorithm: str
    dtype: str
    op: str
    in_place: bool
    mode: str
    requested_bytes: int
    layout: Layout
    pair: str = ""  # point-to-point tests: intra, inter or all
    density: float = 0.0  # sparse tests
    nranks: int = 0  # communicator size (the first nranks ranks); 0 = the world
    buffer: str = "host"  # host, cupy or numba
    transfer: str = ""  # device buffers: direct, staged or pipelined; "" for host buffers and local tests
    implementation: Algorithm | None = field(default=None, compare=False)  # None for the harness floor

    @property
    def key(self) -> str:
        return point_key(
            self.collective,
            self.algorithm,
            self.dtype,
            self.op,
            self.in_place,
            self.mode,
            self.layout.nbytes,
            self.pair,
            self.density,
            self.nranks,
            self.buffer,
            self.transfer,
        )

    @property
    def label(self) -> str:
        parts = [self.collective]
        if self.algorithm != collectives.LIBRARY:
            parts[0] += f"/{self.algorithm}"
        if self.dtype != BYTE:
            parts.append(self.dtype)
        if self.op != NO_OP:
            parts.append(self.op)
        if self.collective != EMPTY and SPECS[self.collective].sized:
            parts.append(format_size(self.layout.nbytes))
        if self.in_place:
            parts.append("in-place")
        if self.mode != "barrier":
            parts.append(f"({self.mode} mode)")
        if self.pair:
            parts.append(f"[{PAIR_LABELS[self.pair]}]")
        if self.density:
            parts.append(f"density {self.density:g}")
        if self.nranks:
            parts.append(f"on {self.nranks} ranks")
        if self.buffer != "host":
            parts.append(f"[{self.buffer}{', ' + self.transfer if self.transfer else ''}]")
        return " ".join(parts)


def available_pairs(config: SweepConfig, topo: Topology) -> tuple[list[str], list[str]]:
    """The requested point-to-point pair kinds this topology has, and notes on the others."""
    kept, notes = [], []
    for pair in config.pairs:
        if pair_ranks(pair, topo) is None:
            why = {
                "intra": "no node holds two ranks",
                "inter": "all ranks are on one node",
                "all": "needs at least 2 ranks",
            }[pair]
            notes.append(f"point-to-point {PAIR_LABELS[pair]} pairs skipped: {why}")
        else:
            kept.append(pair)
    return kept, notes


def pair_ranks(pair: str, topo: Topology) -> list[tuple[int, int]] | None:
    """The (first, second) rank pairs of a pair kind, None when the topology has none."""
    n = topo.nranks
    if pair == "all":
        return [(r, r + n // 2) for r in range(n // 2)] or None
    nodes = topo.nodes
    if pair == "intra":
        node = next((g for g in nodes if len(g) >= 2), None)
        return [(node[0], node[1])] if node else None
    if len(nodes) < 2:
        return None
    return [(nodes[0][0], nodes[1][0])]


def transfers(config: SweepConfig, spec, algorithm: Algorithm, layout: Layout) -> list[str]:
    """The transfers a point is measured with: "" for host buffers, local tests and the barrier;
    pipelined only for pipelinable collectives that split into at least two chunks; algorithms with their
    own transport (NCCL) only direct."""
    if config.buffer == "host" or spec.local or not spec.sized:
        return [""]
    wanted = GPUDIRECT[config.gpudirect]
    if algorithm.transport != MPI_TRANSPORT:
        return [DIRECT] if DIRECT in wanted else []
    return [t for t in wanted if t != PIPELINED or (spec.pipelinable and layout.nbytes >= 2 * config.stage_chunk)]


def make_plan(config: SweepConfig, topo: Topology, timers: list[str]) -> tuple[list[PlannedPoint], list[str]]:
    """Points in measurement order (communicator sizes outermost), and notes on what was skipped."""
    points, notes = _plan_for(config, topo, timers, topo.nranks, sub=0)
    for size in sorted(set(config.comm_sizes or [])):
        if size == topo.nranks:
            continue
        if size > topo.nranks or size < 1:
            notes.append(f"communicator size {size} does not fit in this {topo.nranks}-rank job; skipped")
            continue
        more, _ = _plan_for(config, topo, [], size, sub=size, first_index=len(points))
        points.extend(more)
    if config.order == "random":
        points = shuffled(points, config.seed)
    return points, notes


def blocks(points: list[PlannedPoint]) -> list[list[PlannedPoint]]:
    """The plan cut where the measured case changes: a block holds the points measured back to back on
    purpose (every algorithm and transfer at one size; a reduction kernel and the copy it is read
    against), which a random order keeps together so that their ratios still come from one machine
    phase. A block's points share collective (or interleaved pair), communicator, datatype, mode, pair,
    density and size."""
    read_against = {s.name: s.interleave_with for s in SPECS.values() if s.interleave_with}
    out: list[list[PlannedPoint]] = []
    last = None
    for p in points:
        coll = read_against.get(p.collective, p.collective)
        case = (coll, p.nranks, p.dtype, p.mode, p.pair, p.density, p.requested_bytes)
        if case != last or p.collective == EMPTY:
            out.append([])
            last = case
        out[-1].append(p)
    return out


def shuffled(points: list[PlannedPoint], seed: int) -> list[PlannedPoint]:
    """The plan's blocks in a random order drawn from `seed` (the timer floor first, as always): two
    sweeps with one seed measure in one order. Hunold & Carpen-Amarie (TPDS 2016) found the order of
    measurement biases results (a size measured after a large one inherits its cache and network
    state), so `--order random` with several launches spreads that bias over the launches instead of
    building it into every one. Points keep their plan index (their identity in the run)."""
    floor = [p for p in points if p.collective == EMPTY]
    rest = blocks([p for p in points if p.collective != EMPTY])
    random.Random(seed).shuffle(rest)
    return floor + [p for block in rest for p in block]


def _plan_for(
    config: SweepConfig, topo: Topology, timers: list[str], nranks: int, sub: int, first_index: int = 0
) -> tuple[list[PlannedPoint], list[str]]:
    """The plan on one communicator: the world (sub=0) or the first `sub` ranks (collectives only)."""
    points: list[PlannedPoint] = []
    notes: list[str] = []
    seen: set[str] = set()

    only = None if config.points is None else {tuple(p) for p in config.points}

    def add(**kw) -> None:
        if only is not None and kw["collective"] != EMPTY:
            where = (kw["algorithm"], sub or nranks, kw["requested_bytes"])
            if where not in only and (kw["collective"], *where) not in only:
                return  # the points a caller chose (tune-sweep --budget, before/after), not the whole grid
        point = PlannedPoint(index=first_index + len(points), nranks=sub, **kw)
        if point.key not in seen:
            seen.add(point.key)
            points.append(point)

    empty = Layout(0, 0, 0, 0)
    for timer in timers:
        for mode in config.modes:
            add(
                collective=EMPTY,
                algorithm=timer,
                dtype=BYTE,
                op=NO_OP,
                in_place=False,
                mode=mode,
                requested_bytes=0,
                layout=empty,
            )

    used: set[str] = set()
    rounded: dict[tuple[str, str], set[int]] = {}  # sizes that hold no whole element per rank
    collectives_planned = list(config.collectives)
    for coll in config.collectives:
        baseline = SPECS[coll].compared_with
        if baseline and baseline not in collectives_planned:
            # Sparse results are read against the library's dense allreduce of the same size.
            collectives_planned.insert(collectives_planned.index(coll), baseline)
            notes.append(f"{baseline} (library) added: {coll} times are compared with it")
    device = config.buffer != "host"
    for coll in collectives_planned:
        spec = SPECS[coll]
        if sub and (spec.pt2pt or spec.local):
            continue  # point-to-point and local tests only on the whole job
        if spec.pt2pt and nranks < 2:
            note = "point-to-point tests need at least 2 ranks; skipped at n=1"
            if note not in notes:
                notes.append(note)
            continue
        pairs = [""]
        if spec.pt2pt:
            asked = replace(config, pairs=[spec.only_pairs]) if spec.only_pairs else config
            pairs, pair_notes = available_pairs(asked, topo)
            notes.extend(n for n in pair_notes if n not in notes)
        if spec.local:
            wanted = list(spec.implementations)
        elif coll not in config.collectives:  # a baseline added above: the library's only
            wanted = [collectives.LIBRARY]
        elif spec.sparse and config.algorithms == [collectives.LIBRARY]:
            wanted = collectives.names_for(coll)  # there is no library sparse allreduce: measure them all
        else:
            wanted = config.algorithms
        found = {a: collectives.get(coll, a) for a in wanted}
        if device and spec.sized and not spec.local and DIRECT in GPUDIRECT[config.gpudirect]:
            # Algorithms with their own transport (NCCL) are the baseline of every direct device point.
            found.update(
                {
                    a: collectives.get(coll, a)
                    for a in collectives.names_for(coll, config.buffer)
                    if a not in found and collectives.get(coll, a).transport != MPI_TRANSPORT
                }
            )
        implemented = {a: alg for a, alg in found.items() if alg is not None}
        used.update(implemented)
        for a, alg in sorted(implemented.items()):
            if config.buffer not in alg.buffers and (a in config.algorithms or spec.local):
                note = f"{coll}/{a} skipped: it runs on {' or '.join(alg.buffers)} buffers only"
                if note not in notes:
                    notes.append(note)
        algorithms = [(alg.name, alg) for alg in implemented.values() if config.buffer in alg.buffers]
        switched = (config.library_variants or {}).get(coll, [])
        if switched and any(name == collectives.LIBRARY for name, _ in algorithms):
            # tune-sweep's one launch: the library's algorithms switched at run time, each measured right
            # after its default at every size (the same machine phase), on the library's own call
            at = next(i for i, (name, _) in enumerate(algorithms) if name == collectives.LIBRARY)
            library = algorithms[at][1]
            at += 0 if config.switched_first else 1
            algorithms[at:at] = [(f"{collectives.LIBRARY}:{label}", library) for label in switched]
        dtypes = [BYTE] if (spec.pt2pt or not spec.sized) else config.dtypes
        ops = (["sum"] if spec.sparse else config.ops) if spec.reduces else [NO_OP]
        densities = config.densities if spec.sparse else [0.0]
        places = [p for p in config.in_place if spec.in_place_supported or not p] or [False]
        sizes = config.sizes if spec.sized else [0]
        # OMB's point-to-point loops have no barrier, loop or window mode: measured once, not once per
        # mode (and never with windows, whose loops they do not have).
        modes = ([m for m in config.modes if m != "window"] or ["barrier"])[:1] if spec.pt2pt else config.modes
        if spec.rma:
            modes = config.rma_syncs  # a one-sided test's mode is its synchronization
        # Algorithms innermost: at each size every algorithm runs back to back, on the same buffers,
        # so a shared machine's slow phases hit them alike.
        for dtype in dtypes:
            itemsize = numpy_dtype(dtype).itemsize
            for op in ops:
                for in_place in places:
                    for mode in modes:
                        for pair in pairs:
                            for nbytes in sizes:
                                layout = spec.layout(nbytes, itemsize, nranks)
                                if nbytes > 0 and layout.count == 0:
                                    # a no-op call is not a measurement of the size asked for
                                    rounded.setdefault((coll, dtype), set()).add(nbytes)
                                    continue
                                if max(layout.send_len, layout.recv_len) > _INT_MAX:
                                    notes.append(
                                        f"{coll} {dtype} {format_size(nbytes)}: count exceeds the C int range; skipped"
                                    )
                                    continue
                                for density in densities:
                                    for name, alg in algorithms:
                                        for transfer in transfers(config, spec, alg, layout):
                                            add(
                                                collective=coll,
                                                algorithm=name,
                                                dtype=dtype,
                                                op=op,
                                                in_place=in_place,
                                                mode=mode,
                                                requested_bytes=nbytes,
                                                layout=layout,
                                                pair=pair,
                                                density=density,
                                                buffer=config.buffer,
                                                transfer=transfer,
                                                implementation=alg,
                                            )
    points = _interleaved(points, first_index)
    for (coll, dtype), lost in rounded.items():
        notes.append(
            f"{coll} {dtype} at {nranks} ranks: {', '.join(format_size(b) for b in sorted(lost))} "
            f"{'rounds' if len(lost) == 1 else 'round'} to 0 elements per rank; skipped (not a measurement)"
        )
    for alg in config.algorithms:
        if alg not in used:
            notes.append(f"algorithm {alg!r} implements none of the selected collectives; nothing measured for it")
    return points, notes


def _interleaved(points: list[PlannedPoint], first_index: int) -> list[PlannedPoint]:
    """A reference collective (spec.interleave_with: the copy for the reduction kernel) measured at each
    datatype and size right after the collective it is read against, so the two share the machine's
    phases and their ratio comes from adjacent measurements; the other points keep their order."""
    points = list(points)
    for spec in SPECS.values():
        pair = (spec.interleave_with, spec.name)
        slots = [i for i, p in enumerate(points) if spec.interleave_with and p.collective in pair]
        if {points[i].collective for i in slots} != set(pair):
            continue  # one of the two alone keeps its own order
        order = sorted(
            slots,
            key=lambda i: (
                points[i].dtype,
                points[i].mode,
                points[i].requested_bytes,
                points[i].collective == spec.name,
                i,
            ),
        )
        moved = [points[i] for i in order]
        for slot, p in zip(slots, moved):
            points[slot] = p
    return [replace(p, index=first_index + i) for i, p in enumerate(points)]
