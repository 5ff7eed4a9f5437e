"""Where the ranks run: nodes (shared-memory domains and host names), ranks per node, cores.

Nodes are the groups MPI_COMM_TYPE_SHARED gives, named by host; cores are the union of the
CPU affinity of a node's ranks, capped by a cgroup CPU quota, so "oversubscribed" means more
ranks on a node than cores they may run on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Topology:
    hosts: tuple[str, ...]  # rank -> host name
    node_of: tuple[int, ...]  # rank -> node index (nodes numbered by their lowest rank)
    cores_per_node: tuple[int, ...]
    virtual: bool = False  # True when nodes come from --ranks-per-node, not the hardware
    cpus: tuple[str, ...] = field(default=())  # rank -> CPU affinity list, e.g. "0-1"

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
    def oversubscribed(self) -> bool:
        return any(r > c for r, c in zip(self.ranks_per_node, self.cores_per_node))

    def describe(self) -> str:
        rpn = self.ranks_per_node
        shape = f"{self.nnodes} × {rpn[0]}" if len(set(rpn)) == 1 else " + ".join(map(str, rpn))
        kind = "virtual nodes" if self.virtual else ("node" if self.nnodes == 1 else "nodes")
        return f"{shape} ranks ({kind})"


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
    leaders = sorted({leader for _, leader, _, _ in everyone})
    index = {leader: i for i, leader in enumerate(leaders)}
    cores = [0] * len(leaders)
    for _, leader, ncores, _ in everyone:
        cores[index[leader]] = ncores
    return Topology(
        hosts=tuple(h for h, _, _, _ in everyone),
        node_of=tuple(index[leader] for _, leader, _, _ in everyone),
        cores_per_node=tuple(cores),
        cpus=tuple(c for _, _, _, c in everyone),
    )
