"""The ranks of tune-sweep's one launch (started under mpiexec or srun by tuning.measure.onelaunch, as
`fabricprobe tune-sweep-job SPEC.json -o RESULTS.h5`, so that the command line's handling of bad input,
interrupts and storage errors is the sweep's).

SPEC holds the sweeps to run, one per collective (each a SweepConfig whose library_variants are the
algorithms switched at run time), the switch (tuning.plan.switch.SwitchPlan.as_job), the point keys
already measured by an earlier attempt (skipped), and the state file the switch notes its variant in;
with a "budget", the sweeps are tune-sweep --budget's rounds (tuning.economy.rounds). Rank 0 prints
one line per point ("[k/N] ..."), which tune-sweep shows as they come.
Each sweep appends one run to RESULTS, as a launch per variant did; the exit status is the worst of
the sweeps' (1 when a point failed, e.g. an algorithm the library refuses on some communicator)."""

from __future__ import annotations

import json

from fabricprobe.engine.config import SweepConfig
from fabricprobe.engine.session import run_sweep
from fabricprobe.errors import UsageError
from fabricprobe.mpienv.init import init_mpi
from fabricprobe.tuning.measure.mpit_switch import MpitSwitch


def read_spec(path: str) -> dict:
    try:
        with open(path) as f:
            spec = json.load(f)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the one-launch job {path}: {exc}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("parts"), list) or "switch" not in spec:
        raise UsageError(f"{path} is not a tune-sweep job (parts and switch)")
    return spec


def run(spec: dict, output: str) -> int:
    configs = [SweepConfig.from_dict(part).check() for part in spec["parts"]]
    MPI = init_mpi(configs[0].thread_level if configs else "single")
    switch = MpitSwitch(MPI, spec["switch"], spec.get("state"))
    skip = frozenset(spec.get("skip", ()))
    worst = 0
    try:
        if spec.get("budget") is not None:
            from fabricprobe.tuning.economy.rounds import run_rounds

            return run_rounds(spec, output, MPI, switch)
        for config in configs:
            outcome = run_sweep(config, output, progress="plain", switch=switch, skip=skip)
            worst = max(worst, outcome.exit_code)
    finally:
        switch.close()
    return worst
