"""A stored good run as ReFrame references (`report --format reframe-references`), and the name each
measured point has as a ReFrame performance variable (fabricprobe/reframe/checks reads both).

A site runs OMB through ReFrame with a reference per system, so that a slower fabric fails the nightly
check; this gives fabricprobe's sweep the same: the good run's median of every ok point of the library,
and an upper threshold from the run's own interval of the median, never below the floor (a run's
interval says how well its iterations fixed the median, not how far another launch lands: between
launches this machine moves 10-40%, docs/methodology.md). Faster is never a failure (no lower
threshold).
"""

from __future__ import annotations

import json
from typing import Any

from fabricprobe.collectives import LIBRARY
from fabricprobe.store.schema import EMPTY

FORMAT = "fabricprobe-reframe-references"
DEFAULT_TOLERANCE = 0.10


def perf_name(point: dict[str, Any]) -> str:
    """The performance variable of one point: collective, size, datatype, ranks (and the pair, the
    synchronization, the buffers where they are not the default)."""
    parts = [point["collective"], f"{point['bytes']}B", point["dtype"], f"n{point['nranks']}"]
    if point.get("pair"):
        parts.append(point["pair"])
    if point["mode"] not in ("barrier", ""):
        parts.append(point["mode"])
    if point.get("buffer", "host") != "host":
        parts.append(f"{point['buffer']}-{point.get('transfer', '')}")
    return "_".join(parts)


def measured(points: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """perf_name -> point, for the library's ok points (what a check compares)."""
    out = {}
    for p in points:
        if p["collective"] != EMPTY and p["status"] == "ok" and p["algorithm"] == LIBRARY and p["median_s"] > 0:
            out[perf_name(p)] = p
    return out


def references(runs: list[Any], tolerance: float = DEFAULT_TOLERANCE) -> dict[str, Any]:
    """{name: [median µs, None, upper threshold, "us"]} of the last run's points (ReFrame's reference
    tuple: value, lower and upper thresholds as fractions, unit)."""
    run = runs[-1]
    refs = {}
    for name, p in measured(run.points).items():
        interval = max(p["ci_high_s"] / p["median_s"] - 1.0, 0.0) if p["ci_high_s"] > 0 else 0.0
        refs[name] = [round(p["median_s"] * 1e6, 4), None, round(max(tolerance, interval), 4), "us"]
    return {"format": FORMAT, "run": run.id, "tolerance": tolerance, "references": refs}


def to_references(runs: list[Any], tolerance: float = DEFAULT_TOLERANCE) -> str:
    return json.dumps(references(runs, tolerance), indent=1) + "\n"
