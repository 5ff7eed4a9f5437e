"""A point's timings beyond stats.FULL_RANKS ranks (engine/collect.py, docs/scale.md): the reduced
collection (MPI_MAXLOC per batch, each rank's summary and the kept ranks' samples) gives exactly what
every rank's samples gathered and reduced give, under each library's MAXLOC (tests/drivers/
collect_check.py, planted times with ties, a rank that never times, late windows); a real sweep of
FULL_RANKS + 1 ranks stores the reduced form, reads it back, reports it, and its bytes per point stay
within 2× those of 2 ranks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import h5py
import numpy as np
import pytest
from mpirun import run_local, run_mpi

from fabricprobe.stats import FULL_RANKS, SLOWEST_KEPT, reduced, summarize
from fabricprobe.store import ResultsWriter, load_runs

DRIVER = Path(__file__).parent / "drivers" / "collect_check.py"
# fixed iterations, no adaptivity: the same sweep at every rank count
FIXED = [
    "--collectives",
    "allreduce",
    "--algorithms",
    "library",
    "--sizes",
    "8,1K",
    "--iters",
    "400",
    "--ci-target",
    "0",
]


@pytest.mark.process
@pytest.mark.parametrize("n", [1, 2, 5, FULL_RANKS + 1])
def test_the_reduced_collection_is_what_every_sample_reduced_gives(n):
    out = run_mpi(n, [], python_args=[str(DRIVER)], timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert out.stdout.split() == ["ok", "windowed=False", "ok", "windowed=True"], out.stdout[-3000:]


def _bytes_per_point(path: Path) -> float:
    with h5py.File(path, "r") as f:
        run = f["runs"][sorted(f["runs"])[-1]]
        parts = [run[part][name] for part in ("samples", "maxima", "per_rank") if part in run for name in run[part]]
        return sum(ds.size * ds.dtype.itemsize for ds in parts) / len(run["samples"])


@pytest.mark.process
def test_a_sweep_beyond_the_full_ranks_stores_the_reduced_form_within_2x_the_bytes_of_2_ranks(tmp_path):
    many, two = tmp_path / "many.h5", tmp_path / "two.h5"
    for n, path in ((FULL_RANKS + 1, many), (2, two)):
        out = run_mpi(n, ["sweep", *FIXED, "-o", str(path), "--progress", "none", "--quiet"], timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
    (run,) = load_runs(str(many))
    assert run.status == "complete" and len(run.points) >= 2
    for p in run.points:
        times = run.times(p["index"])
        assert not times.full and times.samples.shape == (p["iterations"], SLOWEST_KEPT)
        assert times.maxima.shape == (p["iterations"],) and times.per_rank.shape == (FULL_RANKS + 1, 5)
        assert p["slowest_rank"] == int(times.per_rank[:, 4].argmax())
        stored = summarize(times)  # the statistics the row holds come from what was stored
        assert stored.median_s == pytest.approx(p["median_s"]) and stored.osu_avg_s == pytest.approx(p["osu_avg_s"])
    (small,) = load_runs(str(two))
    assert all(small.times(p["index"]).full for p in small.points)
    assert _bytes_per_point(many) <= 2 * _bytes_per_point(two)
    for args in (["report", str(many)], ["report", str(many), "--format", "osu"], ["report", str(many), "--summary"]):
        shown = run_local(args)
        assert shown.returncode == 0 and "allreduce" in shown.stdout.lower(), shown.stderr[-2000:]


def test_reduced_timings_round_trip_through_the_journal_and_the_file(tmp_path):
    rng = np.random.default_rng(3)
    samples = rng.uniform(1e-6, 2e-6, (50, FULL_RANKS + 3))
    samples[:, 4] = np.nan  # a rank that does not time
    times = reduced(samples)
    path = tmp_path / "r.h5"
    w = ResultsWriter(str(path))
    w.start_run({"nranks": FULL_RANKS + 3, "status": "running"})
    w.append_point(_row(0), times)
    w.append_point(_row(1), samples[:, :4])  # a plain array: every rank's samples
    (before_fold,) = load_runs(str(path))
    w.close()
    (after_fold,) = load_runs(str(path))
    for run, exact in ((before_fold, True), (after_fold, False)):  # the file keeps per_rank in float32
        got = run.times(0)
        assert got.ranks == times.ranks and not got.full
        for name in ("samples", "maxima"):
            np.testing.assert_array_equal(getattr(got, name), getattr(times, name))
        np.testing.assert_allclose(got.per_rank, times.per_rank, rtol=0 if exact else 1e-7)
        want = dataclasses.asdict(summarize(samples))
        assert dataclasses.asdict(summarize(got)) == (want if exact else pytest.approx(want, rel=1e-6, nan_ok=True))
        assert run.times(1).full and run.samples(1).shape == (50, 4)


def test_kept_ranks_are_the_slowest_in_the_most_iterations():
    samples = np.full((10, 6), 1e-6)
    samples[:7, 3] = 5e-6  # rank 3 slowest in 7 iterations
    samples[7:, 1] = 4e-6  # rank 1 in 3
    samples[:, 5] = np.nan  # rank 5 never times: never kept
    t = reduced(samples)
    assert t.ranks == (1, 3) and t.per_rank[3, 4] == 7 and t.per_rank[1, 4] == 3
    np.testing.assert_array_equal(t.samples, samples[:, [1, 3]])
    assert np.isnan(t.per_rank[5, :4]).all() and summarize(t).slowest_rank == 3


def _row(index: int) -> dict:
    return {"index": index, "key": f"k{index}", "collective": "allreduce", "algorithm": "library", "dtype": "float32",
            "op": "sum", "bytes": 8, "nranks": FULL_RANKS + 3, "median_s": 1e-6, "status": "ok"}  # fmt: skip
