"""A sweep killed at any moment keeps every completed point; --resume finishes it."""

from __future__ import annotations

import pytest
from mpirun import kill_session, run_mpi, start_sweep, wait_for_points

from fabricprobe.store import load_runs

pytestmark = pytest.mark.mpi

ARGS = [
    "--collectives",
    "allreduce,bcast,allgather",
    "--sizes",
    "8,1K,8K,64K,256K,1M",
    "--iters",
    "40",
    "--warmup",
    "2",
    "--max-time",
    "0.3",
    "--progress",
    "plain",
    "--quiet",
]


def _kill_after(results, points: int, n: int = 2) -> None:
    proc = start_sweep(n, ["-o", str(results), *ARGS])
    seen = wait_for_points(proc, points)
    kill_session(proc.pid)  # the launcher and every rank (Open MPI puts ranks in process groups of their own)
    proc.wait()
    assert seen >= points, "sweep ended before it could be killed: " + "".join(proc.seen)[-2000:]


def test_kill_then_resume(results):
    _kill_after(results, points=7)
    run = load_runs(str(results))[-1]  # opens cleanly
    assert run.status == "running"
    before = {p["key"]: p for p in run.points}
    assert len(before) >= 7
    for p in before.values():
        assert run.samples(p["index"]).shape[0] == p["iterations"]

    out = run_mpi(2, ["sweep", "--resume", str(results), "--progress", "plain", "--quiet"])
    assert out.returncode == 0, out.stderr
    assert "resuming run 0001" in out.stderr
    run = load_runs(str(results))[-1]
    assert run.status == "complete" and len(run.attrs["resumed_at"]) == 1
    keys = [p["key"] for p in run.points]
    assert len(keys) == len(set(keys)) == 2 + 3 * 6  # two harness floors + 3 collectives × 6 sizes
    assert sorted(p["index"] for p in run.points) == list(range(len(keys)))
    for key, old in before.items():  # completed points were not redone
        new = next(p for p in run.points if p["key"] == key)
        assert new["median_s"] == old["median_s"] and new["started_unix"] == old["started_unix"]


def test_resume_refusals(results):
    out = run_mpi(
        2, ["sweep", "-o", str(results), "--collectives", "barrier", "--iters", "10", "--progress", "none", "--quiet"]
    )
    assert out.returncode == 0
    out = run_mpi(2, ["sweep", "--resume", str(results)])
    assert out.returncode == 2 and "complete; nothing to resume" in out.stderr


def test_resume_needs_the_same_rank_count(results):
    _kill_after(results, points=4)
    out = run_mpi(1, ["sweep", "--resume", str(results)])
    assert out.returncode == 2 and "mpiexec -n 2" in out.stderr
