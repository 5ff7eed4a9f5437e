"""The CUDA-aware Open MPI that benchmarks/gpu/build_cuda_mpi.sh builds for the GPU machine (issue 55), run
here on host buffers at n = 2: fabricprobe loads it through the mpi4py wheel (MPI4PY_LIBMPI), says what it
is ("yes (library), no device": built with CUDA, no GPU here), and a validated sweep on it measures the
same points as on the Open MPI wheel, every one right. Skipped where the build is absent (it takes
about 4 minutes on 2 cores, docs/gpu.md; CI does not build it): FABRICPROBE_CUDA_MPI names another prefix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mpirun import mpi_env, run_mpi

from fabricprobe.store import load_runs

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parent.parent
PREFIX = Path(os.environ.get("FABRICPROBE_CUDA_MPI", ROOT / ".cuda-mpi"))
LIBMPI = PREFIX / "lib" / "libmpi.so.40"
SWEEP = ["--collectives", "allreduce,bcast,alltoall,latency,bw", "--sizes", "8,1K,64K,1M", "--iters", "20"]
QUIET = ["--warmup", "2", "--max-time", "0.1", "--progress", "none", "--quiet"]


def _on_the_build(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    """`fabricprobe ARGS` on 2 ranks launched by the build's own mpiexec, its libmpi loaded by the wheel
    of mpi4py (OPAL_PREFIX: the prefix may have moved, as it does on the GPU machine)."""
    if not LIBMPI.exists():
        pytest.skip(f"no CUDA-aware MPI at {PREFIX}: bash benchmarks/gpu/build_cuda_mpi.sh builds it")
    env = mpi_env(
        {
            "MPI4PY_LIBMPI": str(LIBMPI),
            "MPI4PY_MPIABI": "openmpi",
            "OPAL_PREFIX": str(PREFIX),
            "LD_LIBRARY_PATH": os.pathsep.join(filter(None, [str(PREFIX / "lib"), os.environ.get("LD_LIBRARY_PATH")])),
        }
    )
    argv = [str(PREFIX / "bin" / "mpiexec"), "--oversubscribe", "-n", "2", sys.executable, "-m", "fabricprobe", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


def test_the_build_says_it_is_cuda_aware_with_no_device_here():
    out = _on_the_build(["info", "--json"])
    assert out.returncode == 0, out.stderr[-2000:]
    prov = json.loads(out.stdout[out.stdout.index("{") :])
    assert prov["mpi_vendor"] == "Open MPI" and prov["mpi_version"].startswith("4.1"), prov["mpi_library_version"]
    assert prov["cuda_library"] == "yes" and prov["cuda"] == "yes (library), no device", prov
    # its own query: Open MPI 4.1 answers what it was built with (1), whatever the machine has
    assert prov["cuda_aware"] == "yes" and prov["cuda_aware_method"] == "MPIX_Query_cuda_support()"


def test_a_host_sweep_on_the_build_agrees_with_the_wheel(tmp_path):
    out = _on_the_build(["sweep", "-o", str(tmp_path / "cuda.h5"), *SWEEP, *QUIET])
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = run_mpi(2, ["sweep", "-o", str(tmp_path / "wheel.h5"), *SWEEP, *QUIET])
    assert wheel.returncode == 0, wheel.stderr[-2000:]
    runs = [load_runs(str(tmp_path / f"{name}.h5"))[-1] for name in ("cuda", "wheel")]
    assert runs[0].attrs["mpi_version"] != runs[1].attrs["mpi_version"]  # two libraries, not one twice
    shapes = []
    for run in runs:
        points = [p for p in run.points if p["collective"] != "empty"]  # the harness floor: nothing to check
        assert points and all(p["status"] == "ok" and p["wrong"] == 0 for p in points), run.path
        assert all(p["checked"] > 0 for p in points if p["count"] > 0)
        shapes.append(sorted((p["collective"], p["algorithm"], p["bytes"], p["dtype"], p["op"]) for p in points))
    assert shapes[0] == shapes[1]
