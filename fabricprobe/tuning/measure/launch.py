"""`fabricprobe tune-sweep`: measure the library's default and each of its algorithms, forced one at
a time, by launching one mpiexec job per (collective, algorithm) — MCA parameters and CVARs are read
at MPI_Init, so forcing needs a fresh launch, as open-mpi/ompi-collectives-tuning does. Every job is a
sweep whose configuration (a SweepConfig, handed over as a --config file) appends one run (its points
labelled library:NAME) to the same results file; sub-communicators (comm_sizes) give results for every
communicator size below the job's in one launch.

fabricprobe's own algorithms (tuning.own) need no forcing: they run in the default's job, beside the
library as launched, so the two are measured under the same conditions. The sparse allreduce has no
library algorithm: one job measures its candidates at every density.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, replace

from fabricprobe.collectives.algorithm import LIBRARY
from fabricprobe.engine.config import SweepConfig
from fabricprobe.engine.jobs import job_file, run_fabricprobe
from fabricprobe.mpienv.launcher import failure_message
from fabricprobe.mpienv.library import library_of_this_python
from fabricprobe.tuning.plan.library import DEFAULT, Variant
from fabricprobe.tuning.plan.own import SPARSE
from fabricprobe.tuning.plan.variants import variant_label


def library_in_use() -> str:
    """The vendor of the MPI library mpi4py loads, asked without initialising MPI."""
    return library_of_this_python().vendor


def default_comm_sizes(n: int) -> list[int]:
    """2, 4, 8, ... below n, and n itself."""
    sizes, k = [], 2
    while k < n:
        sizes.append(k)
        k *= 2
    return sorted(set(sizes + [n]))


@dataclass
class Launch:
    collective: str
    variant: Variant
    returncode: int
    stderr_tail: str
    comm_sizes: tuple[int, ...] = ()


def with_ranks(base: list[str], n: int) -> list[str]:
    """The same launcher line for n ranks (launcher() always ends with "-n N")."""
    return [*base[:-1], str(n)]


def job_config(
    template: SweepConfig, collective: str, comm_sizes: list[int], variant: Variant, own: list[str] | None = None
) -> SweepConfig:
    """The sweep one launched job runs: the template's measurement options on one collective, every
    communicator size, its points labelled library:NAME for a forced algorithm; the default's job
    also measures fabricprobe's own algorithms `own` (the sparse job measures those only)."""
    label = "" if variant.name == DEFAULT else variant_label(variant.name)
    algorithms = [LIBRARY] if label else [LIBRARY, *(own or [])]
    if collective == SPARSE:
        algorithms = list(own or [])
    return replace(
        template, collectives=[collective], algorithms=algorithms, comm_sizes=list(comm_sizes), library_variant=label
    ).check()


def job_error(stderr: str) -> str:
    """What a failed job said: fabricprobe's own error line when there is one (the launcher's banner
    that follows it says only that a rank exited), else the library's own message."""
    return failure_message(stderr, 3)


def run_variant(base: list[str], output: str, variant: Variant, config: SweepConfig, timeout: float) -> Launch:
    """Launch one sweep job with the variant's environment (the library reads it at MPI_Init)."""
    path = job_file(output, config.to_json())
    comm_sizes = tuple(config.comm_sizes or ())
    args = ["sweep", "--config", path, "-o", output, "--progress", "none", "--quiet"]
    try:
        out = run_fabricprobe(base, args, variant.env, timeout)
        return Launch(",".join(config.collectives), variant, out.returncode, job_error(out.stderr), comm_sizes)
    except subprocess.TimeoutExpired:
        return Launch(",".join(config.collectives), variant, 124, f"no result within {timeout:g} s", comm_sizes)
    finally:
        os.unlink(path)


def run_job(base: list[str], output: str, variant: Variant, config_for, comm_sizes: list[int], timeout: float):
    """One job on every communicator size (config_for(sizes) -> its SweepConfig). Some algorithms run on
    some communicator sizes only (Open MPI's two_proc: 2 ranks), and one failing size ends the job:
    when it fails on several sizes, each size is measured on its own instead. Returns the launches
    that stand (the failed whole job is replaced by the per-size ones)."""
    launch = run_variant(base, output, variant, config_for(list(comm_sizes)), timeout)
    if launch.returncode in (0, 124) or len(comm_sizes) <= 1:
        return [launch]
    # each size in a job of its own size: the forced algorithm applies to every communicator, and one
    # that exists for some sizes only (two_proc) fails fabricprobe's own COMM_WORLD collectives too
    return [run_variant(with_ranks(base, c), output, variant, config_for([c]), timeout) for c in comm_sizes]


def completed_launches(runs: list) -> set[tuple[str, str]]:
    """(collective, variant label; "" for the default's job) of the jobs that a launch of their own
    measured to their end (tune-sweep --resume does not measure them again)."""
    return {
        (r.config["collectives"][0], r.config.get("library_variant") or "")
        for r in runs
        if r.status == "complete"
        and len(r.config.get("collectives") or []) == 1
        and not r.config.get("library_variants")
    }
