"""From measurements to suspects. Every comparison is with peers measured in the same run: a pair
with the other pairs of its class (intra-node or inter-node), a rank with the other ranks.

A node's link is suspect when even its best pair is slow (every pair through it is), and the
expected value of a class is the median pair between the nodes that are not: a slow link raises
its own node's best pair but no other node's. With three or more nodes this holds while fewer than
half of them are slow; with two nodes every inter-node pair crosses both links, and a slow link
cannot be told from a slow fabric (the report says so). A pair, node or rank is suspect when it is
slower than expected by more than the threshold (default 15%) and by more than three robust
standard deviations of its class's healthy members (1.4826 × MAD, relative): a noisy class needs a
larger deficit before anything is named.

A node whose ranks are slow in the rank pass (their reductions, which use no link) is reported as
a slow rank, and the slow pairs through it are its evidence, not a second finding: a starved rank
answers its ping-pongs late too, but a slow link leaves the reductions alone."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from fabricprobe.costmodel.fit import fit_line
from fabricprobe.doctor.results import Measurements

DEFAULT_THRESHOLD = 0.15
NOISE_SIGMAS = 3.0
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class ClassSummary:
    name: str  # "inter-node pairs", "intra-node pairs", "ranks"
    members: int
    metric: str  # "latency", "bandwidth", "reduction"
    expected: float  # seconds (latency, reduction) or bytes/s (bandwidth)
    noise: float  # relative robust sigma of the healthy members
    margin: float  # the slowdown beyond which a member is suspect (0.15 = 15% slower)
    lowest: float  # the class's range, in the metric's unit
    highest: float
    fit_alpha_s: float = float("nan")  # α-β fit over the healthy pairs' two sizes
    fit_beta_s_per_byte: float = float("nan")


@dataclass
class Finding:
    kind: str  # "link", "rank", "pair"
    where: str  # what a person looks for: "fplab2's link", "rank 3 on fplab1", "ranks 0 ↔ 5"
    nodes: list[int]
    ranks: list[int]
    metric: str
    measured: float
    expected: float
    slowdown: float  # measured cost / expected cost: 1.67 = 1.67× slower
    margin: float
    evidence: list[str] = field(default_factory=list)
    confirmed: bool | None = None  # None: no confirmation pass

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Diagnosis:
    findings: list[Finding]
    classes: list[ClassSummary]
    notes: list[str]
    suspect_pairs: list[tuple[int, int]]  # every pair slower than its class (before grouping)

    def as_dict(self) -> dict:
        return {
            "findings": [f.as_dict() for f in self.findings],
            "classes": [asdict(c) for c in self.classes],
            "notes": self.notes,
            "suspect_pairs": [list(p) for p in self.suspect_pairs],
        }


def robust_noise(ratios: np.ndarray) -> float:
    """Relative robust standard deviation of costs already divided by their expected value."""
    r = ratios[np.isfinite(ratios)]
    if r.size < 3:
        return 0.0
    return float(MAD_TO_SIGMA * np.median(np.abs(r - np.median(r))))


def _margin(threshold: float, noise: float) -> float:
    return max(threshold, NOISE_SIGMAS * noise)


@dataclass
class _Scored:
    """One metric over one class of pairs: each pair's and each node's cost relative to expected."""

    expected_cost: float
    pair_ratio: np.ndarray  # per pair of the class
    node_ratio: dict[int, float]  # the node's best pair: > 1 + margin only when every pair through it is slow
    node_typical: dict[int, float]  # the node's median pair (what the report shows)
    noise: float
    margin: float


def _score_pairs(cost: np.ndarray, a_nodes: np.ndarray, b_nodes: np.ndarray, threshold: float) -> _Scored | None:
    """A node's score is its best pair: a pair is no faster than the slower of its two links, so the
    best pair through a node bounds that node's link, and only a node whose every pair is slow scores
    slow (with 3 nodes and one slow link, the healthy nodes' median pair is half slow; their best is
    not). Expected = the median pair between nodes that score healthy."""
    nodes = sorted(set(a_nodes.tolist()) | set(b_nodes.tolist()))
    if cost.size == 0 or not np.isfinite(cost).any():
        return None
    best, typical = {}, {}
    for n in nodes:
        touch = ((a_nodes == n) | (b_nodes == n)) & np.isfinite(cost)
        if touch.any():
            best[n] = float(np.min(cost[touch]))
            typical[n] = float(np.median(cost[touch]))
    first = float(np.median(list(best.values())))
    sick = {n for n, b in best.items() if b / first - 1 > threshold} if len(best) >= 3 else set()
    healthy = np.array([a not in sick and b not in sick for a, b in zip(a_nodes, b_nodes)]) & np.isfinite(cost)
    expected = float(np.median(cost[healthy])) if healthy.any() else first
    ratio = cost / expected
    noise = robust_noise(ratio[healthy & (ratio - 1 <= threshold)])
    return _Scored(
        expected,
        ratio,
        {n: b / expected for n, b in best.items()},
        {n: t / expected for n, t in typical.items()},
        noise,
        _margin(threshold, noise),
    )


def _where_rank(m: Measurements, r: int) -> str:
    return f"rank {r} on {m.hosts[r]}"


def _fmt_metric(metric: str, value: float) -> str:
    if metric == "bandwidth":
        return f"{value * 8 / 1e9:.3g} Gbit/s"
    return f"{value * 1e6:.3g} µs" if value < 1e-2 else f"{value * 1e3:.3g} ms"


@dataclass
class _Suspects:
    """What the passes found before it is grouped into findings."""

    slow_ranks: dict[int, tuple[float, float, float]] = field(default_factory=dict)  # rank -> (γ, expected, ×)
    rank_margin: float = 0.0
    pairs: dict[tuple[int, int], tuple[float, float]] = field(default_factory=dict)  # pair -> (worst ×, margin)
    evidence: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    links: dict[int, list[tuple[str, float, float, float, float]]] = field(default_factory=dict)


def _rank_class(m: Measurements, threshold: float, found: _Suspects) -> ClassSummary | None:
    """The rank pass: seconds per byte reduced, against the median rank."""
    if not m.ranks.size:
        return None
    per_byte = m.reduction_per_byte()
    expected = float(np.median(per_byte))
    ratio = per_byte / expected
    noise = robust_noise(ratio[ratio - 1 <= threshold])
    found.rank_margin = _margin(threshold, noise)
    for r, x in zip(m.ranks["rank"].tolist(), ratio.tolist()):
        if x - 1 > found.rank_margin:
            found.slow_ranks[r] = (float(per_byte[r]), expected, x)
    lo, hi = float(per_byte.min()), float(per_byte.max())
    return ClassSummary("ranks", int(ratio.size), "reduction", expected, noise, found.rank_margin, lo, hi)


def _pair_classes(
    m: Measurements, threshold: float, oversubscribed: bool, found: _Suspects, notes: list[str]
) -> list[ClassSummary]:
    """The pairwise pass: per class (inter-, intra-node) and metric (latency, bandwidth)."""
    pairs = m.pairs
    if not pairs.size:
        return []
    node = np.asarray(m.node_of)
    a_nodes, b_nodes = node[pairs["a"]], node[pairs["b"]]
    lat, large = m.latency(), m.large_time()
    out = []
    for inter, cname in ((True, "inter-node pairs"), (False, "intra-node pairs")):
        sel = pairs["inter"] == inter
        if not sel.any():
            continue
        idx = np.flatnonzero(sel)
        nnodes = len(set(a_nodes[sel].tolist()) | set(b_nodes[sel].tolist()))
        for metric, cost in (("latency", lat[sel]), ("bandwidth", large[sel])):
            sc = _score_pairs(cost, a_nodes[sel], b_nodes[sel], threshold)
            if sc is None:
                continue
            fit = _fit(m, idx[sc.pair_ratio - 1 <= sc.margin]) if metric == "bandwidth" else None
            unit_exp = m.large_bytes / sc.expected_cost if metric == "bandwidth" else sc.expected_cost
            values = m.large_bytes / cost if metric == "bandwidth" else cost
            out.append(
                ClassSummary(
                    cname,
                    int(sel.sum()),
                    metric,
                    unit_exp,
                    sc.noise,
                    sc.margin,
                    float(np.nanmin(values)),
                    float(np.nanmax(values)),
                    *(fit if fit else (float("nan"), float("nan"))),
                )
            )
            if metric == "latency" and oversubscribed:
                continue
            for j, x in zip(idx.tolist(), sc.pair_ratio.tolist()):
                if x - 1 > sc.margin:
                    p = (int(pairs["a"][j]), int(pairs["b"][j]))
                    meas = m.large_bytes / large[j] if metric == "bandwidth" else lat[j]
                    found.evidence.setdefault(p, []).append(
                        f"{metric} {_fmt_metric(metric, meas)} vs {_fmt_metric(metric, unit_exp)} expected ({x:.2f}×)"
                    )
                    if x > found.pairs.get(p, (0.0, 0.0))[0]:
                        found.pairs[p] = (x, sc.margin)
            if inter and nnodes < 3 and metric == "bandwidth":
                notes.append(
                    f"{nnodes} nodes: every inter-node pair crosses both links, so a slow link cannot be told "
                    "from a slow fabric; compare with another run (fabricprobe doctor on a known-good pair)"
                )
            if not inter or nnodes < 3:
                continue
            for n, lowest in sc.node_ratio.items():
                if lowest - 1 > sc.margin:
                    x = sc.node_typical[n]
                    meas = unit_exp / x if metric == "bandwidth" else unit_exp * x
                    found.links.setdefault(n, []).append((metric, meas, unit_exp, x, sc.margin))
    return out


def _findings(m: Measurements, found: _Suspects) -> list[Finding]:
    """Slow ranks first (they explain their node's slow pairs), then links, then the pairs left."""
    findings = []
    explained: set[tuple[int, int]] = set()
    slow_nodes = {n for n in set(m.node_of) if all(r in found.slow_ranks for r, k in enumerate(m.node_of) if k == n)}
    for r, (meas, exp, x) in sorted(found.slow_ranks.items(), key=lambda kv: -kv[1][2]):
        n = m.node_of[r]
        through = sorted(p for p in found.pairs if r in p)
        explained.update(through)
        ev = [f"reduction {x:.2f}× slower than the median rank ({meas * 1e9:.3g} vs {exp * 1e9:.3g} ns/byte)"]
        if through:
            ev.append(f"{len(through)} slow pairs through it: " + ", ".join(f"{a}↔{b}" for a, b in through[:6]))
        if n in found.links:
            ev.append(f"{m.node_name(n)}'s link looks slow too, as a starved rank's messages do")
        findings.append(Finding("rank", _where_rank(m, r), [n], [r], "reduction", meas, exp, x, found.rank_margin, ev))
    for n, metrics in sorted(found.links.items()):
        if n in slow_nodes:
            continue
        ranks = [r for r, k in enumerate(m.node_of) if k == n]
        through = sorted(p for p in found.pairs if m.node_of[p[0]] == n or m.node_of[p[1]] == n)
        explained.update(through)
        metric, meas, exp, x, margin = max(metrics, key=lambda t: t[3])
        ev = [
            f"{mt}: the median pair through it {_fmt_metric(mt, ms)} vs {_fmt_metric(mt, ex)} ({xx:.2f}×)"
            for mt, ms, ex, xx, _ in metrics
        ]
        ev.append(f"{len(through)} of its pairs slower than their class; its ranks' reductions are normal")
        findings.append(Finding("link", f"{m.node_name(n)}'s link", [n], ranks, metric, meas, exp, x, margin, ev))
    for p in sorted(set(found.pairs) - explained):
        a, b = p
        kind = "intra" if m.node_of[a] == m.node_of[b] else "inter"
        where = f"ranks {a} ↔ {b} ({m.hosts[a]} ↔ {m.hosts[b]}, {kind}-node)"
        nodes = sorted({m.node_of[a], m.node_of[b]})
        nan = float("nan")
        findings.append(Finding("pair", where, nodes, [a, b], "pair", nan, nan, *found.pairs[p], found.evidence[p]))
    return findings


def diagnose(m: Measurements, threshold: float = DEFAULT_THRESHOLD, oversubscribed: bool = False) -> Diagnosis:
    """Findings and class summaries. Oversubscribed (more ranks than cores): latencies are summarised
    but never compared. Where ranks share cores a small message's time depends on which ranks share
    one: seen in the lab, 4 ranks on 2 cores, the same healthy links gave 12.6 to 40 µs at 8 B from
    one run to the next, each pair measured alone, while 1 MiB times agreed within 0.5%."""
    found = _Suspects()
    notes: list[str] = []
    ranks = _rank_class(m, threshold, found)
    classes = ([ranks] if ranks else []) + _pair_classes(m, threshold, oversubscribed, found, notes)
    if oversubscribed:
        notes.append(
            "oversubscribed (more ranks than cores): latencies are shown but not compared, as a small message's "
            "time here depends on which ranks share a core"
        )
    return Diagnosis(_findings(m, found), classes, notes, sorted(found.pairs))


def _fit(m: Measurements, rows: np.ndarray) -> tuple[float, float] | None:
    """α-β over the healthy pairs of a class: each pair gives a point at each size."""
    if rows.size == 0:
        return None
    n = np.concatenate([np.full(rows.size, m.small_bytes), np.full(rows.size, m.large_bytes)])
    t = np.concatenate([m.latency()[rows], m.large_time()[rows]])
    try:
        f = fit_line(n, t)
    except ValueError:
        return None
    return f.intercept, f.slope
