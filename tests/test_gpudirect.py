"""Device buffers and GPUDirect on/off without a GPU: Numba-CUDA buffers under the CUDA simulator
(NUMBA_ENABLE_CUDASIM=1: device arrays live in host memory, so a "direct" hand-over to MPI works
there once --assume-cuda-aware claims it), the plan, the not-runnable rules, the report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from mpirun import checker_reports, launcher, mpi_env, need_ranks, python_path, run_local, run_mpi

from fabricprobe import collectives
from fabricprobe.engine import gpudirect
from fabricprobe.engine.config import SweepConfig
from fabricprobe.engine.plan import make_plan
from fabricprobe.memory import BufferUnavailable, memory_for
from fabricprobe.mpienv.topology import Topology
from fabricprobe.report.gpudirect import recovered

SIM = {"NUMBA_ENABLE_CUDASIM": "1"}
DRIVER = str(Path(__file__).parent / "drivers" / "check_algorithms.py")


def _topo(n: int) -> Topology:
    return Topology(hosts=("h",), node_of=(0,) * n, cores_per_node=(n,))


def _plan(**kw):
    config = SweepConfig(**{"sizes": [8, 4096, 1 << 20], "timer": "python", **kw})
    return make_plan(config, _topo(2), ["python"])


def test_host_plans_are_unchanged_by_the_device_options():
    points, _ = _plan(collectives=["allreduce"], gpudirect="on")
    assert {(p.buffer, p.transfer) for p in points} == {("host", "")}
    assert all("numba" not in p.key and "nccl" != p.algorithm for p in points)


def test_device_plan_transfers():
    points, notes = _plan(
        collectives=["allreduce", "allgather", "latency", "sparse_allreduce", "copy_local", "topk_local", "barrier"],
        buffer="cupy",
        gpudirect="both",
        stage_chunk=4096,
    )
    got = {(p.collective, p.algorithm, p.layout.nbytes, p.transfer) for p in points if p.collective != "empty"}
    # Pipelined needs two chunks and independent elements; NCCL joins the direct points of what it implements.
    assert ("allreduce", "library", 8, "pipelined") not in got
    assert ("allreduce", "library", 4096, "pipelined") not in got
    assert ("allreduce", "library", 1 << 20, "pipelined") in got
    assert ("allgather", "library", 1 << 20, "pipelined") not in got
    assert {t for c, a, s, t in got if c == "allreduce" and a == "library" and s == 8} == {"direct", "staged"}
    assert {t for c, a, s, t in got if a == "nccl"} == {"direct"}
    assert {c for c, a, s, t in got if a == "nccl"} == {"allreduce", "allgather"}
    # Local tests run on the device with no transfer; argpartition is numpy-only; the barrier has no buffers.
    assert {(a, t) for c, a, s, t in got if c in ("copy_local", "topk_local")} == {("numpy", ""), ("numba", "")}
    assert any("argpartition" in n for n in notes)
    assert {t for c, a, s, t in got if c == "barrier"} == {""}
    assert {t for c, a, s, t in got if c == "latency"} == {"direct", "staged"}  # OMB's D-D, and staged
    # Sparse: staged, and direct (recorded as not runnable when run); never pipelined.
    assert {t for c, a, s, t in got if c == "sparse_allreduce"} == {"direct", "staged"}
    keys = [p.key for p in points]
    assert len(keys) == len(set(keys))


def test_gpudirect_off_has_no_direct_points_and_no_nccl():
    points, _ = _plan(collectives=["allreduce"], buffer="numba", gpudirect="off", stage_chunk=4096)
    assert {p.transfer for p in points if p.collective == "allreduce"} == {"staged", "pipelined"}
    assert all(p.algorithm != "nccl" for p in points)


def test_nccl_is_only_for_cupy_buffers():
    assert "nccl" not in collectives.names_for("allreduce")
    assert "nccl" in collectives.names_for("allreduce", "cupy")
    assert "nccl" not in collectives.names_for("allreduce", "numba")


@pytest.mark.parametrize(
    "answer,assumed,runs", [("yes", False, True), ("no", False, False), ("unknown", False, False), ("no", True, True)]
)
def test_direct_needs_a_cuda_aware_answer_or_an_explicit_claim(answer, assumed, runs):
    reason = gpudirect.direct_reason(answer, "MPIX_Query_cuda_support()", assumed)
    assert (reason == "") == runs
    if not runs:
        assert answer in reason and "MPIX_Query_cuda_support()" in reason


class _Memory:
    kind = "fake"

    def __init__(self) -> None:
        self.syncs = 0

    def synchronize(self) -> None:
        self.syncs += 1


class _DeviceArray:
    __cuda_array_interface__ = {"data": (0, False)}


class _Comm:
    rank, size = 0, 1

    def __init__(self) -> None:
        self.calls = []

    def Send(self, buf, dest, tag=0):
        self.calls.append(("Send", buf))

    def Split(self, color, key):
        return _Comm()

    def allgather(self, x):
        return [x]


def test_direct_mode_synchronises_before_calls_that_carry_device_buffers():
    memory, comm = _Memory(), _Comm()
    proxy = gpudirect.SyncComm(comm, memory)
    proxy.Send(np.zeros(3), dest=0)
    assert memory.syncs == 0  # host buffers: nothing to wait for
    proxy.Send(_DeviceArray(), dest=0)
    proxy.Send([_DeviceArray(), 3], dest=0)
    assert memory.syncs == 2 and len(comm.calls) == 3
    sub = proxy.Split(0, 0)
    assert isinstance(sub, gpudirect.SyncComm)
    sub.Send(_DeviceArray(), dest=0)
    assert memory.syncs == 3
    assert proxy.allgather(5) == [5] and proxy.rank == 0 and proxy.size == 1


def test_chunks_cover_the_buffer_once():
    assert gpudirect.chunk_bounds(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert gpudirect.chunk_bounds(0, 4) == []
    assert recovered(1.0, 3.0, 2.0) == 0.5
    assert np.isnan(recovered(2.0, 2.0, 1.0))


def test_pipelining_refuses_collectives_that_mix_positions():
    case = SimpleNamespace(collective="allgather")
    with pytest.raises(ValueError, match="cannot be pipelined"):
        gpudirect.pipelined(lambda c: None, case, case, None, 4)


def test_missing_gpu_packages_give_one_clear_reason():
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(BufferUnavailable, match=r"fabricprobe\[gpu\]"):
            memory_for("cupy")
    with pytest.raises(BufferUnavailable, match="unknown buffer kind"):
        memory_for("fpga")


@pytest.mark.process
def test_a_numba_cuda_that_cannot_compile_stops_the_sweep_in_one_line(tmp_path):
    """The lent H100's image (numba-cuda 0.30.4 with numpy 2.5.2) died compiling its first kernel,
    mid-sweep, with a traceback. Planted here: numba.cuda.jit raises the same error."""
    (tmp_path / "sitecustomize.py").write_text(
        "import numba.cuda\n"
        "def jit(*a, **k):\n"
        "    raise AttributeError(\"module 'numpy' has no attribute 'row_stack'\")\n"
        "numba.cuda.jit = jit\n"
    )
    env = mpi_env({**SIM, "PYTHONPATH": python_path(tmp_path)})
    out = subprocess.run(
        [sys.executable, "-m", "fabricprobe", "sweep", "-o", str(tmp_path / "r.h5"), "--buffer", "numba"]
        + ["--collectives", "allreduce", "--sizes", "8"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert "Numba-CUDA cannot compile a kernel here" in out.stderr and "row_stack" in out.stderr
    errors = [line for line in out.stderr.splitlines() if "error" in line]
    assert "Traceback" not in out.stderr and len(errors) == 1, out.stderr
    assert not (tmp_path / "r.h5").exists()


@pytest.mark.process
@pytest.mark.parametrize(
    "argv,message",
    [
        (["--buffer", "cupy"], "CuPy"),
        (["--buffer", "numba", "--timer", "native"], "--timer native"),
        (["--buffer", "numba", "--stage-chunk", "12"], "--stage-chunk"),
        (["--buffer", "gpu"], "invalid choice"),
    ],
)
def test_bad_device_options_are_one_line_and_exit_2(tmp_path, argv, message):
    try:
        import cupy  # noqa: F401

        if argv == ["--buffer", "cupy"]:
            pytest.skip("CuPy is installed here")
    except ImportError:
        pass
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "fabricprobe",
            "sweep",
            "-o",
            str(tmp_path / "r.h5"),
            "--collectives",
            "allreduce",
            "--sizes",
            "8",
            *argv,
        ],
        capture_output=True,
        text=True,
        env=mpi_env(),
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "r.h5").exists()


def _report(run) -> str:
    """The run's full tables (a sweep itself ends with its summary)."""
    return run_local(["report", run.path, "--run", run.id]).stdout


def _sweep(tmp_path, n: int, *extra: str):
    path = tmp_path / "gpu.h5"
    out = run_mpi(
        n,
        [
            "sweep",
            "-o",
            str(path),
            "--buffer",
            "numba",
            "--sizes",
            "12,8200",
            "--stage-chunk",
            "4K",
            "--iters",
            "5",
            "--warmup",
            "1",
            "--max-time",
            "0.05",
            "--progress",
            "none",
            *extra,
        ],
        env=mpi_env(SIM),
        timeout=600,
    )
    from fabricprobe.store import load_runs

    return out, (load_runs(str(path))[-1] if path.exists() else None)


@pytest.mark.process
@pytest.mark.parametrize("n", [1, 2])  # p = 1..9 on device buffers: the algorithm checker below
def test_device_sweep_validates_every_transfer(tmp_path, n):
    out, run = _sweep(
        tmp_path,
        n,
        "--assume-cuda-aware",
        "--gpudirect",
        "both",
        "--in-place",
        "both",
        "--collectives",
        "allreduce,reduce,bcast,allgather,reduce_scatter,alltoall,copy_local",
        "--algorithms",
        "library,ring,rabenseifner,binomial,bruck",
    )
    assert out.returncode == 0, out.stderr[-3000:]
    points = [p for p in run.points if p["collective"] != "empty"]
    assert {p["buffer"] for p in points} == {"numba"}
    assert {p["transfer"] for p in points} == {"direct", "staged", "pipelined", ""}
    assert all(p["status"] == "ok" and p["wrong"] == 0 and p["checked"] > 0 for p in points), [
        (p["key"], p["status"], p["note"]) for p in points if p["status"] != "ok" or p["wrong"]
    ]
    assert {p["timer"] for p in points} == {"python"}
    copies = [p for p in points if p["collective"] == "copy_local"]
    assert copies and {p["busbw_factor"] for p in copies} == {2.0}  # a GPU writes whole sectors unread
    piped = {(p["collective"], p["bytes"]) for p in points if p["transfer"] == "pipelined"}
    assert piped and {c for c, _ in piped} <= {"allreduce", "reduce", "bcast"} and {b for _, b in piped} == {8200}
    assert run.config["assume_cuda_aware"] is True
    assert "GPUDirect on vs off" in _report(run)


@pytest.mark.process
@pytest.mark.parametrize("n", [3])  # more ranks for the uneven blocks; n = 1..9 on host buffers in test_sweep_mpi
def test_gather_scatter_and_the_vector_forms_on_device_buffers(tmp_path, n):
    """The OMB/IMB collectives the registry added (issue 35) on device buffers, handed to MPI and staged
    (the non-blocking and persistent ones pipelined too, as their blocking twins are)."""
    out, run = _sweep(
        tmp_path,
        n,
        "--assume-cuda-aware",
        "--collectives",
        "gather,scatter,gatherv,scatterv,allgatherv,alltoallv,iallreduce,igatherv,allreduce_persistent",
    )
    assert out.returncode == 0, out.stderr[-3000:]
    points = [p for p in run.points if p["collective"] != "empty"]
    assert {p["transfer"] for p in points} == {"direct", "staged", "pipelined"}
    assert len({p["collective"] for p in points}) == 9
    assert all(p["status"] == "ok" and p["wrong"] == 0 and p["checked"] > 0 for p in points), [
        (p["key"], p["status"], p["note"]) for p in points if p["status"] != "ok" or p["wrong"]
    ]


@pytest.mark.process
def test_direct_is_recorded_not_runnable_on_a_library_that_is_not_cuda_aware(tmp_path):
    out, run = _sweep(tmp_path, 2, "--gpudirect", "both", "--collectives", "allreduce")
    assert out.returncode == 0, out.stderr[-3000:]
    assert run.attrs["cuda_aware"] == "no"
    direct = [p for p in run.points if p["transfer"] == "direct"]
    staged = [p for p in run.points if p["transfer"] in ("staged", "pipelined")]
    assert direct and all(p["status"] == "not_runnable" and "CUDA-aware" in p["note"] for p in direct)
    assert staged and all(p["status"] == "ok" and p["wrong"] == 0 for p in staged)
    assert "not runnable" in _report(run) and "GPUDirect points will be recorded as not runnable" in out.stderr


DEVICE_SIZES = {"pipelined": (1, 6, 8, 9), "direct": (2, 3), "staged": (4, 5, 7)}


@pytest.fixture(scope="module")
def device_checks():
    """device_checks(transfer): {p: report} for that transfer's sizes, in one job (tests/drivers/each_size.py:
    a communicator of the first p ranks each time)."""
    done = {}

    def reports(transfer: str) -> dict:
        if transfer not in done:
            most = launcher().max_ranks if launcher() else 1
            each = [p for p in DEVICE_SIZES[transfer] if p <= most]
            argv = [DRIVER, "--buffer", "numba", "--transfer", transfer, "--dtypes", "float32,float64"]
            argv += ["--ops", "sum,max", "--large", "5000", "--each", ",".join(map(str, each))]
            done[transfer] = checker_reports(max(each), argv, env=SIM)
        return done[transfer]

    return reports


# p = 1..9, each through one transfer (direct runs every reduction in the simulated GPU kernels, the
# slow part here, so it takes the small p; the staging paths reduce on the host).
@pytest.mark.process
@pytest.mark.parametrize(
    "n,transfer",
    [
        (1, "pipelined"),
        (2, "direct"),
        (3, "direct"),
        (4, "staged"),
        (5, "staged"),
        (6, "pipelined"),
        (7, "staged"),
        (8, "pipelined"),
        (9, "pipelined"),
    ],
)
def test_every_algorithm_matches_the_library_on_device_buffers(n, transfer, device_checks):
    """The correctness driver through the sweep's own device path: float32/float64, sum and max, counts
    0, 1, p−1, p, p+1, 7, 100 and 5000 (20 pipelined chunks), in place and not."""
    need_ranks(n)
    report = device_checks(transfer)[n]
    pipelinable = ("allreduce", "reduce", "bcast")
    expected = {
        f"{c}/{a}"
        for c in ("allreduce", "reduce", "bcast", "allgather", "reduce_scatter")
        for a in collectives.names_for(c, "numba")
        if a != collectives.LIBRARY and (transfer != "pipelined" or c in pipelinable)
    }
    assert set(report["per_algorithm"]) == expected
    assert report["nfailures"] == 0, "\n".join(report["failures"])


@pytest.mark.process
def test_the_device_checker_catches_a_wrong_result():
    out = run_mpi(
        2,
        [],
        python_args=[DRIVER, "--plant-fault", "--buffer", "numba", "--transfer", "staged"],
        env=mpi_env(SIM),
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["nfailures"] > 0


@pytest.mark.process
def test_point_to_point_on_device_buffers(tmp_path):
    """osu_latency/osu_bw/osu_bibw -d cuda D D (direct) and through pinned host memory (staged), on a
    3-rank job where one rank sits each intra pair out."""
    out, run = _sweep(
        tmp_path,
        3,
        "--assume-cuda-aware",
        "--collectives",
        "pt2pt",
        "--pairs",
        "intra,all",
        "--sizes",
        "8,64K",
        "--window-size",
        "8",
    )
    assert out.returncode == 0, out.stderr[-3000:]
    points = [p for p in run.points if p["collective"] != "empty"]
    assert {(p["collective"], p["transfer"], p["pair"]) for p in points} == {
        (c, t, pair) for c in ("latency", "bw", "bibw") for t in ("direct", "staged") for pair in ("intra", "all")
    } | {(c, t, "all") for c in ("multi_lat", "mbw_mr") for t in ("direct", "staged")}
    # the one-sided tests run on host buffers only: skipped here, and said
    assert any("put_latency/library skipped: it runs on host buffers only" in n for n in run.attrs["notes"])
    assert all(p["status"] == "ok" and p["wrong"] == 0 and p["checked"] > 0 for p in points)
    assert "latency library: GPUDirect on vs off" in _report(run)


@pytest.mark.process
def test_sparse_allreduce_runs_staged_on_device_buffers(tmp_path):
    out, run = _sweep(tmp_path, 2, "--collectives", "sparse_allreduce", "--density", "0.01,0.5", "--sizes", "4000")
    assert out.returncode == 0, out.stderr[-3000:]
    sparse = [p for p in run.points if p["collective"] == "sparse_allreduce"]
    staged = [p for p in sparse if p["transfer"] == "staged"]
    assert {p["algorithm"] for p in staged} == set(collectives.names_for("sparse_allreduce", "numba"))
    assert all(p["status"] == "ok" and p["wrong"] == 0 and p["checked"] > 0 and p["bytes_sent"] > 0 for p in staged)
    assert all(
        p["status"] == "not_runnable" and "host memory" in p["note"] for p in sparse if p["transfer"] == "direct"
    )
    assert "numba buffers, staged" in _report(run)  # the sparse-vs-dense table compares staged with staged


@pytest.mark.parametrize(
    "text,vendor,version",
    [
        ("Intel(R) MPI Library 2021.18.1 for Linux* OS", "Intel MPI", "2021.18.1"),
        ("Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619 (id: c2e19c2f3e)", "Intel MPI", "2021.10"),
        ("Open MPI v5.0.11, package: Open MPI ...", "Open MPI", "5.0.11"),
        ("MPICH Version:      5.0.2\nMPICH Release date: ...", "MPICH", "5.0.2"),
    ],
)
def test_the_library_is_named_from_its_version_string(text, vendor, version):
    from fabricprobe.mpienv.library import identify_library

    info = identify_library(text)
    assert (info.vendor, info.version) == (vendor, version)


@pytest.mark.parametrize(
    "env,asked,answer",
    [
        ({}, ("no", "MPIX_Query_cuda_support()"), "no"),
        ({"I_MPI_OFFLOAD": "1"}, None, "no"),  # auto mode may pick Level Zero: not a statement about CUDA
        ({"I_MPI_OFFLOAD": "1", "I_MPI_OFFLOAD_MODE": "cuda"}, None, "yes"),
        ({"I_MPI_OFFLOAD": "1", "I_MPI_OFFLOAD_MODE": "cuda"}, ("yes", "MPIX_Query_cuda_support()"), "yes"),
        ({"I_MPI_OFFLOAD": "1", "I_MPI_OFFLOAD_MODE": "cuda"}, ("no", "MPIX_Query_cuda_support()"), "unknown"),
    ],
)
def test_intel_mpi_claims_cuda_only_with_its_switch_and_no_contrary_answer(env, asked, answer):
    from fabricprobe.mpienv.gpu_info import intel_answer

    got, how = intel_answer(env, asked)
    assert got == answer and "I_MPI_OFFLOAD" in how


def test_cupy_sweep_on_a_gpu(tmp_path):
    """On a lent GPU machine: every transfer validated on CuPy buffers; direct runs exactly when the
    library says it is CUDA-aware."""
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError
    except Exception:  # noqa: BLE001
        pytest.skip("needs CuPy and a GPU")
    path = tmp_path / "gpu.h5"
    out = run_mpi(
        1,
        [
            "sweep",
            "-o",
            str(path),
            "--buffer",
            "cupy",
            "--sizes",
            "8,4M",
            "--stage-chunk",
            "1M",
            "--collectives",
            "allreduce,bcast,allgather,kernels",
            "--algorithms",
            "library,ring",
            "--max-time",
            "0.2",
            "--progress",
            "none",
            "--quiet",
        ],
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    from fabricprobe.store import load_runs

    run = load_runs(str(path))[-1]
    for p in run.points:
        if p["collective"] == "empty":
            continue
        runnable = p["transfer"] != "direct" or (run.attrs["cuda_aware"] == "yes" or p["algorithm"] == "nccl")
        assert p["status"] == ("ok" if runnable else "not_runnable"), (p["key"], p["note"])
        assert p["wrong"] in (0, -1), p["key"]
