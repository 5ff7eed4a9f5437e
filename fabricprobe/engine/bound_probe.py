"""The short probe a sweep makes for the bound of its collective rows (report/bound.py) when it measured
no point-to-point test of its own: OMB's latency at 8 B and bw at 1 MiB, on each pair kind the topology
has (two ranks of one node; the first ranks of two nodes), and the reduction kernel's time per byte on
rank 0 (numpy's add of two float32 vectors into a third, the work a node-local reduction step does).

These are ordinary points, measured by the same engine as every other (engine/point.py), with a time
budget of at most 0.15 s each (the bound takes the least latency and the best bandwidth seen: fewer
iterations can only leave it lower, never above what the fabric allows); they are stored in the run's
`bound_probe` attribute, not as its points, so a run's points stay the ones asked for. Only the two
points the bound reads are measured (it measured latency and bw at both sizes before: twice the time),
and for a sweep whose rows are all SMALL_ROW_BYTES or less only the latency: there the bandwidth and
reduction terms are a few percent of the bound at most (64 B at 10 GB/s is 6.4 ns against an α of
0.2 µs or more), the report leaves them out and says so, and the launch is spared the 1 MiB window
(most of the probe's time) and its buffers. What it costs a launch: docs/scale.md, "A launch"."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from fabricprobe.collectives.algorithm import LIBRARY
from fabricprobe.engine.config import SweepConfig
from fabricprobe.engine.plan import make_plan
from fabricprobe.engine.point import run_point
from fabricprobe.mpienv.topology import Topology
from fabricprobe.oracle import patterns
from fabricprobe.specs import SPECS

SIZES = [8, 1 << 20]
WANTED = {("latency", SIZES[0]), ("bw", SIZES[-1])}  # α and β of each pair kind (report/bound.py)
BUDGET_S = 0.15
SMALL_ROW_BYTES = 64  # a sweep with no larger row probes α alone
KEPT = ("collective", "pair", "bytes", "median_s", "algbw_gbps", "status", "nranks")


def wanted(config: SweepConfig, nranks: int) -> bool:
    """Whether the run needs the probe: it measures collectives on 2 or more ranks and no
    point-to-point test (tune-sweep's jobs, which set no bound_probe, never do)."""
    if not config.bound_probe or nranks < 2:
        return False
    kinds = [SPECS[c] for c in config.collectives]
    return any(not (s.pt2pt or s.local or s.sparse) for s in kinds) and not any(s.pt2pt for s in kinds)


def measure(config: SweepConfig, MPI: Any, comm: Any, topo: Topology) -> dict[str, Any]:
    """Every rank calls it; rank 0's answer: {"points": [...], "reduce_s_per_byte": γ} (γ 0: not measured)."""
    small = largest_row(config) <= SMALL_ROW_BYTES
    sizes = SIZES[:1] if small else SIZES
    wanted_points = {w for w in WANTED if w[1] in sizes}
    probe = replace(
        config,
        collectives=["latency", "bw"],
        algorithms=[LIBRARY],
        sizes=sizes,
        comm_sizes=None,
        points=None,
        library_variant="",
        library_variants=None,
        order="fixed",
        buffer="host",
        max_time=min(config.max_time, BUDGET_S),
    )
    planned, _ = make_plan(probe, topo, [])
    rows = []
    for point in [p for p in planned if (p.collective, p.requested_bytes) in wanted_points]:
        row = run_point(point, probe, comm, MPI, topo).row  # None on ranks other than 0
        if row is not None:
            rows.append({k: row[k] for k in KEPT if k in row})
    patterns.forget()  # the oracle's arrays of the probe's 1 MiB points: no point of the sweep uses them
    gamma = _reduce_time(SIZES[-1]) if comm.rank == 0 and not small else 0.0
    return {"points": rows, "reduce_s_per_byte": gamma}


def largest_row(config: SweepConfig) -> int:
    """The most bytes any point of the sweep moves (its explicit points' sizes, else its sizes)."""
    sizes = [int(p[-1]) for p in config.points] if config.points else list(config.sizes)
    return max(sizes, default=0)


def _reduce_time(nbytes: int) -> float:
    """Seconds per byte of out = a + b on float32 vectors of `nbytes` (the best of 5 calls)."""
    count = max(nbytes // 4, 1024)
    a, b, out = (np.ones(count, np.float32) for _ in range(3))
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        np.add(a, b, out=out)
        best = min(best, time.perf_counter() - start)
    return best / (count * 4)
