"""`fabricprobe tune-sweep --budget F`: the tune-sweep that measures what tuning.economy.search asks for,
round by round, instead of the whole grid. Where the library switches its algorithms at run time
(--switch mpit, the default for Open MPI and MPICH), the rounds run inside one launch
(tuning.economy.rounds); otherwise each round is one launch per library algorithm that has points to
measure (the library reads a forced algorithm at MPI_Init), each launch a sweep restricted to its
points (SweepConfig.points). The rounds append to one results file that `fabricprobe tune` reads as it
reads an exhaustive one."""

from __future__ import annotations

import contextlib
from dataclasses import replace

from fabricprobe import interrupts
from fabricprobe.collectives.algorithm import LIBRARY
from fabricprobe.engine.config import SweepConfig
from fabricprobe.errors import EXIT_USAGE, UsageError
from fabricprobe.mpienv.launcher import launcher
from fabricprobe.store import check_output_path
from fabricprobe.tuning.choose.rules import MIN_GAIN
from fabricprobe.tuning.economy import search as economy
from fabricprobe.tuning.economy.replay import observations
from fabricprobe.tuning.economy.rounds import round_line, screening
from fabricprobe.tuning.economy.search import Grid, Key, Observation, State
from fabricprobe.tuning.measure import switch_state
from fabricprobe.tuning.measure.launch import job_config, library_in_use, run_job
from fabricprobe.tuning.measure.onelaunch import (
    Fallback,
    TuneSweep,
    finish,
    launch_job,
    part_config,
    runs_of,
)
from fabricprobe.tuning.plan.libraries import for_vendor
from fabricprobe.tuning.plan.library import DEFAULT, Variant
from fabricprobe.tuning.plan.switch import describe_variables, plan_switch, variables_of
from fabricprobe.tuning.plan.variants import variant_label as label_of
from fabricprobe.tuning.plan.variants import variants_for


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
    switch: str | None = None,
    mpiexec: str | None = None,
    mpiexec_args: str = "",
    only: list[str] | None = None,
    timeout: float = 900,
    own: dict[str, list[str]] | None = None,
    progress=None,
) -> TuneSweep:
    """Measure round after round until tuning.economy has nothing worth measuring or the budget
    (a fraction of the exhaustive measurement time) is spent; progress(text) after each round. An
    interrupt marks the runs it added as a search cut short (tune_sweep.interrupted: `tune` says so;
    every round's run stands as measured), then goes on."""
    check_output_path(output)
    before = {r.id for r in runs_of(output)}
    try:
        return _measure_budgeted(
            n, output, collectives, comm_sizes, template, budget, min_gain, switch, mpiexec, mpiexec_args, only,
            timeout, own, progress,
        )  # fmt: skip
    except KeyboardInterrupt as exc:
        cut = TuneSweep(library_in_use(), switch or "", interrupted=interrupts.name(interrupts.signum_of(exc)))
        with contextlib.suppress(Exception):  # the interrupt stands whatever this meets
            cut.runs = [r.id for r in runs_of(output) if r.id not in before]
            finish(output, cut)
        raise


def _measure_budgeted(
    n, output, collectives, comm_sizes, template, budget, min_gain, switch, mpiexec, mpiexec_args, only, timeout, own,
    progress,
) -> TuneSweep:  # fmt: skip
    own = own or {}
    check_output_path(output)
    vendor = library_in_use()
    library = for_vendor(vendor)
    base = launcher(mpiexec, mpiexec_args, n, vendor)
    variants = variants_for(library, collectives, only)
    if (switch or ("mpit" if library.switches_at_run_time else "launch")) == "mpit":
        plan = plan_switch(library, variants, describe_variables(variables_of(library, variants)))
        if not plan.by_launch:
            return _in_one_launch(
                library,
                base,
                output,
                variants,
                collectives,
                comm_sizes,
                template,
                plan,
                own,
                budget,
                min_gain,
                timeout,
                progress,
            )
        if progress is not None:
            v, why = plan.by_launch[0]
            progress(
                f"--budget in one launch needs every algorithm switched at run time, and {v.collective}/"
                f"{v.name} cannot ({why}): each round launches per algorithm instead"
            )
    result = TuneSweep(vendor, "launch")
    before = {r.id for r in runs_of(output)}
    _by_launch(
        base, output, variants, collectives, comm_sizes, template, budget, min_gain, timeout, own, progress, result
    )
    result.runs = [r.id for r in runs_of(output) if r.id not in before]
    finish(output, result)
    return result


def _in_one_launch(
    library, base, output, variants, collectives, comm_sizes, template, plan, own, budget, min_gain, timeout, progress
) -> TuneSweep:
    """The rounds inside one launch. A variant the job hangs or crashes in is left out of the search
    (said so in the outcome's fallbacks, not measured) and the search starts again without it."""
    result = TuneSweep(library.vendor, plan.method)
    known = [r.id for r in runs_of(output)]
    state = switch_state.state_path(output)
    switched_labels = {(v.collective, _label(v)) for v in variants if v.name == DEFAULT}
    for _ in range(len(variants) + 1):
        switched = switched_labels | {(c, f"{LIBRARY}:{lab}") for c in collectives for lab in plan.switched(c)}
        grid = budget_grid({key: None for key in switched}, own, collectives, comm_sizes, template)
        parts = [part_config(template, c, comm_sizes, own.get(c, []), plan.switched(c)) for c in collectives]
        spec = {
            "parts": [p.to_dict() for p in parts],
            "switch": plan.as_job(),
            "state": state,
            "template": template.to_dict(),
            "grid": {
                "candidates": grid.candidates,
                "comm_sizes": grid.comm_sizes,
                "sizes": grid.sizes,
                "max_time": grid.max_time,
            },
            "budget": budget,
            "min_gain": min_gain,
            "known": known,
        }
        measuring = sum(1 + len(plan.switched(c)) for c in collectives)
        launch = launch_job(base, output, spec, plan.launch_env, timeout * measuring, progress)
        result.launches.append(launch)
        if launch.returncode in (0, 1):
            break
        if launch.returncode == EXIT_USAGE:
            raise UsageError(launch.stderr_tail)
        culprit = switch_state.culprit(state)
        if culprit is None or culprit[1] not in plan.switched(culprit[0]):
            raise UsageError(
                f"the one launch failed outside a switched algorithm (exit {launch.returncode}): "
                f"{launch.stderr_tail}; measure with --switch launch"
            )
        coll, label = culprit[0], culprit[1]
        del plan.writes[coll][label]
        why = f"left out of the search: the one launch did not finish in it ({launch.stderr_tail})"
        result.fallbacks.append(Fallback(coll, label, [], why))
        if progress is not None:
            progress(f"{coll}/{label} {why}; searching again without it")
    switch_state.discard(state)
    result.runs = [r.id for r in runs_of(output) if r.id not in set(known)]
    finish(output, result)
    return result


def _by_launch(
    base,
    output,
    variants,
    collectives,
    comm_sizes,
    template,
    budget,
    min_gain,
    timeout,
    own,
    progress,
    result: TuneSweep,
) -> State:
    """The rounds, each one launch per library algorithm with points to measure."""
    jobs = launched_jobs(variants)
    grid = budget_grid(jobs, own, collectives, comm_sizes, template)
    launches = result.launches

    def job_of(key: Key) -> tuple[str, str]:
        coll, label, _, _ = key
        return (coll, label) if label.startswith(LIBRARY) else (coll, LIBRARY)  # fabricprobe's: the default's job

    screen = screening(template)
    known = {r.id for r in runs_of(output)}

    def measure(keys: list[Key], screened: bool) -> dict[Key, Observation]:
        settings = screen if screened else template
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
        new = [r for r in runs_of(output) if r.id not in known]
        known.update(r.id for r in new)
        found = observations(new, template.dtypes[0])
        return {k: replace(found[k][0], screening=screened) for k in keys if k in found}

    state = State(grid)
    while True:
        wanted, screened = economy.next_round(state, budget, min_gain)
        if not wanted:
            break
        state.add(wanted, measure(wanted, screened))
        if progress is not None:
            jobs_used = len({job_of(k) for k in wanted})
            progress(f"{round_line(state, len(wanted), screened, budget)} in {jobs_used} jobs")
    return state
