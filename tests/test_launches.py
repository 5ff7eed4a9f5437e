"""Several launches of one sweep (issue 36, point 3): the random order (blocks kept whole, the floor
first, reproducible from the stored seed), the spread between launches against the spread within one,
`compare` holding a difference against the between-launch interval, and `sweep --launches K` end to end
(each launch's run readable alone, the group aggregated). Bad launch options: tests/test_bad_input.py."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from mpirun import launcher, mpi_env, run_local, run_mpi
from test_compare_plot import point as make_point

from fabricprobe.engine.config import SweepConfig
from fabricprobe.engine.launches import Launched, LaunchesOutcome, seeds
from fabricprobe.engine.plan import blocks, make_plan
from fabricprobe.mpienv.topology import Topology
from fabricprobe.report.compare import compare, parse_side
from fabricprobe.report.launches import aggregated_points, group_json, groups, spreads
from fabricprobe.stats import median_ci_exact
from fabricprobe.store import ResultsWriter, load_runs

CONFIG = dict(
    collectives=["allreduce", "bcast", "latency"],
    algorithms=["library", "ring", "binomial"],
    sizes=[8, 64, 1024, 65536],
    comm_sizes=[2],
)


def _topo(nodes: list[int]) -> Topology:
    node_of = tuple(i for i, size in enumerate(nodes) for _ in range(size))
    return Topology(hosts=tuple(f"h{n}" for n in node_of), node_of=node_of, cores_per_node=tuple(nodes))


def _plan(**kw):
    points, _ = make_plan(SweepConfig(**{**CONFIG, **kw}).check(), _topo([4]), ["native", "python"])
    return points


def test_a_sweep_measures_only_the_points_named_with_their_collective():
    """tune --verify's later before/after repetitions name [collective, algorithm, comm size, bytes];
    tune-sweep --budget's [algorithm, comm size, bytes] still mean every collective."""
    named = _plan(points=[["bcast", "library", 2, 1024]])
    assert [(p.collective, p.algorithm, p.nranks, p.requested_bytes) for p in named if p.collective != "empty"] == [
        ("bcast", "library", 2, 1024)
    ]
    anyone = {p.collective for p in _plan(points=[["library", 2, 1024]]) if p.collective != "empty"}
    assert anyone == {"allreduce", "bcast"}


def test_a_random_order_is_a_permutation_of_whole_blocks_drawn_from_its_seed():
    fixed = _plan()
    one, again, other = _plan(order="random", seed=7), _plan(order="random", seed=7), _plan(order="random", seed=8)
    assert [p.key for p in one] == [p.key for p in again]  # the seed gives the order back
    assert [p.key for p in one] != [p.key for p in other] != [p.key for p in fixed]
    assert sorted(p.key for p in one) == sorted(p.key for p in fixed)
    assert {p.key: p.index for p in one} == {p.key: p.index for p in fixed}  # identities unchanged
    assert [p.collective for p in one[:2]] == ["empty", "empty"]  # the timer floor first
    # every block of the fixed plan (all algorithms at one size) is measured back to back in the random one
    position = {p.key: i for i, p in enumerate(one)}
    cut = blocks([p for p in fixed if p.collective != "empty"])
    assert any(len(b) == 3 for b in cut)  # allreduce: library, ring and a hand-written one at each size
    for block in cut:
        at = sorted(position[p.key] for p in block)
        assert at == list(range(at[0], at[0] + len(block))), [p.label for p in block]
    # and the blocks are shuffled: sizes no longer rise within a collective
    sizes = [p.requested_bytes for p in one if p.collective == "allreduce" and p.algorithm == "library"]
    assert sizes != sorted(sizes)


def test_blocks_keep_a_kernel_with_the_copy_it_is_read_against():
    points, _ = make_plan(
        SweepConfig(collectives=["reduce_local", "copy_local"], sizes=[1024, 65536], order="random", seed=3).check(),
        _topo([1]),
        [],
    )
    cut = blocks(points)
    cut = blocks([p for p in points if p.collective != "empty"])
    assert len(cut) == 2 and all({p.collective for p in b} == {"reduce_local", "copy_local"} for b in cut), [
        [p.label for p in b] for b in cut
    ]


def test_seeds_follow_the_first_and_a_drawn_one_is_recorded():
    assert seeds(5, 3) == [5, 6, 7]
    assert seeds(2**32 - 1, 2) == [2**32 - 1, 0]
    drawn = seeds(-1, 2)
    assert drawn[1] == (drawn[0] + 1) % 2**32 and drawn[0] >= 0


@pytest.mark.parametrize("codes, expected", [([0, 0], 0), ([0, 1], 1), ([3, 1], 3), ([1, 2], 2), ([0, 130], 130)])
def test_the_series_status_names_the_worst_launch(codes, expected):
    assert LaunchesOutcome("g", [Launched(i, i, c) for i, c in enumerate(codes)]).exit_code == expected


def _group(path, medians: list[dict[int, float]], noise: float = 0.005, name: str = "G1") -> None:
    """One run per launch, as sweep --launches writes them: launch k's allreduce at each size has median
    medians[k][size]."""
    w = ResultsWriter(str(path))
    for k, by_size in enumerate(medians):
        config = {"launch_group": name, "launch_index": k, "launches": len(medians), "seed": 40 + k, "order": "random"}
        w.start_run({"nranks": 2, "mpi_vendor": "Open MPI", "topology": "1 × 2 ranks", "config": config})
        for i, (size, median) in enumerate(sorted(by_size.items())):
            w.append_point(make_point(i, size, median, noise=noise), None)
        w.update_run({"status": "complete"})
    w.close()


def test_the_spread_between_launches_is_held_beside_the_spread_within_one(tmp_path):
    path = tmp_path / "g.h5"
    at_8 = [1.0e-6, 1.3e-6, 0.9e-6, 1.1e-6, 1.2e-6, 1.0e-6, 1.05e-6]  # 7 launches: an exact 95% interval
    _group(path, [{8: m, 1024: 2e-6} for m in at_8])
    runs = load_runs(str(path))
    (group,) = groups(runs)
    assert [r.config["launch_index"] for r in group] == list(range(7))
    by_size = {s.point["bytes"]: s for s in spreads(group)}
    s = by_size[8]
    assert s.medians == at_8
    assert s.median == pytest.approx(1.05e-6)
    ordered = np.sort(at_8)
    lo, hi = median_ci_exact(ordered)  # by hand: n = 7 → the 1st and 7th order statistics
    assert (lo, hi) == (ordered[0], ordered[6])
    assert s.interval == (lo, hi, True)
    assert s.between == pytest.approx((1.3e-6 - 0.9e-6) / 2 / 1.05e-6)
    assert s.within == pytest.approx(0.005)
    assert s.spread_ratio > 30
    assert by_size[1024].between == 0  # every launch gave the same median
    doc = group_json(group)
    assert doc["seeds"] == list(range(40, 47)) and len(doc["points"]) == 2
    assert doc["points"][0]["interval"] == "95% order statistics"


def test_a_few_launches_give_their_range_and_a_point_missing_from_one_is_left_out(tmp_path):
    path = tmp_path / "g.h5"
    _group(path, [{8: 1e-6, 64: 1e-6}, {8: 2e-6}, {8: 1.5e-6, 64: 1e-6}])
    (group,) = groups(load_runs(str(path)))
    (s,) = spreads(group)
    assert s.point["bytes"] == 8 and s.interval == (1e-6, 2e-6, False) and s.median == 1.5e-6
    (agg,) = aggregated_points(group)
    assert (agg["median_s"], agg["ci_low_s"], agg["ci_high_s"], agg["launches"]) == (1.5e-6, 1e-6, 2e-6, 3)
    assert agg["busbw_gbps"] == pytest.approx(make_point(0, 8, 1.5e-6)["busbw_gbps"])


def test_compare_holds_a_difference_against_the_between_launch_interval(tmp_path):
    """Each launch of B is 10% faster than the launch of A beside it, with ±0.5% within a launch: one
    launch against one is inside the drift floor (1.45×), though its intervals are apart; the groups,
    whose launches spread ±30%, hold it against that spread (Welch's t on the log launch medians) and
    do not call it either; 2.5× stands out against both."""
    from fabricprobe.report.compare import DRIFT_FLOOR, LAUNCH_GROUPS, SINGLE_LAUNCHES

    a_meds = [1.0e-6, 1.3e-6, 0.8e-6, 1.1e-6, 0.9e-6]
    _group(tmp_path / "a.h5", [{8: m} for m in a_meds], name="A")
    _group(tmp_path / "b.h5", [{8: 0.9 * m} for m in a_meds], name="B")
    one = compare(parse_side(f"{tmp_path}/a.h5:1", True), parse_side(f"{tmp_path}/b.h5:1", True))
    assert one.rule == SINGLE_LAUNCHES and one.rows[0].speedup == pytest.approx(1 / 0.9)
    assert not one.rows[0].significant and f"{DRIFT_FLOOR:.2f}×" in one.rule_line()
    _group(tmp_path / "d.h5", [{8: m / (DRIFT_FLOOR * 1.01)} for m in a_meds], name="D")
    beyond = compare(parse_side(f"{tmp_path}/a.h5:1", True), parse_side(f"{tmp_path}/d.h5:1", True))
    assert beyond.rows[0].significant  # just past the floor, intervals apart
    both = compare(parse_side(f"{tmp_path}/a.h5:1"), parse_side(f"{tmp_path}/b.h5:1"))
    assert "5 launches" in both.a.label and both.rule == LAUNCH_GROUPS and not both.rows[0].significant
    assert both.rows[0].a["median_s"] == pytest.approx(1.0e-6)
    # a difference larger than the launches' spread stands out against it too
    _group(tmp_path / "c.h5", [{8: 0.4 * m} for m in a_meds], name="C")
    far = compare(parse_side(f"{tmp_path}/a.h5"), parse_side(f"{tmp_path}/c.h5"))
    assert far.rows[0].significant and far.rows[0].speedup == pytest.approx(2.5)


def _runs(path, medians: list[float]) -> None:
    """One run per value, no launch group: sweeps run one by one (e.g. interleaved with another's)."""
    w = ResultsWriter(str(path))
    for m in medians:
        w.start_run({"nranks": 2, "mpi_vendor": "Open MPI", "topology": "1 × 2 ranks"})
        w.append_point(make_point(0, 8, m, noise=0.005), None)
        w.update_run({"status": "complete"})
    w.close()


def test_every_run_of_a_file_is_one_side_of_launches(tmp_path):
    """FILE:* takes every run as a launch: 8 runs a side, B 30% slower in each with a ±10% drift
    between runs, is found (Welch's t on the log run medians); B as A is not; a single run of each
    is held against the drift floor and does not find 30%."""
    from fabricprobe.report.compare import LAUNCH_GROUPS, SINGLE_LAUNCHES

    drift = [1.0, 1.1, 0.9, 1.05, 0.95, 1.08, 0.92, 1.0]
    _runs(tmp_path / "a.h5", [1e-6 * d for d in drift])
    _runs(tmp_path / "b.h5", [1.3e-6 * d for d in reversed(drift)])
    _runs(tmp_path / "same.h5", [1e-6 * d for d in reversed(drift)])
    found = compare(parse_side(f"{tmp_path}/a.h5:*"), parse_side(f"{tmp_path}/b.h5:*"))
    assert found.rule == LAUNCH_GROUPS and "8 runs as launches" in found.a.label and found.rows[0].significant
    same = compare(parse_side(f"{tmp_path}/a.h5:*"), parse_side(f"{tmp_path}/same.h5:*"))
    assert not same.rows[0].significant
    single = compare(parse_side(f"{tmp_path}/a.h5:1"), parse_side(f"{tmp_path}/b.h5:1"))
    assert single.rule == SINGLE_LAUNCHES and not single.rows[0].significant


LAUNCHER = launcher()
needs_mpi = pytest.mark.skipif(LAUNCHER is None, reason="needs an MPI wheel's mpiexec")


@pytest.mark.process
@needs_mpi
def test_sweep_launches_k_runs_with_their_seeds_and_reports_the_group(tmp_path):
    out = tmp_path / "l.h5"
    args = ["sweep", "--launches", "2", "-n", "2", "-o", str(out), "--mpiexec", LAUNCHER.mpiexec]
    args += ["--collectives", "allreduce,bcast", "--sizes", "8,64,1K", "--iters", "20", "--max-time", "0.05"]
    args += ["--seed", "11"]
    done = run_local(args, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = load_runs(str(out))
    assert len(runs) == 2
    configs = [r.config for r in runs]
    assert [c["seed"] for c in configs] == [11, 12] and {c["order"] for c in configs} == {"random"}
    assert len({c["launch_group"] for c in configs}) == 1 and [c["launch_index"] for c in configs] == [0, 1]
    assert "launch group" in done.stdout and "between / within" in done.stdout
    for run in runs:
        # each launch stands alone: its points, in the order its stored seed gives back
        config = SweepConfig.from_dict(run.config).check()
        planned, _ = make_plan(config, _topo([2]), [])
        measured = sorted((p for p in run.points if p["collective"] != "empty"), key=lambda p: p["started_unix"])
        assert [p["key"] for p in measured] == [p.key for p in planned if p.collective != "empty"]
        assert all(p["status"] == "ok" for p in measured)
    shown = run_local(["report", str(out), "--run", runs[1].id])
    assert shown.returncode == 0 and "launch group" in shown.stdout
    doc = json.loads(run_local(["report", str(out), "--format", "json"]).stdout)
    (group,) = doc["launch_groups"]
    assert group["seeds"] == [11, 12] and len(group["points"]) == 6
    assert all(math.isfinite(p["between_rel"]) for p in group["points"])
    compared = run_local(["compare", f"{out}:1", f"{out}:2", "--one-launch"])
    assert compared.returncode == 0 and "(2 launches)" not in compared.stdout
    grouped = json.loads(run_local(["compare", f"{out}:1", f"{out}:2", "--format", "json"]).stdout)
    assert (grouped["a_launches"], grouped["b_launches"]) == (2, 2)


@pytest.mark.process
@needs_mpi
def test_a_random_order_without_a_seed_draws_one_on_rank_0_and_records_it(tmp_path):
    """Every rank must measure the same order: rank 0 draws the seed, the run stores it, and the
    measured order is the one the stored seed gives back."""
    out = tmp_path / "r.h5"
    args = ["sweep", "--order", "random", "-o", str(out), "--collectives", "allreduce,bcast"]
    done = run_mpi(2, args + ["--sizes", "8,64,1K,8K", "--iters", "20", "--max-time", "0.05", "--quiet"])
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = load_runs(str(out))
    config = SweepConfig.from_dict(run.config).check()
    assert config.order == "random" and 0 <= config.seed < 2**32 and not config.launch_group
    planned, _ = make_plan(config, _topo([2]), [])
    measured = sorted((p for p in run.points if p["collective"] != "empty"), key=lambda p: p["started_unix"])
    assert [p["key"] for p in measured] == [p.key for p in planned if p.collective != "empty"]


@pytest.mark.process
def test_launches_refuse_to_run_under_a_launcher(tmp_path):
    env = {**mpi_env(), "PMI_SIZE": "2", "PMI_RANK": "0"}  # what a rank of MPICH's hydra sees
    argv = [sys.executable, "-m", "fabricprobe", "sweep", "--launches", "2", "-n", "2"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "outside mpiexec" in done.stderr, done.stderr
