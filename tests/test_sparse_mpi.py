"""Every sparse allreduce algorithm against its definition under mpiexec: p = 1..9 and uneven
virtual topologies; and the sparse sweep end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mpirun import checker_reports, launcher, need_ranks, run_local, run_mpi

from fabricprobe.store import load_runs

pytestmark = pytest.mark.mpi
DRIVER = str(Path(__file__).parent / "drivers" / "check_sparse.py")


def _run(n: int, *args: str) -> dict:
    out = run_mpi(n, [], python_args=[DRIVER, *args], timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["nranks"] == n and report["checked"] >= 80
    return report


def test_the_checker_catches_a_wrong_algorithm():
    report = _run(2, "--plant-fault")
    assert report["nfailures"] > 0 and all("planted_fault" in f for f in report["failures"])


def test_the_checker_catches_an_algorithm_that_adds_onto_a_reused_result():
    """Right on a fresh result object, wrong on the one a trainer hands it again: the checker reuses
    one per n, soiled, as trainers/sparse_dp.py does."""
    report = _run(3, "--plant-fault", "adds-onto-result")
    assert report["nfailures"] > 0 and all("planted_fault" in f for f in report["failures"])
    assert any("n=8000" in f for f in report["failures"])


@pytest.fixture(scope="module")
def each_size():
    """p = 1..9 in one job of 9 ranks (tests/drivers/each_size.py: a communicator of the first p ranks
    each time), or up to the ranks this MPI runs here; {p: report}."""
    most = max(p for p in range(1, 10) if p <= (launcher().max_ranks if launcher() else 1))
    return checker_reports(most, [DRIVER, "--each", ",".join(map(str, range(1, most + 1)))])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 9])
def test_sparse_algorithms_match_their_definition(n, each_size):
    need_ranks(n)
    report = each_size[n]
    assert report["checked"] >= 400
    assert report["nfailures"] == 0, "\n".join(report["failures"])


TOPOLOGIES = [(8, "3,3,2"), (5, "2,3"), (8, "4")]


@pytest.fixture(scope="module")
def on_topologies():
    """Every virtual topology in one job of 8 ranks (each on a communicator of its size); {(p, layout): report}."""
    cases = ";".join(f"{n}={layout}" for n, layout in TOPOLOGIES)
    return checker_reports(8, [DRIVER, "--layouts", cases], lambda r: (r["nranks"], r["layout"]))


@pytest.mark.parametrize("n,layout", TOPOLOGIES)
def test_sparse_algorithms_on_virtual_topologies(n, layout, on_topologies):
    report = on_topologies[(n, layout)]
    assert report["nfailures"] == 0, "\n".join(report["failures"])


def test_sparse_sweep(results):
    out = run_mpi(
        2,
        [
            "sweep",
            "-o",
            str(results),
            "--collectives",
            "sparse",
            "--sizes",
            "4K,256K",
            "--density",
            "0.001,0.01,1",
            "--iters",
            "20",
            "--warmup",
            "2",
            "--max-time",
            "0.2",
            "--progress",
            "none",
        ],
    )
    assert out.returncode == 0, out.stderr
    assert "sparse_allreduce" in out.stdout  # the summary a sweep ends with; its table is the report's
    assert "sparse allreduce against the library's dense allreduce" in run_local(["report", str(results)]).stdout
    points = [p for p in load_runs(str(results))[-1].points if p["collective"] != "empty"]
    assert all(p["status"] == "ok" and p["wrong"] == 0 for p in points)
    sparse = [p for p in points if p["collective"] == "sparse_allreduce"]
    assert {p["algorithm"] for p in sparse} == {
        "topk_allgather",
        "gtopk",
        "sparcml",
        "sparse_hier_leader",
        "sparse_hier_index",
    }
    assert {p["density"] for p in sparse} == {0.001, 0.01, 1.0}
    assert all(p["bytes_sent"] > 0 and p["result_nnz"] >= 0 for p in sparse)
    low = next(p for p in sparse if p["algorithm"] == "gtopk" and p["density"] == 0.01 and p["bytes"] == 262144)
    high = next(p for p in sparse if p["algorithm"] == "gtopk" and p["density"] == 1.0 and p["bytes"] == 262144)
    assert low["bytes_sent"] * 50 < high["bytes_sent"]  # 100× fewer pairs: far fewer bytes
    assert any(p["collective"] == "allreduce" and p["algorithm"] == "library" for p in points)
    assert {p["algorithm"] for p in points if p["collective"] == "topk_local"} == {"numba", "argpartition"}
