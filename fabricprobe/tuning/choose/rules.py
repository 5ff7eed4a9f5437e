"""Choose the fastest algorithm per (collective, communicator size, message-size range) from a
tune-sweep's runs, keeping the default wherever the difference is inside the measured noise."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable

from fabricprobe.errors import UsageError
from fabricprobe.mpienv.coll_path import MPICH_HIERARCHY
from fabricprobe.sizes import format_span
from fabricprobe.stats import point_noise
from fabricprobe.store import Run
from fabricprobe.tuning import COLLECTIVES
from fabricprobe.tuning.plan.hierarchy import is_hierarchy
from fabricprobe.tuning.plan.library import DEFAULT
from fabricprobe.tuning.plan.openmpi_han import HAN as HAN_PREFIX

LIBRARY = "library"
MIN_GAIN = 0.05  # tune --verify's --min-gain: a candidate must be this much faster than the default
# tune's --min-gain without --verify, where nothing re-measures the rules: 1.25× in the tune-sweep. Its
# speedups of 1.06-1.23× were not confirmed by a before/after (docs/tuning.md, Decisive files).
UNVERIFIED_MIN_GAIN = 0.20
RESERVED = ("baseline", "tuned")  # labels of fabricprobe tune's before/after measurements, never candidates


@dataclass
class Decision:
    size: int
    winner: str  # "default" or the library's algorithm name (or a hand-written algorithm)
    default_s: float
    winner_s: float
    noise: float  # the larger relative CI half-width of the two medians compared

    @property
    def speedup(self) -> float:
        return self.default_s / self.winner_s if self.winner_s > 0 else 1.0


@dataclass
class Range:
    lo: int  # smallest message size (bytes, the collective's S) the rule covers
    hi: int | None  # first size it no longer covers; None = no limit
    winner: str
    decisions: list[Decision] = field(default_factory=list)

    @property
    def speedup(self) -> float:
        return min((d.speedup for d in self.decisions), default=1.0)

    def covers(self, size: int) -> bool:
        return self.lo <= size and (self.hi is None or size < self.hi)

    @property
    def span(self) -> str:
        """[64 KiB, 1 MiB) or [4 MiB, ∞): how every report and message names the range."""
        return format_span(self.lo, self.hi)


@dataclass
class Table:
    vendor: str
    library_version: str
    world: int
    dtype: str
    rules: dict[str, dict[int, list[Range]]]  # collective -> comm size -> ranges covering 0..∞
    # collective -> comm size -> the component that served the library there, where it was not the one
    # the rules steer (Open MPI's han on several nodes): those sections keep the default
    served_elsewhere: dict[str, dict[int, str]] = field(default_factory=dict)
    # collective -> comm size -> what served the default when it was measured, and the job's shape
    # ("4 ranks of 2 nodes"): the case the files are for (the same rules file means other things on one
    # node, under Open MPI 5's han, or with Open MPI 4.1, where han is off)
    served: dict[str, dict[int, str]] = field(default_factory=dict)
    shape: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def case_lines(self) -> list[str]:
        """The case the files are for, as comment lines: the job they were measured in and, per
        collective and communicator size, what served the library's default there. A rule is keyed on
        the communicator's size only, and the same size means another path on one node, under Open MPI
        5's han on several nodes (coll/tuned only inside han's sub-communicators), with Open MPI 4.1
        (han off: coll/tuned on the whole communicator) and under MPICH's CH4 compositions."""
        out = [f"# measured in a job of {self.shape or 'unrecorded shape'}"]
        for coll in sorted(self.served):
            for n, path in sorted(self.served[coll].items()):
                out.append(f"# {coll} on {n} ranks: served by {path}")
        return out

    def tuned(self) -> bool:
        return any(
            r.winner != DEFAULT for sections in self.rules.values() for ranges in sections.values() for r in ranges
        )


def _name(algorithm: str) -> str:
    """library -> default; library:ring -> ring; hand-written names unchanged."""
    if algorithm == LIBRARY:
        return DEFAULT
    return algorithm.split(":", 1)[1] if algorithm.startswith(LIBRARY + ":") else algorithm


def job_points(run: Run) -> list[dict]:
    """The points of the collective a tune-sweep job was launched for: the sparse job also measures
    the library's dense allreduce as its reference, in another launch than the default's job, and
    must not stand in for it (measured here: 2× slower in that launch, a slow phase)."""
    config = run.attrs.get("config")
    if isinstance(config, str):
        config = json.loads(config) if config.startswith("{") else {}
    wanted = set((config or {}).get("collectives") or ())
    return [p for p in run.points if not wanted or p["collective"] in wanted]


def usable(p: dict, dtype: str, collectives: tuple[str, ...]) -> bool:
    """Whether a tune-sweep point can decide anything: one of `collectives`, measured fine, in the
    barrier mode on separate buffers, of the datatype tuned, summed (or no op), and not one of tune's
    own before/after labels. The library's rules and fabricprobe's selection read the same points."""
    return (
        p["collective"] in collectives
        and p["status"] == "ok"
        and p["mode"] == "barrier"
        and not p["in_place"]
        and p["dtype"] == dtype
        and p["op"] in ("sum", "none")
        and _name(p["algorithm"]) not in RESERVED
    )


def candidates(runs: list[Run], dtype: str) -> tuple[dict, dict[str, Any]]:
    """(collective, nranks, bytes) -> {algorithm name: point}, latest measurement winning; and the
    provenance the runs share. Raises UsageError when the runs mix libraries or hold nothing usable."""
    table: dict[tuple, dict[str, dict]] = {}
    versions = {r.attrs.get("mpi_library_version") for r in runs if r.points}
    if len(versions) > 1:
        raise UsageError(
            "the file holds runs of different MPI libraries; tune one library at a time (select runs with --run)"
        )
    for run in runs:
        for p in job_points(run):
            if not usable(p, dtype, COLLECTIVES):
                continue
            if p["algorithm"] != LIBRARY and not p["algorithm"].startswith(LIBRARY + ":"):
                continue  # fabricprobe's own algorithms are the selection's (tuning.selection)
            table.setdefault((p["collective"], p["nranks"], p["bytes"]), {})[_name(p["algorithm"])] = p
    if not table:
        raise UsageError(
            f"no {dtype} measurements of {', '.join(COLLECTIVES)} to tune from: run `fabricprobe tune-sweep` first"
        )
    newest = next(r for r in reversed(runs) if r.points)
    return table, newest.attrs


def decide(by_name: dict[str, dict], size: int, min_gain: float) -> Decision | None:
    default = by_name.get(DEFAULT)
    if default is None:
        return None
    best_name, best = min(by_name.items(), key=lambda kv: (kv[1]["median_s"], kv[0] != DEFAULT))
    noise = max(point_noise(default), point_noise(best))
    clear = best["ci_high_s"] < default["ci_low_s"] and best["median_s"] < default["median_s"] * (1 - min_gain)
    if best_name == DEFAULT or not clear:
        return Decision(size, DEFAULT, default["median_s"], default["median_s"], noise)
    return Decision(size, best_name, default["median_s"], best["median_s"], noise)


def extend(ranges: list[Range], decision: Decision) -> None:
    """Add the decision at the next larger size: it joins the last range when the winner is the
    same, else it opens a range there (the first range always starts at 0, the last never ends)."""
    if ranges and ranges[-1].winner == decision.winner:
        ranges[-1].decisions.append(decision)
        return
    if ranges:
        ranges[-1].hi = decision.size
    ranges.append(Range(lo=decision.size if ranges else 0, hi=None, winner=decision.winner, decisions=[decision]))


def give_back(ranges: list[Range], back: Callable[[Range, Decision], bool]) -> list[Range]:
    """The ranges rebuilt with every decision `back` names given to the default (at the default's own
    time); the others keep their range's winner. How tune makes a file smaller: the library's own
    choice (choose/library_choice.py), rules not shown (measure/shown.py)."""
    decisions = []
    for r in ranges:
        for d in r.decisions:
            if r.winner == DEFAULT:
                decisions.append(replace(d, winner=DEFAULT))
            elif back(r, d):
                decisions.append(replace(d, winner=DEFAULT, winner_s=d.default_s))
            else:
                decisions.append(replace(d, winner=r.winner))
    rebuilt: list[Range] = []
    for d in sorted(decisions, key=lambda d: d.size):
        extend(rebuilt, d)
    return rebuilt or [Range(lo=0, hi=None, winner=DEFAULT)]


def winner_at(ranges: list[Range], size: int) -> str:
    """The winner of the range covering size."""
    return next(r.winner for r in ranges if r.covers(size))


def choose(
    runs: list[Run],
    dtype: str = "float32",
    min_gain: float = MIN_GAIN,
    collectives: list[str] | None = None,
) -> Table:
    """Rules over the library's own algorithms, its default and each forced one: what its tuning
    files say (fabricprobe's own algorithms are weighed against these in tuning.selection).

    Where another component served the default (Open MPI's han on several nodes), coll/tuned's forced
    algorithms ran only inside han's sub-communicators and a rule keyed on this size would never be
    read: there the candidates are han's own variants (tuning.plan.openmpi_han), and the default stays
    where none was measured. Elsewhere han's variants are idle and not candidates. MPICH's CH4
    compositions on a hierarchical communicator are the same case (tuning.plan.mpich_composition):
    a forced MPIR algorithm ran on the node leaders' sub-communicator only."""
    table, attrs = candidates(runs, dtype)
    vendor = attrs.get("mpi_vendor", "")
    sections: dict[tuple[str, int], list[Decision]] = {}
    measured: dict[tuple[str, int], dict[int, dict[str, dict]]] = {}
    elsewhere: dict[str, dict[int, str]] = {}
    served_at: dict[str, dict[int, str]] = {}
    for coll, nranks, size in sorted(table):
        if collectives is not None and coll not in collectives:
            continue
        by_name = table[(coll, nranks, size)]
        if by_name.get(DEFAULT, {}).get("served_by"):
            served_at.setdefault(coll, {})[nranks] = str(by_name[DEFAULT]["served_by"])
        served = not_steered(vendor, by_name.get(DEFAULT, {}))
        if served:
            elsewhere.setdefault(coll, {})[nranks] = served
        by_name = {n: p for n, p in by_name.items() if n == DEFAULT or is_hierarchy(n) == bool(served)}
        decision = decide(by_name, size, min_gain)
        if decision is None:
            continue
        sections.setdefault((coll, nranks), []).append(decision)
        measured.setdefault((coll, nranks), {})[size] = by_name
    rules: dict[str, dict[int, list[Range]]] = {}
    for (coll, nranks), decisions in sections.items():
        if nranks in elsewhere.get(coll, {}):
            decisions = one_han_setting(decisions, measured[(coll, nranks)], min_gain)
        for decision in decisions:
            extend(rules.setdefault(coll, {}).setdefault(nranks, []), decision)
    return Table(
        vendor or "unknown",
        attrs.get("mpi_library_version", ""),
        int(attrs.get("nranks", 0) or 0),
        dtype,
        rules,
        elsewhere,
        {c: sections for c, sections in served_at.items() if c in rules},
        str(attrs.get("coll_shape", "") or ""),
    )


def one_han_setting(decisions: list[Decision], measured: dict[int, dict[str, dict]], min_gain: float) -> list[Decision]:
    """han's module and segment-size settings hold for every message size of a collective (MCA
    parameters, not rules per size), so a section keeps one: the han_* winner of the most sizes. It runs
    wherever han is kept, so it is kept only if it is nowhere clearly slower than the default (its
    interval above the default's); the sizes it runs at without having won are labelled with it, at
    its measured time. Without one, han_* winners give way to the best of the default and flat_*."""
    wins: dict[str, int] = {}
    for d in decisions:
        if d.winner.startswith(HAN_PREFIX):
            wins[d.winner] = wins.get(d.winner, 0) + 1
    chosen = max(sorted(wins), key=lambda name: wins[name], default="")
    if chosen:
        for d in decisions:
            if is_hierarchy(d.winner) and not d.winner.startswith(HAN_PREFIX):
                continue  # han hands these sizes to tuned: its settings do not run there
            mine, default = measured[d.size].get(chosen), measured[d.size].get(DEFAULT)
            if mine is None or (default is not None and mine["ci_low_s"] > default["ci_high_s"]):
                chosen = ""
                break
    out = []
    for d in decisions:
        by_name = measured[d.size]
        if d.winner.startswith(HAN_PREFIX) or d.winner == DEFAULT:
            if chosen:
                mine = by_name[chosen]
                d = Decision(d.size, chosen, d.default_s, mine["median_s"], d.noise)
            elif d.winner != DEFAULT:
                rest = {n: p for n, p in by_name.items() if not n.startswith(HAN_PREFIX)}
                d = decide(rest, d.size, min_gain) or d
        out.append(d)
    return out


def not_steered(vendor: str, default_point: dict) -> str:
    """The path that served the library's default at a point when the rules this module writes cannot
    steer it (Open MPI: any component but coll/tuned); "" otherwise and for points without served_by."""
    served = str(default_point.get("served_by") or "")
    if vendor == "Open MPI" and served and not served.startswith("tuned"):
        return served
    if vendor == "MPICH" and served.startswith(MPICH_HIERARCHY):
        return served  # the MPIR algorithm ran on the composition's sub-communicators only
    return ""
