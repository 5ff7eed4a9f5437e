"""tune-sweep --budget inside tune-sweep's one launch: the rounds of tuning.economy.search run in the job
itself. Rank 0 decides each round from what the file holds (the economy's State lives there only) and
tells every rank which points to measure; every rank then measures them, one sweep per collective
restricted to those points (SweepConfig.points), with the library's algorithms switched at run time.
A round costs no launch: a launch per algorithm per round spent 65-99% of the live budgeted runs' wall
time on start-up (docs/tuning.md), so the budget saved measurement time but not wall time.

The job's spec (tuning.economy.budgeted) adds to the one launch's: "template" (the full measurement's
settings), "grid" (candidates, communicator sizes, sizes, max time), "budget", "min_gain" and "known"
(the ids of the runs the file already held)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fabricprobe.console import make_console
from fabricprobe.engine.config import SweepConfig
from fabricprobe.engine.session import run_sweep
from fabricprobe.store import load_runs
from fabricprobe.tuning.economy import search as economy
from fabricprobe.tuning.economy.replay import observations
from fabricprobe.tuning.economy.search import Grid, State


def screening(template: SweepConfig) -> SweepConfig:
    """A screening measurement's settings: SCREEN_ITERS timed calls after search.screening_warmup's
    untimed ones (the sizes below the template's large threshold get the small sizes' warm-up), no
    repetition."""
    return replace(
        template,
        iterations_small=economy.SCREEN_ITERS,
        iterations_large=economy.SCREEN_ITERS,
        warmup_small=economy.screening_warmup(0),
        warmup_large=economy.screening_warmup(economy.SCREEN_SMALL_BYTES + 1),
        ci_target=0.0,  # exactly SCREEN_ITERS timed calls
    )


def round_line(state: State, points: int, screened: bool, budget: float) -> str:
    """What a round did, as tune-sweep prints it."""
    estimate = economy.exhaustive_estimate(state)
    return (
        f"round {state.rounds}: {points} points {'screened' if screened else 'measured'}; "
        f"{state.spent_s:.1f} s measured of an estimated {estimate:.1f} s exhaustive "
        f"({state.spent_s / estimate:.0%}, budget {budget:.0%})"
    )


def run_rounds(spec: dict, output: str, MPI: Any, switch: Any) -> int:
    """Every rank: measure round after round what rank 0's search asks for; the worst exit status."""
    comm = MPI.COMM_WORLD
    root = comm.rank == 0
    template = SweepConfig.from_dict(spec["template"]).check()
    parts = {p["collectives"][0]: SweepConfig.from_dict(p).check() for p in spec["parts"]}
    g = spec["grid"]
    state = State(Grid(g["candidates"], g["comm_sizes"], g["sizes"], g["max_time"])) if root else None
    known = set(spec.get("known", ()))  # the runs the file held before this job
    console = make_console(stderr=True)
    worst = 0
    while True:
        wanted, screened = economy.next_round(state, spec["budget"], spec["min_gain"]) if root else ([], False)
        wanted, screened = comm.bcast((wanted, screened), root=0)
        if not wanted:
            return worst
        settings = screening(template) if screened else template
        for coll in sorted({k[0] for k in wanted}):
            keys = [k for k in wanted if k[0] == coll]
            config = replace(
                parts[coll],
                sizes=sorted({k[3] for k in keys}),
                iterations_small=settings.iterations_small,
                iterations_large=settings.iterations_large,
                warmup_small=settings.warmup_small,
                warmup_large=settings.warmup_large,
                ci_target=settings.ci_target,
                points=[[label, n, size] for _, label, n, size in keys],
            ).check()
            worst = max(worst, run_sweep(config, output, progress="none", switch=switch).exit_code)
        if root:
            new = [r for r in load_runs(output) if r.id not in known]
            known.update(r.id for r in new)
            found = observations(new, template.dtypes[0])
            state.add(wanted, {k: replace(found[k][0], screening=screened) for k in wanted if k in found})
            console.print(round_line(state, len(wanted), screened, spec["budget"]), markup=False, highlight=False)
