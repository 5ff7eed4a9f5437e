"""A scheduler's SIGTERM (`scancel`, a job's time limit), a SIGHUP and a Ctrl-C end a long-running
command whole (issue 65): sent to the command's own PID alone, as to its group, each ends every
launcher and rank it started, marks the run it was measuring interrupted (never complete), removes its
job files, says one line and exits 128 + the signal's number; `--resume` then completes the run. A
launcher killed anywhere in tune-sweep fails it with its status (never exit 0). The same kills under
the lab's Slurm, 10 at random instants per command: benchmarks/slurm_kills.py, docs/site.md."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest
from mpirun import Launched, fabricprobe_argv, kill_session, need_ranks, run_local, session_members

from fabricprobe.store import load_runs

pytestmark = pytest.mark.mpi
# points long enough that the signal lands inside the job: after tune-sweep's 3rd point (8 B) come 7 at
# 1 MiB of up to 1 s each (the --resume measures them); after a sweep's 2 floor points its batch of
# 20,000 calls at 1 MiB (seconds, never resumed)
SLOW = ["--sizes", "8,1M", "--iters", "3000", "--max-time", "1", "--algorithms", "none"]
SLOW_SWEEP = ["--sizes", "8,1M", "--iters", "20000", "--ci-target", "0", "--max-time", "30"]


def _leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".fabricprobe-job-") or ".switching" in p.name)


def _points(proc: Launched, points: int) -> int:
    """Read progress until `points` points were reported ("[k/N] ...", indented under --launches)."""
    reported = 0
    while reported < points:
        line = proc.readline()
        if not line:
            break
        reported += line.lstrip().startswith("[")
    return reported


def _interrupted(proc: Launched, sig: int, points: int = 3) -> str:
    """Send sig to the command's own PID alone once it has measured `points` points; what it said after."""
    assert _points(proc, points) == points, "".join(proc.seen)[-2000:]
    os.kill(proc.pid, sig)
    try:
        return proc.communicate(timeout=120)[1]
    finally:
        # what it started is ended before it returns; a process the kernel has not reaped yet under
        # load gets a few seconds, as Slurm gives a job KillWait (30 s by default) after its SIGTERM
        deadline = time.monotonic() + 10
        while session_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = session_members(proc.pid)
        kill_session(proc.pid)
        assert not left, [open(f"/proc/{p}/cmdline").read().replace("\0", " ")[:200] for p in left]


def test_a_run_its_ranks_left_running_is_marked_interrupted_by_the_driver(tmp_path):
    """Rank 0 planted not to mark its run (FABRICPROBE_FAULT_UNMARKED), as when Open MPI's launcher
    SIGKILLs it 0.2 s after the SIGTERM it forwards: the driver marks the run once its ranks are gone
    (left "running" in 3 clean-clone CI runs under load before it did)."""
    need_ranks(2)
    path = tmp_path / "t.h5"
    args = ["tune-sweep", "-n", "2", "-o", str(path), "--collectives", "allreduce", *SLOW]
    proc = Launched(fabricprobe_argv() + args, env={"FABRICPROBE_FAULT_UNMARKED": "1"})
    _interrupted(proc, signal.SIGTERM)
    assert proc.returncode == 128 + signal.SIGTERM
    run = load_runs(str(path))[-1]
    assert (run.status, run.attrs["status_reason"]) == ("interrupted", "interrupted by SIGTERM"), run.attrs
    assert run.points and _leftovers(tmp_path) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["TERM", "HUP", "INT"])
def test_an_interrupt_to_tune_sweeps_own_pid_ends_all_it_started_and_resume_completes(sig, tmp_path):
    need_ranks(2)
    path = tmp_path / "t.h5"
    args = ["tune-sweep", "-n", "2", "-o", str(path), "--collectives", "allreduce", *SLOW]
    proc = Launched(fabricprobe_argv() + args)
    rest = _interrupted(proc, sig)
    name = signal.Signals(sig).name
    assert proc.returncode == 128 + sig, (proc.returncode, rest[-2000:])
    said = [line for line in rest.splitlines() if line.startswith("fabricprobe: error:")]
    assert said == [f"fabricprobe: error: interrupted by {name}"], rest[-2000:]
    assert "Traceback" not in rest
    assert _leftovers(tmp_path) == []
    runs = load_runs(str(path))
    assert runs and runs[-1].status == "interrupted", [(r.id, r.status) for r in runs]
    if sig != signal.SIGTERM:
        return  # --resume after each kind of interrupt alike: once is enough (MPICH's take minutes)
    measured = {p["key"] for r in runs for p in r.points}
    done = run_local([*args, "--resume"], timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    after = load_runs(str(path))
    keys = [p["key"] for r in after for p in r.points]
    assert len(keys) == len(set(keys)) and measured <= set(keys)  # nothing lost, nothing measured twice
    again = run_local([*args, "--resume"], timeout=300)
    assert again.returncode == 2 and "nothing to resume" in again.stderr, again.stderr[-1000:]


def test_sigterm_to_sweep_launches_ends_its_launch_and_marks_the_run(tmp_path):
    """sweep --launches K is a driver too: its launch's ranks end with it, the run is interrupted."""
    found = need_ranks(2)
    path = tmp_path / "l.h5"
    args = ["sweep", "-o", str(path), "--collectives", "allreduce", *SLOW_SWEEP, "--launches", "3", "-n", "2"]
    proc = Launched(fabricprobe_argv() + args + ["--mpiexec", found.argv(2)[0]])
    rest = _interrupted(proc, signal.SIGTERM, points=2)  # the floor's two: the third is 20,000 calls
    assert proc.returncode == 143, (proc.returncode, rest[-2000:])
    assert load_runs(str(path))[-1].status == "interrupted"
    assert _leftovers(tmp_path) == []


def test_a_killed_probe_launcher_fails_tune_sweep_with_the_launchers_status(tmp_path):
    """SIGKILL of the launcher that asks which component serves the job (Open MPI's han): tune-sweep
    said "han not tuned" and exited 0."""
    found = need_ranks(2)
    if found.vendor != "Open MPI":
        pytest.skip("the served-component probe runs for Open MPI's han only")
    wrapper = tmp_path / "mpiexec"
    wrapper.write_text(
        f'#!/bin/sh\ncase "$*" in *fabricprobe.tuning.verify.probe*) kill -9 $$;; esac\nexec {found.argv(2)[0]} "$@"\n'
    )
    wrapper.chmod(0o755)
    path = tmp_path / "k.h5"
    args = ["tune-sweep", "-n", "2", "-o", str(path), "--collectives", "allreduce", "--mpiexec", str(wrapper)]
    out = run_local([*args, *SLOW], timeout=300)
    lines = [line for line in out.stderr.splitlines() if line.startswith("fabricprobe: error:")]
    assert out.returncode == 5, out.stderr[-2000:]
    assert len(lines) == 1 and "was ended by SIGKILL" in lines[0], out.stderr[-2000:]
    assert not path.exists() or not load_runs(str(path))


def test_the_exit_status_is_128_plus_the_signal_in_a_driver_and_a_rank():
    """The one rule, asked of fabricprobe.interrupts, and what a shell reports for each."""
    from fabricprobe import interrupts

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        assert interrupts.status(sig) == 128 + sig
        assert interrupts.signum_of(interrupts.Interrupted(sig)) == sig
    assert interrupts.signum_of(KeyboardInterrupt()) == signal.SIGINT
    assert sys.modules["fabricprobe.interrupts"].INTERRUPTS == (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def test_an_allocation_that_ends_under_a_launch_interrupts_the_command_not_the_verdict(tmp_path):
    """At a job's time limit srun refuses the next step ("Job/step already completing or completed")
    before Slurm's SIGTERM reaches the command: tune --verify took that for the rule's failure, renamed
    the files REJECTED and exited 1 (the lab, benchmarks/slurm_kills.py). The job is ending, so is the
    command: one line naming srun's, exit 143, nothing measured taken for a verdict."""
    found = need_ranks(2)
    srun = tmp_path / "srun"
    srun.write_text(
        f'#!/bin/sh\ncase "$*" in *--version*) exec {found.argv(2)[0]} "$@";; esac\n'
        'echo "srun: error: Unable to create step for job 7: Job/step already completing or completed" >&2\n'
        "exit 1\n"
    )
    srun.chmod(0o755)
    path = tmp_path / "a.h5"
    args = ["tune-sweep", "-n", "2", "-o", str(path), "--collectives", "allreduce", "--mpiexec", str(srun), *SLOW]
    out = run_local(args, timeout=300)
    lines = [line for line in out.stderr.splitlines() if line.startswith("fabricprobe: error:")]
    assert out.returncode == 143, out.stderr[-2000:]
    assert lines == [
        "fabricprobe: error: interrupted: the job's allocation has ended (srun: error: Unable to create step for job "
        "7: Job/step already completing or completed)"
    ], out.stderr[-2000:]
