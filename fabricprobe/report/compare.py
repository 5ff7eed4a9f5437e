"""Compare two sets of points — two files, two runs, two algorithms, before and after tuning — size
by size, saying where the difference exceeds both sides' noise."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from fabricprobe.errors import UsageError
from fabricprobe.inputs import is_digits
from fabricprobe.report.buffers import difference
from fabricprobe.report.labels import speedup
from fabricprobe.report.launches import aggregated_points, group_of
from fabricprobe.stats import point_noise
from fabricprobe.store import Run, load_runs, select_run
from fabricprobe.store.schema import EMPTY, identity


@dataclass
class Side:
    label: str
    run: Run
    algorithm: str | None  # restrict to one algorithm (then algorithms are not matched)
    # the run's launch group (sweep --launches) when it has several launches: the side is then the
    # group, each point its median over launches with the between-launch interval (report/launches.py)
    group: list[Run] = field(default_factory=list)

    def points(self, collectives: list[str] | None = None) -> list[dict[str, Any]]:
        found = aggregated_points(self.group) if len(self.group) >= 2 else self.run.points
        return [
            p
            for p in found
            if p["status"] == "ok"
            and p["collective"] != EMPTY
            and (self.algorithm is None or p["algorithm"] == self.algorithm)
            and (collectives is None or p["collective"] in collectives)
        ]


def parse_side(text: str, one_launch: bool = False) -> Side:
    """FILE[:RUN][@ALGORITHM] — RUN an id or -1 (last); ALGORITHM e.g. library, ring, library:tuned. A run
    of a launch group with several launches in the file stands for its group unless `one_launch`."""
    path, _, algorithm = text.partition("@")
    run_id = None
    head, sep, tail = path.rpartition(":")
    if sep and (is_digits(tail) or (tail.startswith("-") and is_digits(tail[1:]))):
        path, run_id = head, tail
    runs = load_runs(path)
    run = select_run(runs, run_id, path)
    group = [] if one_launch else group_of(runs, run)
    if len(group) >= 2:
        return Side(f"{text} ({len(group)} launches)", run, algorithm or None, group)
    return Side(text, run, algorithm or None)


@dataclass
class Row:
    key: dict[str, Any]
    a: dict[str, Any]
    b: dict[str, Any]

    @property
    def speedup(self) -> float:
        """B's speedup over A: A's median time over B's (above 1: B is faster), the reports' one convention."""
        return speedup(self.a["median_s"], self.b["median_s"]) if self.a["median_s"] > 0 else math.nan

    @property
    def significant(self) -> bool:
        """The confidence intervals of the two medians do not overlap, and the ratio is further from 1
        than both sides' relative noise (half-width of their 95% CIs)."""
        a, b = self.a, self.b
        apart = b["ci_high_s"] < a["ci_low_s"] or a["ci_high_s"] < b["ci_low_s"]
        noise = max(point_noise(a), point_noise(b))
        return apart and abs(1 / self.speedup - 1) > noise


@dataclass
class Comparison:
    a: Side
    b: Side
    rows: list[Row] = field(default_factory=list)
    only_a: list[dict[str, Any]] = field(default_factory=list)
    only_b: list[dict[str, Any]] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)


def compare(a: Side, b: Side, collectives: list[str] | None = None) -> Comparison:
    without = ("algorithm",) if a.algorithm or b.algorithm else ()

    def key(p: dict[str, Any]) -> tuple:
        return identity(p, without)

    pa, pb = {key(p): p for p in a.points(collectives)}, {key(p): p for p in b.points(collectives)}
    for side, found in ((a, pa), (b, pb)):
        if not found:
            names = sorted({p["algorithm"] for p in side.run.points if p["collective"] != EMPTY})
            raise UsageError(
                f"{side.label} has no measured points{' of these collectives' if collectives else ''}"
                f" (algorithms in run {side.run.id}: {', '.join(names) or 'none'})"
            )
    out = Comparison(a, b)
    for k in sorted(set(pa) & set(pb), key=lambda k: tuple(str(x) for x in k[:-1]) + (k[-1],)):
        out.rows.append(Row(k._asdict(), pa[k], pb[k]))
    out.only_a = [pa[k] for k in sorted(set(pa) - set(pb), key=str)]
    out.only_b = [pb[k] for k in sorted(set(pb) - set(pa), key=str)]
    ranks_a = sorted({p["nranks"] for p in pa.values()})
    ranks_b = sorted({p["nranks"] for p in pb.values()})
    if ranks_a != ranks_b:
        out.mismatches.append(f"rank counts differ: {a.label} has {ranks_a}, {b.label} has {ranks_b}")
    for coll in sorted({p["collective"] for p in pa.values()} | {p["collective"] for p in pb.values()}):
        sa = {p["bytes"] for p in pa.values() if p["collective"] == coll}
        sb = {p["bytes"] for p in pb.values() if p["collective"] == coll}
        if sa and sb and sa != sb:
            out.mismatches.append(f"{coll}: sizes differ ({len(sa ^ sb)} measured on one side only)")
        elif not sa or not sb:
            out.mismatches.append(f"{coll}: measured only in {a.label if sa else b.label}")
    if not out.rows and not out.mismatches:
        raise UsageError(f"{a.label} and {b.label} have no points in common")
    buffers = difference(a.run.attrs, b.run.attrs, a.label, b.label)
    if buffers:
        out.mismatches.append(buffers)
    return out


def verdicts(comp: Comparison) -> dict[str, str]:
    """One line per collective: who is faster, by how much (geometric mean speedup), how often beyond noise."""
    out = {}
    for coll in sorted({r.key["collective"] for r in comp.rows}):
        rows = [r for r in comp.rows if r.key["collective"] == coll and math.isfinite(r.speedup) and r.speedup > 0]
        if not rows:
            continue
        gm = math.exp(sum(math.log(r.speedup) for r in rows) / len(rows))  # B's speedup over A, geometric mean
        sig = [r for r in rows if r.significant]
        faster_b = sum(1 for r in sig if r.speedup > 1)
        faster_a = len(sig) - faster_b
        if not sig:
            text = (
                f"no difference beyond the noise at any of {len(rows)} sizes (B's speedup over A {gm:.2f}× on average)"
            )
        else:
            fast, slow = (comp.b.label, comp.a.label) if gm > 1 else (comp.a.label, comp.b.label)
            times = gm if gm > 1 else 1 / gm
            text = (
                f"{fast} is faster: {times:.2f}× the speed of {slow} (geometric mean over sizes); beyond the "
                f"noise at {len(sig)} of {len(rows)} sizes ({faster_b} favour {comp.b.label}, "
                f"{faster_a} favour {comp.a.label})"
            )
        out[coll] = text
    return out
