"""`fabricprobe tune-sweep --budget F`: the tune-sweep that measures what tuning.economy asks for,
round by round, instead of the whole grid. Each round is one launch per library algorithm that has
points to measure (the library reads a forced algorithm at MPI_Init), each launch a sweep restricted
to its points (SweepConfig.points); the rounds append to one results file that `fabricprobe tune`
reads as it reads an exhaustive one."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from fabricprobe.collectives.algorithm import LIBRARY
from fabricprobe.engine.config import SweepConfig
from fabricprobe.store import check_output_path, load_runs
from fabricprobe.tuning.choose.rules import MIN_GAIN
from fabricprobe.tuning.economy import search as economy
from fabricprobe.tuning.economy.replay import observations
from fabricprobe.tuning.economy.search import Grid, Key, Observation, State
from fabricprobe.tuning.measure.launch import Launch, job_config, launcher, library_in_use, run_job
from fabricprobe.tuning.plan.libraries import for_vendor
from fabricprobe.tuning.plan.library import DEFAULT, Variant
from fabricprobe.tuning.plan.variants import variant_label as label_of
from fabricprobe.tuning.plan.variants import variants_for


@dataclass
class Round:
    number: int
    points: int
    jobs: int
    spent_s: float  # measurement time so far
    estimate_s: float  # the exhaustive sweep's measurement time as estimated after this round
    screening: bool


def _label(variant: Variant) -> str:
    return LIBRARY if variant.name == DEFAULT else f"{LIBRARY}:{label_of(variant.name)}"


def launched_jobs(variants: list[Variant]) -> dict[tuple[str, str], Variant]:
    """(collective, point label) -> the variant whose launch measures it: the labels repeat across
    collectives (every collective has a default; ring is an allreduce and an allgather)."""
    return {(v.collective, _label(v)): v for v in variants}


def budget_grid(
    jobs: dict[tuple[str, str], Variant],
    own: dict[str, list[str]],
    collectives: list[str],
    comm_sizes: list[int],
    template: SweepConfig,
) -> Grid:
    """The exhaustive grid: per collective its library labels and fabricprobe's own algorithms."""
    return Grid(
        {coll: sorted([lab for c, lab in jobs if c == coll] + own.get(coll, [])) for coll in collectives},
        list(comm_sizes),
        list(template.sizes),
        template.max_time,
    )


def measure_budgeted(
    n: int,
    output: str,
    collectives: list[str],
    comm_sizes: list[int],
    template: SweepConfig,
    budget: float,
    min_gain: float = MIN_GAIN,
    mpiexec: str | None = None,
    mpiexec_args: str = "",
    only: list[str] | None = None,
    timeout: float = 900,
    own: dict[str, list[str]] | None = None,
    progress=None,
) -> tuple[str, list[Launch], State]:
    """Measure round after round until tuning.economy has nothing worth measuring or the budget
    (a fraction of the exhaustive measurement time) is spent; progress(Round) after each."""
    own = own or {}
    check_output_path(output)
    vendor = library_in_use()
    base = launcher(mpiexec, mpiexec_args, n, vendor)
    jobs = launched_jobs(variants_for(for_vendor(vendor), collectives, only))
    grid = budget_grid(jobs, own, collectives, comm_sizes, template)
    launches: list[Launch] = []

    def job_of(key: Key) -> tuple[str, str]:
        coll, label, _, _ = key
        return (coll, label) if label.startswith(LIBRARY) else (coll, LIBRARY)  # fabricprobe's: the default's job

    screen = replace(
        template,
        iterations_small=economy.SCREEN_ITERS,
        iterations_large=economy.SCREEN_ITERS,
        warmup_small=economy.SCREEN_WARMUP,
        warmup_large=economy.SCREEN_WARMUP,
        ci_target=0.0,  # exactly SCREEN_ITERS timed calls
    )

    known = {r.id for r in load_runs(output)} if os.path.exists(output) else set()

    def measure(keys: list[Key], screening: bool) -> dict[Key, Observation]:
        settings = screen if screening else template
        todo: dict[tuple[str, str], list[Key]] = {}
        for key in keys:
            todo.setdefault(job_of(key), []).append(key)
        for (coll, label), wanted in sorted(todo.items()):
            variant = jobs[(coll, label)]
            points = [[k[1] if not k[1].startswith(LIBRARY) else LIBRARY, k[2], k[3]] for k in wanted]
            sized = replace(settings, sizes=sorted({k[3] for k in wanted}))
            mine = sorted({k[1] for k in wanted if not k[1].startswith(LIBRARY)})

            def config_for(comms: list[int], coll=coll, variant=variant, points=points, sized=sized, mine=mine):
                only_these = [p for p in points if p[1] in comms]
                return replace(job_config(sized, coll, comms, variant, mine), points=only_these).check()

            launches.extend(run_job(base, output, variant, config_for, sorted({k[2] for k in wanted}), timeout))
        new = [r for r in load_runs(output) if r.id not in known] if os.path.exists(output) else []
        known.update(r.id for r in new)
        found = observations(new, template.dtypes[0])
        return {k: replace(found[k][0], screening=screening) for k in keys if k in found}

    state = State(grid)
    while True:
        wanted, screening = economy.next_round(state, budget, min_gain)
        if not wanted:
            break
        state.add(wanted, measure(wanted, screening))
        if progress is not None:
            count = len({job_of(k) for k in wanted})
            progress(
                Round(state.rounds, len(wanted), count, state.spent_s, economy.exhaustive_estimate(state), screening)
            )
    return vendor, launches, state
