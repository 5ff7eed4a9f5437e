"""Colour only where a person reads it: under mpiexec a rank's stdout is Open MPI's pseudo-terminal even
when mpiexec's own output goes to a file, so the launcher's streams decide, and NO_COLOR / FORCE_COLOR
beat detection."""

from __future__ import annotations

import shlex

import pytest
from mpirun import fabricprobe_argv, need_ranks, run_in_terminal, run_mpi

from fabricprobe.console import outermost_launcher_stream

ESC = "\x1b["


@pytest.mark.parametrize(
    "chain, expected",
    [
        # `mpiexec … | tee log` from a terminal: the shell above mpiexec has the terminal, mpiexec the pipe
        ([("prterun", "pipe:[1]"), ("bash", "/dev/pts/3")], "pipe:[1]"),
        ([("prterun", "/dev/pts/3"), ("bash", "/dev/pts/3")], "/dev/pts/3"),
        # MPICH: the proxy pipes, mpiexec decides
        ([("hydra_pmi_proxy", "pipe:[7]"), ("mpiexec.hydra", "/dev/pts/1"), ("bash", "/dev/pts/1")], "/dev/pts/1"),
        ([("hydra_pmi_proxy", "pipe:[7]"), ("mpiexec.hydra", "/tmp/out"), ("bash", "/dev/pts/1")], "/tmp/out"),
        # Slurm
        ([("slurmstepd", "pipe:[2]"), ("slurmstepd", "pipe:[2]")], "pipe:[2]"),
        # no launcher among the ancestors: nothing to go by
        ([("bash", "/dev/pts/0"), ("sshd", None)], None),
    ],
)
def test_the_outermost_launcher_decides(chain, expected):
    assert outermost_launcher_stream(chain) == expected


@pytest.fixture
def small_results(sweep_file):
    return sweep_file  # the session's shared sweep (conftest.py)


@pytest.mark.process
def test_no_escape_codes_when_mpiexec_writes_to_a_file_from_a_terminal(small_results, tmp_path):
    found = need_ranks(1)
    report = shlex.join(found.argv(1) + fabricprobe_argv() + ["report", str(small_results)])
    shown = run_in_terminal(report)
    assert shown.returncode == 0 and ESC in shown.stdout  # the terminal gets colour
    saved = tmp_path / "report.txt"
    piped = run_in_terminal(f"{report} > {shlex.quote(str(saved))}")
    assert piped.returncode == 0
    text = saved.read_text()
    assert "allreduce" in text and ESC not in text


@pytest.mark.process
def test_no_color_and_force_color_beat_detection(small_results):
    plain = run_mpi(1, ["report", str(small_results)], env={"FORCE_COLOR": "1"})
    assert plain.returncode == 0 and ESC in plain.stdout
    off = run_in_terminal(
        "NO_COLOR=1 " + shlex.join(need_ranks(1).argv(1) + fabricprobe_argv() + ["report", str(small_results)])
    )
    assert off.returncode == 0 and "allreduce" in off.stdout and ESC not in off.stdout
