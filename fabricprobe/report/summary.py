"""The summary an engineer acts on: per collective case, the small-message latency, the peak busbw
and the size reaching half of it (n½), which algorithm wins over which size range, and the sizes
where one algorithm overtakes the library's.

A winner other than the baseline (the library's own, else the first algorithm) is named only
where its median's 95% CI lies wholly below the baseline's; elsewhere the baseline keeps the range,
so noise alone never splits a range or invents a crossover."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from fabricprobe.collectives import LIBRARY
from fabricprobe.report.algorithms import case_of
from fabricprobe.specs import SPECS


@dataclass
class SizeRange:
    lo: int  # first measured size the winner holds
    hi: int  # last measured size it holds
    winner: str
    speedup_min: float  # baseline time / winner time over the range (1 where the baseline holds)
    speedup_max: float


@dataclass
class Crossover:
    algorithm: str
    faster: str  # "above" or "below": where the algorithm beats the baseline
    between: tuple[int, int]  # the last measured size on one side and the first on the other
    estimate: int  # where the time ratio crosses 1, interpolated on log axes


@dataclass
class CaseSummary:
    case: dict[str, Any]
    baseline: str
    algorithms: list[str]
    sizes: int
    latency_s: float  # the baseline at the smallest measured size
    latency_bytes: int
    peak_busbw_gbps: float
    peak_bytes: int
    half_peak_bytes: int | None  # n½: the smallest size whose busbw reaches half the peak
    ranges: list[SizeRange] = field(default_factory=list)
    crossovers: list[Crossover] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _clearly_faster(p: dict[str, Any], base: dict[str, Any]) -> bool:
    return p["median_s"] < base["median_s"] and p["ci_high_s"] < base["ci_low_s"]


def _clearly_slower(p: dict[str, Any], base: dict[str, Any]) -> bool:
    return p["median_s"] > base["median_s"] and p["ci_low_s"] > base["ci_high_s"]


def log_crossing(x0: float, r0: float, x1: float, r1: float) -> float:
    """Where a ratio r going from r0 at x0 to r1 at x1 crosses 1, interpolated in log x and log r."""
    if r0 <= 0 or r1 <= 0 or math.log(r0) == math.log(r1):
        return math.sqrt(x0 * x1)
    t = math.log(r0) / (math.log(r0) - math.log(r1))
    return math.exp(math.log(x0) + t * (math.log(x1) - math.log(x0)))


def _ranges(sizes: list[int], by_alg: dict[str, dict[int, dict]], baseline: str) -> list[SizeRange]:
    out: list[SizeRange] = []
    for size in sizes:
        base = by_alg[baseline].get(size)
        here = {a: rows[size] for a, rows in by_alg.items() if size in rows}
        if base is None:  # the baseline was not measured here: plain fastest median
            winner = min(here, key=lambda a: here[a]["median_s"])
            speedup = 1.0
        else:
            best = min(here, key=lambda a: (here[a]["median_s"], a != baseline))
            winner = best if best != baseline and _clearly_faster(here[best], base) else baseline
            speedup = base["median_s"] / here[winner]["median_s"] if here[winner]["median_s"] > 0 else 1.0
        if out and out[-1].winner == winner:
            last = out[-1]
            last.hi = size
            last.speedup_min, last.speedup_max = min(last.speedup_min, speedup), max(last.speedup_max, speedup)
        else:
            out.append(SizeRange(size, size, winner, speedup, speedup))
    return out


def _crossovers(algorithm: str, rows: dict[int, dict], base_rows: dict[int, dict]) -> list[Crossover]:
    """Sign changes of (algorithm faster than the baseline) over the sizes where either is clearly
    faster; the estimate interpolates the raw ratio between the two sizes that bracket the change."""
    sizes = sorted(s for s in rows if s in base_rows and s > 0)
    signed = []
    for s in sizes:
        if _clearly_faster(rows[s], base_rows[s]):
            signed.append((s, +1))
        elif _clearly_slower(rows[s], base_rows[s]):
            signed.append((s, -1))
    out = []
    for (s0, g0), (s1, g1) in zip(signed, signed[1:]):
        if g0 == g1:
            continue
        inside = [s for s in sizes if s0 <= s <= s1]
        ratio = {s: base_rows[s]["median_s"] / rows[s]["median_s"] for s in inside if rows[s]["median_s"] > 0}
        estimate = math.sqrt(s0 * s1)
        for a, b in zip(inside, inside[1:]):
            if a in ratio and b in ratio and (ratio[a] - 1) * (ratio[b] - 1) <= 0:
                estimate = log_crossing(a, ratio[a], b, ratio[b])
                break
        out.append(Crossover(algorithm, "above" if g1 > 0 else "below", (s0, s1), int(round(estimate))))
    return out


def summarize(points: list[dict[str, Any]]) -> list[CaseSummary]:
    """One summary per case (collective, datatype, op, in-place, mode, pair, density, ranks) of the
    sized collectives measured at two or more sizes."""
    cases: dict[tuple, dict[str, dict[int, dict]]] = {}
    for p in points:
        spec = SPECS.get(p["collective"])
        if p["status"] != "ok" or spec is None or not spec.sized:
            continue
        case = case_of(p)
        cases.setdefault(case, {}).setdefault(p["algorithm"], {})[p["bytes"]] = p
    out = []
    for case, by_alg in cases.items():
        sizes = sorted({s for rows in by_alg.values() for s in rows})
        if len(sizes) < 2:
            continue
        names = sorted(by_alg, key=lambda a: (a != LIBRARY, a))
        baseline = names[0]
        base_rows = by_alg[baseline]
        small = min(base_rows)
        peak = max(base_rows.values(), key=lambda p: p["busbw_gbps"])
        half = next((s for s in sorted(base_rows) if base_rows[s]["busbw_gbps"] >= peak["busbw_gbps"] / 2), None)
        summary = CaseSummary(
            case._asdict(),
            baseline,
            names,
            len(sizes),
            base_rows[small]["median_s"],
            small,
            peak["busbw_gbps"],
            peak["bytes"],
            half if peak["busbw_gbps"] > 0 else None,
        )
        summary.ranges = _ranges(sizes, by_alg, baseline)
        for name in names[1:]:
            summary.crossovers += _crossovers(name, by_alg[name], base_rows)
        out.append(summary)
    return out
