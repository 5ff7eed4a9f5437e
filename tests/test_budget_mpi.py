"""tune-sweep --budget against the real library: rounds of launched jobs, each restricted to the points
the search chose (screened ones with SCREEN_ITERS calls), a file `fabricprobe tune` reads as it reads an
exhaustive one, and tune-eval judging it against the exhaustive sweep of the same grid."""

from __future__ import annotations

import json

import pytest
from mpirun import error_lines, need_ranks, run_local

from fabricprobe.store import load_runs
from fabricprobe.tuning.economy.replay import observations
from fabricprobe.tuning.economy.search import SCREEN_ITERS

pytestmark = pytest.mark.mpi

GRID = ["-n", "2", "--collectives", "allreduce,bcast", "--sizes", "8,1K,64K,1M", "--comm-sizes", "2"]
GRID += ["--algorithms", "ring,recursive_doubling", "--max-time", "0.05", "--iters", "20"]


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    need_ranks(2)
    d = tmp_path_factory.mktemp("budget")
    full, part = d / "full.h5", d / "part.h5"
    out = run_local(["tune-sweep", *GRID, "-o", str(full)], timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    out = run_local(["tune-sweep", *GRID, "--budget", "0.3", "-o", str(part)], timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return full, part, out.stderr


def test_a_budgeted_sweep_measures_in_rounds_a_part_of_the_grid(sweeps):
    full, part, stderr = sweeps
    rounds = [line for line in stderr.splitlines() if line.startswith("round ")]
    assert rounds[0].startswith("round 1: 8 points measured;")  # the defaults at every size first
    assert "screened" in rounds[1]
    assert "1 launch, 0 fallbacks" in stderr  # the rounds inside one launch
    whole, some = observations(load_runs(str(full))), observations(load_runs(str(part)))
    assert set(some) <= set(whole)
    in_full = {k for k, (obs, p) in some.items() if p["iterations"] > SCREEN_ITERS}
    assert in_full < set(whole)  # it may screen the whole of a grid this small, not measure it in full
    runs = load_runs(str(part))
    assert all(r.config.get("points") for r in runs)  # every job restricted to its points
    screened = [p for r in runs for p in r.points if p["collective"] != "empty" and p["stop_reason"] == "fixed"]
    assert screened and all(p["iterations"] == SCREEN_ITERS for p in screened)


def test_tune_reads_a_budgeted_file_and_tune_eval_judges_it(sweeps, tmp_path):
    full, part, _ = sweeps
    out = run_local(["tune", str(part), "-o", str(tmp_path / "t")])
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "t" / "fabricprobe_selection.json").exists()
    rows = tmp_path / "rows.json"
    out = run_local(["tune-eval", str(full), str(part), "--replay", "0.5", "--json", str(rows)])
    assert out.returncode == 0, out.stderr
    found = json.loads(rows.read_text())
    assert [r["source"] for r in found] == ["exhaustive", str(part), "replay at 0.5"]
    # what it spent against the exhaustive sweep is measured, not asserted: a grid this small is
    # screened whole, and its measurement time then lies near the exhaustive one's, on either side
    assert 0 < found[1]["points"] <= 1 and 0 < found[1]["measurement"]
    assert found[2]["wall"] is None  # a replay launches nothing
    for row in found:
        value, low, high = row["regret"]["mean"]
        assert 0 <= low <= value <= high


def test_tune_eval_refuses_a_budgeted_file_as_the_ground_truth(sweeps):
    _, part, _ = sweeps
    out = run_local(["tune-eval", str(part)])
    assert out.returncode == 2 and "tune-sweep --budget" in error_lines(out.stderr)[0]
