"""Trainers: the model's gradient, data splits, dp_sgd equal to single-process SGD for p = 1, 2, 4
and several allreduce algorithms, the hybrid pipeline's gradient equal to the sequential model's,
each trainer end to end through `fabricprobe train` with its HDF5 record, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from mpirun import error_lines, more_ranks_than_cores, run_mpi

from trainers import record
from trainers.data import batches, load, shard, synthetic
from trainers.mlp import MLP, gradient_sum, softmax_xent_grad

DRIVER = str(Path(__file__).parent / "drivers" / "check_trainers.py")


# ---- no MPI ----


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    model = MLP([5, 7, 4, 3], seed=1, dtype=np.float64)
    x, y = rng.normal(size=(6, 5)), rng.integers(0, 3, 6)
    gradient_sum(model, x, y)
    analytic = model.grads.copy()
    for i in rng.choice(model.params.size, 25, replace=False):
        old = model.params[i]
        model.params[i] = old + 1e-6
        up = softmax_xent_grad(model.forward(x)[0], y)[0]
        model.params[i] = old - 1e-6
        down = softmax_xent_grad(model.forward(x)[0], y)[0]
        model.params[i] = old
        assert analytic[i] == pytest.approx((up - down) / 2e-6, rel=1e-4, abs=1e-7)


def test_layer_slices_compose_to_the_whole_model():
    model = MLP([8, 6, 5, 3], seed=2, dtype=np.float64)
    x = np.random.default_rng(1).normal(size=(4, 8))
    whole, _ = model.forward(x)
    mid, _ = model.forward(x, 0, 1)
    out, _ = model.forward(mid, 1, 3)
    np.testing.assert_allclose(out, whole)
    assert model.param_slice(0, 3) == slice(0, model.params.size)


def test_datasets_are_real_split_and_sharded():
    digits = load("digits")
    assert digits.x_train.shape[1] == 64 and digits.y_train.size + digits.y_test.size == 1797
    assert 0 <= digits.x_train.min() and digits.x_train.max() <= 1 and digits.classes == 10
    mnist = load("mnist5k")
    assert mnist.x_train.shape == (4000, 784) and mnist.y_test.size == 1000
    assert np.bincount(mnist.y_test).tolist() == [100] * 10  # stratified
    np.testing.assert_array_equal(load("digits").y_test, digits.y_test)  # the split is fixed
    x, y = synthetic(100, seed=3)
    assert x.shape == (100, 64) and np.array_equal(synthetic(100, seed=3)[1], y)
    idx = batches(1000, 64, epoch=0, seed=0)[0]
    parts = [shard(idx, r, 3) for r in range(3)]
    assert np.array_equal(np.concatenate(parts), idx) and {p.size for p in parts} <= {21, 22}


# ---- under MPI ----


ALGORITHMS = ["library", "ring", "rabenseifner", "recursive_doubling", "hierarchical"]


def _dp(n: int, algorithms: list[str], tmp_path: Path, *extra: str) -> dict[str, tuple[np.ndarray, dict]]:
    """dp_sgd on n ranks with each algorithm, in one launch: {algorithm: (parameters, what it reported)}."""
    pattern = str(tmp_path / f"p{n}-{{algorithm}}{'-'.join(extra)}.npy")
    argv = [DRIVER, "dp", "--allreduce", ",".join(algorithms), "--save", pattern, *extra]
    out = run_mpi(n, [], python_args=argv, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    runs = json.loads(out.stdout.strip().splitlines()[-1])["runs"]
    assert all(r["spread"] == 0.0 for r in runs.values())  # every rank ends with the very same parameters
    return {a: (np.load(pattern.replace("{algorithm}", a)), runs[a]) for a in algorithms}


@pytest.fixture(scope="module")
def single_process_params(tmp_path_factory) -> np.ndarray:
    return _dp(1, ["library"], tmp_path_factory.mktemp("single"))["library"][0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """trained(n): every algorithm's parameters on n ranks, one launch per n."""
    done = {}

    def on(n: int) -> dict:
        if n not in done:
            done[n] = _dp(n, ALGORITHMS, tmp_path_factory.mktemp(f"dp{n}"))
        return done[n]

    return on


@pytest.mark.mpi
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_dp_sgd_equals_single_process_training(algorithm, trained, single_process_params):
    single = single_process_params
    for n in (2, 4) if more_ranks_than_cores() else (2,):
        np.testing.assert_allclose(trained(n)[algorithm][0], single, rtol=1e-9, atol=1e-11)


@pytest.mark.mpi
@pytest.mark.parametrize("transfer", ["staged", "direct"])
def test_dp_sgd_device_path_equals_host_training(transfer, tmp_path, trained):
    """--device cupy's code (trainers.device) with numpy standing in for CuPy: staged copies every
    bucket down and the sum up; direct hands the arrays to the collective through a SyncComm (on a
    hierarchical algorithm, whose sub-communicators the proxy makes); both give the host's model to
    the bit. A real GPU runs it in tests/test_gpudirect.py's GPU-only tests (none here)."""
    n = 4 if more_ranks_than_cores() else 2
    host = trained(n)["hierarchical"][0]
    dev, report = _dp(n, ["hierarchical"], tmp_path, "--device", transfer)["hierarchical"]
    assert np.array_equal(dev, host) and report["spread"] == 0.0
    copies = report["calls"] if transfer == "staged" else 0
    assert report["calls"] > 0 and report["downloads"] == report["uploads"] == copies


@pytest.mark.mpi
@pytest.mark.parametrize("transfer", ["staged", "direct"])
def test_hybrid_and_easgd_device_paths(transfer, tmp_path):
    """The pipeline's activations and errors (Send/Recv) and its gradient allreduce, and sync EASGD's
    parameter allreduce and final broadcast, on the device path with numpy standing in for CuPy:
    the hybrid gradient still equals the sequential model's, EASGD's centre equals the host run's to
    the bit; staged moves every buffer through host copies, direct none."""
    n = 4 if more_ranks_than_cores() else 2
    argv = [DRIVER, "hybrid", "--stages", "2", "--allreduce", "ring", "--device", transfer]
    out = run_mpi(n, [], python_args=argv, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["relative_error"] < 1e-12
    moved = [c["downloads"] + c["uploads"] for c in report["copies"]]
    assert all(m > 0 for m in moved) if transfer == "staged" else not any(moved)
    centres = []
    for device in ("host", transfer):
        path = tmp_path / f"easgd-{device}.npy"
        out = run_mpi(n, [], python_args=[DRIVER, "easgd", "--save", str(path), "--device", device], timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        centres.append(np.load(path))
        copied = json.loads(out.stdout.strip().splitlines()[-1])
        assert (copied["downloads"] > 0) == (device == "staged")
    assert np.array_equal(*centres)


@pytest.mark.mpi
@pytest.mark.parametrize("n,stages", [(2, 2), (3, 3), (4, 2), (6, 3)])
def test_hybrid_gradient_equals_the_sequential_model(n, stages):
    if n > 2 and not more_ranks_than_cores():
        pytest.skip("more ranks than cores: Open MPI only")
    out = run_mpi(n, [], python_args=[DRIVER, "hybrid", "--stages", str(stages), "--allreduce", "ring"], timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1])["relative_error"] < 1e-12


def _train(n: int, results: Path, *args: str) -> dict:
    out = run_mpi(n, ["train", *args, "-o", str(results), "--progress", "none"], timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return record.read(str(results))[-1]


@pytest.mark.mpi
def test_dp_sgd_and_sparse_dp_end_to_end(tmp_path):
    results = tmp_path / "t.h5"
    dense = _train(2, results, "dp_sgd", "--epochs", "8", "--allreduce", "ring")
    assert dense["status"] == "complete" and dense["trainer"] == "dp_sgd" and dense["nranks"] == 2
    steps = dense["steps"]
    assert steps.size == 8 * (1437 // 64) and np.all(np.diff(steps["step"]) == 1)
    assert np.all(steps["t_comm"] > 0) and 0 < dense["comm_fraction"] < 1
    assert dense["final_test_accuracy"] >= 0.93 and dense["evals"]["test_accuracy"][-1] == pytest.approx(
        dense["final_test_accuracy"]
    )
    assert steps["loss"][-20:].mean() < steps["loss"][:20].mean() / 3
    sparse = _train(2, results, "sparse_dp", "--epochs", "8", "--density", "0.01")
    assert sparse["steps"]["bytes_sent"].mean() * 10 <= dense["steps"]["bytes_sent"].mean()
    assert sparse["final_test_accuracy"] >= dense["final_test_accuracy"] - 0.03
    assert [r["id"] for r in record.read(str(results))] == ["0001", "0002"]


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["sync", "fcfs", "round_robin"])
def test_easgd_modes_train(mode, tmp_path):
    n = 3 if more_ranks_than_cores() else 2
    run = _train(n, tmp_path / "e.h5", "easgd", "--mode", mode, "--tau", "4", "--epochs", "8")
    assert run["final_test_accuracy"] >= 0.9 and run["opt_mode"] == mode
    assert run["working_ranks"] == (list(range(n)) if mode == "sync" else list(range(1, n)))


@pytest.mark.mpi
def test_hybrid_trains(tmp_path):
    n, stages = (4, 2) if more_ranks_than_cores() else (2, 2)
    run = _train(n, tmp_path / "h.h5", "hybrid", "--stages", str(stages), "--epochs", "8")
    assert run["final_test_accuracy"] >= 0.93 and run["stages"] == stages


@pytest.mark.mpi
@pytest.mark.parametrize(
    "args",
    [
        ["hybrid", "--stages", "3"],
        ["dp_sgd", "--allreduce", "nosuch"],
        ["easgd", "--mode", "bogus"],
        ["dp_sgd", "--batch", "0"],
        ["sparse_dp", "--density", "2"],
        ["dp_sgd", "--dataset", "cifar"],
    ],
)
def test_train_bad_input_is_one_line_and_exit_2(args, tmp_path):
    results = tmp_path / "bad.h5"
    out = run_mpi(2, ["train", *args, "-o", str(results)], timeout=300)
    assert out.returncode == 2, out.stderr[-2000:]
    lines = error_lines(out.stderr)
    assert len(lines) == 1 and "Traceback" not in out.stderr and not results.exists()
