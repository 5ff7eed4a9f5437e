import math
from types import SimpleNamespace

import numpy as np
import pytest

from fabricprobe.stats import bandwidths, median_ci, per_iteration, summarize


def test_iteration_time_is_the_slowest_rank():
    samples = np.array([[1.0, 3.0], [2.0, 1.0], [5.0, 4.0]])
    np.testing.assert_array_equal(per_iteration(samples), [3.0, 2.0, 5.0])
    s = summarize(samples)
    assert (s.min_s, s.median_s, s.max_s) == (2.0, 3.0, 5.0)
    assert s.mean_s == pytest.approx(10 / 3)
    assert s.slowest_rank in (0, 1)


def test_osu_statistics_are_spreads_of_per_rank_means():
    samples = np.array([[1.0, 10.0], [3.0, 10.0]])  # rank means 2 and 10
    s = summarize(samples)
    assert (s.osu_min_s, s.osu_avg_s, s.osu_max_s) == (2.0, 6.0, 10.0)
    assert s.slowest_rank == 1


def test_ranks_that_do_not_time_are_ignored():
    samples = np.array([[1.0, np.nan, np.nan], [2.0, np.nan, np.nan], [3.0, np.nan, np.nan]])
    s = summarize(samples)
    assert s.median_s == 2.0 and s.osu_avg_s == 2.0 and s.slowest_rank == 0


def test_nothing_timed():
    s = summarize(np.full((3, 2), np.nan))
    assert s.n == 0 and math.isnan(s.median_s)


def test_median_ci_covers_the_median_and_narrows():
    rng = np.random.default_rng(1)
    small = np.sort(rng.lognormal(size=50))
    big = np.sort(rng.lognormal(size=5000))
    lo, hi = median_ci(small)
    assert lo <= np.median(small) <= hi
    blo, bhi = median_ci(big)
    assert (bhi - blo) < (hi - lo)


def test_ci_coverage_is_about_95_percent():
    rng = np.random.default_rng(7)
    true_median = 1.0  # lognormal(0, s) has median 1
    hits = sum(
        lo <= true_median <= hi
        for lo, hi in (median_ci(np.sort(rng.lognormal(sigma=0.5, size=200))) for _ in range(400))
    )
    assert 0.90 <= hits / 400 <= 0.99


def test_bandwidths():
    assert bandwidths(2_000_000_000, 1.0, 1.5) == (2.0, 3.0)
    assert bandwidths(0, 1.0, 1.0) == (0.0, 0.0)
    assert bandwidths(8, float("nan"), 1.0) == (0.0, 0.0)


def test_median_interval_of_few_values_is_exact_or_absent():
    """[min, max] of n values covers the median with probability 1 - 2^(1-n): 93.75% at n = 5, so no 95%
    interval below 6 values; at 9 the interval drops one value from each end (96.1%)."""
    from fabricprobe.stats import median_ci_exact

    assert all(median_ci_exact(np.arange(n, dtype=float)) is None for n in range(6))
    assert median_ci_exact(np.arange(1.0, 7.0)) == (1.0, 6.0)
    assert median_ci_exact(np.arange(1.0, 10.0)) == (2.0, 8.0)


def _before_after_runs(pairs):
    from types import SimpleNamespace

    runs = []
    for base, tuned in pairs:
        for label, t in (("baseline", base), ("tuned", tuned)):
            point = dict(algorithm=f"library:{label}", status="ok", collective="allreduce", nranks=4, bytes=1 << 20)
            runs.append(SimpleNamespace(points=[{**point, "median_s": t}], config={}))
    return runs


def test_before_after_never_collapses_disagreeing_repetitions():
    """The reviewer's case: 2.24× in one repetition, 0.32× in the other was reported as 1.23×."""
    from fabricprobe.tuning.measure.before_after import speedups

    (row,) = speedups(_before_after_runs([(2.24, 1.0), (0.32, 1.0)]), None)
    assert row["verdict"] == "repetitions disagree" and row["ratios"] == [0.32, 2.24] and row["ci_low"] is None
    assert not row["slower"]
    (row,) = speedups(_before_after_runs([(2.0 + i / 10, 1.0) for i in range(6)]), None)
    assert row["verdict"] == "faster" and (row["ci_low"], row["ci_high"]) == pytest.approx((2.0, 2.5))
    (row,) = speedups(_before_after_runs([(1.0, 2.0)] * 3), None)
    assert row["verdict"] == "slower in all 3" and row["slower"]
    (row,) = speedups(_before_after_runs([(1.5, 1.0)] * 5 + [(0.5, 1.0)]), None)
    assert row["verdict"] == "no difference shown"  # the interval [min, max] holds 1


def test_before_after_stops_a_row_only_when_its_verdict_is_decided():
    """Issue 54: a row is decided when the repetitions left could not change its verdict (the same at
    both extremes); decided early, it keeps its ratios and says how many it took, with no interval."""
    from fabricprobe.tuning.measure.before_after import settled_verdict, speedups

    assert settled_verdict(np.array([0.9, 1.2]), 6) == "no difference shown"  # [min, max] of 6 holds 1
    assert settled_verdict(np.array([1.1, 1.2, 1.3]), 6) is None  # three more above 1 would make it faster
    assert settled_verdict(np.array([1.1, 1.2]), 2) == "faster in all 2"
    assert settled_verdict(np.array([1.1, 0.8]), 3) == "repetitions disagree"
    assert settled_verdict(np.array([1.1, 1.2, 1.3, 1.4, 1.5]), 9) is None  # [x(2), x(8)] of 9 could exclude 1
    (row,) = speedups(_before_after_runs([(2.24, 1.0), (0.32, 1.0)]), None, planned=6)
    assert (row["verdict"], row["reps"], row["planned"], row["decided"]) == ("no difference shown", 2, 6, True)
    assert row["ci_low"] is None and row["ratios"] == [0.32, 2.24] and not row["slower"]
    (row,) = speedups(_before_after_runs([(2.0, 1.0)] * 3), None, planned=6)
    assert (row["verdict"], row["decided"]) == ("open", False)


def test_before_after_measures_every_tuned_collective_in_each_launch_and_only_open_rows_later(monkeypatch):
    from fabricprobe.tuning.choose.rules import Decision, Range, Table
    from fabricprobe.tuning.measure import before_after as ba

    d = lambda size: Decision(size, "x", 1.0, 1.0, 0.0)  # noqa: E731
    table = Table(
        "Open MPI",
        "",
        4,
        "float32",
        {
            "allreduce": {4: [Range(0, None, "ring", [d(8), d(1024)])]},
            "bcast": {2: [Range(0, None, "binomial", [d(64)])]},
            "reduce": {4: [Range(0, None, "default", [d(8)])]},  # nothing of it in the files
        },
    )
    seen = []
    monkeypatch.setattr(ba, "run_variant", lambda base, out, variant, config, timeout: seen.append((variant, config)))
    answers = iter([{("allreduce", 4, 1024)}, set()])  # after the first repetition one row is open; then none
    ba.before_after(["mpiexec"], "x.h5", table, {"F": "1"}, reps=6, still_open=lambda: next(answers))
    # two repetitions (which side runs first alternating), then every row decided
    assert [v.name for v, _ in seen] == ["baseline", "tuned", "tuned", "baseline"]
    assert all(v.env == ({"F": "1"} if v.name == "tuned" else {}) for v, _ in seen)
    first, later = seen[0][1], seen[2][1]
    assert first.collectives == ["allreduce", "bcast"] and first.sizes == [8, 64, 1024] and first.points is None
    assert first.comm_sizes == [2, 4] and {c.library_variant for _, c in seen} == {"baseline", "tuned"}
    assert later.collectives == ["allreduce"]
    assert later.points == [["allreduce", "library", 4, 1024], ["allreduce", "library:baseline", 4, 1024]]
    # the rows keep each collective's own communicator and message sizes
    runs = []
    for label, t in (("baseline", 2.0), ("tuned", 1.0)):
        points = [
            dict(algorithm=f"library:{label}", status="ok", collective=c, nranks=n, bytes=b, median_s=t)
            for c in ("allreduce", "bcast")
            for n in (2, 4)
            for b in (8, 64, 1024)
        ]
        runs.append(SimpleNamespace(points=points, config={}))
    rows = {(r["collective"], r["comm_size"], r["size"]) for r in ba.speedups(runs, table)}
    assert rows == {("allreduce", 4, 8), ("allreduce", 4, 1024), ("bcast", 2, 64)}


def _paired_table():
    from fabricprobe.tuning.choose.rules import Decision, Range, Table

    d = lambda size: Decision(size, "x", 1.0, 1.0, 0.0)  # noqa: E731
    return Table("Open MPI", "", 4, "float32", {"allreduce": {4: [Range(0, None, "ring", [d(8), d(1024)])]}})


def test_paired_before_after_is_one_launch_per_repetition_with_the_default_switched_beside_the_files(monkeypatch):
    """Issue 54: where the library can switch its default back on inside a launch with the files, each
    repetition is one launch with the files' environment, the default switched at every point (its
    side first in odd repetitions); a paired launch that fails sends the rest to a launch per side."""
    from fabricprobe.engine.config import SweepConfig
    from fabricprobe.tuning.measure import before_after as ba

    jobs, single = [], []

    def launch_job(base, output, spec, env, timeout):
        jobs.append((spec, env))
        return ba.Launch("*", None, 0 if len(jobs) < 3 else 1, "" if len(jobs) < 3 else "rank 1: boom")

    monkeypatch.setattr(ba, "launch_job", launch_job)
    monkeypatch.setattr(ba, "run_variant", lambda base, out, variant, config, timeout: single.append(variant.name))
    off = {"coll_tuned_use_dynamic_rules": "0"}
    done = ba.before_after(["mpiexec"], "x.h5", _paired_table(), {"F": "1"}, reps=4, files_off=off)
    assert len(jobs) == 3 and all(env == {"F": "1"} for _, env in jobs)  # the files' environment
    configs = [SweepConfig.from_dict(spec["parts"][0]) for spec, _ in jobs]
    assert [c.switched_first for c in configs] == [False, True, False]
    assert all(c.library_variant == "tuned" and c.library_variants == {"allreduce": ["baseline"]} for c in configs)
    assert jobs[0][0]["switch"]["writes"] == {"allreduce": {"baseline": off}}
    assert jobs[0][0]["switch"]["new_communicator"] is True
    # the third failed: that repetition and the fourth a launch per side, which side first alternating
    assert single == ["baseline", "tuned", "tuned", "baseline"]
    assert not done.paired and "paired launch failed (exit 1: rank 1: boom)" in done.why_unpaired
    assert [la.variant.name for la in done.launches[:3]] == ["paired"] * 3


def test_a_paired_run_gives_a_ratio_only_where_it_measured_both_sides():
    """A paired launch cut between the two sides of a point leaves no half pair to misalign the rest."""
    from fabricprobe.tuning.measure.before_after import speedups

    def point(side, size, t):
        return dict(algorithm=f"library:{side}", status="ok", collective="allreduce", nranks=4, bytes=size, median_s=t)

    paired = {"library_variant": "tuned", "library_variants": {"allreduce": ["baseline"]}}
    whole = SimpleNamespace(points=[point("tuned", 8, 1.0), point("baseline", 8, 2.0)], config=paired)
    cut = SimpleNamespace(points=[point("tuned", 8, 9.0)], config=paired)
    (row,) = speedups([whole, cut, whole], _paired_table())
    assert row["ratios"] == [2.0, 2.0] and row["reps"] == 2


def test_pairing_needs_a_switch_for_these_files_that_mpi_t_lets_be_written():
    from fabricprobe.tuning.measure.before_after import pairing
    from fabricprobe.tuning.plan.openmpi import OpenMPI

    ompi = OpenMPI(text="mca:coll:tuned:param:coll_tuned_allreduce_algorithm:enumerator:value:1:basic_linear\n")
    files = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_dynamic_rules_filename": "/r.conf"}
    names = {"values": [[0, "false"], [1, "true"]], "value": 0}
    writable = {"coll_tuned_use_dynamic_rules": {**names, "writable": True, "scope": "all"}}
    assert pairing(ompi, files, writable) == ({"coll_tuned_use_dynamic_rules": "0"}, "")
    shifted = {"coll_tuned_use_dynamic_rules": {**writable["coll_tuned_use_dynamic_rules"], "value": 1}}
    assert "the names cannot be trusted" in pairing(ompi, files, shifted)[1]  # as tune-sweep's switch refuses
    readonly = {"coll_tuned_use_dynamic_rules": {**names, "writable": False, "scope": "constant"}}
    assert "cannot be written at run time (MPI_T scope constant)" in pairing(ompi, files, readonly)[1]
    assert "no MPI_T control variable" in pairing(ompi, files, {})[1]
    with_han = {**files, "OMPI_MCA_coll_han_use_dynamic_file_rules": "1"}
    off, why = pairing(ompi, with_han, writable)  # han's settings have no run-time switch: they are named
    assert off == {} and why.endswith("these files also set coll_han_use_dynamic_file_rules")
    from fabricprobe.tuning.plan.mpich import MPICH

    mpich = MPICH.__new__(MPICH)  # its variants are not asked: no mpivars needed
    json_files = {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": "/t.json"}
    off, why = pairing(mpich, json_files, {})
    assert off == {} and why == "MPICH has no run-time switch between its default and these files: " + (
        "it reads its tuning files at MPI_Init only"
    )


def test_each_before_after_row_names_the_files_rule_there():
    """A row slower with the files where they keep the library's own choice is not a rule's fault
    (tune words it apart from a slower rule): each row says which rule the files hold at its size."""
    from fabricprobe.tuning.choose.rules import Decision, Range, Table
    from fabricprobe.tuning.measure.before_after import speedups

    d = lambda size: Decision(size, "x", 1.0, 1.0, 0.0)  # noqa: E731
    ranges = [Range(0, 1024, "default", [d(8)]), Range(1024, None, "ring", [d(1024)])]
    table = Table("Open MPI", "", 4, "float32", {"allreduce": {4: ranges}})

    def run(side, t):
        points = [
            dict(algorithm=f"library:{side}", status="ok", collective="allreduce", nranks=4, bytes=b, median_s=t)
            for b in (8, 1024)
        ]
        return SimpleNamespace(points=points, config={})

    rows = speedups([run("baseline", 1.0), run("tuned", 1.1)], table)
    assert [(r["size"], r["rule"], r["slower"]) for r in rows] == [(8, "default", True), (1024, "ring", True)]


def test_welch_calls_a_difference_only_beyond_both_spreads():
    from fabricprobe.stats import welch_differ

    # t = 3 / sqrt(1/3 + 1/3) = 3.67 on 4 degrees of freedom (critical 2.776): different
    assert welch_differ([1, 2, 3], [4, 5, 6])
    assert not welch_differ([1, 2, 3], [2, 3, 4])  # t = 1.22
    assert not welch_differ([1, 2, 3, 9], [4, 5, 6, 7])  # a wide side holds the gap
    assert welch_differ([1, 1], [2, 2]) and not welch_differ([1, 1], [1, 1])  # no spread at all
    with pytest.raises(ValueError):
        welch_differ([1], [2, 3])
