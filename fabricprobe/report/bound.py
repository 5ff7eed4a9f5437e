"""How far a collective row is from what the fabric allows: a lower bound on its time from the same
run's own measurements, and the row's "% of bound": an efficiency, bound / measured median, so 100% is
at the bound and nothing is printed above it. A row faster than its lower bound shows that a premise of
the bound failed in this run; the report marks it (FASTER_MARK) and says which premise, once per table
and in the run's header (`doubts`): ranks that share cores (the α and β the bound is built from were
measured with ranks waiting for a core), α or β from points that stopped at their time cap, or the data
took another path than the one the bound charges for (the lab's MPICH sent between emulated hosts
through shared memory).

The bound of a collective on p ranks and S bytes (S as the row reports it: nccl-tests' size):

    T ≥ ⌈lg N⌉·α_inter + (⌈lg p⌉ − ⌈lg N⌉)·α_intra            (latency)
        + max(F(p)·S·β_intra, (F(N)·S − burst)·β_inter)         (bandwidth; burst: the lab's token bucket)
        + (p−1)/p·S·γ                                           (reductions only)

- A row of 0 bytes has none: a call with no data need not communicate (the libraries return at once).
- Latency: what one rank knows can at most double in a round of messages, so every collective needs
  ⌈lg p⌉ rounds (Thakur, Rabenseifner & Gropp 2005; Chan et al. 2007); with N nodes at least ⌈lg N⌉ of
  them cross between nodes. A barrier is its latency term alone.
- Bandwidth: F is the collective's nccl-tests bus-bandwidth factor (its spec's busbw_factor), which is
  exactly the share of S that must pass through the busiest rank's link: 2(p−1)/p for allreduce (the
  bound of Thakur et al. and Chan et al.), (p−1)/p for allgather, reduce_scatter, alltoall, gather,
  scatter and their vector forms (each rank, or the root, must receive or send all but its own block;
  with the vector forms' uneven blocks the busiest rank moves at least that much), 1 for bcast and
  reduce (every non-root receives, or the root takes in, all S). Across nodes the same holds with
  nodes for ranks: each node's link carries F(N)·S. The larger of the two is the bound: they may
  overlap, so they are not added.
- Computation: a reduction of p vectors combines (p−1)·S bytes, at best spread over the p ranks.

α and β come from the run itself: its point-to-point points (the least latency for α, the best of OMB's
windowed bandwidth for β), per pair kind (intra: two ranks of one node; inter: the
first ranks of two nodes), or, where the sweep measured none, the short probe the sweep makes for this
(engine/bound_probe.py, the same two tests). In the fabric lab, whose links are token buckets (tc
tbf), β_inter is the link's rate and the bucket's burst (lab.network.tbf_burst: 250 kB at 1 Gbit/s) is
taken off the bytes: a call that finds the bucket full passes that much at memory speed (before
this was taken into account, small allreduces in the lab beat a bound that charged every byte at the
rate: docs/methodology.md). γ is the reduction kernel's time
per byte: the run's reduce_local points, or the probe's. A term whose parameter the run lacks is left
out, which keeps the bound a lower bound, and the row's formula says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from fabricprobe.collectives.cost import lg
from fabricprobe.lab.network import tbf_burst
from fabricprobe.mpienv.topology import prefix_sizes
from fabricprobe.specs import SPECS
from fabricprobe.store import Run
from fabricprobe.store.schema import EMPTY


@dataclass(frozen=True)
class Link:
    latency_s: float  # α: the least latency (half a round trip) the run measured
    seconds_per_byte: float  # β: 1 / the best bandwidth it measured; 0: none measured
    source: str  # where the two numbers come from, for the report
    settled: bool = True  # False: a point they come from stopped at its time cap before converging

    @property
    def has_beta(self) -> bool:
        """Whether β was measured (a probe of small rows measures α alone: the bandwidth term is left out)."""
        return self.seconds_per_byte > 0


@dataclass(frozen=True)
class Fabric:
    intra: Link | None
    inter: Link | None
    reduce_s_per_byte: float  # γ; 0 when the run has no measure of it
    node_sizes: tuple[int, ...]  # ranks per node, in rank order (the world's)
    inter_burst_bytes: int = 0  # the fabric lab's token bucket: bytes a link may pass above its rate

    def nodes_of(self, nranks: int) -> int:
        """Nodes the first `nranks` ranks span (sub-communicators are prefixes of the world)."""
        return max(len(prefix_sizes(list(self.node_sizes), nranks)), 1)


def _links(points: list[dict[str, Any]], source: str) -> dict[str, Link]:
    """Per pair kind: α the least latency (its smallest size), β from the best bandwidth of the bw points
    (else from the latency points' largest size): the fastest the run saw, so the bound stays below."""
    out = {}
    for pair in ("intra", "inter"):
        lat = [p for p in points if p["collective"] == "latency" and p["pair"] == pair and p["median_s"] > 0]
        bw = [p for p in points if p["collective"] == "bw" and p["pair"] == pair and p["algbw_gbps"] > 0]
        if not lat:
            continue
        small = min(lat, key=lambda p: (p["median_s"], p["bytes"]))
        alpha = small["median_s"]
        if bw:
            big = max(bw, key=lambda p: p["algbw_gbps"])
            beta, how = 1.0 / (big["algbw_gbps"] * 1e9), f"bw {big['algbw_gbps']:.3g} GB/s at {big['bytes']} B"
        else:
            big = max(lat, key=lambda p: p["bytes"])
            if big["bytes"] > small["bytes"]:
                beta, how = max(big["median_s"] - alpha, 0.0) / big["bytes"], f"latency at {big['bytes']} B"
            else:  # one size (the probe of a sweep of small rows): α alone, the bandwidth term left out
                beta, how = 0.0, "no bandwidth measure (β left out)"
        settled = all(_settled(p) for p in (small, big))
        out[pair] = Link(alpha, beta, f"{source}: α {alpha * 1e6:.3g} µs at {small['bytes']} B, {how}", settled)
    return out


def _settled(point: dict[str, Any]) -> bool:
    """Whether a point's median met its CI target (or was asked for a fixed count), not its time cap."""
    return point.get("stop_reason") in ("converged", "fixed", "", None)  # "": files from before it was kept


def _gamma(points: list[dict[str, Any]], probe: dict[str, Any]) -> float:
    kernels = [p for p in points if p["collective"] == "reduce_local" and p["median_s"] > 0 and p["bytes"] > 0]
    if kernels:
        big = max(kernels, key=lambda p: p["bytes"])
        return big["median_s"] / big["bytes"]
    return float(probe.get("reduce_s_per_byte") or 0.0)


def fabric_of(run: Run) -> Fabric:
    """The run's own α, β (intra, inter) and γ, and its placement."""
    ok = [p for p in run.points if p["status"] == "ok" and p["collective"] != EMPTY]
    probe = run.attrs.get("bound_probe") or {}
    links = _links(ok, "this run's points")
    for pair, link in _links(probe.get("points") or [], "the sweep's bound probe").items():
        links.setdefault(pair, link)
    rate, burst = _lab_rate(run), 0
    if rate and "inter" in links:
        old = links["inter"]
        burst = tbf_burst(rate)
        note = f"; β the lab's link, {rate / 1e9:g} Gbit/s less its {burst} B token bucket"
        links["inter"] = Link(old.latency_s, 8.0 / rate, old.source + note, old.settled)
    nodes = run.attrs.get("topology_ranks_per_node") or run.attrs.get("ranks_per_node") or []
    if not nodes:
        nodes = [int(run.attrs.get("nranks") or 1)]
    return Fabric(links.get("intra"), links.get("inter"), _gamma(ok, probe), tuple(int(n) for n in nodes), burst)


def _lab_rate(run: Run) -> float:
    """The lab's per-host link rate in bit/s (0: no lab, or unlimited)."""
    spec = run.attrs.get("lab_spec") or ""
    try:
        return float(json.loads(spec).get("rate_bits") or 0) if spec else 0.0
    except (ValueError, AttributeError):
        return 0.0


@dataclass(frozen=True)
class Bound:
    seconds: float
    formula: str  # the terms used, with their values

    def percent_of(self, median_s: float) -> float:
        """The row's time as a share of what the fabric allows: bound / measured (100 = at the bound)."""
        return 100.0 * self.seconds / median_s if median_s > 0 else math.nan


def bound_of(point: dict[str, Any], fabric: Fabric) -> Bound | None:
    """The lower bound of a collective row, None for rows that have none (point-to-point, kernels, sparse,
    one rank) or whose links the run did not measure."""
    spec = SPECS.get(point["collective"])
    if spec is None or spec.pt2pt or spec.local or spec.sparse:
        return None
    p = int(point["nranks"])
    if p < 2 or (spec.sized and not point["bytes"]):
        return None  # a call with no data need not communicate: the libraries return at once
    nodes = fabric.nodes_of(p)
    if nodes > 1 and fabric.inter is None:
        return None  # across nodes without an inter-node measure nothing bounds the slow step
    if nodes == 1 and fabric.intra is None:
        return None
    size = float(point["bytes"])
    rounds, inter_rounds = lg(p), lg(nodes)
    terms, seconds = [], 0.0
    if fabric.inter is not None and inter_rounds:
        seconds += inter_rounds * fabric.inter.latency_s
        terms.append(f"{inter_rounds}·α_inter")
    if fabric.intra is not None and rounds > inter_rounds:
        seconds += (rounds - inter_rounds) * fabric.intra.latency_s
        terms.append(f"{rounds - inter_rounds}·α_intra")
    moved = []
    if fabric.intra is not None and fabric.intra.has_beta:
        moved.append((spec.busbw_factor(p) * size * fabric.intra.seconds_per_byte, "F(p)·S·β_intra"))
    if nodes > 1 and fabric.inter.has_beta:
        beyond = max(spec.busbw_factor(nodes) * size - fabric.inter_burst_bytes, 0.0)
        name = "(F(N)·S − burst)·β_inter" if fabric.inter_burst_bytes else "F(N)·S·β_inter"
        moved.append((beyond * fabric.inter.seconds_per_byte, name))
    if size and moved:
        most = max(moved)
        seconds += most[0]
        terms.append(most[1])
    if spec.reduces and size and fabric.reduce_s_per_byte > 0:
        seconds += (p - 1) / p * size * fabric.reduce_s_per_byte
        terms.append("(p−1)/p·S·γ")
    if seconds <= 0:
        return None
    return Bound(seconds, " + ".join(terms))


def percents(run: Run, fabric: Fabric | None = None) -> dict[int, float]:
    """point index -> % of bound for every ok row of `run` that has a bound (`fabric`: the run's, when
    the caller has it already)."""
    fabric = fabric if fabric is not None else fabric_of(run)
    out = {}
    for p in run.points:
        if p["status"] != "ok":
            continue
        found = bound_of(p, fabric)
        if found is not None:
            out[p["index"]] = found.percent_of(p["median_s"])
    return out


def furthest(
    run: Run, collectives: list[str] | None = None, count: int = 3, found: dict[int, float] | None = None
) -> list[tuple[dict[str, Any], float]]:
    """The `count` ok rows furthest from their bound (lowest % of bound), with their % (`found`: the
    run's percents(), when the caller has them already); rows faster than their bound are `beyond`'s."""
    rows = [row for row in _with_percent(run, collectives, found) if row[1] <= 100.0]
    return sorted(rows, key=lambda row: row[1])[:count]


def _with_percent(run: Run, collectives: list[str] | None, found: dict[int, float] | None) -> list:
    """(point, % of bound) for the run's rows that have a bound, of the collectives asked for."""
    found = found if found is not None else percents(run)
    return [
        (p, found[p["index"]])
        for p in run.points
        if p["index"] in found and (collectives is None or p["collective"] in collectives)
    ]


FASTER_MARK = "‡"  # a row faster than its bound: printed instead of a % above 100
NOISE_PERCENT = 150.0  # α and β are measured (±10-40% on a busy machine): a row a little past 100% is their noise


def withheld(percent: float) -> str:
    """Why an export leaves a row's bound out, "" when it does not: a row faster than its lower bound
    shows that the bound's inputs (the run's own α, β and γ) do not hold for it, so no % of it is a
    figure (the screen prints FASTER_MARK; the JSON and CSV exports carry this instead of the %)."""
    if not percent > 100.0:
        return ""
    return f"faster than its bound ({percent:.0f}%): the run's measured latency and bandwidth do not hold for this row"


def shown(percent: float) -> str:
    """A row's % of bound as the report prints it: an efficiency, never above 100%."""
    return FASTER_MARK if percent > 100.0 else f"{percent:.0f}%"


def beyond(run: Run, collectives: list[str] | None = None, found: dict[int, float] | None = None) -> list:
    """The ok rows faster than their bound, the furthest past it first: a lower bound cannot be beaten,
    so a premise of the bound failed there (`doubts` says which)."""
    rows = [(p, pct) for p, pct in _with_percent(run, collectives, found) if pct > 100.0]
    return sorted(rows, key=lambda row: -row[1])


def doubts(run: Run, fabric: Fabric, found: dict[int, float]) -> list[str]:
    """Why this run's bounds may not hold, most telling first; empty when they can be trusted: ranks on
    cores of their own, α and β from settled points, and no row faster than its bound."""
    out = []
    attrs = run.attrs
    if attrs.get("oversubscribed"):
        ranks, cores = max(attrs.get("ranks_per_node") or [0]), min(attrs.get("cores_per_node") or [0])
        out.append(
            f"ranks share cores ({ranks} ranks on a node of {cores} cores): the α and β the bound is built "
            "from were measured with ranks waiting for a core"
        )
    links = (("intra-node", fabric.intra), ("inter-node", fabric.inter))
    unsettled = [name for name, link in links if link is not None and not link.settled]
    if unsettled:
        out.append(f"the {' and '.join(unsettled)} α or β comes from a point that stopped at its time cap")
    past = [pct for pct in found.values() if pct > 100.0]
    if past and max(past) > NOISE_PERCENT:
        out.append(
            f"{len(past)} row(s) faster than their bound: the data took another path than the one the bound "
            "charges for (e.g. between emulated hosts through shared memory)"
        )
    elif past and not out:
        out.append(f"{len(past)} row(s) faster than their bound, within the noise of the α and β it is built from")
    return out


def trust_line(run: Run, fabric: Fabric, found: dict[int, float]) -> str:
    """The report header's word on this run's bounds: whether a % of bound can be trusted, and why."""
    if not found:
        return ""
    why = doubts(run, fabric, found)
    if why:
        return f"% of bound: doubtful here ({FASTER_MARK}: faster than its bound) — " + "; ".join(why)
    links = [link for link in (fabric.intra, fabric.inter) if link is not None]
    if all(link.has_beta for link in links):
        return "% of bound: trusted (α and β measured in this run, settled, a core per rank; no row beats its bound)"
    return "% of bound: trusted (α measured in this run, settled, a core per rank; no row beats it; no β measured)"


def describe(fabric: Fabric) -> str:
    """One line: the parameters the bounds use and where they come from."""
    parts = []
    for name, link in (("intra-node", fabric.intra), ("inter-node", fabric.inter)):
        if link is not None and link.has_beta:
            parts.append(f"{name} α {link.latency_s * 1e6:.3g} µs, β 1/{1e-9 / link.seconds_per_byte:.3g} GB/s")
        elif link is not None:
            parts.append(f"{name} α {link.latency_s * 1e6:.3g} µs, no β")
    if fabric.reduce_s_per_byte > 0:
        parts.append(f"γ 1/{1e-9 / fabric.reduce_s_per_byte:.3g} GB/s")
    return "; ".join(parts) if parts else "no point-to-point measure in this run (no bound)"
