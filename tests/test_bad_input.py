"""Bad input: one clear line from rank 0, exit status 2, no traceback, nothing written."""

from __future__ import annotations

import os

import h5py
import pytest
from mpirun import error_lines, need_ranks, run_local, run_mpi

BAD_SWEEPS = [
    (["-b", "8x"], "invalid size"),
    (["-b", "4M", "-e", "8"], "empty size range"),
    (["--sizes", "8", "-b", "8"], "either --sizes or a range"),
    (["--collectives", "allreduc"], "did you mean 'allreduce'"),
    (["-d", "float16"], "unknown datatype"),
    (["--ops", "xor"], "unknown op"),
    (["--algorithms", "nope"], "unknown algorithm"),
    (["--iters", "0"], "invalid --iters '0': it must be at least 1"),
    (["--ci-target", "2"], "--ci-target"),
    (["--mode", "fast"], "unknown mode"),
    (["--rma-sync", "flsh"], "unknown one-sided synchronization"),
    (["--thread-level", "many"], "invalid choice"),
    (["--root", "7"], "not a rank"),
    (["--bogus"], "unrecognized arguments"),
    (["--library-variant", "a" * 57], "at most 56 characters"),
    (["--sizes", "8,,16"], "an item is empty"),  # an empty item is an error, never silently dropped
    (["--collectives", "allreduce,,bcast"], "an item is empty"),
    (["--comm-sizes", "2,,4"], "an item is empty"),
    (["--point-timeout", "nan"], "invalid --point-timeout 'nan': it must be finite"),
    (["--max-time", "inf"], "invalid --max-time 'inf': it must be finite"),
    # sweep --launches and the random order (issue 36)
    (["--launches", "0", "-n", "2"], "--launches"),
    (["--launches", "2"], "needs -n"),
    (["-n", "2"], "go with --launches"),
    (["--mpiexec", "/bin/true"], "go with --launches"),
    (["--seed", "-3"], "--seed"),
    (["--order", "shuffled"], "--order"),
    (["--launches", "2", "-n", "2", "--resume", "x.h5"], "--resume"),
]


def _assert_clean_failure(out, fragment, results):
    assert out.returncode == 2, out.stderr
    lines = error_lines(out.stderr)
    assert len(lines) == 1, out.stderr
    assert fragment in lines[0]
    assert "Traceback" not in out.stderr + out.stdout
    assert not results.exists()


@pytest.mark.parametrize("args,fragment", BAD_SWEEPS)
def test_bad_sweep_options_single_process(args, fragment, results):
    _assert_clean_failure(run_local(["sweep", "-o", str(results), *args]), fragment, results)


@pytest.mark.mpi
@pytest.mark.parametrize("args,fragment", BAD_SWEEPS[:4] + BAD_SWEEPS[11:12])
def test_bad_sweep_options_under_mpiexec_print_once(args, fragment, results):
    _assert_clean_failure(run_mpi(2, ["sweep", "-o", str(results), *args]), fragment, results)


@pytest.mark.mpi
def test_unwritable_output(tmp_path):
    missing = tmp_path / "no" / "such" / "dir" / "r.h5"
    out = run_mpi(2, ["sweep", "-o", str(missing), "--quick"])
    _assert_clean_failure(out, "does not exist", missing)
    out = run_mpi(2, ["sweep", "-o", str(tmp_path), "--quick"])
    assert out.returncode == 2 and "is a directory" in error_lines(out.stderr)[0]


@pytest.mark.mpi
def test_existing_file_that_is_not_ours_is_left_alone(tmp_path):
    other = tmp_path / "data.h5"
    with h5py.File(other, "w") as f:
        f["x"] = 1
    before = other.read_bytes()
    out = run_mpi(2, ["sweep", "-o", str(other), "--quick"])
    assert out.returncode == 2 and "not a fabricprobe results file" in error_lines(out.stderr)[0]
    assert other.read_bytes() == before


@pytest.mark.mpi
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
    _assert_clean_failure(out, "options differ between ranks", results)


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["report", "missing.h5"], "no such file"),
        (["report", "{text}"], "not HDF5"),
        (["report", "{other}"], "not a fabricprobe results file"),
        (["report", "{text}", "--format", "xml"], "invalid choice"),
        (["sweep", "--resume", "{other}"], "not a fabricprobe results file"),
        (["sweep", "--run", "1"], "needs --resume"),
    ],
)
def test_bad_files(args, fragment, tmp_path):
    text = tmp_path / "text.h5"
    text.write_text("not hdf5")
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = 1
    args = [a.format(text=text, other=other) for a in args]
    out = run_local(args, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert len(error_lines(out.stderr)) == 1 and fragment in out.stderr
    assert "Traceback" not in out.stderr


def test_version_and_help():
    out = run_local(["--version"])
    assert out.returncode == 0 and out.stdout.startswith("fabricprobe ")
    for sub in ([], ["sweep"], ["report"], ["info"]):
        out = run_local([*sub, "--help"])
        assert out.returncode == 0 and "usage: fabricprobe" in out.stdout, sub
    out = run_local([])
    assert out.returncode == 2 and "required" in error_lines(out.stderr)[0]


@pytest.mark.mpi
def test_help_under_mpiexec_prints_once():
    out = run_mpi(2, ["sweep", "--help"])
    assert out.returncode == 0 and out.stdout.count("usage: fabricprobe sweep") == 1


def test_python_dash_m(tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "fabricprobe", "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ},
    )
    assert out.returncode == 0 and "fabricprobe" in out.stdout


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["tune-sweep", "-n", "2", "--mpiexec", "/nonexistent/mpiexec"], "no such executable"),
        (["tune-sweep", "-n", "4", "--comm-sizes", "2,,4"], "an item is empty"),
        (["tune-sweep", "-n", "2", "--collectives", "allreduce", "--only", "nosuchalg"], "--only nosuchalg"),
        (["tune-sweep", "-n", "2", "--collectives", "allreduce", "--algorithms", "nosuch"], "--algorithms 'nosuch'"),
        (["tune-sweep", "-n", "2", "--collectives", "alltoall", "--algorithms", "ring"], "not a fabricprobe algorithm"),
        (["tune-sweep", "-n", "4", "--ranks-per-node", "3,3"], "adds up to 6 ranks"),
        (["tune-sweep", "-n", "4", "--ranks-per-node", "2x"], "invalid --ranks-per-node"),
        (["tune-sweep", "-n", "4", "--density", "0.01,x"], "invalid --density 'x'"),
        (["train", "sparse_dp", "--device", "cupy"], "--device cupy: dp_sgd, hybrid and easgd --mode sync"),
        (["train", "easgd", "--mode", "fcfs", "--device", "cupy"], "async EASGD"),
        (["tune", "r.h5", "--min-gain", "-1"], "invalid --min-gain"),
        (["tune", "r.h5", "--min-gain", "nan"], "invalid --min-gain"),
        (["tune", "r.h5", "--proven-only"], "give --verify too"),
        (["model", "r.h5", "--scale", "2x2,,4x4"], "an item is empty"),
        (["train", "dp_sgd", "--hidden", "64,,32"], "an item is empty"),
        (["tune-sweep", "-n", "2", "--budget", "0"], "invalid --budget"),
        (["tune-sweep", "-n", "2", "--budget", "1.5"], "invalid --budget"),
        (["tune-sweep", "-n", "2", "--budget", "nan"], "invalid --budget"),
        (["tune-sweep", "-n", "2", "--budget", "0.2", "--collectives", "sparse_allreduce"], "library algorithms"),
        (["tune-eval", "missing.h5"], "no such file"),
        (["tune-eval", "x.h5", "--replay", "0"], "budgets are fractions"),
        (["tune-eval", "x.h5", "--replay", "a,b"], "expected fractions"),
    ],
)
def test_bad_numbers_lists_and_names_in_other_commands(args, fragment, tmp_path):
    out = run_local(args, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    lines = error_lines(out.stderr)
    assert len(lines) == 1 and fragment in lines[0], out.stderr
    assert "Traceback" not in out.stderr and not list(tmp_path.iterdir())


def test_tune_sweep_checks_its_output_before_any_job(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    out = run_local(["tune-sweep", "-n", "2", "--collectives", "allreduce", "-o", str(notes)], timeout=60)
    assert out.returncode == 2 and "not a fabricprobe results file" in error_lines(out.stderr)[0]
    assert notes.read_text() == "my notes\n" and "[1/" not in out.stderr  # no job was launched
