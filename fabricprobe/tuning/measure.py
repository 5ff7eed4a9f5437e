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
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from fabricprobe.collectives.algorithm import LIBRARY
from fabricprobe.engine.config import SweepConfig
from fabricprobe.errors import UsageError
from fabricprobe.mpienv import slurm_env
from fabricprobe.mpienv.launcher import failure_message, find_launcher, run_launch
from fabricprobe.mpienv.library import library_of_this_python
from fabricprobe.stats import median_ci_exact
from fabricprobe.store import check_output_path
from fabricprobe.tuning.libraries import DEFAULT, Library, Variant, for_vendor
from fabricprobe.tuning.own import SPARSE

# Before/after re-measurements: a first batch of 100 iterations and 0.5 s per point, as tune-sweep's defaults.
BEFORE_AFTER = SweepConfig(iterations_small=100, iterations_large=100, max_time=0.5)


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


def launcher(mpiexec: str | None, extra: str, n: int, vendor: str) -> list[str]:
    """The argv prefix that starts an n-rank job: `--mpiexec` when given; inside a Slurm allocation
    (salloc, sbatch) srun, each job a step of the allocation, with the PMI the library speaks
    (slurm.mpi_flag); else the library's own mpiexec (beside this Python, or on PATH by its vendor's
    name: launcher.find_launcher)."""
    args = shlex.split(extra)
    if mpiexec is None and slurm_env.in_allocation():
        path = shutil.which("srun")
        if path is None:
            raise UsageError("inside a Slurm allocation but srun is not on PATH; give --mpiexec")
        return [path, *slurm_env.srun_flags(vendor, args), *args, "-n", str(n)]
    path = mpiexec or find_launcher(vendor)
    if path is None:
        raise UsageError(
            f"no {vendor} mpiexec beside this Python or on PATH (mpiexec, or the vendor's mpiexec.NAME): give --mpiexec"
        )
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise UsageError(f"--mpiexec {path}: no such executable")
    if Path(path).name == "srun":
        return [path, *slurm_env.srun_flags(vendor, args), *args, "-n", str(n)]
    if vendor == "Open MPI" and "--oversubscribe" not in args and n > (os.cpu_count() or 1):
        args.append("--oversubscribe")
    return [path, *args, "-n", str(n)]


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
    """Launch one sweep job with the variant's environment (the library reads it at MPI_Init). The
    job's configuration file is written beside the results file, not in /tmp: under Slurm every
    node may have a /tmp of its own (the lab's do), and the ranks on other nodes must read it.
    `base` ends with "-n N" (launcher()); under srun the step fills the allocation's first nodes."""
    folder = os.path.dirname(os.path.abspath(output))
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix=".fabricprobe-job-", dir=folder, delete=False) as f:
        f.write(config.to_json())
    argv = [*base[:-2], *slurm_env.step_nodes(base[:-2], int(base[-1])), *base[-2:]] + [
        sys.executable,
        "-m",
        "fabricprobe",
        "sweep",
        "--config",
        f.name,
        "-o",
        output,
        "--progress",
        "none",
        "--quiet",
    ]
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", **variant.env}
    comm_sizes = tuple(config.comm_sizes or ())
    try:
        out = run_launch(argv, env=env, timeout=timeout)
        return Launch(config.collectives[0], variant, out.returncode, job_error(out.stderr), comm_sizes)
    except subprocess.TimeoutExpired:
        return Launch(config.collectives[0], variant, 124, f"no result within {timeout:g} s", comm_sizes)
    finally:
        os.unlink(f.name)


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


def variant_label(name: str) -> str:
    """The label a forced algorithm's points carry (library:LABEL): the library's name, "-" as "_"."""
    return name.replace("-", "_")


def variants_for(library: Library, collectives: list[str], only: list[str] | None) -> list[Variant]:
    if only is not None:
        known = {v.name for coll in collectives if coll != SPARSE for v in library.variants(coll)}
        unknown = [name for name in only if name not in known]
        if unknown:
            raise UsageError(
                f"--only {','.join(unknown)}: not an algorithm of {library.vendor} for "
                f"{', '.join(collectives)} (it has: {', '.join(sorted(known))})"
            )
    out = []
    for coll in collectives:
        if coll == SPARSE:  # no library algorithm: one job of fabricprobe's own
            out.append(library.default(coll))
            continue
        for v in library.variants(coll):
            if only is None or v.name in only or v.name == "default":
                out.append(v)
    return out


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


def before_after(
    base: list[str], output: str, table, tuned_env: dict[str, str], reps: int = 6, timeout: float = 900
) -> list[Launch]:
    """Re-measure the tuned collectives with the library's default and with the tuning files,
    alternately `reps` times (which runs first alternates too), labelled library:baseline and library:tuned."""
    launches = []
    for coll, sections in table.rules.items():
        if all(r.winner == DEFAULT for rs in sections.values() for r in rs):
            continue
        sizes = sorted({d.size for rs in sections.values() for r in rs for d in r.decisions})
        template = replace(BEFORE_AFTER, sizes=sizes)
        for rep in range(reps):
            order = (("baseline", {}), ("tuned", tuned_env))
            for label, env in order if rep % 2 == 0 else order[::-1]:  # neither always runs first
                variant = Variant(coll, label, "", env)
                launches.append(
                    run_variant(base, output, variant, job_config(template, coll, sorted(sections), variant), timeout)
                )
    return launches


def speedups(runs, table) -> list[dict]:
    """Per tuned point, default against tuned over the alternating repetitions of `runs` (the
    before/after runs of one `tune --verify`): each repetition's ratio (default time / tuned time,
    above 1: the files are faster), their median, and what the repetitions allow one to claim. With at
    least 6 repetitions the median ratio gets a distribution-free 95% interval and a verdict only when
    the interval excludes 1; with fewer, a verdict only when every repetition agrees. Disagreeing
    repetitions are reported as such, never as one ratio."""
    times: dict[tuple, dict[str, list[float]]] = {}
    for run in runs:  # in file order: baseline, tuned, baseline, tuned, ...
        for p in run.points:
            if p["algorithm"] in ("library:baseline", "library:tuned") and p["status"] == "ok":
                key = (p["collective"], p["nranks"], p["bytes"])
                times.setdefault(key, {}).setdefault(p["algorithm"].split(":")[1], []).append(p["median_s"])
    out = []
    for (coll, n, size), t in sorted(times.items()):
        pairs = list(zip(t.get("baseline", []), t.get("tuned", [])))
        ratios = np.sort([b / u for b, u in pairs if u > 0])
        if ratios.size == 0:
            continue
        ci = median_ci_exact(ratios)
        low, high = ci if ci is not None else (float(ratios[0]), float(ratios[-1]))
        if low > 1:
            verdict = "faster" if ci is not None else f"faster in all {ratios.size}"
        elif high < 1:
            verdict = "slower" if ci is not None else f"slower in all {ratios.size}"
        else:
            verdict = "no difference shown" if ci is not None else "repetitions disagree"
        out.append(
            dict(
                collective=coll,
                comm_size=n,
                size=size,
                reps=int(ratios.size),
                baseline_s=float(np.median([b for b, _ in pairs])),
                tuned_s=float(np.median([u for _, u in pairs])),
                ratios=[float(r) for r in ratios],
                speedup=float(np.median(ratios)),
                ci_low=None if ci is None else low,
                ci_high=None if ci is None else high,
                verdict=verdict,
                slower=high < 1,
            )
        )
    return out
