"""A tune-sweep's measurements as the economical search sees them: its grid, its observations, and
the same file cut down to the points a budgeted search measured.

Replaying the search against an exhaustive file (its "measurements" looked up there, not made) is how
the search's choices are tested without MPI and how regret against budget is drawn: on the same
measurements, the budgeted choice and the exhaustive one differ only by what the search left out.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from fabricprobe.errors import UsageError
from fabricprobe.stats import median_ci
from fabricprobe.store import Run
from fabricprobe.tuning import COLLECTIVES
from fabricprobe.tuning.choose.rules import MIN_GAIN, job_points, usable
from fabricprobe.tuning.economy.search import SCREEN_ITERS, Grid, Key, Observation, State, run, screening_warmup

DENSE = tuple(COLLECTIVES)  # --budget tunes the collectives with library algorithms


def key_of(p: dict) -> Key:
    return (p["collective"], p["algorithm"], int(p["nranks"]), int(p["requested_bytes"]))


def observations(runs: list[Run], dtype: str = "float32") -> dict[Key, tuple[Observation, dict]]:
    """Every usable measurement of the dense tune collectives, the newest winning, with its point."""
    out: dict[Key, tuple[Observation, dict]] = {}
    for r in runs:
        for p in job_points(r):
            if usable(p, dtype, DENSE):
                out[key_of(p)] = (observed(p), p)
    return out


def observed(p: dict, screening: bool = False) -> Observation:
    return Observation(
        p["median_s"],
        p["ci_low_s"],
        p["ci_high_s"],
        p["duration_s"],
        int(p["iterations"]) + int(p["warmup"]),
        p["mean_s"],
        screening,
    )


def screened(run: Run, p: dict) -> Observation:
    """What a screening measurement of this point would have given: its first SCREEN_ITERS timed
    calls (the harness stores every call), at the point's overhead plus those calls' time."""
    stored = run.times(int(p["index"]))
    times = stored.iteration_times()[:SCREEN_ITERS] if stored is not None else np.empty(0)
    if times.size == 0:
        return observed(p, screening=True)
    low, high = median_ci(np.sort(times))
    full = observed(p)
    warmup = screening_warmup(int(p["bytes"]))
    duration = full.overhead_s + (times.size + warmup) * float(times.mean())
    return Observation(float(np.median(times)), low, high, duration, times.size + warmup, float(times.mean()), True)


def grid_of(runs: list[Run], dtype: str = "float32") -> Grid:
    """The grid a file's tune-sweep covered: the candidates, communicator sizes and sizes it measured."""
    return _grid(runs, observations(runs, dtype), dtype)


def _grid(runs: list[Run], seen: dict[Key, tuple[Observation, dict]], dtype: str) -> Grid:
    if not seen:
        raise UsageError(f"no {dtype} tune-sweep measurements of {', '.join(DENSE)} in the file")
    candidates: dict[str, set[str]] = {}
    for coll, label, _, _ in seen:
        candidates.setdefault(coll, set()).add(label)
    caps = [float(r.config["max_time"]) for r in runs if r.config.get("max_time")]
    return Grid(
        {c: sorted(labels) for c, labels in sorted(candidates.items())},
        sorted({k[2] for k in seen}),
        sorted({k[3] for k in seen}),
        max(caps) if caps else math.inf,
    )


def restricted(runs: list[Run], seen: dict[Key, Observation]) -> list[Run]:
    """The runs holding only the points a budgeted search measured, each as it measured it (a
    screened point with its screening median and interval)."""
    out = []
    for r in runs:
        kept = []
        for p in r.points:
            obs = seen.get(key_of(p))
            if obs is not None:
                kept.append({**p, "median_s": obs.median_s, "ci_low_s": obs.low_s, "ci_high_s": obs.high_s})
        out.append(replace(r, points=kept))
    return out


def replay(
    runs: list[Run], budget: float, min_gain: float = MIN_GAIN, dtype: str = "float32"
) -> tuple[State, list[Run]]:
    """The budgeted search run against an exhaustive file's measurements; returns its state and the
    file as the search would have written it."""
    seen = observations(runs, dtype)
    run_of = {id(p): r for r in runs for p in r.points}

    def measure(keys: list[Key], screening: bool) -> dict[Key, Observation]:
        if screening:
            return {k: screened(run_of[id(seen[k][1])], seen[k][1]) for k in keys if k in seen}
        return {k: seen[k][0] for k in keys if k in seen}

    state = run(_grid(runs, seen, dtype), measure, budget, min_gain)
    return state, restricted(runs, state.seen)
