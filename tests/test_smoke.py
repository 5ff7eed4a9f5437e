"""The smoke test each wheel runs first (`nox -s quick`, and the whole suite): the README's quick start as
written, `mpiexec -n 2 fabricprobe sweep --quick` with the environment's own mpiexec and entry point,
measures every default collective and point-to-point test, validates each point, keeps them in
fabricprobe.h5 and prints the report."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mpirun import mpi_env, need_ranks, run_launched

from fabricprobe.store import load_runs

pytestmark = pytest.mark.mpi
BIN = Path(sys.executable).parent


def test_the_readme_quick_start(tmp_path):
    found = need_ranks(2)
    argv = [found.mpiexec, "-n", "2", str(BIN / "fabricprobe"), "sweep", "--quick"]
    out = run_launched(argv, env=mpi_env(), cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    (run,) = load_runs(str(tmp_path / "fabricprobe.h5"))
    points = [p for p in run.points if p["collective"] != "empty"]
    assert run.status == "complete" and run.attrs["nranks"] == 2
    assert {"allreduce", "bcast", "latency", "bw"} <= {p["collective"] for p in points}
    assert points and all(p["status"] == "ok" and p["wrong"] == 0 for p in points)
    assert "allreduce" in out.stdout and "results in fabricprobe.h5" in out.stderr
