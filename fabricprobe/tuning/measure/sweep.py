"""`fabricprobe tune-sweep` without a budget: every variant of every collective on every
communicator size (tuning.measure.launch: one job per variant)."""

from __future__ import annotations

from fabricprobe.engine.config import SweepConfig
from fabricprobe.store import check_output_path
from fabricprobe.tuning.measure.launch import Launch, job_config, launcher, library_in_use, run_job
from fabricprobe.tuning.plan.libraries import for_vendor
from fabricprobe.tuning.plan.variants import variants_for


def measure(
    n: int,
    output: str,
    collectives: list[str],
    comm_sizes: list[int],
    template: SweepConfig,
    mpiexec: str | None = None,
    mpiexec_args: str = "",
    only: list[str] | None = None,
    timeout: float = 900,
    progress=None,
    own: dict[str, list[str]] | None = None,
) -> tuple[str, list[Launch]]:
    """tune-sweep: one job per (collective, variant), each measuring `template` on every communicator
    size; `own` names fabricprobe's algorithms per collective, measured in the default's job.
    Everything that can be refused is refused before the first job: the output, the launcher, --only."""
    own = own or {}
    check_output_path(output)
    vendor = library_in_use()
    library = for_vendor(vendor)
    base = launcher(mpiexec, mpiexec_args, n, vendor)
    todo = variants_for(library, collectives, only)
    launches = []
    for i, variant in enumerate(todo):
        if progress is not None:
            progress(i, len(todo), variant)
        mine = own.get(variant.collective, [])
        launches += run_job(
            base,
            output,
            variant,
            lambda sizes, v=variant, m=mine: job_config(template, v.collective, sizes, v, m),
            comm_sizes,
            timeout,
        )
    if progress is not None:
        progress(len(todo), len(todo), None)
    return vendor, launches
