"""Planted faults: validation must catch a wrong result; the watchdog must end a hung job."""

from __future__ import annotations

import re

import pytest
from batch import Case, run_batch
from mpirun import error_lines, run_mpi

from fabricprobe.store import load_runs

pytestmark = pytest.mark.mpi

ARGS = ["--sizes", "8,4K", "--iters", "20", "--warmup", "2", "--max-time", "0.2", "--progress", "plain", "--quiet"]


WRONG = ["allreduce", "alltoall", "bcast", "gather", "scatter", "gatherv", "scatterv", "allgatherv", "alltoallv"]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Every planted wrong result of this module, in one launch (tests/batch.py)."""
    cases = {
        c: Case(["sweep", "-o", "{out}", *ARGS, "--collectives", f"{c},barrier"], {"FABRICPROBE_FAULT_WRONG": f"{c}:1"})
        for c in WRONG
    }
    cases["no_validate"] = Case(
        ["sweep", "-o", "{out}", *ARGS, "--collectives", "allreduce", "--no-validate"],
        {"FABRICPROBE_FAULT_WRONG": "allreduce:1"},
    )
    return run_batch(2, cases, tmp_path_factory.mktemp("planted"))


# gather and gatherv: rank 1 is not the root, so its planted element lands in a receive buffer the
# standard leaves untouched there; the others corrupt rank 1's result.
@pytest.mark.parametrize("collective", WRONG)
def test_validation_catches_a_planted_wrong_result(collective, planted):
    out = planted[collective]
    assert out.returncode == 1, out.stderr
    run = load_runs(str(out.results))[-1]
    bad = [p for p in run.points if p["collective"] == collective]
    assert bad and all(p["status"] == "wrong" and p["wrong"] >= 1 for p in bad)
    others = [p for p in run.points if p["collective"] == "barrier"]
    assert all(p["status"] == "ok" for p in others)
    assert run.attrs["environment"]["FABRICPROBE_FAULT_WRONG"] == f"{collective}:1"


def test_no_validate_reports_not_validated(planted):
    out = planted["no_validate"]
    assert out.returncode == 0, out.stderr
    points = [p for p in load_runs(str(out.results))[-1].points if p["collective"] == "allreduce"]
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


def test_a_hang_of_rank_0_is_named_with_where_every_rank_is(results):
    """Rank 0's own hang was stopped but not named (only other ranks' were): every rank's report now
    says where it is, rank 0's taken from its main thread, not from the watchdog thread that writes it."""
    out = run_mpi(
        2,
        ["sweep", "-o", str(results), *ARGS, "--collectives", "allreduce,bcast", "--point-timeout", "3"],
        env={"FABRICPROBE_FAULT_HANG": "bcast:0"},
        timeout=120,
    )
    assert out.returncode == 3, out.stderr
    ranks = {
        line.split(":")[1].strip(): line for line in out.stderr.splitlines() if line.startswith("fabricprobe: rank ")
    }
    assert set(ranks) == {"rank 0", "rank 1"}, out.stderr
    assert "bcast float32 8 B" in ranks["rank 0"] and "hang_if_asked" in ranks["rank 0"], ranks
    assert "watchdog.py" not in ranks["rank 0"] and "watchdog.py" not in ranks["rank 1"], ranks
    run = load_runs(str(results))[-1]
    assert run.status == "aborted" and set(run.attrs["watchdog"]) >= {"0", "1"}


def test_a_set_up_hang_that_holds_the_interpreter_is_named_and_ended(results):
    """MPI_Init runs inside mpi4py's import with the interpreter held: the watchdog thread cannot run
    there (8 of 8 planted set-up hangs hung forever). The forked watcher names the phase and ends the rank."""
    out = run_mpi(
        2,
        ["sweep", "-o", str(results), *ARGS, "--collectives", "barrier", "--point-timeout", "3"],
        env={"FABRICPROBE_FAULT_HANG": "mpi_init:1"},
        timeout=120,
    )
    assert out.returncode != 0
    # rank 1 hangs before MPI starts; rank 0 then waits in MPI_Init (MPICH), which holds its interpreter
    # too: whichever watcher fires first names its rank and ends it, and the launcher ends the other
    assert re.search(r"rank [01]: the set-up \(MPI start-up\) did not finish within the 3 s watchdog limit", out.stderr)
    assert "Fatal Python error: Aborted" in out.stderr  # the stack faulthandler wrote on SIGABRT
