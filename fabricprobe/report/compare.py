"""Compare two sets of points — two files, two runs, two algorithms, before and after tuning — size
by size, calling a difference only beyond the spread between launches (docs/reports.md, "What compare
calls different"): two launches of one sweep differ by 1.10× at the median row and up to 1.4× here,
while one launch's interval is a few percent wide.

- Both sides from one launch (two algorithms of one run): measured interleaved in it, so the two 95%
  intervals apart and the ratio beyond both sides' noise.
- Both sides launch groups (`sweep --launches K`): Welch's t-test on the log launch medians at 95%,
  the spread between launches measured on each side.
- Otherwise (a single launch on a side): the intervals apart and the ratio beyond DRIFT_FLOOR, the
  drift measured between two launches of one sweep."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricprobe.errors import UsageError
from fabricprobe.inputs import is_digits
from fabricprobe.report.buffers import difference
from fabricprobe.report.labels import speedup
from fabricprobe.report.launches import aggregated_points, group_of
from fabricprobe.stats import point_noise, welch_differ
from fabricprobe.store import Run, load_runs, no_runs, select_run
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


EVERY_RUN = "*"  # FILE:* — every run of the file as the launches of one side


def parse_side(text: str, one_launch: bool = False) -> Side:
    """FILE[:RUN][@ALGORITHM] — RUN an id, -1 (last) or * (every run of the file, each a launch: the
    side is their group); ALGORITHM e.g. library, ring, library:tuned. A run of a launch group with
    several launches in the file stands for its group unless `one_launch`."""
    path, at, algorithm = text.partition("@")
    if at and not algorithm.strip():
        raise UsageError(f"{text!r} names no algorithm after @ (FILE@ALGORITHM, e.g. r.h5@ring)")
    run_id = None
    head, sep, tail = path.rpartition(":")
    if sep and tail == EVERY_RUN:  # every run of the file, each a launch: sweeps run by hand, interleaved
        runs = [r for r in load_runs(head) if r.points]
        if not runs:
            raise no_runs(head)
        return Side(f"{text} ({len(runs)} runs as launches)", runs[0], algorithm or None, runs if len(runs) > 1 else [])
    if sep and (is_digits(tail) or (tail.startswith("-") and is_digits(tail[1:]))):
        path, run_id = head, tail
    runs = load_runs(path)
    run = select_run(runs, run_id, path)
    group = [] if one_launch else group_of(runs, run)
    if len(group) >= 2:
        return Side(f"{text} ({len(group)} launches)", run, algorithm or None, group)
    return Side(text, run, algorithm or None)


# What a row is held against (Comparison.rule), and the text that says so on screen.
ONE_LAUNCH, LAUNCH_GROUPS, SINGLE_LAUNCHES = "one launch", "launch groups", "single launches"
# The ratio two launches of one sweep stay within at 95% of rows (docs/reports.md, measured with
# benchmarks/compare_drift.py: 1.7% and 4.6% of rows beyond it, quiet and loaded)
DRIFT_FLOOR = 1.45


@dataclass
class Row:
    key: dict[str, Any]
    a: dict[str, Any]
    b: dict[str, Any]
    rule: str = SINGLE_LAUNCHES

    @property
    def speedup(self) -> float:
        """B's speedup over A: A's median time over B's (above 1: B is faster), the reports' one convention."""
        return speedup(self.a["median_s"], self.b["median_s"]) if self.a["median_s"] > 0 else math.nan

    @property
    def significant(self) -> bool:
        """Whether the row differs beyond what its rule allows (the module's docstring)."""
        a, b = self.a, self.b
        if self.rule == LAUNCH_GROUPS:
            return welch_differ(np.log(a["launch_medians_s"]), np.log(b["launch_medians_s"]))
        apart = b["ci_high_s"] < a["ci_low_s"] or a["ci_high_s"] < b["ci_low_s"]
        noise = max(point_noise(a), point_noise(b))
        beyond = abs(1 / self.speedup - 1) > noise
        if self.rule == ONE_LAUNCH:
            return apart and beyond
        return apart and beyond and abs(math.log(self.speedup)) > math.log(DRIFT_FLOOR)


@dataclass
class Comparison:
    a: Side
    b: Side
    rows: list[Row] = field(default_factory=list)
    only_a: list[dict[str, Any]] = field(default_factory=list)
    only_b: list[dict[str, Any]] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    rule: str = SINGLE_LAUNCHES

    def rule_line(self) -> str:
        """What a row was held against, for the screen."""
        if self.rule == ONE_LAUNCH:
            return "both sides from one launch: a difference beyond both sides' 95% intervals and noise"
        if self.rule == LAUNCH_GROUPS:
            return (
                f"launch groups ({len(self.a.group)} and {len(self.b.group)} launches): a difference of the "
                "launch medians at 95% (Welch's t on their logs)"
            )
        return (
            f"a single launch on a side: a difference beyond {DRIFT_FLOOR:.2f}×, the drift between two "
            "launches of one sweep (docs/reports.md); sweep --launches 8 on each side resolves less"
        )


def rule_of(a: Side, b: Side) -> str:
    """How the sides' rows are held (the module's docstring)."""
    if a.run.path == b.run.path and a.run.id == b.run.id and not a.group and not b.group:
        return ONE_LAUNCH
    if len(a.group) >= 2 and len(b.group) >= 2:
        return LAUNCH_GROUPS
    return SINGLE_LAUNCHES


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
    out = Comparison(a, b, rule=rule_of(a, b))
    for k in sorted(set(pa) & set(pb), key=lambda k: tuple(str(x) for x in k[:-1]) + (k[-1],)):
        out.rows.append(Row(k._asdict(), pa[k], pb[k], out.rule))
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
                f"no difference beyond the {_held(comp.rule)} at any of {len(rows)} sizes (B's speedup over A "
                f"{gm:.2f}× on average)"
            )
        else:
            fast, slow = (comp.b.label, comp.a.label) if gm > 1 else (comp.a.label, comp.b.label)
            times = gm if gm > 1 else 1 / gm
            text = (
                f"{fast} is faster: {times:.2f}× the speed of {slow} (geometric mean over sizes); beyond the "
                f"{_held(comp.rule)} at {len(sig)} of {len(rows)} sizes ({faster_b} favour {comp.b.label}, "
                f"{faster_a} favour {comp.a.label})"
            )
        out[coll] = text
    return out


def _held(rule: str) -> str:
    """What a verdict says a difference was beyond."""
    return "noise" if rule == ONE_LAUNCH else "spread between launches" if rule == LAUNCH_GROUPS else "drift floor"
