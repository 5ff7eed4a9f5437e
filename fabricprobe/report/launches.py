"""Several launches of one sweep (`sweep --launches K`): each point's median in every launch, the spread
between launches beside the spread within one, and the points as one side of a comparison.

What is reported, per point measured ok in every launch of the group:
- the median of the K launch medians (the group's estimate);
- the between-launch interval: the distribution-free 95% interval of that median from the K launch
  medians (stats.median_ci_exact: order statistics, K ≥ 6), or their whole range when K < 6 (then the
  coverage is 1 − 2^(1−K), 93.75% at K = 5, and the table says "range");
- the spread between launches, half that interval relative to the median, against the spread within
  one launch (the median of the launches' own 95% half-widths). A point whose between-launch spread is
  larger says what Hunold & Carpen-Amarie found: one launch's interval understates how far another
  launch lands.

`compare` takes a side that is part of a group of several launches as the group (aggregated_points):
its rows then hold a difference against the between-launch interval, not one launch's."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from fabricprobe.report.labels import row_name
from fabricprobe.report.units import usec
from fabricprobe.stats import median_ci_exact, point_noise, rel_halfwidth
from fabricprobe.store import Run
from fabricprobe.store.schema import EMPTY, identity


def launch_of(run: Run) -> tuple[str, int, int] | None:
    """(group, index, count) of a run made by `sweep --launches`, None for any other run."""
    config = run.config
    group = config.get("launch_group") or ""
    return (group, int(config.get("launch_index", 0)), int(config.get("launches", 1))) if group else None


def group_of(runs: list[Run], run: Run) -> list[Run]:
    """The runs of `run`'s launch group present in `runs`, in launch order ([run] alone for a run of no group)."""
    found = launch_of(run)
    if found is None:
        return [run]
    members = [r for r in runs if (launch_of(r) or ("",))[0] == found[0]]
    return sorted(members, key=lambda r: launch_of(r)[1])


def groups(runs: list[Run]) -> list[list[Run]]:
    """Every launch group in `runs` with at least two runs, in the order of their first run."""
    seen, out = set(), []
    for r in runs:
        found = launch_of(r)
        if found is None or found[0] in seen:
            continue
        seen.add(found[0])
        members = group_of(runs, r)
        if len(members) >= 2:
            out.append(members)
    return out


@dataclass
class Spread:
    point: dict[str, Any]  # the first launch's point (its identity and labels)
    medians: list[float]  # each launch's median, in launch order
    within: float  # the median of the launches' own relative 95% half-widths

    @property
    def median(self) -> float:
        return float(np.median(self.medians))

    @property
    def interval(self) -> tuple[float, float, bool]:
        """(low, high, exact): the 95% order-statistic interval of the median of the launch medians,
        or (min, max, False) where K is too small for one."""
        ordered = np.sort(np.asarray(self.medians))
        found = median_ci_exact(ordered)
        if found is None:
            return float(ordered[0]), float(ordered[-1]), False
        return found[0], found[1], True

    @property
    def between(self) -> float:
        """Half the between-launch interval relative to the median (0.05 = ±5%)."""
        lo, hi, _ = self.interval
        return rel_halfwidth(lo, hi, self.median)

    @property
    def spread_ratio(self) -> float:
        """Between-launch spread over within-launch spread (above 1: one launch's interval understates it)."""
        return self.between / self.within if self.within > 0 else math.inf


def _measured_ok(run: Run) -> dict[tuple, dict[str, Any]]:
    """A launch's points measured ok (the timer floor apart), by identity."""
    return {identity(p): p for p in run.points if p["status"] == "ok" and p["collective"] != EMPTY}


def spreads(group: list[Run]) -> list[Spread]:
    """One Spread per point that every launch of the group measured ok (the others are left out)."""
    by_launch = [_measured_ok(r) for r in group]
    if not by_launch:
        return []
    out = []
    for key, first in by_launch[0].items():
        found = [points.get(key) for points in by_launch]
        if any(p is None for p in found):
            continue
        noise = [point_noise(p) for p in found]
        out.append(Spread(first, [p["median_s"] for p in found], float(np.median(noise))))
    # the plan's order, whatever order the first launch measured in
    return sorted(out, key=lambda s: tuple(str(v) for v in identity(s.point, ("bytes",))) + (s.point["bytes"],))


def aggregated_points(group: list[Run]) -> list[dict[str, Any]]:
    """The group's points as one run's: each with the median of the launch medians and the
    between-launch interval as its median and confidence interval (bandwidths scaled to that median),
    and `launches`: K. What `compare` holds a difference against when a side has several launches."""
    out = []
    for s in spreads(group):
        lo, hi, _ = s.interval
        scale = s.point["median_s"] / s.median if s.median > 0 else math.nan
        out.append(
            {
                **s.point,
                "median_s": s.median,
                "ci_low_s": lo,
                "ci_high_s": hi,
                "algbw_gbps": s.point["algbw_gbps"] * scale,
                "busbw_gbps": s.point["busbw_gbps"] * scale,
                "launches": len(s.medians),
                "launch_medians_s": list(s.medians),
            }
        )
    return out


def group_json(group: list[Run], collectives: list[str] | None = None) -> dict[str, Any]:
    """The group as `report --format json` exports it: its runs and, per point, the launch medians, the
    median of them, the between-launch interval and both spreads."""
    name, _, count = launch_of(group[0])
    rows = []
    for s in spreads(group):
        if collectives is not None and s.point["collective"] not in collectives:
            continue
        lo, hi, exact = s.interval
        rows.append(
            {
                **identity(s.point)._asdict(),
                "launch_medians_s": s.medians,
                "median_s": s.median,
                "interval_low_s": lo,
                "interval_high_s": hi,
                "interval": "95% order statistics" if exact else "range",
                "between_rel": s.between,
                "within_rel": s.within,
            }
        )
    return {
        "group": name,
        "launches": count,
        "runs": [r.id for r in group],
        "seeds": [r.config.get("seed") for r in group],
        "points": rows,
    }


def missing(group: list[Run]) -> int:
    """Points measured ok in some launches of the group but not in all (left out of the spreads)."""
    keys = [set(_measured_ok(r)) for r in group]
    return len(set().union(*keys) - set.intersection(*keys)) if keys else 0


def _ratio(ratio: float) -> str:
    """Between over within; "> 100" where one launch's interval is below the timer's resolution."""
    return "> 100" if ratio > 100 else f"{ratio:.1f}"


def render_launches(group: list[Run], console: Console) -> None:
    """The between-launch table of one group, and its summary line."""
    found = spreads(group)
    name, _, count = launch_of(group[0])
    seeds = ", ".join(str(r.config.get("seed")) for r in group)
    console.print(
        f"[bold]launch group {name}[/]: {len(group)} of {count} launches in this file "
        f"(runs {', '.join(r.id for r in group)}; order {group[0].config.get('order')}, seeds {seeds})"
    )
    if not found:
        console.print("no point was measured ok in every launch")
        return
    exact = found[0].interval[2]
    t = Table(show_edge=False, pad_edge=False, title_justify="left")
    for col in (
        "point",
        "median µs",
        "launch medians µs (min–max)",
        "between ±" + ("" if exact else " (range)"),
        "within ±",
        "between / within",
    ):
        t.add_column(col, justify="right" if col != "point" else "left")
    for s in found:
        lo, hi = min(s.medians), max(s.medians)
        ratio = s.spread_ratio
        flag = "[yellow]" if ratio > 1 else ""
        t.add_row(
            row_name(s.point),
            usec(s.median),
            f"{usec(lo)}–{usec(hi)}",
            f"{100 * s.between:.1f}%",
            f"{100 * s.within:.1f}%",
            f"{flag}{_ratio(ratio)}" + ("[/]" if flag else ""),
        )
    console.print(t)
    wider = sum(1 for s in found if s.spread_ratio > 1)
    left_out = missing(group)
    console.print(
        f"between launches the medians spread more than one launch's own 95% interval at {wider} of "
        f"{len(found)} points"
        + (f"; {left_out} point(s) were not ok in every launch and are left out" if left_out else "")
    )
