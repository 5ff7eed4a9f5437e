"""`sweep --launches K`: the same sweep launched K times, each launch a run of its own in one results
file, its points in a random order drawn from a seed of its own.

Why: the median of one mpiexec launch differs from another launch's by more than its own confidence
interval (Hunold & Carpen-Amarie, TPDS 2016, on several machines; ReproMPI), because what a launch
gets once — its placement on cores, its buffers' pages, the network's routes, a daemon's phase — holds
for all its points. A single launch cannot say whether two libraries or algorithms differ; K launches
can, and `report` then shows the spread between launches next to the spread within one
(report/launches.py), and `compare` holds a difference against it.

This process is not a rank: it launches the K jobs (mpiexec, or srun steps inside an allocation,
mpienv.launcher) one after the other, each with the whole configuration in a file (engine/jobs.py),
so every launch measures exactly the same points. Each launch's run records the group's name, its
index and its seed (SweepConfig.launch_group, launch_index, seed): a run stays readable alone, and
the group is found again from the file."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from typing import Callable

from fabricprobe.engine.config import SEED_MAX, SweepConfig
from fabricprobe.engine.jobs import job_file, run_fabricprobe
from fabricprobe.errors import EXIT_OK, EXIT_USAGE, EXIT_WRONG, INTERRUPTED_STATUSES
from fabricprobe.mpienv.launcher import failure_message


@dataclass
class Launched:
    index: int
    seed: int
    returncode: int
    error: str = ""


@dataclass
class LaunchesOutcome:
    group: str
    launches: list[Launched]

    @property
    def exit_code(self) -> int:
        """Usage errors and interrupts first (they ended the series), then the worst launch's status."""
        codes = [x.returncode for x in self.launches]
        for code in (EXIT_USAGE, *INTERRUPTED_STATUSES):
            if code in codes:
                return code
        return max(codes, default=EXIT_OK)


def group_name() -> str:
    """A name no other group in a file has: the start time and 16 random bits."""
    return time.strftime("L%Y%m%dT%H%M%S", time.gmtime()) + f"-{secrets.randbits(16):04x}"


def seeds(first: int, count: int) -> list[int]:
    """The launches' seeds: `first` (drawn when -1) and the K-1 that follow it."""
    start = secrets.randbits(32) if first < 0 else first
    return [(start + k) % (SEED_MAX + 1) for k in range(count)]


def run_launches(
    config: SweepConfig,
    output: str,
    count: int,
    base: list[str],
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> LaunchesOutcome:
    """Launch the sweep `count` times on the ranks `base` starts (launcher(): "... -n N"), appending
    one run per launch to `output`. A launch whose points failed validation does not stop the series
    (its run says which); a usage error or an interrupt does."""
    group = group_name()
    done: list[Launched] = []
    for index, seed in enumerate(seeds(config.seed, count)):
        job = replace(config, seed=seed, launch_group=group, launch_index=index, launches=count).check()
        path = job_file(output, job.to_json())
        say(f"launch {index + 1} of {count} (group {group}, order {job.order}, seed {seed})")
        args = ["sweep", "--config", path, "-o", output, "--progress", "plain", "--quiet"]
        if job.early_buffers:  # applied at each rank's start, so on the command line as well as in the file
            args += ["--early-buffers", str(job.early_buffers)]
        try:
            out = run_fabricprobe(base, args, {}, timeout=None, on_line=lambda line: say(f"  {line.rstrip()}"))
            code = out.returncode
            error = failure_message(out.stderr, 3) if code not in (EXIT_OK, EXIT_WRONG) else ""
        except subprocess.TimeoutExpired:  # no timeout is given: each point has its own watchdog
            code, error = EXIT_WRONG, "timed out"
        finally:
            os.unlink(path)
        done.append(Launched(index, seed, code, error))
        if code in (EXIT_USAGE, *INTERRUPTED_STATUSES):
            break
    return LaunchesOutcome(group, done)
