"""Every hand-written algorithm equals the MPI library's result: p = 1..9 and 16, counts 0, 1,
p−1, p, p+1 (every dtype and op) and a large count (float32 and float64), in place and not, and
virtual topologies 2×4, 4×2, 3+3+2 and 2+3.

The large count is 2^17 + 1 elements (odd: no even split among ranks; 0.5 and 1 MiB, past the
caches), and 2^20 at p = 8: no algorithm has a path that depends on the size, and at 2^20 everywhere
the large cases took 55% of this module's time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mpirun import checker_reports, launcher, need_ranks, run_mpi

pytestmark = pytest.mark.mpi
DRIVER = str(Path(__file__).parent / "drivers" / "check_algorithms.py")
HIERARCHICAL = "hierarchical,hierarchical_rab,hierarchical_rd,single_leader"


LARGE = 1 << 17 | 1
LARGEST = {8: 1 << 20}  # test_every_algorithm_matches_the_library at p = 8


def _run(n: int, *args: str, large: int = LARGE) -> dict:
    args = ("--large", str(large), *args)
    out = run_mpi(n, [], python_args=[DRIVER, *args], timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["nranks"] == n
    return report


def test_the_checker_catches_a_wrong_algorithm():
    report = _run(3, "--plant-fault")
    assert report["nfailures"] > 0 and all("planted_fault" in f for f in report["failures"])


@pytest.mark.parametrize("n", [4, 5])
def test_the_checker_catches_a_changed_nonroot_input(n):
    """A rooted reduction in place that accumulates in a non-root's input passes every check of the
    root's result: only the non-root's buffer shows it. (On 2 and 3 ranks every non-root of a binomial
    tree is a leaf, which accumulates nothing: the bug cannot show there.)"""
    report = _run(n, "--plant-fault", "nonroot-input")
    assert report["nfailures"] > 0
    assert all("changed a non-root's input" in f for f in report["failures"]), report["failures"][:3]


def test_a_rank_that_raises_ends_the_check_at_once_and_names_the_case():
    """Before, the other ranks waited in the ring's exchanges until the test's timeout (600 s)."""
    out = run_mpi(2, [], python_args=[DRIVER, "--plant-fault", "raises"], timeout=120)
    assert out.returncode != 0
    assert "rank 1 raised in allreduce/planted_fault" in out.stderr and "count=3" in out.stderr, out.stderr[-2000:]
    assert "IndexError: planted: the last rank fails" in out.stderr


@pytest.fixture(scope="module")
def each_size():
    """p = 1..9 in one job of 9 ranks (tests/drivers/each_size.py: a communicator of the first p ranks
    each time), or up to the ranks this MPI runs here; {p: report}."""
    most = max(p for p in range(1, 10) if p <= (launcher().max_ranks if launcher() else 1))
    each = ",".join(str(p) for p in range(1, most + 1))
    large_at = ",".join(f"{p}={n}" for p, n in LARGEST.items())
    return checker_reports(most, [DRIVER, "--large", str(LARGE), "--large-at", large_at, "--each", each])


def _all_match(report: dict) -> None:
    from fabricprobe import collectives

    expected = {
        f"{c}/{a}"
        for c in ("allreduce", "reduce", "bcast", "allgather", "reduce_scatter")
        for a in collectives.names_for(c)
        if a != collectives.LIBRARY
    }
    assert set(report["per_algorithm"]) == expected
    assert all(count >= 20 for count in report["per_algorithm"].values()), report["per_algorithm"]
    assert report["nfailures"] == 0, "\n".join(report["failures"])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 9])
def test_every_algorithm_matches_the_library(n, each_size):
    need_ranks(n)
    _all_match(each_size[n])


def test_every_algorithm_matches_the_library_on_16_ranks():
    _all_match(_run(16))


TOPOLOGIES = [(8, "4"), (8, "2"), (8, "3,3,2"), (7, "3,3,1"), (5, "2,3")]


@pytest.fixture(scope="module")
def on_topologies():
    """Every virtual topology in one job of 8 ranks (each on a communicator of its size); {(p, layout): report}."""
    cases = ";".join(f"{n}={layout}" for n, layout in TOPOLOGIES)
    argv = [DRIVER, "--large", str(LARGE), "--layouts", cases, "--collectives", "allreduce"]
    return checker_reports(8, [*argv, "--algorithms", HIERARCHICAL], lambda r: (r["nranks"], r["layout"]))


@pytest.mark.parametrize("n,layout", TOPOLOGIES)
def test_hierarchical_on_virtual_topologies(n, layout, on_topologies):
    report = on_topologies[(n, layout)]
    # Every named algorithm ran its full case list (all dtypes and ops at the small and large counts).
    assert sorted(report["per_algorithm"]) == sorted(f"allreduce/{a}" for a in HIERARCHICAL.split(","))
    assert all(count >= 150 for count in report["per_algorithm"].values()), report["per_algorithm"]
    assert report["nfailures"] == 0, "\n".join(report["failures"])
