"""`fabricprobe tune-eval` as a workflow: the regret of tunings chosen from budgeted tune-sweeps (files,
or the search replayed on the exhaustive file at given budgets) against the exhaustive tune-sweep, with
what each spent as fractions of the exhaustive's points, measurement time and wall time."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from fabricprobe.errors import UsageError
from fabricprobe.store import Run, load_runs
from fabricprobe.tuning.choose.rules import MIN_GAIN
from fabricprobe.tuning.choose.selection import library_line
from fabricprobe.tuning.economy.regret import regrets, spent, summary
from fabricprobe.tuning.economy.replay import observations, replay


@dataclass
class Row:
    source: str  # a file, "replay at F" or "exhaustive" (tuned on its own data)
    budget: float | None  # the budget asked for, where known
    points: float  # fractions of the exhaustive's
    measurement: float
    wall: float  # nan for a replay: it launched nothing
    rounds: int | None
    regret: dict[str, tuple[float, float, float]]  # mean, p95, max: (value, 95% low, 95% high)
    by_collective: dict[str, dict[str, tuple[float, float, float]]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(self).items()}


FORCED = "library:"  # a library algorithm forced by tune-sweep (library:NAME)


def _runs(path: str) -> list[Run]:
    runs = [r for r in load_runs(path) if r.points]
    if not runs:
        raise UsageError(f"{path} holds no measurements")
    if not any(p["algorithm"].startswith(FORCED) for r in runs for p in r.points):
        # a plain sweep measures the default only: it was scored as a tuning (0.0% regret)
        raise UsageError(f"{path} is not a tune-sweep (no library:NAME measurements): judge tune-sweep files")
    return runs


def _only(runs: list[Run], collectives: list[str] | None) -> list[Run]:
    """The jobs of these collectives (a tune-sweep job measures one)."""
    if collectives is None:
        return runs
    return [r for r in runs if set(r.config.get("collectives") or ()) & set(collectives)]


def _judged(truth: list[Run], runs: list[Run], dtype: str, min_gain: float) -> tuple[dict, dict]:
    found = regrets(truth, runs, dtype, min_gain)
    per = {}
    for coll in sorted({r.collective for r in found}):
        per[coll] = summary([r for r in found if r.collective == coll])
    return summary(found), per


def evaluate(
    exhaustive: str,
    economical: list[str],
    budgets: list[float],
    dtype: str = "float32",
    min_gain: float = MIN_GAIN,
    collectives: list[str] | None = None,
) -> list[Row]:
    truth = _only(_runs(exhaustive), collectives)
    if any(r.config.get("points") is not None for r in truth):
        raise UsageError(f"{exhaustive} was measured by tune-sweep --budget: judge against a sweep without it")
    if not observations(truth, dtype):
        raise UsageError(f"{exhaustive} holds no {dtype} tune-sweep measurements to judge against")
    version = library_line(truth[-1].attrs.get("mpi_library_version", ""))
    total = spent(truth, dtype)
    rows = [Row("exhaustive", 1.0, 1.0, 1.0, 1.0, None, *_judged(truth, truth, dtype, min_gain))]
    for path in economical:
        runs = _only(_runs(path), collectives)
        other = library_line(runs[-1].attrs.get("mpi_library_version", ""))
        if other != version:
            raise UsageError(f"{path} was measured with {other!r}, {exhaustive} with {version!r}: compare one library")
        if not any(r.config.get("points") is not None for r in runs):
            raise UsageError(
                f"{path} was measured by tune-sweep without --budget: an economical tuning is a budgeted one"
            )
        f = {k: v / total[k] if total[k] else math.nan for k, v in spent(runs, dtype).items()}
        judged = _judged(truth, runs, dtype, min_gain)
        rows.append(Row(path, None, f["points"], f["measurement_s"], f["wall_s"], None, *judged))
    for budget in budgets:
        state, runs = replay(truth, budget, min_gain, dtype)
        rows.append(
            Row(
                f"replay at {budget:g}",
                budget,
                len(state.seen) / total["points"],
                state.spent_s / total["measurement_s"],
                math.nan,
                state.rounds,
                *_judged(truth, runs, dtype, min_gain),
            )
        )
    return rows
