"""Kill a real sweep (mpiexec, every rank, SIGKILL: no chance to clean up) at chosen moments around its
writes, over and over on one results file, and check after every kill what docs/schema.md promises:
the file reads (no reader reports it damaged), every point the sweep reported complete is in it, and
no point is stored twice. The sweep is resumed after each kill, or started again once a run completes.

Used by tests/test_crash.py (a few dozen kills) and benchmarks/kill_study.py (hundreds).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from mpirun import kill_session, start_sweep, wait_for_points

from fabricprobe.errors import UsageError
from fabricprobe.store import journal, load_runs

# Many small points: most of a sweep's time is its writes, so kills land on and around them.
SWEEP = ["--collectives", "allreduce,bcast", "--sizes", "8,64,512,4K,32K", "--iters", "20", "--max-time", "0.01"]
SWEEP += ["--warmup", "2", "--progress", "plain", "--quiet"]
POINTS = 2 + 2 * 5  # two harness floors + 2 collectives × 5 sizes


@dataclass
class Tally:
    kills: int = 0
    completed_runs: int = 0
    corrupted: list[str] = field(default_factory=list)  # a reader's error after a kill
    lost: list[str] = field(default_factory=list)  # a point reported complete but not stored
    duplicated: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.corrupted or self.lost or self.duplicated)


def kill_cycle(results: Path, kills: int, seed: int = 1) -> Tally:
    """`kills` kills of sweeps writing `results`: each after a random number of reported points
    (0 to all of them, so some land on the run's start and its final fold) plus 0–20 ms; one choice
    in (remaining + 2) lets the sweep finish instead."""
    rng = random.Random(seed)
    tally = Tally()
    durable = 0  # points of the current run known complete (reported by an earlier attempt)
    resume = False
    while tally.kills < kills:
        proc = start_sweep(2, (["--resume", str(results)] if resume else ["-o", str(results)]) + SWEEP)
        after = rng.randint(0, POINTS - durable + 1)  # one past the end: let it finish
        reported = wait_for_points(proc, after)
        time.sleep(rng.uniform(0, 0.02))
        finished = proc.poll() is not None
        kill_session(proc.pid)  # the launcher and every rank, at once
        proc.wait()
        tally.kills += not finished
        if not results.exists() and not Path(journal.journal_path(str(results))).exists():
            continue  # killed before anything was written: nothing to check
        try:
            run = load_runs(str(results))[-1]
        except (UsageError, IndexError) as exc:
            tally.corrupted.append(f"kill {tally.kills}: {exc}")
            results.unlink(missing_ok=True)  # start again on a fresh file
            durable, resume = 0, False
            continue
        keys = [p["key"] for p in run.points]
        if len(keys) != len(set(keys)):
            tally.duplicated.append(f"kill {tally.kills}: run {run.id}")
        if len(keys) < durable + reported:
            tally.lost.append(f"kill {tally.kills}: {durable + reported} reported, {len(keys)} stored")
        if run.status == "complete":
            tally.completed_runs += 1
            durable, resume = 0, False
        else:
            durable, resume = len(keys), True
    return tally
