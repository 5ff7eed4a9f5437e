"""Launching real mpiexec jobs from the tests, with the rules of the embedded MPI wheels:
Open MPI oversubscribes (it yields when idle), MPICH busy-polls so it runs at n ≤ 2 only."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from inprocess import IN_PROCESS, run_in_process

from fabricprobe.mpienv.launcher import LAUNCH_ATTEMPTS, launcher_failed_to_start, run_launch, vendor_named_by

BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Launcher:
    mpiexec: str
    vendor: str  # "Open MPI", "MPICH" or "unknown"

    @property
    def max_ranks(self) -> int:
        return 64 if self.vendor == "Open MPI" else 2

    def argv(self, n: int) -> list[str]:
        if self.vendor == "Open MPI":
            return [self.mpiexec, "--oversubscribe", "-n", str(n)]
        return [self.mpiexec, "-n", str(n)]


@functools.lru_cache(maxsize=1)
def launcher() -> Launcher | None:
    candidates = [BIN / "mpiexec", shutil.which("mpiexec")]
    path = next((str(c) for c in candidates if c and os.path.exists(c)), None)
    if path is None:
        return None
    out = subprocess.run([path, "--version"], capture_output=True, text=True, env=mpi_env()).stdout
    vendor = vendor_named_by(out) or "unknown"  # Debian's Open MPI 4.1 says "OpenRTE", not "Open MPI"
    return Launcher(path, vendor)


def mpi_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONUNBUFFERED="1")
    # Tests must not inherit a user's MPI tuning.
    for key in list(env):
        if key.startswith(("OMPI_MCA_coll", "MPIR_CVAR_", "FABRICPROBE_FAULT")):
            del env[key]
    env.update(extra or {})
    return env


def python_path(*folders: str | Path) -> str:
    """PYTHONPATH with these folders first, then whatever this process was given."""
    return os.pathsep.join([*map(str, folders), *filter(None, [os.environ.get("PYTHONPATH")])])


def need_ranks(n: int) -> Launcher:
    """The launcher, or skip the test when this MPI cannot run n ranks here."""
    found = launcher()
    if found is None:
        pytest.skip("no mpiexec in this environment")
    if n > found.max_ranks:
        pytest.skip(f"{found.vendor} busy-polls: more ranks than cores only with Open MPI (n={n})")
    return found


def more_ranks_than_cores() -> bool:
    """Whether this environment's MPI runs well with more ranks than cores (Open MPI yields; MPICH busy-polls)."""
    found = launcher()
    return found is not None and found.max_ranks > 2


def fabricprobe_argv() -> list[str]:
    return [sys.executable, "-m", "fabricprobe"]


def checker_reports(
    n: int, python_args: list[str], key=lambda r: r["nranks"], *, env=None, timeout: float = 1800
) -> dict:
    """A checker driver (tests/drivers/check_*.py) on n ranks, which must succeed: its JSON report lines
    (one per communicator it checked: drivers/each_size.py), keyed by key(report). The timeout only
    stops a hung job: p = 1..9 on 9 ranks takes 29 s alone, and ran past 300 s beside a busy loop per
    core (the whole suite under benchmarks/under_load.py, twice), so a limit near it judged the load."""
    import json

    out = run_mpi(n, [], python_args=python_args, env=env, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    reports = [json.loads(line) for line in out.stdout.strip().splitlines() if line.startswith("{")]
    return {key(r): r for r in reports}


def run_mpi(
    n: int,
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    cwd: str | Path | None = None,
    python_args: list[str] | None = None,
) -> subprocess.CompletedProcess:
    """Run `fabricprobe ARGS` (or `python PYTHON_ARGS`) under mpiexec with n ranks."""
    found = need_ranks(n)
    program = [sys.executable, *python_args] if python_args is not None else [*fabricprobe_argv(), *args]
    with one_crowded_job_at_a_time(n):
        return run_launched(found.argv(n) + program, timeout=timeout, env=mpi_env(env), cwd=cwd)


CROWDED = 2 * (os.cpu_count() or 1)  # ranks per core past which a job waits for the other crowded ones


@contextlib.contextmanager
def one_crowded_job_at_a_time(n: int):
    """A job of more than twice as many ranks as cores waits while another such job runs (on the other
    xdist worker, or in another test session on this machine). Two of them side by side thrash: every
    collective step waits for its slowest rank to be scheduled, so p = 1..9 on 9 ranks took 140 s beside
    a 16-rank job against 29 s alone (docs/testing.md). A job at most twice the cores runs at once."""
    if n <= CROWDED:
        yield
        return
    with no_crowded_job_beside():
        yield


@contextlib.contextmanager
def no_crowded_job_beside():
    """Hold the lock every crowded job takes: no job of more than twice the cores runs meanwhile (a
    test whose verdict needs its ranks scheduled within a deadline, such as an interrupt's mark)."""
    import tempfile

    with open(Path(tempfile.gettempdir()) / f"fabricprobe-tests-crowded-{os.getuid()}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run_launched(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run of an mpiexec command line, launched again only if mpiexec failed before any rank
    ran (fabricprobe.mpienv.launcher.run_launch: one rule for fabricprobe's launches and the tests')."""
    return run_launch(argv, **kwargs)


class Launched:
    """A Popen of an mpiexec command line whose stderr is read line by line (a sweep's progress), in a
    session of its own (so kill_session ends the launcher and every rank). Launched again, as run_launch
    does, when its stderr ends before any progress line with mpiexec saying no rank ever ran: CI lost a
    kill-and-resume test to one such launch. Everything else (pid, wait, communicate, returncode) is the
    current Popen's."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None):
        self.argv = argv
        self.env = env
        self.attempts = 0
        self._start()

    def _start(self) -> None:
        self.attempts += 1
        self.seen: list[str] = []
        self.proc = subprocess.Popen(
            self.argv,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=mpi_env(self.env),
            start_new_session=True,
        )

    def __getattr__(self, name: str):
        return getattr(self.proc, name)

    def readline(self) -> str:
        while True:
            line = self.proc.stderr.readline()
            if line:
                self.seen.append(line)
                return line
            progressed = any(seen.startswith("[") for seen in self.seen)
            if progressed or self.attempts >= LAUNCH_ATTEMPTS or not launcher_failed_to_start("".join(self.seen)):
                return line
            self.proc.wait()
            self._start()


def start_sweep(n: int, args: list[str]) -> Launched:
    """`fabricprobe sweep ARGS` under mpiexec with n ranks, its progress lines on a pipe."""
    return Launched(need_ranks(n).argv(n) + fabricprobe_argv() + ["sweep", *args])


def wait_for_points(proc: Launched, points: int, timeout: float = 120) -> int:
    """Read a sweep's stderr until it has reported `points` points done ("[k/N] ..." lines), it ends,
    or the time is up; returns how many it reported."""
    import time

    reported = 0
    deadline = time.monotonic() + timeout
    while reported < points and time.monotonic() < deadline:
        line = proc.readline()
        if not line:
            break
        reported += line.startswith("[")
    return reported


def run_in_terminal(shell_command: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """A shell command line (an mpiexec launch) run under util-linux `script`, so that it has a terminal;
    its stdout carries the terminal's output, stderr included. Launched again as run_launch does."""
    if shutil.which("script") is None:
        pytest.skip("needs util-linux `script` to provide a terminal")
    return run_launch(["script", "-qec", shell_command, "/dev/null"], env=mpi_env(), timeout=timeout)


@dataclass(frozen=True)
class Screen:
    returncode: int
    text: str  # what the terminal was sent, stdout and stderr together, carriage returns kept

    @property
    def lines(self) -> int:
        """Lines the output took on the screen: a live progress line redrawn with carriage returns is one."""
        return self.text.count("\n")

    @property
    def plain(self) -> str:
        """The text without its colours and cursor controls."""
        import re

        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", self.text)


def run_on_screen(
    shell_command: str, columns: int, *, cwd=None, timeout: float = 300, env: dict[str, str] | None = None
) -> Screen:
    """A shell command line run in a terminal `columns` wide (util-linux `script`), as a user at that
    terminal sees it; launched again as run_launch does if its mpiexec failed before any rank ran.
    The terminal alone gives the width: COLUMNS and LINES from this process are dropped."""
    if shutil.which("script") is None:
        pytest.skip("needs util-linux `script` to provide a terminal")
    command = f"stty cols {columns} rows 50; {shell_command}"
    screen_env = {k: v for k, v in mpi_env(env).items() if k not in ("COLUMNS", "LINES")}
    for _ in range(LAUNCH_ATTEMPTS):
        # bytes, not text: text mode would turn each carriage return of a live line into a new line
        done = subprocess.run(
            ["script", "-qec", command, "/dev/null"], capture_output=True, env=screen_env, cwd=cwd, timeout=timeout
        )
        text = done.stdout.decode("utf-8", "replace").replace("\r\n", "\n")
        if done.returncode == 0 or not launcher_failed_to_start(text):
            break
    return Screen(done.returncode, text)


def run_local(
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    cwd: str | Path | None = None,
    process: bool = False,
) -> subprocess.CompletedProcess:
    """Run `fabricprobe ARGS` without mpiexec: in this process for the commands that only read and write
    files (tests/inprocess.py), as a process of its own for the others or when `process` is asked."""
    if not process and args and args[0] in IN_PROCESS:
        return run_in_process(args, env=env, cwd=cwd)
    clean = mpi_env(env)
    for key in list(clean):
        if key.startswith(("OMPI_COMM_WORLD", "PMIX_", "PMI_")):
            del clean[key]
    return subprocess.run(
        fabricprobe_argv() + args, capture_output=True, text=True, timeout=timeout, env=clean, cwd=cwd
    )


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("fabricprobe: error:")]


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line mentions text (a job's ranks name its files)."""
    out = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text in open(f"/proc/{entry}/cmdline").read() and "Z" not in open(f"/proc/{entry}/stat").read()[-60:]:
                out.append(int(entry))
        except OSError:
            pass
    return out


def session_members(sid: int) -> list[int]:
    """The live processes of session `sid` (a command started with start_new_session=True: its
    launchers and ranks, which Open MPI puts in process groups of their own)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # state, ppid, pgrp, session
            out.append(int(entry))
    return out


def kill_session(sid: int, timeout: float = 30.0) -> None:
    """SIGKILL every process of session `sid` (a launcher started with start_new_session=True) and wait
    until they are gone. Open MPI puts each rank in its own process group, so killpg(launcher) would
    leave the ranks running on; they do share the launcher's session."""
    import signal
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = session_members(sid)
        if not alive:
            return
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)
