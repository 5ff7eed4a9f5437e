"""A launch is repeated only when mpiexec failed before any rank existed (Open MPI 5's "listener thread
failed to start", seen in CI); any other failure stands. Checked with a stand-in launcher that fails its
first launches in chosen ways."""

from __future__ import annotations

import shlex
import sys

import pytest
from mpirun import Launched, run_in_terminal, wait_for_points

from fabricprobe.mpienv.launcher import LAUNCH_ATTEMPTS, LAUNCHER_START_FAILURES, run_launch

FAKE = r"""
import pathlib, sys
count = pathlib.Path(sys.argv[1])
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
fail_first, message = int(sys.argv[2]), sys.argv[3]
if n <= fail_first:
    print(message, file=sys.stderr)
    sys.exit(213)
print("[1/2] allreduce 8 B", file=sys.stderr)
print("[2/2] allreduce 16 B", file=sys.stderr)
"""

STARTUP = LAUNCHER_START_FAILURES[0]


def _fake(tmp_path, fail_first: int, message: str = STARTUP) -> tuple[list[str], object]:
    script = tmp_path / "fake_mpiexec.py"
    script.write_text(FAKE)
    count = tmp_path / "launches"
    return [sys.executable, str(script), str(count), str(fail_first), message], count


def _launches(count) -> int:
    return int(count.read_text())


def test_run_launch_repeats_a_launch_that_never_started(tmp_path):
    argv, count = _fake(tmp_path, fail_first=2)
    out = run_launch(argv, timeout=60)
    assert out.returncode == 0 and _launches(count) == 3


def test_run_launch_gives_up_after_its_attempts(tmp_path):
    argv, count = _fake(tmp_path, fail_first=LAUNCH_ATTEMPTS + 1)
    out = run_launch(argv, timeout=60)
    assert out.returncode == 213 and _launches(count) == LAUNCH_ATTEMPTS


def test_any_other_failure_stands(tmp_path):
    argv, count = _fake(tmp_path, fail_first=1, message="rank 0 aborted")
    out = run_launch(argv, timeout=60)
    assert out.returncode == 213 and _launches(count) == 1


@pytest.mark.parametrize("fail_first, launches", [(0, 1), (1, 2), (2, 3)])
def test_a_sweep_read_line_by_line_is_launched_again(tmp_path, fail_first, launches):
    argv, count = _fake(tmp_path, fail_first=fail_first)
    proc = Launched(argv)
    assert wait_for_points(proc, 2, timeout=60) == 2
    proc.wait()
    assert _launches(count) == launches and proc.returncode == 0


def test_a_failed_sweep_is_not_launched_again(tmp_path):
    argv, count = _fake(tmp_path, fail_first=1, message="rank 0 aborted")
    proc = Launched(argv)
    assert wait_for_points(proc, 2, timeout=60) == 0
    proc.wait()
    assert _launches(count) == 1 and proc.returncode == 213 and "aborted" in "".join(proc.seen)


def test_a_terminal_launch_is_launched_again(tmp_path):
    argv, count = _fake(tmp_path, fail_first=1)
    out = run_in_terminal(shlex.join(argv), timeout=60)
    assert out.returncode == 0 and "[2/2]" in out.stdout and _launches(count) == 2
