"""Planted faults: validation must catch a wrong result; the watchdog must end a hung job."""

from __future__ import annotations

import pytest
from mpirun import error_lines, run_mpi

from fabricprobe.store import load_runs

pytestmark = pytest.mark.mpi

ARGS = ["--sizes", "8,4K", "--iters", "20", "--warmup", "2", "--max-time", "0.2", "--progress", "plain", "--quiet"]


@pytest.mark.parametrize("collective", ["allreduce", "alltoall", "bcast"])
def test_validation_catches_a_planted_wrong_result(collective, results):
    out = run_mpi(
        2,
        ["sweep", "-o", str(results), *ARGS, "--collectives", f"{collective},barrier"],
        env={"FABRICPROBE_FAULT_WRONG": f"{collective}:1"},
    )
    assert out.returncode == 1, out.stderr
    run = load_runs(str(results))[-1]
    bad = [p for p in run.points if p["collective"] == collective]
    assert bad and all(p["status"] == "wrong" and p["wrong"] >= 1 for p in bad)
    others = [p for p in run.points if p["collective"] == "barrier"]
    assert all(p["status"] == "ok" for p in others)
    assert run.attrs["environment"]["FABRICPROBE_FAULT_WRONG"] == f"{collective}:1"


def test_no_validate_reports_not_validated(results):
    out = run_mpi(
        2,
        ["sweep", "-o", str(results), *ARGS, "--collectives", "allreduce", "--no-validate"],
        env={"FABRICPROBE_FAULT_WRONG": "allreduce:1"},
    )
    assert out.returncode == 0, out.stderr
    points = [p for p in load_runs(str(results))[-1].points if p["collective"] == "allreduce"]
    assert all(p["wrong"] == -1 and p["checked"] == 0 for p in points)


def test_watchdog_aborts_a_hung_collective_and_keeps_completed_points(results):
    out = run_mpi(
        2,
        ["sweep", "-o", str(results), *ARGS, "--collectives", "allreduce,bcast", "--point-timeout", "3"],
        env={"FABRICPROBE_FAULT_HANG": "bcast:1"},
        timeout=120,
    )
    assert out.returncode == 3, out.stderr
    lines = error_lines(out.stderr)
    assert len(lines) == 1 and "bcast float32 8 B" in lines[0] and "watchdog" in lines[0]
    run = load_runs(str(results))[-1]
    assert run.status == "aborted" and "bcast" in run.attrs["status_reason"]
    done = [p for p in run.points if p["collective"] == "allreduce"]
    assert len(done) == 2 and all(p["status"] == "ok" for p in done)
    assert not any(p["collective"] == "bcast" for p in run.points)


def test_a_hang_in_the_set_up_is_caught_too(results):
    """A rank that never leaves the set-up (one launched with another MCA environment hung in the
    topology's split) left the job waiting forever: the set-up has a watchdog of its own."""
    out = run_mpi(
        2,
        ["sweep", "-o", str(results), *ARGS, "--collectives", "barrier", "--point-timeout", "3"],
        env={"FABRICPROBE_FAULT_HANG": "setup:1"},
        timeout=120,
    )
    assert out.returncode == 3, out.stderr
    lines = error_lines(out.stderr)
    assert len(lines) == 1 and "the set-up" in lines[0] and "watchdog" in lines[0]


def test_watchdog_makes_no_mpi_call_unless_the_thread_level_allows_it(tmp_path):
    """At MPI_THREAD_SINGLE (the default) MPI_Abort from the watchdog's thread is not allowed: it ends
    the process (exit 3) and the launcher ends the job; the abort callback is used only when given."""
    import subprocess
    import sys

    code = (
        "import time\n"
        "from fabricprobe.engine.watchdog import Watchdog\n"
        "calls = []\n"
        "abort = (lambda code: open({marker!r}, 'w').write(str(code))) if {with_abort} else None\n"
        "w = Watchdog(0.3, 0, abort)\n"
        "w.arm('allreduce float32 8 B')\n"
        "time.sleep(10)\n"
    )
    for with_abort in (False, True):
        marker = tmp_path / f"abort-{with_abort}"
        out = subprocess.run(
            [sys.executable, "-c", code.format(marker=str(marker), with_abort=with_abort)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert out.returncode == 3 and "watchdog limit" in out.stderr
        assert marker.exists() == with_abort
