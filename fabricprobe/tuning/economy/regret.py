"""`fabricprobe tune-eval`: how much slower the collectives run with a tuning chosen from fewer
measurements than with the best algorithm, judged on an exhaustive tune-sweep.

At every point of the exhaustive grid (collective, communicator size, message size) the regret of a
tuning is time(the algorithm it runs there) / time(the fastest candidate there) - 1, both times from the
exhaustive file: what the library's rules choose (choose.choose) unless fabricprobe's selection names
its own algorithm (selection.choose_selection), as an application using fabricprobe.tuned runs it.
The exhaustive tuning's own regret is reported beside it: tune keeps the default inside the noise
and rules cover ranges, so even the full data does not choose the fastest everywhere.

Mean, 95th percentile and maximum come with percentile-bootstrap 95% intervals over the grid points
(resampled with replacement, BOOTSTRAP times): how much the figure depends on which points the grid
happened to hold. They do not cover the run-to-run noise of the exhaustive measurements themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from fabricprobe.collectives.algorithm import LIBRARY
from fabricprobe.errors import UsageError
from fabricprobe.store import Run
from fabricprobe.tuning.choose.rules import MIN_GAIN, Table, choose, winner_at
from fabricprobe.tuning.choose.selection import Selection, choose_selection, library_label
from fabricprobe.tuning.economy.replay import DENSE, observations
from fabricprobe.tuning.plan.own import reference

BOOTSTRAP = 2000


@dataclass(frozen=True)
class PointRegret:
    collective: str
    comm_size: int
    size: int  # requested bytes
    chosen: str  # the point label it runs: library, library:NAME or fabricprobe's name
    best: str
    regret: float  # time(chosen) / time(best) - 1, from the exhaustive file


def tuning_of(runs: list[Run], dtype: str, min_gain: float) -> tuple[Table, Selection]:
    """What `fabricprobe tune` chooses from these runs: the library's rules and fabricprobe's selection."""
    table = choose(runs, dtype, min_gain, collectives=list(DENSE))
    return table, choose_selection(runs, table, dtype, min_gain, list(DENSE))


def label_at(table: Table, selection: Selection, collective: str, n: int, nbytes: int) -> str:
    """The point label of the algorithm the tuning runs at this point."""
    section = next(
        (s for s in selection.sections if s.collective == collective and s.comm_size == n and not s.density), None
    )
    if section is not None:
        own = winner_at(section.ranges, nbytes)
        if own != reference(collective):
            return own
    return library_label(table, collective, n, nbytes)


def regrets(truth: list[Run], runs: list[Run], dtype: str = "float32", min_gain: float = MIN_GAIN) -> list[PointRegret]:
    """The regret at every exhaustive grid point of the tuning chosen from `runs`. Where the tuning
    names an algorithm the exhaustive file has no measurement of there (it did not run at that size),
    the library runs its default and that is its time."""
    table, selection = tuning_of(runs, dtype, min_gain)
    by_point: dict[tuple[str, int, int], dict[str, dict]] = {}
    for (coll, label, n, size), (_, p) in observations(truth, dtype).items():
        by_point.setdefault((coll, n, size), {})[label] = p
    out = []
    for (coll, n, size), points in sorted(by_point.items()):
        if LIBRARY not in points:
            continue
        best = min(points, key=lambda label: points[label]["median_s"])
        chosen = label_at(table, selection, coll, n, int(points[LIBRARY]["bytes"]))
        ran = points.get(chosen, points[LIBRARY])
        out.append(PointRegret(coll, n, size, chosen, best, ran["median_s"] / points[best]["median_s"] - 1))
    if not out:
        raise UsageError("the exhaustive file has no point measured with the library's default to judge against")
    return out


def _interval(values: np.ndarray, statistic, rng: np.random.Generator) -> tuple[float, float, float]:
    idx = rng.integers(0, values.size, size=(BOOTSTRAP, values.size))
    boots = np.array([statistic(values[row]) for row in idx])
    return float(statistic(values)), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def summary(found: list[PointRegret], seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """mean, p95 and max regret, each (value, 95% low, 95% high) by the percentile bootstrap."""
    values = np.array([r.regret for r in found])
    rng = np.random.default_rng(seed)
    return {
        "mean": _interval(values, np.mean, rng),
        "p95": _interval(values, lambda v: np.percentile(v, 95), rng),
        "max": _interval(values, np.max, rng),
    }


def _wall_s(runs: list[Run]) -> float:
    starts = [r.attrs.get("started") for r in runs if r.points and r.attrs.get("started")]
    ends = [r.attrs.get("ended") for r in runs if r.points and r.attrs.get("ended")]
    if not starts or not ends:
        return float("nan")
    return (max(map(datetime.fromisoformat, ends)) - min(map(datetime.fromisoformat, starts))).total_seconds()


def spent(runs: list[Run], dtype: str = "float32") -> dict[str, float]:
    """What a tune-sweep file cost: its dense tune points, their measurement time, its wall time."""
    seen = observations(runs, dtype)
    return {
        "points": float(len(seen)),
        "measurement_s": float(sum(obs.duration_s for obs, _ in seen.values())),
        "wall_s": _wall_s(runs),
    }
