"""Where the ranks run: nodes (shared-memory domains and host names), ranks per node, cores,
and the communicators two-level algorithms use.

Nodes are the groups MPI_COMM_TYPE_SHARED gives, named by host; cores are the union of the
CPU affinity of a node's ranks, capped by a cgroup CPU quota, so "oversubscribed" means more
ranks on a node than cores they may run on. A virtual topology (--ranks-per-node) groups
consecutive ranks into pretend nodes, so hierarchical algorithms can be exercised on one machine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from fabricprobe.errors import UsageError
from fabricprobe.mpienv.launcher import placement


@dataclass(frozen=True)
class Topology:
    hosts: tuple[str, ...]  # rank -> host name
    node_of: tuple[int, ...]  # rank -> node index (nodes numbered by their lowest rank)
    cores_per_node: tuple[int, ...]
    virtual: bool = False  # True when nodes come from --ranks-per-node, not the hardware
    cpus: tuple[str, ...] = field(default=())  # rank -> CPU affinity list, e.g. "0-1"
    physical: "Topology | None" = None  # for virtual topologies: the hardware's
    placement: str = ""  # the launchers' placement against the shared-memory nodes (check_placement)

    @property
    def nranks(self) -> int:
        return len(self.node_of)

    @property
    def nnodes(self) -> int:
        return len(self.cores_per_node)

    @property
    def nodes(self) -> list[list[int]]:
        groups: list[list[int]] = [[] for _ in range(self.nnodes)]
        for rank, node in enumerate(self.node_of):
            groups[node].append(rank)
        return groups

    @property
    def ranks_per_node(self) -> list[int]:
        return [len(g) for g in self.nodes]

    @property
    def hardware(self) -> "Topology":
        return self.physical if self.physical is not None else self

    @property
    def oversubscribed(self) -> bool:
        hw = self.hardware
        return any(r > c for r, c in zip(hw.ranks_per_node, hw.cores_per_node))

    @property
    def local_rank(self) -> tuple[int, ...]:
        """rank -> its index among the ranks of its node."""
        seen: dict[int, int] = {}
        out = []
        for node in self.node_of:
            out.append(seen.get(node, 0))
            seen[node] = out[-1] + 1
        return tuple(out)

    def describe(self) -> str:
        shape = layout_shape(self.ranks_per_node)
        kind = "virtual nodes" if self.virtual else ("node" if self.nnodes == 1 else "nodes")
        return f"{shape} ranks ({kind})"


def layout_shape(ranks_per_node: list[int] | tuple[int, ...]) -> str:
    """Nodes by their rank counts: "2 × 4" when even, "3 + 3 + 2" when not."""
    rpn = list(ranks_per_node)
    return f"{len(rpn)} × {rpn[0]}" if len(set(rpn)) == 1 else " + ".join(map(str, rpn))


def cpu_quota() -> float | None:
    """CPUs allowed by a cgroup v2 (cpu.max) or v1 (cfs quota) limit, None when unlimited."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()
        if quota != "max":
            return int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as f:
            quota_us = int(f.read())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as f:
            period_us = int(f.read())
        if quota_us > 0:
            return quota_us / period_us
    except (OSError, ValueError):
        pass
    return None


def affinity() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def format_cpus(cpus: set[int]) -> str:
    """Compact CPU list: {0,1,2,5} -> "0-2,5"."""
    out, run = [], []
    for cpu in sorted(cpus):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [cpu]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def detect(comm: Any) -> Topology:
    """The physical topology of `comm` (collective over comm)."""
    from mpi4py import MPI

    node_comm = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    try:
        node_cpus = node_comm.allgather(sorted(affinity()))
        node_leader = node_comm.bcast(comm.rank, root=0)
    finally:
        node_comm.Free()
    usable = len(set().union(*map(set, node_cpus)))
    quota = cpu_quota()
    if quota is not None:
        usable = max(1, min(usable, int(quota)))
    mine = (MPI.Get_processor_name(), node_leader, usable, format_cpus(affinity()))
    everyone = comm.allgather(mine)
    claims = comm.allgather(placement())
    leaders = sorted({leader for _, leader, _, _ in everyone})
    index = {leader: i for i, leader in enumerate(leaders)}
    cores = [0] * len(leaders)
    for _, leader, ncores, _ in everyone:
        cores[index[leader]] = ncores
    node_of = tuple(index[leader] for _, leader, _, _ in everyone)
    return Topology(
        hosts=tuple(h for h, _, _, _ in everyone),
        node_of=node_of,
        cores_per_node=tuple(cores),
        cpus=tuple(c for _, _, _, c in everyone),
        placement=check_placement(node_of, claims),
    )


def check_placement(node_of: tuple[int, ...], claims: list[list[tuple[str, str | None, int]]]) -> str:
    """The launchers' view (launcher.placement(), per rank) against the shared-memory nodes: every
    source that speaks for all ranks must put two ranks on one node exactly when MPI_COMM_TYPE_SHARED
    does. Returns "" when no launcher says, "SOURCE agrees", or what disagrees first (a binding or node
    list the scheduler and the library see differently, e.g. ranks srun placed on two nodes that share
    memory).

    Node membership is compared, not the order of local ranks: Open MPI mapping by socket numbers the
    local ranks of ranks 0-4 on one node 0, 2, 4, 1, 3 (measured at 5 and 64 ranks; the old
    order check warned falsely there). Where a source names no node, its local ranks still tell
    membership: the ranks of one shared-memory node must hold each local rank 0..k-1 exactly once (two
    ranks with one local rank sit on two of the launcher's nodes; a local rank >= k means the launcher's
    node holds ranks that another node's memory serves)."""
    members: dict[int, list[int]] = {}
    for rank, node in enumerate(node_of):
        members.setdefault(node, []).append(rank)
    sources = [s for s, _, _ in claims[0]] if claims else []
    sources = [s for s in sources if all(any(c[0] == s for c in rank) for rank in claims)]
    verdicts = []
    for source in sources:
        said = [next(c for c in rank if c[0] == source) for rank in claims]
        problem = ""
        for _, ranks in sorted(members.items()):
            seen: dict[int, int] = {}
            for rank in ranks:
                lrank = said[rank][2]
                if lrank in seen:
                    problem = f"ranks {seen[lrank]} and {rank} share memory but are both local rank {lrank} to {source}"
                elif not 0 <= lrank < len(ranks):
                    problem = (
                        f"rank {rank} is local rank {lrank} to {source}, "
                        f"but its shared-memory node holds {len(ranks)} ranks"
                    )
                if problem:
                    break
                seen[lrank] = rank
            if problem:
                break
        if not problem and all(node is not None for _, node, _ in said):
            names: dict[int, str] = {}
            for rank, (_, node, _) in enumerate(said):
                first = names.setdefault(node_of[rank], node)
                if first != node:
                    problem = f"rank {rank} shares memory with ranks on {first} but {source} puts it on {node}"
                    break
            if not problem and len(set(names.values())) != len(names):
                problem = f"{source} puts ranks of different shared-memory nodes on one node"
        verdicts.append(f"{source} disagrees: {problem}" if problem else f"{source} agrees")
    return "; ".join(verdicts)


def parse_ranks_per_node(text: str) -> list[int]:
    """--ranks-per-node: "4" (nodes of 4 consecutive ranks) or "3,3,2" (explicit node sizes)."""
    parts = [t.strip() for t in text.split(",") if t.strip()]
    if not parts or not all(p.isascii() and p.isdigit() and int(p) > 0 for p in parts):
        raise UsageError(f"invalid --ranks-per-node {text!r}: expected a positive number or a list such as 3,3,2")
    return [int(p) for p in parts]


def node_sizes(spec: list[int], nranks: int) -> list[int]:
    """Node sizes for nranks from a --ranks-per-node spec; raises UsageError when they do not fit."""
    if len(spec) == 1:
        k = spec[0]
        sizes = [k] * (nranks // k) + ([nranks % k] if nranks % k else [])
    else:
        sizes = list(spec)
        if sum(sizes) != nranks:
            raise UsageError(
                f"--ranks-per-node {','.join(map(str, spec))} adds up to {sum(sizes)} ranks, but the job has {nranks}"
            )
    return sizes


def prefix_sizes(sizes: list[int], nranks: int) -> list[int]:
    """The node sizes of the first nranks ranks of nodes of `sizes` (consecutive ranks): what a
    sub-communicator of the first nranks ranks spans. [2, 2] cut at 3 is [2, 1]."""
    out, left = [], nranks
    for size in sizes:
        if left <= 0:
            break
        out.append(min(size, left))
        left -= out[-1]
    return out


def virtual(physical: Topology, sizes: list[int]) -> Topology:
    """Pretend nodes of consecutive ranks with the given sizes."""
    node_of = tuple(node for node, size in enumerate(sizes) for _ in range(size))
    return Topology(
        hosts=physical.hosts,
        node_of=node_of,
        cores_per_node=tuple(sizes),
        virtual=True,
        cpus=physical.cpus,
        physical=physical.hardware,
        placement=physical.placement,
    )


@dataclass
class Hierarchy:
    """A communicator's two levels, built once per communicator and topology."""

    node: Any  # the ranks of this rank's node, in rank order
    index: Any  # the ranks with this rank's local index, one per node that has it, in node order
    local_rank: int
    local_size: int
    nnodes: int
    min_local: int  # ranks on the smallest node: the number of leaders every node can supply

    @property
    def is_leader(self) -> bool:
        return self.local_rank == 0


_active: dict[int, tuple[Any, Topology]] = {}
_hierarchies: dict[int, tuple[Any, Topology, Hierarchy]] = {}


def set_active(comm: Any, topo: Topology) -> None:
    """The topology hierarchical algorithms use on `comm` (physical unless set)."""
    _active[id(comm)] = (comm, topo)


def active(comm: Any) -> Topology:
    entry = _active.get(id(comm))
    if entry is None or entry[0] is not comm:
        topo = detect(comm)
        set_active(comm, topo)
        return topo
    return entry[1]


def hierarchy(comm: Any) -> Hierarchy:
    """Node and local-index communicators of `comm` under its active topology (cached)."""
    topo = active(comm)
    cached = _hierarchies.get(id(comm))
    if cached is not None and cached[0] is comm and cached[1] == topo:
        return cached[2]
    rank = comm.rank
    local = topo.local_rank
    node = comm.Split(color=topo.node_of[rank], key=rank)
    index = comm.Split(color=local[rank], key=rank)
    h = Hierarchy(
        node=node,
        index=index,
        local_rank=local[rank],
        local_size=node.size,
        nnodes=topo.nnodes,
        min_local=min(topo.ranks_per_node),
    )
    _hierarchies[id(comm)] = (comm, topo, h)
    return h
