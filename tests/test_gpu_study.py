"""The GPU study (benchmarks/gpu/study.sh) run dry, as CI can: Numba's CUDA simulator for the device
buffers, the trainers on the host, the embedded wheel for the MPI (the CUDA-aware build where it is
built). What a lent GPU's 15 minutes would spend is then spent on figures, not on a broken script: every
phase runs, every point is validated, the tables come out whole, and what cannot be done says so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mpirun import mpi_env, need_ranks

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parent.parent


def test_the_gpu_study_runs_dry_end_to_end(tmp_path):
    found = need_ranks(4)
    env = mpi_env(
        {
            "DRY": "1",
            "SIZES": "8,64K",  # 64 KiB: four chunks of 16 KiB, so pipelined runs too
            "MAX_TIME": "0.02",
            "PYTHON": sys.executable,
            "MPIEXEC": found.mpiexec,
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        }
    )
    out = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu" / "study.sh"), str(tmp_path), "env", "direct", "train"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    tables = (tmp_path / "tables.md").read_text()
    rows = [line.split("|")[1:-1] for line in tables.splitlines() if line.startswith("| ") and "---" not in line]
    sweep = [[c.strip() for c in r] for r in rows if len(r) == 8 and r[0].strip() in ("1", "2")]
    assert {(r[0], r[1]) for r in sweep} >= {("1", "allreduce"), ("2", "allreduce"), ("2", "bcast"), ("2", "latency")}
    assert "WRONG" not in tables  # every point validated right
    at_64k = [r for r in sweep if r[3] == "64 KiB" and r[1] == "allreduce"]
    assert at_64k and all(r[4] != "–" and r[5] != "–" and r[6] != "–" for r in at_64k), at_64k  # on, staged, pipelined
    trained = [[c.strip() for c in r] for r in rows if len(r) == 9 and r[0].strip().isdigit()]
    assert [(r[1], r[2]) for r in trained] == [("dp_sgd", "2"), ("hybrid", "4")], trained
    assert "not done: NCCL at n = 2" in out.stdout
    assert '"cuda":' in (tmp_path / "env.txt").read_text()
