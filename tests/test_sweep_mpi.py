"""Real sweeps under mpiexec: every collective and test runs, validates and lands in the file."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from batch import Case, run_batch
from mpirun import run_local, run_mpi

from fabricprobe.specs import SPECS
from fabricprobe.store import load_runs
from fabricprobe.store.schema import POINT_DTYPE

pytestmark = pytest.mark.mpi

SMALL = [
    "--sizes",
    "0,8,1K,64K",
    "--iters",
    "30",
    "--warmup",
    "3",
    "--max-time",
    "0.2",
    "--progress",
    "plain",
    "--quiet",
]
COLLECTIVES = ["allreduce", "reduce", "bcast", "allgather", "reduce_scatter", "alltoall", "barrier"]


def _measured(run):
    return [p for p in run.points if p["collective"] != "empty"]


OMB_ROOTED_AND_VECTOR = (
    "gather,scatter,gatherv,scatterv,allgatherv,alltoallv,gatherv_even,scatterv_even,allgatherv_even,alltoallv_even"
)
TIMERS = {"allreduce": [*SMALL, "--collectives", "allreduce", "--sizes", "8", "--iters", "200", "--ci-target", "0"]}


def _every_collective() -> Case:
    return Case(["sweep", "-o", "{out}", *SMALL, "-d", "float32,int64", "--ops", "sum,max"])


def _vector_forms(n: int, timer: str) -> Case:
    sizes = ",".join(str(c * 8 * n) for c in (0, 1, n - 1, n, n + 1, 1 << 16))
    args = ["sweep", "-o", "{out}", "--collectives", OMB_ROOTED_AND_VECTOR, "--timer", timer]
    return Case(args + [*SMALL, "--sizes", sizes, "-d", "float32,int64"])


def _multi_pair(n: int) -> Case:
    args = ["sweep", "-o", "{out}", "--collectives", "mbw_mr,multi_lat", "--pairs", "intra", *SMALL]
    return Case(args + (["--ranks-per-node", "2"] if n == 4 else []))


ROOTED = [name for name, spec in SPECS.items() if spec.rooted]


def _rooted(root: int) -> Case:
    """Every rooted collective (blocking, non-blocking, persistent) at another root than 0: a library
    call that ignored its root passed every test (issue 53: no test ran one at a root other than 0)."""
    sizes = ["--sizes", "0,8,1K", "--iters", "10", "--warmup", "1", "--max-time", "0.05"]
    return Case(["sweep", "-o", "{out}", "--collectives", ",".join(ROOTED), "--root", str(root), *sizes, "--quiet"])


# Every sweep of this module that needs no job of its own, by rank count: one launch each (tests/batch.py).
CASES = {
    1: {"every": _every_collective(), "vector-native": _vector_forms(1, "native")},
    2: {
        "every": _every_collective(),
        "schema": Case(["sweep", "-o", "{out}", *SMALL, "--collectives", "allreduce,latency"]),
        "modes": Case(
            ["sweep", "-o", "{out}", *SMALL, "--collectives", "allreduce,allgather", "--mode", "barrier,loop"]
            + ["--timer", "python", "--in-place", "both"]
        ),
        "floor": Case(["sweep", "-o", "{out}", *SMALL, "--collectives", "barrier"]),
        "timer-native": Case(["sweep", "-o", "{out}", *TIMERS["allreduce"], "--timer", "native"]),
        "timer-python": Case(["sweep", "-o", "{out}", *TIMERS["allreduce"], "--timer", "python"]),
        "plain-progress": Case(["sweep", "-o", "{out}", "--collectives", "barrier", "--iters", "10", "--quiet"]),
        "vector-python": _vector_forms(2, "python"),
        "vector-native": _vector_forms(2, "native"),
        "multi-pair": _multi_pair(2),
    },
    3: {
        "every": _every_collective(),
        "vector-native": _vector_forms(3, "native"),
        "root-1": _rooted(1),
        "root-2": _rooted(2),
    },
    4: {
        "every": _every_collective(),
        "root-2": _rooted(2),
        "root-3": _rooted(3),
        "multi-pair": _multi_pair(4),
        "side-by-side": Case(
            ["sweep", "-o", "{out}", "--sizes", "8,64K", "--iters", "20", "--warmup", "2", "--max-time", "0.2"]
            + ["--algorithms", "all", "--ranks-per-node", "2", "--progress", "none"]
            + ["--collectives", "allreduce,bcast,allgather,reduce_scatter,reduce,latency"]
        ),
    },
    5: {"vector-python": _vector_forms(5, "python")},
    9: {"vector-native": _vector_forms(9, "native")},
}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """sweep(n, name): the outcome of case `name` of CASES[n], all of that rank count run at its first use."""
    done = {}

    def outcome(n: int, name: str):
        if n not in done:
            done[n] = run_batch(n, CASES[n], tmp_path_factory.mktemp(f"n{n}"))
        return done[n][name]

    return outcome


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_sweep_every_collective(n, sweep):
    out = sweep(n, "every")
    assert out.returncode == 0, out.stderr
    run = load_runs(str(out.results))[-1]
    assert run.status == "complete" and run.attrs["nranks"] == n
    points = _measured(run)
    seen = {p["collective"] for p in points}
    assert set(COLLECTIVES) <= seen
    assert ({"latency", "bw", "bibw"} <= seen) == (n >= 2)
    assert all(p["status"] == "ok" and p["wrong"] == 0 for p in points)
    assert all(p["nranks"] == n and p["iterations"] >= 10 for p in points)
    # every non-empty validated point checked elements on some rank
    assert all(p["checked"] > 0 for p in points if p["count"] > 0 and p["collective"] != "barrier")
    # the point table and raw samples agree
    for p in points[:10]:
        samples = run.samples(p["index"])
        assert samples.shape == (p["iterations"], n)
        per_iter = np.nanmax(samples, axis=1)
        assert p["median_s"] == pytest.approx(np.median(per_iter))
        assert p["min_s"] <= p["median_s"] <= p["max_s"]
    reductions = {(p["dtype"], p["op"]) for p in points if p["collective"] == "allreduce"}
    assert reductions == {("float32", "sum"), ("float32", "max"), ("int64", "sum"), ("int64", "max")}


@pytest.mark.parametrize("n,root", [(3, 1), (3, 2), (4, 2), (4, 3)])  # ⌊p/2⌋ and p - 1; root 0 above
def test_every_rooted_collective_at_another_root(n, root, sweep):
    out = sweep(n, f"root-{root}")
    assert out.returncode == 0, out.stderr
    run = load_runs(str(out.results))[-1]
    points = _measured(run)
    assert run.config["root"] == root and {p["collective"] for p in points} == set(ROOTED)
    assert all(p["status"] == "ok" and p["wrong"] == 0 for p in points), [p for p in points if p["wrong"]]
    assert all(p["checked"] > 0 for p in points if p["count"] > 0)


def test_without_mpiexec_runs_what_makes_sense(results):
    out = run_local(["sweep", "-o", str(results), *SMALL, "--collectives", "allreduce,latency"])
    assert out.returncode == 0, out.stderr
    assert "no mpiexec" in out.stderr
    run = load_runs(str(results))[-1]
    assert {p["collective"] for p in _measured(run)} == {"allreduce"}
    assert any("point-to-point tests need at least 2 ranks" in note for note in run.attrs["notes"])


def test_schema_and_provenance(sweep):
    out = sweep(2, "schema")
    assert out.returncode == 0, out.stderr
    with h5py.File(out.results, "r") as f:
        run = f["runs/0001"]
        assert run["points"].dtype == POINT_DTYPE
        for key in (
            "fabricprobe_version",
            "mpi_library_version",
            "mpi_vendor",
            "mpi4py_version",
            "thread_level_requested",
            "thread_level_provided",
            "hosts",
            "nnodes",
            "ranks_per_node",
            "oversubscribed",
            "command_line",
            "started",
            "ended",
            "environment",
            "wtick_s",
            "config",
        ):
            assert key in run.attrs, key
        assert run.attrs["thread_level_requested"] == "single"
        assert run.attrs["thread_level_provided"] == "single"
        assert run.attrs["mpi_vendor"] in ("MPICH", "Open MPI")
        assert len(run["samples"]) == run["points"].shape[0]
        assert 20 < run.attrs["rank0_peak_rss_mib"] <= run.attrs["peak_rss_mib"] < 4096


def test_modes_timers_and_in_place(sweep):
    out = sweep(2, "modes")
    assert out.returncode == 0, out.stderr
    points = _measured(load_runs(str(out.results))[-1])
    assert {(p["mode"], p["in_place"]) for p in points} == {(m, i) for m in ("barrier", "loop") for i in (False, True)}
    assert {p["timer"] for p in points} == {"python"}
    assert all(p["wrong"] == 0 for p in points)


def test_harness_floor_is_recorded(sweep):
    out = sweep(2, "floor")
    assert out.returncode == 0, out.stderr
    floors = {p["algorithm"]: p for p in load_runs(str(out.results))[-1].points if p["collective"] == "empty"}
    assert "python" in floors
    for p in floors.values():  # an empty loop's median: about a microsecond, 10 ms whatever the load
        assert 0 < p["median_s"] < 1e-2


def test_native_and_python_timers_agree_on_results(sweep):
    """The two timing paths call the same MPI function: each is the one recorded, each ran its
    iterations, and both results were checked and found right (their speeds are compared in
    docs/performance.md, never asserted: timings here are noisy)."""
    outs = [sweep(2, "timer-native"), sweep(2, "timer-python")]
    assert all(out.returncode == 0 for out in outs), [out.stderr for out in outs]
    native, python = (_measured(load_runs(str(out.results))[-1])[0] for out in outs)
    assert native["timer"] == "native" and python["timer"] == "python"
    for p in (native, python):
        assert p["status"] == "ok" and p["wrong"] == 0 and p["checked"] > 0 and p["iterations"] >= 200
        assert p["median_s"] > 0 and p["min_s"] <= p["median_s"] <= p["max_s"]


def test_rich_progress_bar_when_launched_from_a_terminal(tmp_path):
    """mpiexec pipes rank output, so rank 0 must find the terminal through its launcher."""
    import shlex

    from mpirun import fabricprobe_argv, need_ranks, run_in_terminal

    found = need_ranks(2)
    cmd = (
        found.argv(2)
        + fabricprobe_argv()
        + ["sweep", "-o", str(tmp_path / "r.h5"), "--collectives", "barrier", "--iters", "10", "--quiet"]
    )
    out = run_in_terminal(shlex.join(cmd))
    assert out.returncode == 0, out.stdout
    assert "━" in out.stdout and "3/3" in out.stdout


def test_plain_progress_when_not_on_a_terminal(sweep):
    out = sweep(2, "plain-progress")
    assert out.returncode == 0
    assert "[3/3] barrier:" in out.stderr and "━" not in out.stderr


def test_algorithms_side_by_side_on_a_virtual_topology(sweep):
    out = sweep(4, "side-by-side")
    assert out.returncode == 0, out.stderr
    shown = run_local(["report", str(out.results)]).stdout  # the sweep itself ends with its summary
    assert "algorithms side by side" in shown and "virtual nodes" in shown
    run = load_runs(str(out.results))[-1]
    points = _measured(run)
    assert all(p["status"] == "ok" and p["wrong"] == 0 for p in points)
    allreduce = {p["algorithm"] for p in points if p["collective"] == "allreduce"}
    assert {
        "library",
        "ring",
        "rabenseifner",
        "recursive_doubling",
        "binomial",
        "hierarchical",
        "hierarchical_rab",
        "hierarchical_rd",
        "single_leader",
    } <= allreduce
    assert {p["pair"] for p in points if p["collective"] == "latency"} == {"intra", "inter"}
    assert run.attrs["virtual_topology"] is True and run.attrs["rank_nodes"] == [0, 0, 1, 1]


@pytest.mark.parametrize(
    "n,timer", [(1, "native"), (2, "python"), (2, "native"), (3, "native"), (5, "python"), (9, "native")]
)
def test_gather_scatter_and_the_vector_forms_against_the_library(n, timer, sweep):
    """The six OMB/IMB collectives the registry added (issue 35) on the library: counts 0, 1, p−1, p,
    p+1 and 64 Ki elements a rank, float32 and int64 on the same reused buffers, every rank validated
    (vector blocks uneven and gapped, the gaps and non-roots' buffers untouched), served_by recorded."""
    out = sweep(n, f"vector-{timer}")
    assert out.returncode == 0, out.stderr
    points = _measured(load_runs(str(out.results))[-1])
    assert {p["collective"] for p in points} == set(OMB_ROOTED_AND_VECTOR.split(","))
    assert all(p["status"] == "ok" and p["wrong"] == 0 for p in points), [p for p in points if p["wrong"]]
    assert all(p["checked"] > 0 for p in points if p["count"] > 1 or (p["count"] and n == 1))
    assert n == 1 or all(p["served_by"] for p in points)


def test_the_default_sweep_leaves_the_omb_extras_out_and_all_names_them():
    from fabricprobe.engine.config import GROUPS, SweepConfig

    assert not set(OMB_ROOTED_AND_VECTOR.split(",")) & set(SweepConfig().collectives)
    assert set(OMB_ROOTED_AND_VECTOR.split(",")) <= set(GROUPS["all"]) & set(GROUPS["collectives"])


@pytest.mark.parametrize("n", [2, 4])
def test_multi_pair_latency_and_bandwidth(n, sweep):
    """osu_multi_lat and osu_mbw_mr (issue 35): every pair r, r + n/2 at once whatever --pairs says (at
    4 ranks on 2 virtual nodes, so each pair crosses), validated on every receiving rank; mbw_mr's busbw
    is the pairs' aggregate and its OSU export OMB's MB/s and Messages/s."""
    out = sweep(n, "multi-pair")
    assert out.returncode == 0, out.stderr
    results = out.results
    points = _measured(load_runs(str(results))[-1])
    assert {p["collective"] for p in points} == {"mbw_mr", "multi_lat"} and {p["pair"] for p in points} == {"all"}
    assert all(p["status"] == "ok" and p["wrong"] == 0 for p in points)
    for p in points:
        receivers = n if p["collective"] == "multi_lat" else n // 2
        assert p["checked"] == receivers * p["count"] * 2  # the first call and the steady state, every receiver
    assert {p["busbw_factor"] for p in points if p["collective"] == "mbw_mr"} == {float(n // 2)}
    osu = run_local(["report", str(results), "--format", "osu"]).stdout
    assert "# OSU MPI Multiple Bandwidth / Message Rate Test v7.4" in osu and "Messages/s" in osu
    rate_rows = osu.split("Messages/s")[1].split("\n#")[0].strip().splitlines()
    for line in rate_rows:  # both columns are printed to 0.01, so the check allows what that rounding can move
        size, mbs, rate = line.split()
        if int(size):
            assert float(rate) == pytest.approx(float(mbs) * 1e6 / int(size), abs=0.005e6 / int(size) + 0.005)


def test_the_start_up_is_recorded_as_osu_init_measures_it(results):
    """MPI_Init's time on every rank (MPI_Init_thread alone, as osu_init times it) and the time to the
    end of the job's first barrier (issue 35): in the run, the report's header and OMB's text."""
    out = run_mpi(2, ["sweep", "-o", str(results), *SMALL, "--collectives", "barrier"])
    assert out.returncode == 0, out.stderr
    startup = load_runs(str(results))[-1].attrs["startup"]
    init, first = startup["init_ms"], startup["first_collective_ms"]
    assert len(init) == len(first) == 2 and all(0 < i <= f for i, f in zip(init, first))
    shown = run_local(["report", str(results)]).stdout
    assert "MPI start-up: MPI_Init" in shown and "first barrier" in shown
    osu = run_local(["report", str(results), "--format", "osu"]).stdout.splitlines()
    assert osu[1].startswith("# OSU MPI Init Test v7.4")
    assert osu[2] == (
        f"nprocs: 2, min: {int(min(init))} ms, max: {int(max(init))} ms, avg: {int(sum(int(x) for x in init) / 2)} ms"
    )
