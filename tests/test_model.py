"""The cost model: fitting, formulas, crossovers (no MPI), and `fabricprobe model` on a real run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from mpirun import error_lines, run_local, run_mpi

from fabricprobe.costmodel import predict as model_predict
from fabricprobe.costmodel.crossover import crossovers, measured_crossovers
from fabricprobe.costmodel.fit import fit_line, fit_run
from fabricprobe.costmodel.params import Link, Params
from fabricprobe.costmodel.predict import predict
from fabricprobe.errors import UsageError

P = Params(intra=Link(1e-6, 1e-10), inter=Link(5e-6, 1e-9), gamma=2e-11)


def test_fit_recovers_a_known_line():
    n = np.array([8, 64, 1024, 65536, 1 << 20, 1 << 22], float)
    t = 2e-6 + n * 5e-11
    fit = fit_line(n, t)
    assert fit.intercept == pytest.approx(2e-6, rel=1e-6) and fit.slope == pytest.approx(5e-11, rel=1e-6)
    noisy = t * np.random.default_rng(3).uniform(0.95, 1.05, n.size)
    fit = fit_line(n, noisy)
    assert fit.intercept == pytest.approx(2e-6, rel=0.1) and fit.slope == pytest.approx(5e-11, rel=0.1)


def test_ring_matches_the_textbook_formula():
    n, p = 1 << 20, 4
    expected = 2 * (p - 1) * 1e-6 + 2 * (p - 1) / p * n * 1e-10 + (p - 1) / p * n * 2e-11
    assert predict("allreduce", "ring", n, 1, p, P) == pytest.approx(expected)


def test_non_powers_of_two_pay_the_fold():
    rd6 = predict("allreduce", "recursive_doubling", 4096, 1, 6, P)
    rd4 = predict("allreduce", "recursive_doubling", 4096, 1, 4, P)
    assert rd6 == pytest.approx(rd4 + 2 * (1e-6 + 4096e-10) + 4096 * 2e-11)


def test_flat_algorithms_pay_the_inter_node_link_and_hierarchical_mostly_intra():
    flat = predict("allreduce", "ring", 1 << 24, 4, 8, P)
    assert flat > predict("allreduce", "ring", 1 << 24, 1, 32, P)
    # on one node the multi-leader algorithm is the ring
    assert predict("allreduce", "hierarchical", 1 << 20, 1, 8, P) == pytest.approx(
        predict("allreduce", "ring", 1 << 20, 1, 8, P)
    )
    # with a slow inter-node link, multi-leader beats the flat ring at large sizes
    assert predict("allreduce", "hierarchical", 1 << 24, 8, 8, P) < flat


def test_software_costs_only_when_asked():
    q = Params(P.intra, P.inter, P.gamma, message_overhead=1e-6, reduce_overhead=5e-7)
    base = predict("allreduce", "ring", 1024, 1, 4, q)
    with_sw = predict("allreduce", "ring", 1024, 1, 4, q, software=True)
    assert with_sw == pytest.approx(base + 6 * 1e-6 + 3 * 5e-7)


def test_unknown_algorithms_are_not_predicted():
    assert predict("allreduce", "library", 8, 1, 4, P) is None
    assert not model_predict.supported("alltoall", "ring")


def test_crossover_between_latency_and_bandwidth_optimal():
    found = crossovers(lambda a, n: predict("allreduce", a, n, 1, 64, P), ["recursive_doubling", "rabenseifner"])
    assert len(found) == 1
    size, below, above = found[0]
    assert (below, above) == ("recursive_doubling", "rabenseifner")
    rd = predict("allreduce", "recursive_doubling", size, 1, 64, P)
    rab = predict("allreduce", "rabenseifner", size, 1, 64, P)
    assert rd == pytest.approx(rab, rel=1e-3)


def test_measured_crossovers():
    rows = {"a": {8: {"median_s": 1.0}, 64: {"median_s": 5.0}}, "b": {8: {"median_s": 2.0}, 64: {"median_s": 3.0}}}
    assert measured_crossovers(rows) == [(64, "a", "b")]


def test_missing_points_are_a_usage_error():
    with pytest.raises(UsageError, match="latency"):
        fit_run([], "run x")


@pytest.mark.mpi
def test_model_command_on_a_real_run(tmp_path):
    path = tmp_path / "m.h5"
    out = run_mpi(
        2,
        [
            "sweep",
            "-o",
            str(path),
            "--algorithms",
            "library,ring,recursive_doubling,rabenseifner",
            "--collectives",
            "allreduce,latency,reduce_local",
            "--sizes",
            "8,4K,256K,2M",
            "--iters",
            "20",
            "--warmup",
            "2",
            "--max-time",
            "0.2",
            "--progress",
            "none",
            "--quiet",
        ],
    )
    assert out.returncode == 0, out.stderr
    table = run_local(["model", str(path)])
    assert table.returncode == 0, table.stderr
    for fragment in (
        "fitted parameters",
        "α intra",
        "mpi4py message",
        "measured / predicted",
        "1024 nodes × 64 ranks = 65,536 ranks",
        "predicted crossovers",
    ):
        assert fragment in table.stdout, fragment
    doc = json.loads(run_local(["model", str(path), "--format", "json", "--scale", "2x2"]).stdout)
    assert doc["params"]["intra"]["alpha"] > 0 and doc["params"]["gamma"] > 0
    rows = doc["comparisons"][0]["rows"]
    assert {r["algorithm"] for r in rows} == {"ring", "recursive_doubling", "rabenseifner"}
    assert all(r["predicted_s"] > 0 for r in rows)
    assert doc["scales"][0]["nodes"] == 2
    # the measured side says what it is: the library timed natively, the hand-written ones in Python
    measured = doc["comparisons"][0]["measured"]
    assert "barrier mode" in measured and "native and python timers" in measured and "host buffers" in measured


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["--scale", "2048x64"], "up to 65,536"),
        (["--scale", "8y8"], "invalid scale"),
        (["--collectives", "alltoall"], "unknown collective"),
    ],
)
def test_model_bad_options(args, fragment, tmp_path):
    out = run_local(["model", str(tmp_path / "none.h5"), *args])
    assert out.returncode == 2 and fragment in error_lines(out.stderr)[0]


@pytest.mark.mpi
def test_model_without_latency_points(tmp_path):
    path = tmp_path / "m.h5"
    assert (
        run_mpi(
            2,
            [
                "sweep",
                "-o",
                str(path),
                "--collectives",
                "allreduce",
                "--sizes",
                "8",
                "--iters",
                "10",
                "--progress",
                "none",
                "--quiet",
            ],
        ).returncode
        == 0
    )
    out = run_local(["model", str(path)])
    assert out.returncode == 2 and "latency" in error_lines(out.stderr)[0]


def test_sparse_crossover_follows_one_over_p():
    """TopkA sends (p−1)·k pairs against a dense allreduce's ~2S: it loses once density ≈ 1/p."""
    from fabricprobe.costmodel.fit import Fitted
    from fabricprobe.costmodel.predict import crossover_density, predict_sparse
    from fabricprobe.costmodel.sparse_analysis import best_dense

    fitted = Fitted(P, {})
    for nodes in (64, 1024):
        d = crossover_density(
            "topk_allgather", 1 << 24, 4, best_dense(1 << 24, nodes, 1, fitted), nodes, 1, P, software=False
        )
        assert 0.3 / nodes < d < 3.0 / nodes
    # gTop-k's messages stay at k pairs: its crossover does not shrink with p
    g64 = crossover_density("gtopk", 1 << 24, 4, best_dense(1 << 24, 64, 1, fitted), 64, 1, P, software=False)
    assert g64 > 10 / 64
    assert predict_sparse("sparcml", 1 << 20, 4, 0.01, 1, 8, P) < predict_sparse("sparcml", 1 << 20, 4, 0.1, 1, 8, P)
