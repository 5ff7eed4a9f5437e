"""Bad input under mpiexec: one clear line from rank 0 whatever the launcher forwards, exit status 2, no
traceback, nothing written (the same checks in one process: test_bad_input.py)."""

from __future__ import annotations

import h5py
import pytest
from mpirun import error_lines, need_ranks, run_mpi
from test_bad_input import BAD_SWEEPS, assert_clean_failure

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("args,fragment", BAD_SWEEPS[:4] + BAD_SWEEPS[11:12])
def test_bad_sweep_options_under_mpiexec_print_once(args, fragment, results):
    assert_clean_failure(run_mpi(2, ["sweep", "-o", str(results), *args]), fragment, results)


def test_unwritable_output(tmp_path):
    missing = tmp_path / "no" / "such" / "dir" / "r.h5"
    out = run_mpi(2, ["sweep", "-o", str(missing), "--quick"])
    assert_clean_failure(out, "does not exist", missing)
    out = run_mpi(2, ["sweep", "-o", str(tmp_path), "--quick"])
    assert out.returncode == 2 and "is a directory" in error_lines(out.stderr)[0]


def test_existing_file_that_is_not_ours_is_left_alone(tmp_path):
    other = tmp_path / "data.h5"
    with h5py.File(other, "w") as f:
        f["x"] = 1
    before = other.read_bytes()
    out = run_mpi(2, ["sweep", "-o", str(other), "--quick"])
    assert out.returncode == 2 and "not a fabricprobe results file" in error_lines(out.stderr)[0]
    assert other.read_bytes() == before


def test_mismatched_options_across_ranks(tmp_path):
    """An MPMD launch whose ranks disagree is refused before anything is measured."""
    found = need_ranks(2)
    import sys

    from mpirun import mpi_env, run_launched

    results = tmp_path / "r.h5"
    prog = [sys.executable, "-m", "fabricprobe", "sweep", "-o", str(results), "--sizes", "8"]
    argv = found.argv(1) + prog + ["-d", "float32", ":", "-n", "1"] + prog + ["-d", "float64"]
    if found.vendor == "Open MPI":
        argv = [found.mpiexec, "--oversubscribe", "-n", "1"] + argv[4:]
    out = run_launched(argv, env=mpi_env(), timeout=120)
    assert_clean_failure(out, "options differ between ranks", results)


def test_help_under_mpiexec_prints_once():
    out = run_mpi(2, ["sweep", "--help"])
    assert out.returncode == 0 and out.stdout.count("usage: fabricprobe sweep") == 1
