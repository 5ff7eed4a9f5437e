"""GPU kernels without a GPU: the CuPy path with numpy standing in for cupy, and the Numba-CUDA
kernels under Numba's CUDA simulator, both against the CPU kernels' exact semantics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mpirun import python_path

from fabricprobe import kernels
from fabricprobe.kernels.gpu_xp import make_backend

XP = make_backend(np)  # what cupy arrays get, with numpy as the array module
DRIVER = Path(__file__).parent / "drivers" / "check_gpu_kernels.py"


def _driver_env(simulated: bool) -> dict[str, str]:
    """The driver's environment: the checkout on its path (a lent GPU machine runs the tests from a
    checkout that is not installed: the first run there failed on the import), and the simulator on
    or off."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = python_path(Path(__file__).resolve().parents[1])
    if simulated:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return env


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
def test_xp_reductions_match_the_cpu_kernels(dtype, op):
    rng = np.random.default_rng(1)
    a, b = (rng.normal(size=257) * 9).astype(dtype), (rng.normal(size=257) * 9).astype(dtype)
    want = a.copy()
    kernels.reduce_into(want, b, op)
    got = a.copy()
    XP.reduce_into(got, b, kernels.OPCODES[op])
    np.testing.assert_array_equal(got, want)
    out = np.empty_like(a)
    XP.reduce_pair(out, a, b, kernels.OPCODES[op])
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("k", [0, 1, 6, 100, 130])
def test_xp_topk_matches_the_cpu_kernel_with_ties(dtype, k):
    values = np.round(np.random.default_rng(2).normal(size=100) * 3).astype(dtype)  # many equal magnitudes
    want, got = np.empty(max(k, 1), np.int64), np.empty(max(k, 1), np.int64)
    m = kernels.topk_indices(values, k, want)
    assert XP.topk_indices(values, k, got) == m
    np.testing.assert_array_equal(got[:m], want[:m])


def test_xp_merge_and_scatter_add():
    oi, ov = np.empty(6, np.int32), np.empty(6, np.float32)
    m = XP.merge_sum(
        np.array([1, 4, 9], np.int32),
        np.array([1, 2, 3], np.float32),
        np.array([0, 4, 5], np.int32),
        np.array([5, 10, 20], np.float32),
        oi,
        ov,
    )
    assert m == 5 and oi[:m].tolist() == [0, 1, 4, 5, 9] and ov[:m].tolist() == [5, 1, 12, 20, 3]
    dense = np.zeros(10, np.float64)
    XP.scatter_add(dense, np.array([2, 2, 9]), np.array([1.0, 2.0, 3.0]))
    assert dense[2] == 3.0 and dense[9] == 3.0 and dense.sum() == 6.0
    source, idx = np.arange(20, dtype=np.float64) * 0.5, np.array([19, 0, 7, 7], np.int32)
    want, got = np.empty(4), np.empty(4)
    kernels.pack(source, idx, want)  # the CPU kernel
    XP.pack(source, idx, got)
    assert want.tolist() == got.tolist() == [9.5, 0.0, 3.5, 3.5]


@pytest.mark.process
def test_numba_cuda_kernels_under_the_simulator():
    out = subprocess.run(
        [sys.executable, str(DRIVER)],
        capture_output=True,
        text=True,
        env=_driver_env(simulated=True),
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["backend"] == "numba-cuda" and report["checked"] > 60
    assert report["failures"] == [], report["failures"][:10]


@pytest.mark.mpi
def test_provenance_asks_the_library_about_cuda(tmp_path):
    from mpirun import run_mpi

    out = run_mpi(2, ["info", "--json"], timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    prov = json.loads(out.stdout[out.stdout.index("{") :])
    # Neither PyPI wheel is built with CUDA, and the library (not fabricprobe) says so.
    assert prov["cuda_aware"] == "no" and prov["cuda_aware_method"].startswith("MPIX_")
    assert prov["cuda_library"] == "no" and prov["cuda"] == "no, no device", prov
    assert prov["rank_gpus"] == [-1, -1] and prov["gpu"] == {}


def _cupy_gpu():
    """CuPy with a real GPU, or skip (these run on a lent GPU machine, never in CI)."""
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # noqa: BLE001 - no CuPy or no driver
        pass
    pytest.skip("needs CuPy and a GPU")


@pytest.mark.process
def test_numba_cuda_kernels_on_a_gpu():
    env = _driver_env(simulated=False)
    probe = subprocess.run(
        [sys.executable, "-c", "from numba import cuda; print(cuda.is_available())"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    if probe.stdout.strip() != "True":
        pytest.skip("needs a CUDA GPU")
    out = subprocess.run(
        [sys.executable, str(DRIVER)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["backend"] == "numba-cuda" and report["failures"] == [], report["failures"][:10]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_cupy_kernels_on_a_gpu(dtype):
    cupy = _cupy_gpu()
    rng = np.random.default_rng(4)
    a, b = (rng.normal(size=100_003) * 9).astype(dtype), (rng.normal(size=100_003) * 9).astype(dtype)
    for op in ("sum", "max", "min", "prod"):
        want = a.copy()
        kernels.reduce_into(want, b, op)
        got = cupy.asarray(a)
        kernels.reduce_into(got, cupy.asarray(b), op)
        assert kernels.backend_for(got).name == "cupy-xp"
        np.testing.assert_array_equal(cupy.asnumpy(got), want)
    values = np.round(a / 4).astype(dtype)
    want_idx, got_idx = np.empty(500, np.int64), cupy.empty(500, cupy.int64)
    m = kernels.topk_indices(values, 500, want_idx)
    assert kernels.topk_indices(cupy.asarray(values), 500, got_idx) == m
    np.testing.assert_array_equal(cupy.asnumpy(got_idx)[:m], want_idx[:m])


def test_a_library_built_with_cuda_is_told_from_its_run_time_answer(tmp_path):
    """Without a GPU, a CUDA-aware Open MPI answers 0 to MPIX_Query_cuda_support(), as the wheels do:
    its CUDA component beside libmpi (or MPICH's configure line) says it was built for CUDA buffers."""
    from fabricprobe.mpienv.gpu_info import library_built_with_cuda, summary

    libmpi = tmp_path / "libmpi.so.40"
    libmpi.write_bytes(b"")
    assert library_built_with_cuda("Open MPI", "", str(libmpi))[0] == "no"
    (tmp_path / "libmca_common_cuda.so.40").write_bytes(b"")
    built, how = library_built_with_cuda("Open MPI", "", str(libmpi))
    assert built == "yes" and "libmca_common_cuda" in how
    mpich = "MPICH Version: 4.2\nMPICH configure:    --with-device=ch4:ofi --with-cuda=/usr/local/cuda\n"
    assert library_built_with_cuda("MPICH", mpich)[0] == "yes"
    assert library_built_with_cuda("MPICH", mpich.replace("--with-cuda=/usr/local/cuda", ""))[0] == "no"
    h200 = {"gpu_count": 1, "gpu_model": "NVIDIA H200"}
    assert summary("no", "yes", {}) == summary("yes", "yes", {}) == "yes (library), no device"
    assert summary("yes", "yes", h200) == "yes, 1 × NVIDIA H200"
    assert summary("no", "no", {}) == "no, no device"
    assert summary("no", "yes", h200).endswith("the library found no CUDA driver")


@pytest.mark.process
def test_no_gpu_is_asked_of_cupy_or_numba_cuda_where_no_nvidia_driver_is():
    """Issue 68: every rank of every launch records its GPU; where NVIDIA's driver made no device file,
    neither CuPy nor Numba-CUDA is imported to find that out (a failed import and 53 Numba modules a rank)."""
    import subprocess
    import sys

    from fabricprobe.mpienv import gpu_info

    if gpu_info.nvidia_driver_present():
        pytest.skip("an NVIDIA driver is here: the GPU is asked for")
    code = (
        "import sys\nfrom fabricprobe.mpienv.gpu_info import devices\nassert devices() == {}\n"
        "print(sorted(m for m in sys.modules if m.startswith(('cupy', 'numba.cuda'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
    assert gpu_info.nvidia_driver_present(("/dev/null",)) and not gpu_info.nvidia_driver_present(("/nonexistent",))
