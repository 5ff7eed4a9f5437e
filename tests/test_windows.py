"""Window mode (issue 36, point 2): the clock model and its fit, the synchronization against planted
per-rank offsets and drifts (the residual below a stated bound, the uncorrected clocks far above it),
a window a rank reaches late counted and left untimed, and a sweep in window mode end to end."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mpirun import launcher, mpi_env, run_mpi

from fabricprobe.store import load_runs
from fabricprobe.timing import loops, windows

DRIVER = Path(__file__).parent / "drivers" / "clock_sync_check.py"
LAUNCHER = launcher()
needs_mpi = pytest.mark.skipif(LAUNCHER is None, reason="needs an MPI wheel's mpiexec")


def test_the_model_maps_a_clock_both_ways():
    model = windows.ClockModel(a=0.5, b=40e-6)
    local = np.array([0.0, 10.0, 1000.0])
    assert np.allclose(model.to_local(model.to_global(local)), local, rtol=0, atol=1e-12)
    assert model.to_global(1000.0) == pytest.approx(1000.0 - 0.5 - 0.04)


def test_the_fit_recovers_a_planted_offset_and_drift_from_noisy_fitpoints():
    rng = np.random.default_rng(1)
    t = np.linspace(0.0, 0.2, 8)
    offsets = 0.25 + 30e-6 * t + rng.uniform(-0.5e-6, 0.5e-6, t.size)  # ±0.5 µs: half a round trip
    model = windows.fit(t, offsets)
    assert model.a == pytest.approx(0.25, abs=1e-6)
    assert abs(model.b - 30e-6) < 15e-6
    assert windows.fit(np.array([3.0]), np.array([0.1])) == windows.ClockModel(0.1, 0.0)


def test_a_window_reached_late_is_called_but_not_timed():
    calls = []
    now = [100.0]

    def wtime() -> float:
        now[0] += 1e-6
        return now[0]

    out = np.array([50.0, 100.5, 99.0, 100.6])  # windows 0 and 2 start before the rank gets there
    loops.python_timed_calls(lambda: calls.append(1), lambda: None, wtime, loops.WINDOW, out)
    assert len(calls) == 4  # every rank makes every call, late or not
    assert math.isnan(out[0]) and math.isnan(out[2])
    assert 0 <= out[1] < 1e-5 and 0 <= out[3] < 1e-5  # from the window's start to the call's end


@pytest.mark.process
@needs_mpi
def test_planted_offsets_and_drifts_are_corrected_by_the_sync():
    """Ranks 1 and 2 read clocks 0.5 s and 1 s ahead, running 5% and 10% fast (3 ranks on 2 cores).
    After the sync, 2 s later with the first model alone, and after one refresh (as window mode makes
    before each batch), every rank's offset is below 20 ms: the planted error is 0.5-1.2 s, 25 times
    that, and a loaded machine's descheduled ping-pong moved it by 2 ms (a busy loop per core: the
    bound of 20 µs this test had failed there). The fitted drift is within 30% of the planted one.
    The microseconds the sync reaches on a quiet machine are docs/methodology.md's, not asserted."""
    argv = [LAUNCHER.mpiexec, "-n", "3"]
    if LAUNCHER.vendor == "Open MPI":
        argv.append("--oversubscribe")
    done = subprocess.run(
        argv + [sys.executable, str(DRIVER), "0.5", "5e-2", "2"],
        capture_output=True,
        text=True,
        env=mpi_env({"MPIR_CVAR_POLLS_BEFORE_YIELD": "1", "MPIR_CVAR_POSIX_POLL_FREQUENCY": "1"}),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    worst = {k: max(abs(x) for x in found[k]) for k in ("after", "end", "refreshed")}
    assert worst["after"] < 20e-3 and worst["end"] < 20e-3 and worst["refreshed"] < 20e-3, found
    assert found["uncorrected"][1] > 0.4 and found["uncorrected"][2] > 0.9, found
    # the model's drift is relative to rank 0's clock: 10% fast reads 0.1 / 1.1
    assert found["fitted_drift"][2] == pytest.approx(0.1 / 1.1, rel=0.3), found


@pytest.mark.process
@needs_mpi
def test_a_sweep_in_window_mode_counts_the_windows_a_rank_missed(tmp_path):
    """Rank 1 finds every 4th window already started (FABRICPROBE_FAULT_LATE=1:4): those calls are made
    but untimed on every rank, counted in windows_missed; the clock sync's residual is recorded with
    the run."""
    out = tmp_path / "w.h5"
    args = ["sweep", "--mode", "window", "--collectives", "allreduce", "--sizes", "8,64K", "--quiet"]
    args += ["--iters", "40", "--max-time", "0.2", "--ci-target", "0", "-o", str(out), "--no-bound-probe"]
    done = run_mpi(2, args, env={"FABRICPROBE_FAULT_LATE": "1:4"})
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = load_runs(str(out))
    sync = run.attrs["clock_sync"]
    # recorded; its size is the machine's (µs when quiet, 0.35 ms under a busy loop per core): not judged
    assert len(sync["residual_after_sync_s"]) == 2 and max(abs(x) for x in sync["residual_at_end_s"]) < 20e-3
    for p in (p for p in run.points if p["collective"] == "allreduce"):
        untimed = np.isnan(run.samples(p["index"])).all(axis=1)  # one batch of 40 (--ci-target 0)
        assert p["mode"] == "window" and p["iterations"] == 40 and p["status"] == "ok"
        assert untimed[::4].all(), untimed  # windows 0, 4, ..., 36: rank 1 came late
        # and any other a rank reached late by itself (2 ranks and mpiexec on 2 cores: a few per batch)
        assert p["windows_missed"] == int(untimed.sum()) >= 10
        assert p["window_s"] > 0


@pytest.mark.process
@needs_mpi
@pytest.mark.parametrize("late_batches", [windows.REDO_MAX, windows.REDO_MAX + 1])
def test_a_batch_that_missed_every_window_is_run_again_with_wider_windows(tmp_path, late_batches):
    """Rank 1 late for every window of its first batches (FABRICPROBE_FAULT_LATE_FIRST=1:b), as a rank
    descheduled for a whole batch is: up to REDO_MAX such batches are run again with windows twice as
    wide, left out of the point, which keeps its one batch of 40 (--ci-target 0); one more, and the
    batch that missed everything counts, and the point is not runnable."""
    out = tmp_path / "w.h5"
    args = ["sweep", "--mode", "window", "--collectives", "allreduce", "--sizes", "8", "--quiet", "-o", str(out)]
    args += ["--iters", "40", "--ci-target", "0", "--no-bound-probe"]
    done = run_mpi(2, args, env={"FABRICPROBE_FAULT_LATE_FIRST": f"1:{late_batches}"})
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = load_runs(str(out))
    (p,) = [p for p in run.points if p["collective"] == "allreduce"]
    assert p["iterations"] == 40 and p["batches"] == 1
    if late_batches <= windows.REDO_MAX:
        assert p["status"] == "ok", p["note"]
        assert p["window_s"] >= 2**late_batches * windows.MIN_WIDTH  # doubled at every run again,
        assert p["window_s"] * 40 >= windows.REDO_SPAN  # and the batch longer than a descheduled rank waits
        assert p["windows_missed"] < 40 and not np.isnan(run.samples(p["index"])).all()
    else:
        assert p["status"] == "not_runnable" and p["windows_missed"] == 40, p["note"]


@pytest.mark.process
@needs_mpi
def test_a_point_whose_every_window_was_missed_is_not_runnable(tmp_path):
    """Nothing timed is no measurement: a rank late for every window (FABRICPROBE_FAULT_LATE=1:1, as 4
    ranks on 2 cores nearly are) makes the point not runnable, with why, not a row of NaN called ok."""
    out = tmp_path / "w.h5"
    args = ["sweep", "--mode", "window", "--collectives", "allreduce", "--sizes", "8", "--quiet", "-o", str(out)]
    done = run_mpi(
        2, args + ["--iters", "20", "--ci-target", "0", "--no-bound-probe"], env={"FABRICPROBE_FAULT_LATE": "1:1"}
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (point,) = [p for p in load_runs(str(out))[0].points if p["collective"] == "allreduce"]
    assert point["status"] == "not_runnable" and point["windows_missed"] == 20
    assert "every one of the 20 windows late" in point["note"]
