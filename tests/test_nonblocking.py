"""Non-blocking (i<coll>) and persistent (<coll>_persistent) collectives (issue 35): each is its
blocking twin's spec with the call derived from the twin's, validated like it, and the non-blocking
ones' overlap with computation measured as OMB measures it (engine/overlap.py)."""

from __future__ import annotations

import numpy as np
import pytest
from batch import Case, run_batch
from mpirun import more_ranks_than_cores

from fabricprobe.engine.overlap import measure_overlap, percent
from fabricprobe.report.export import osu_header, osu_nbc_row
from fabricprobe.specs import SPECS
from fabricprobe.store import load_runs

BLOCKING = [
    n
    for n, s in SPECS.items()
    if s.family == "collective" and not (s.nonblocking or s.persistent or getattr(s, "even", False))
]
NONBLOCKING = [n for n, s in SPECS.items() if s.nonblocking]
PERSISTENT = [n for n, s in SPECS.items() if s.persistent]


def test_every_blocking_collective_has_both_twins_with_its_facts():
    assert NONBLOCKING == ["i" + n for n in BLOCKING]
    assert PERSISTENT == [n + "_persistent" for n in BLOCKING if n != "reduce_scatter"]  # OMB has none
    assert all(len(n) <= 24 for n in SPECS)  # the schema's collective field
    for name in NONBLOCKING + PERSISTENT:
        spec = SPECS[name]
        twin = spec.blocking
        assert spec.layout(4000, 4, 3) == twin.layout(4000, 4, 3) and spec.busbw_factor(5) == twin.busbw_factor(5)
        assert (spec.rooted, spec.reduces, spec.sized, spec.in_place_supported) == (
            twin.rooted,
            twin.reduces,
            twin.sized,
            twin.in_place_supported,
        )
        assert spec.osu_title and not spec.default_sweep and spec.vendor is None


def test_mpi4py_has_every_derived_call():
    """The derived names are mpi4py's (Iallreduce, Reduce_scatter_block_init, ...), so a spec never
    names a call that does not exist."""
    from mpi4py import MPI

    for name in BLOCKING:
        method = {"reduce_scatter": "Reduce_scatter_block"}.get(name, name.capitalize())
        assert hasattr(MPI.Intracomm, "I" + method.lower()), name
        assert hasattr(MPI.Intracomm, method + "_init"), name


def test_the_library_names_them_as_it_selects_them():
    from fabricprobe.engine.served import api_name

    assert [api_name(c, "Open MPI") for c in ("iallreduce", "ireduce_scatter", "gatherv_persistent")] == [
        "iallreduce",
        "ireduce_scatter_block",
        "gatherv_init",
    ]
    assert [api_name("alltoallv_even", v) for v in ("Open MPI", "MPICH")] == ["alltoallv", "ALLTOALLV"]  # same call
    # MPICH makes a persistent collective from the non-blocking one's schedule
    assert [api_name(c, "MPICH") for c in ("iallreduce", "allreduce_persistent")] == ["IALLREDUCE", "IALLREDUCE"]


@pytest.mark.parametrize(
    "overall, compute, pure, expected",
    [(10.0, 10.0, 5.0, 100.0), (15.0, 10.0, 5.0, 0.0), (12.0, 10.0, 4.0, 50.0), (30.0, 10.0, 5.0, 0.0)],
)
def test_the_overlap_is_omb_s(overall, compute, pure, expected):
    """100%: the collective finished behind the computation; 0%: it progressed only in the wait (or
    slowed the computation down): never negative."""
    assert percent(overall, compute, pure) == pytest.approx(expected)
    row = osu_nbc_row(True, 8, overall, compute, pure)
    assert row.split() == ["8", f"{overall:.2f}", f"{compute:.2f}", f"{pure:.2f}", f"{expected:.2f}"]
    assert osu_header("iallreduce").split()[-1] == "Overlap(%)"


class _Comm:
    """One rank: bcast and Gather as a communicator of one would do them."""

    rank, size = 0, 1

    def bcast(self, value, root=0):
        return value

    def Gather(self, send, recv, root=0):
        recv[0] = send


def test_the_overlap_takes_the_slowest_rank_s_medians_and_the_point_s_time():
    asked = []

    def make(seconds):
        asked.append(seconds)

        def batch(out, out_compute):  # the collective finishes 1 µs after a 4 µs computation
            out_compute.fill(4e-6)
            out.fill(5e-6)

        return batch

    found = measure_overlap(make, _Comm(), 4e-6, 1000)
    assert asked == [4e-6]
    assert found.overall_s == pytest.approx(5e-6) and found.compute_s == pytest.approx(4e-6)
    assert found.percent == pytest.approx(75.0)


NB_SOME = "iallreduce,ibcast,ireduce,iallgather,ialltoall,ireduce_scatter,igatherv,iscatterv,ibarrier"
PERSISTENT_SOME = "allreduce_persistent,bcast_persistent,alltoallv_persistent,barrier_persistent"


def _against_the_library(n: int, timer: str) -> Case:
    sizes = ",".join(str(c * 8 * n) for c in (0, 1, n, n + 1, 1 << 14))
    args = ["sweep", "-o", "{out}", "--collectives", f"{NB_SOME},{PERSISTENT_SOME}", "--timer", timer]
    args += ["--sizes", sizes, "-d", "float32,int64", "--in-place", "both", "--iters", "6", "--warmup", "1"]
    return Case(args + ["--max-time", "0.1", "--progress", "none", "--quiet"])


def _short(collective: str, sizes: str, env: dict | None = None) -> Case:
    args = ["sweep", "-o", "{out}", "--collectives", collective, "--sizes", sizes, "--iters", "10"]
    return Case(args + ["--max-time", "0.1", "--progress", "none", "--quiet"], env or {})


PLANTED = ["iallreduce", "igatherv", "allreduce_persistent"]
# Every sweep of this module, by rank count: one launch each (tests/batch.py).
CASES = {
    1: {"library-native": _against_the_library(1, "native")},
    2: {
        "library-python": _against_the_library(2, "python"),
        "library-native": _against_the_library(2, "native"),
        "overlap": _short("iallreduce", "8,64K"),
        **{f"planted-{c}": _short(c, "8,4K", {"FABRICPROBE_FAULT_WRONG": f"{c}:1"}) for c in PLANTED},
    },
    3: {"library-native": _against_the_library(3, "native")},
    5: {"library-python": _against_the_library(5, "python")},
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


@pytest.mark.process
@pytest.mark.parametrize("n,timer", [(1, "native"), (2, "python"), (2, "native"), (3, "native"), (5, "python")])
def test_non_blocking_and_persistent_against_the_library(n, timer, sweep):
    """Validated like their blocking twins (counts 0, 1, p, p+1 and 16 Ki a rank, two datatypes on
    reused buffers, in place and not), and the non-blocking ones carry an overlap measurement: the
    computation as long as the point's median, the whole at least that."""
    if n > 2 and not more_ranks_than_cores():
        pytest.skip("MPICH busy-polls")
    out = sweep(n, f"library-{timer}")
    assert out.returncode == 0, out.stderr[-3000:]
    points = [p for p in load_runs(str(out.results))[-1].points if p["collective"] != "empty"]
    assert {p["collective"] for p in points} == set(f"{NB_SOME},{PERSISTENT_SOME}".split(","))
    assert all(p["status"] == "ok" and p["wrong"] == 0 for p in points), [p["key"] for p in points if p["wrong"]]
    assert any(p["in_place"] for p in points) and {p["timer"] for p in points} == {timer}
    # MPICH names each persistent request never freed, at MPI_Finalize (the specs release them)
    assert "persistent request" not in out.stderr + out.job_stderr
    if n > 1 and "libnbc" in {p["served_by"] for p in points}:  # Open MPI: libnbc serves them all
        assert {p["served_by"] for p in points} == {"libnbc"}
    for p in points:
        if SPECS[p["collective"]].nonblocking:
            assert p["overall_s"] >= p["compute_s"] > 0 and 0 <= p["overlap_pct"] <= 100, p["key"]
            assert p["compute_s"] >= 0.9 * p["median_s"], p["key"]  # the computation lasted the pure time
        else:
            assert p["overall_s"] == p["compute_s"] == p["overlap_pct"] == 0


@pytest.mark.process
@pytest.mark.parametrize("collective", PLANTED)
def test_a_planted_wrong_result_is_caught(collective, sweep):
    out = sweep(2, f"planted-{collective}")
    assert out.returncode == 1, out.stderr[-2000:]
    points = [p for p in load_runs(str(out.results))[-1].points if p["collective"] == collective]
    assert points and all(p["status"] == "wrong" and p["wrong"] >= 1 for p in points)


@pytest.mark.process
def test_the_report_and_the_osu_export_show_the_overlap(sweep):
    out = sweep(2, "overlap")
    assert out.returncode == 0, out.stderr[-2000:]
    results = out.results
    from mpirun import run_local

    shown = run_local(["report", str(results), "--collectives", "iallreduce"])
    assert "overlap" in shown.stdout and "overall" in shown.stdout and "compute" in shown.stdout, shown.stdout
    osu = run_local(["report", str(results), "--format", "osu"]).stdout
    assert "# OSU MPI Non-blocking Allreduce Latency Test v7.4" in osu
    block = osu.split("Non-blocking Allreduce Latency Test")[1].split("\n\n")[0]
    rows = [line.split() for line in block.splitlines()[1:] if line and not line.startswith("#")]
    assert [r[0] for r in rows] == ["8", "65536"] and all(len(r) == 5 for r in rows)
    for r in rows:
        overall, compute, pure, overlap = map(float, r[1:])
        # the three times are printed to 0.01 µs: each off by up to 0.005, and the overlap to 0.01%
        rounding = 100 * (0.01 / pure + abs(overall - compute) * 0.005 / pure**2) + 0.01
        assert overlap == pytest.approx(max(0.0, 100 - (overall - compute) / pure * 100), abs=rounding)
    assert np.isfinite([float(x) for r in rows for x in r]).all()
