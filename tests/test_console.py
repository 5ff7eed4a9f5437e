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


TURNS = """
import sys
from fabricprobe.console import take_turns_under_a_launcher
take_turns_under_a_launcher()
for k in range(30):
    sys.stdout.write("".join(f"out {k:02d} {i:05d} {'x' * 60}\\n" for i in range(300)))
    print(f"err {k:02d} the stderr line", file=sys.stderr, flush=True)
"""


def cut_or_out_of_turn(lines: list[str]) -> list[str]:
    """The lines of TURNS's output that are cut by the other stream, or out of their turn: each err k
    line must follow out k's last line, and every line be whole."""
    import re

    wrong, expected_err = [], 0
    for line in lines:
        if re.fullmatch(r"out \d\d \d{5} x{60}", line):
            continue
        if line == f"err {expected_err:02d} the stderr line":
            expected_err += 1
            continue
        wrong.append(line)
    return wrong if expected_err == 30 else [*wrong, f"{expected_err} of 30 err lines in turn"]


def test_the_turn_check_finds_a_cut_line():
    """A line cut as MPICH's hydra cut 8 to 14 of 9,030 lines before the streams took turns (issue 69)."""
    cut = ["out 03 00276 " + "x" * 43 + "err 00 the stderr line", "x" * 17]
    assert cut_or_out_of_turn(cut)[:2] == cut


@pytest.mark.process
def test_rank_0s_stdout_and_stderr_take_turns_under_the_launcher(tmp_path):
    """Issue 69: under a launcher, rank 0's stdout and stderr reach the user through two pipes (MPICH) or
    a pseudo-terminal and a pipe (Open MPI), read as data arrives: a line of one was cut by the other
    ("full tables: fafabricprobe: results in …bricprobe report"). Both streams into one file, as a
    terminal shows them: every line whole and in its turn."""
    import subprocess
    import sys

    from mpirun import mpi_env, python_path

    found = need_ranks(1)
    script = tmp_path / "turns.py"
    script.write_text(TURNS)
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    env = mpi_env({"PYTHONPATH": python_path(root)})
    env.pop("PYTHONUNBUFFERED")  # stdout buffered in blocks, as a rank's is: its flushes cut lines
    out = subprocess.run(
        found.argv(1) + [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith(("out ", "err ", "x"))]
    assert len(lines) >= 30 * 301 and not cut_or_out_of_turn(lines), cut_or_out_of_turn(lines)[:5]
