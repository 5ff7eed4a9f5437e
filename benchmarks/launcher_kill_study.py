"""docs/studies/2026-11-29-launcher-kills.md (issue 53): SIGKILL to the launcher tune-sweep started, at a
random instant of its run, and Ctrl-C (SIGINT to tune-sweep's process group, as a terminal sends it) in
its first 3 s; then what tune-sweep said and what it left running.

    python benchmarks/launcher_kill_study.py [KILLS] [CTRL_CS] [SEED]   (default 25 10 1; the embedded MPI)

A kill trial starts tune-sweep (2 ranks, allreduce and reduce, two sizes), waits a random 0-100% of an
undisturbed tune-sweep's length, and SIGKILLs whichever launcher (tune-sweep's child) is running then;
a trial where none is running (start-up, between launches, writing) is counted as "no launcher" and
tune-sweep must then finish as usual. Per trial:
- status: tune-sweep's exit status (5: a launcher ended by a signal, docs/cli.md);
- said: exactly one `fabricprobe: error:` line naming the signal, exit 5; or, where the kill landed on
  a probe (the launch that asks which component serves the job) and tune-sweep went on to measure
  everything, exit 0 with a line saying the probe's launcher was ended by SIGKILL;
- left: processes still alive once tune-sweep returned whose command line names the trial's folder
  (its ranks name their job file there);
- tracebacks: "Traceback" anywhere in its output.
A Ctrl-C trial counts tracebacks, exit statuses and lines. Exit status 1 if any rank was left, any
traceback seen, or a killed launcher went unnamed."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from mpirun import fabricprobe_argv, kill_session, mpi_env, need_ranks, processes_mentioning  # noqa: E402

from fabricprobe.mpienv import orphans  # noqa: E402

GRID = ["--collectives", "allreduce,reduce", "--sizes", "8,64K", "--iters", "20", "--max-time", "0.05"]


def _tune_sweep(folder: Path) -> subprocess.Popen:
    argv = [*fabricprobe_argv(), "tune-sweep", "-n", "2", *GRID, "--algorithms", "none", "-o", str(folder / "t.h5")]
    return subprocess.Popen(
        argv, env=mpi_env(), start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )


def _launchers(pid: int) -> list[int]:
    found = []
    for child in orphans.children(pid):
        try:
            name = open(f"/proc/{child}/comm").read().strip()
        except OSError:
            continue
        if name.startswith(("mpiexec", "mpirun", "prterun", "prte", "hydra", "srun")):
            found.append(child)
    return found


def _finish(proc: subprocess.Popen, folder: Path) -> tuple[int, str, list[int]]:
    out, _ = proc.communicate(timeout=300)
    left = processes_mentioning(str(folder))
    kill_session(proc.pid)
    return proc.returncode, out.decode("utf-8", "replace"), left


def undisturbed_length() -> float:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        code, out, _ = _finish(_tune_sweep(Path(tmp)), Path(tmp))
        if code != 0:
            raise SystemExit(f"an undisturbed tune-sweep failed (exit {code}):\n{out[-2000:]}")
        return time.monotonic() - started


def kill_trial(delay: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        proc = _tune_sweep(Path(tmp))
        time.sleep(delay)
        launchers = _launchers(proc.pid) if proc.poll() is None else []
        for pid in launchers:
            os.kill(pid, signal.SIGKILL)
        code, out, left = _finish(proc, Path(tmp))
    errors = [line for line in out.splitlines() if line.startswith("fabricprobe: error:")]
    killed = bool(launchers)
    if not killed:
        named = code == 0
    elif code == 0:  # a probe's launcher (which component serves the job): tune-sweep goes on and says so
        named = not errors and "was ended by SIGKILL" in out
    else:
        named = code == 5 and len(errors) == 1 and "SIGKILL" in errors[0]
    return {"killed": killed, "status": code, "named": named, "left": len(left), "traceback": "Traceback" in out}


def ctrl_c_trial(delay: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        proc = _tune_sweep(Path(tmp))
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        code, out, left = _finish(proc, Path(tmp))
    lines = [line for line in out.splitlines() if line.strip()]
    return {"status": code, "lines": len(lines), "left": len(left), "traceback": "Traceback" in out}


def main() -> int:
    kills = int(sys.argv[1]) if len(sys.argv) > 1 else 25
    ctrl_cs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    need_ranks(2)
    length = undisturbed_length()
    print(f"undisturbed tune-sweep: {length:.1f} s")
    kill_rows = [kill_trial(rng.uniform(0, length)) for _ in range(kills)]
    ctrl_rows = [ctrl_c_trial(rng.uniform(0, 3.0)) for _ in range(ctrl_cs)]
    killed = [r for r in kill_rows if r["killed"]]
    print(f"SIGKILL to the launcher: {len(kill_rows)} trials, {len(killed)} with a launcher running")
    print(f"  exit statuses (launcher killed): {dict(Counter(r['status'] for r in killed))}")
    print(f"  exit statuses (no launcher then): {dict(Counter(r['status'] for r in kill_rows if not r['killed']))}")
    print(f"  named in one line: {sum(r['named'] for r in killed)} of {len(killed)}")
    print(f"  ranks left after tune-sweep returned: {sum(r['left'] for r in kill_rows)}")
    print(f"  tracebacks: {sum(r['traceback'] for r in kill_rows)}")
    print(f"Ctrl-C in the first 3 s: {len(ctrl_rows)} trials")
    print(f"  exit statuses: {dict(Counter(r['status'] for r in ctrl_rows))}")
    print(f"  lines printed: {dict(Counter(r['lines'] for r in ctrl_rows))}")
    print(f"  processes left: {sum(r['left'] for r in ctrl_rows)}")
    print(f"  tracebacks: {sum(r['traceback'] for r in ctrl_rows)}")
    bad = (
        sum(r["left"] for r in kill_rows + ctrl_rows)
        + sum(r["traceback"] for r in kill_rows + ctrl_rows)
        + sum(not r["named"] for r in kill_rows)
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
