"""`fabricprobe tune-sweep` without a budget: the library's default and every algorithm it has, forced
one at a time, with fabricprobe's own beside the default, on every communicator size. Two ways to
force (--switch): `mpit`, switching at run time inside one launch (tuning.measure.onelaunch), where
the library allows it (Library.switches_at_run_time: Open MPI, MPICH); `launch`, one job per
(collective, variant) with the variant's environment read at MPI_Init (tuning.measure.launch)."""

from __future__ import annotations

import json

from fabricprobe.engine.config import SweepConfig
from fabricprobe.errors import LauncherError, UsageError
from fabricprobe.mpienv.launcher import launcher
from fabricprobe.tuning.measure.launch import completed_launches, job_config, library_in_use, run_job
from fabricprobe.tuning.measure.onelaunch import TuneSweep, finish, measure_one_launch, prior_runs, runs_of
from fabricprobe.tuning.plan.libraries import for_vendor
from fabricprobe.tuning.plan.library import Library, Variant
from fabricprobe.tuning.plan.variants import variant_label, variants_for
from fabricprobe.tuning.verify.fingerprint import LAUNCHER_ENDED, probe

SWITCHES = ("mpit", "launch")


def tune_sweep(
    n: int,
    output: str,
    collectives: list[str],
    comm_sizes: list[int],
    template: SweepConfig,
    switch: str | None = None,
    resume: bool = False,
    mpiexec: str | None = None,
    mpiexec_args: str = "",
    only: list[str] | None = None,
    timeout: float = 900,
    own: dict[str, list[str]] | None = None,
    progress=None,
) -> TuneSweep:
    """Measure; `switch` None: mpit where the library allows it, else launch. Everything that can be
    refused is refused before the first launch: the output (or the file a --resume continues), the
    launcher, --only, --switch mpit for a library that cannot."""
    vendor = library_in_use()
    prior = prior_runs(output, resume, vendor, n)
    library = for_vendor(vendor)
    if switch is None:
        switch = "mpit" if library.switches_at_run_time else "launch"
    if switch not in SWITCHES:
        raise UsageError(f"invalid --switch {switch!r}: choose from {', '.join(SWITCHES)}")
    if switch == "mpit" and not library.switches_at_run_time:
        raise UsageError(f"--switch mpit: {vendor} takes its algorithm settings at start-up only; use --switch launch")
    base = launcher(mpiexec, mpiexec_args, n, vendor)
    hierarchy_where_served(library, base[:-2], n, progress)
    variants = variants_for(library, collectives, only)
    if switch == "mpit":
        return measure_one_launch(
            library, base, output, variants, collectives, comm_sizes, template, prior, timeout, own, progress
        )
    return measure_by_launch(library, base, output, variants, comm_sizes, template, prior, timeout, own, progress)


def hierarchy_where_served(library: Library, base: list[str], n: int, progress=None) -> None:
    """Measure the library's hierarchy variants (Open MPI's han: tuning.plan.openmpi_han; MPICH's CH4
    compositions: tuning.plan.mpich_composition) when the hierarchy serves the job: asked of the
    library in a job of n ranks on the launcher's hosts (the probe's `path`, about 3 s), since only
    there does it change anything (one node: han never runs, MPICH has no node leaders; one rank per
    node: han hands every call back to tuned, every composition is the same messages). Its
    communicators of fewer ranks are asked again in the job."""
    component = getattr(library, "hierarchy_component", "")
    if not component or not library.hierarchy_variants("allreduce"):
        return  # no hierarchy settings in this library
    found = probe(base, n, "allreduce", 0, "path", {})
    if found.startswith(LAUNCHER_ENDED):  # killed, not an answer: tune-sweep fails with the launcher's status
        raise LauncherError(f"asking which component serves the job: {found[len('error: ') :]}")
    try:
        path = json.loads(found)
    except ValueError:
        if progress is not None:
            progress(f"could not ask which component serves the job ({found[:120]}): {component} not tuned")
        return
    library.hierarchy = path.get("component") == component
    if library.hierarchy and progress is not None:
        progress(f"{path['text']} serves {path['shape']}: {component}'s own settings are measured too")


def measure_by_launch(
    library: Library,
    base: list[str],
    output: str,
    variants: list[Variant],
    comm_sizes: list[int],
    template: SweepConfig,
    prior: list,
    timeout: float = 900,
    own: dict[str, list[str]] | None = None,
    progress=None,
) -> TuneSweep:
    """One job per (collective, variant), each measuring `template` on every communicator size; `own`
    names fabricprobe's algorithms per collective, measured in the default's job. --resume (`prior`)
    skips the jobs that ran to their end."""
    own = own or {}
    done = completed_launches(prior)
    result = TuneSweep(library.vendor, "launch")
    todo = [v for v in variants if (v.collective, variant_label(v.name) if v.name != "default" else "") not in done]
    before = {r.id for r in runs_of(output)}
    for i, variant in enumerate(todo):
        if progress is not None:
            progress(f"[{i + 1}/{len(todo)}] {variant.collective}: {variant.name}")
        mine = own.get(variant.collective, [])
        result.launches += run_job(
            base,
            output,
            variant,
            lambda sizes, v=variant, m=mine: job_config(template, v.collective, sizes, v, m),
            comm_sizes,
            timeout,
        )
    result.runs = [r.id for r in runs_of(output) if r.id not in before]
    finish(output, result)
    return result
