"""docs/studies/2026-11-26-interrupts.md (issue 32): SIGINT, SIGTERM or SIGKILL at a random instant from
0 ms to the end of a sweep, sent to rank 0, to another rank or to mpiexec; then what is left.

    python benchmarks/interrupt_study.py [TRIALS] [SEED]     (default 120; the embedded MPI, 2 ranks)
    INTERRUPT_SWEEP=long python benchmarks/interrupt_study.py ...   (the sweep below: short or long)

Per trial, a fresh results file and a sweep of a few dozen small points under mpiexec, its progress
read line by line; the signal lands after a random delay (uniform from 0 to the sweep's measured
length, so a share lands in its start-up), and whatever the signal left running is killed after
30 s. Then:
- unreadable: any reader (load_runs, `fabricprobe report`) failing on the file, or a traceback;
- lost: fewer points stored than the progress reported complete;
- bogus: a run whose world is not the 2 ranks launched (a rank that came up alone);
- not resumable: `sweep --resume` of an interrupted run failing, or leaving the run incomplete,
  or storing a point twice.
Counts per (signal, target) and in all; exit status 1 if any of the four is not 0."""

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

from mpirun import fabricprobe_argv, kill_session, mpi_env, need_ranks  # noqa: E402

from fabricprobe.errors import UsageError  # noqa: E402
from fabricprobe.store import journal, load_runs  # noqa: E402

# Two sweeps: "short" is mostly start-up (1.5 s of its 2.1 s: 96 of 120 signals landed before the first
# point), "long" runs 30 points of fixed length for ~4 s after its start-up (5.8 s in all).
SWEEPS = {
    "short": ["--collectives", "allreduce,bcast,allgather", "--sizes", "8,512,32K,256K", "--iters", "30"]
    + ["--max-time", "0.02"],
    "long": ["--collectives", "allreduce,bcast,allgather,reduce,alltoall", "--sizes", "8,64,512,4K,32K,256K"]
    + ["--iters", "20000", "--ci-target", "0"],
}
SWEEP = [*SWEEPS[os.environ.get("INTERRUPT_SWEEP", "short")], "--progress", "plain", "--quiet"]
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGKILL": signal.SIGKILL}
TARGETS = ("rank 0", "rank 1", "mpiexec")


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except OSError:
                pass
    return out


def _rank_pid(launcher: int, rank: int) -> int | None:
    """The rank's python process: a descendant of the launcher whose environment names its rank."""
    todo, seen = [launcher], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"fabricprobe" in cmd and any(
            e in env for e in (f"OMPI_COMM_WORLD_RANK={rank}".encode(), f"PMI_RANK={rank}".encode())
        ):
            return pid
        todo.extend(_children(pid))
    return None


def trial(folder: Path, rng: random.Random, length: float, tally: Counter, notes: list[str]) -> None:
    path = folder / "r.h5"
    name, target = rng.choice(list(SIGNALS)), rng.choice(TARGETS)
    delay = rng.uniform(0, length)
    argv = need_ranks(2).argv(2) + fabricprobe_argv() + ["sweep", "-o", str(path), *SWEEP]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=mpi_env(), start_new_session=True)
    started = time.monotonic()
    reported = 0
    os.set_blocking(proc.stderr.fileno(), False)
    sent = False
    buffer = ""
    while proc.poll() is None and time.monotonic() - started < delay + 30:
        try:
            buffer += proc.stderr.read() or ""
        except (OSError, TypeError):
            pass
        if not sent and time.monotonic() - started >= delay:
            pid = proc.pid if target == "mpiexec" else _rank_pid(proc.pid, int(target[-1]))
            if pid is not None:
                try:
                    os.kill(pid, SIGNALS[name])
                except ProcessLookupError:
                    pass
            sent = True
        time.sleep(0.002)
    kill_session(proc.pid)
    proc.wait()
    try:
        buffer += proc.stderr.read() or ""
    except (OSError, TypeError):
        pass
    reported = sum(1 for line in buffer.splitlines() if line.startswith("["))
    key = f"{name} to {target}"
    tally[key] += 1
    tally["signal before the first point" if reported == 0 else "signal after a point completed"] += 1
    if not path.exists() and not Path(journal.journal_path(str(path))).exists():
        tally["nothing written"] += 1
        return
    try:
        runs = load_runs(str(path))
        report = subprocess.run(
            [*fabricprobe_argv(), "report", str(path)], capture_output=True, text=True, env=mpi_env(), timeout=120
        )
        if report.returncode not in (0,) and "Traceback" in report.stderr:
            raise UsageError(report.stderr[-300:])
    except UsageError as exc:
        tally["unreadable"] += 1
        notes.append(f"{key} at {delay:.3f} s: unreadable: {exc}")
        return
    stored = sum(len(r.points) for r in runs)
    if stored < reported:
        tally["lost"] += 1
        jpath = Path(journal.journal_path(str(path)))
        runs_seen = [(r.id, r.status, len(r.points)) for r in runs]
        size = jpath.stat().st_size if jpath.exists() else 0
        notes.append(
            f"{key} at {delay:.3f} s: {reported} reported, {stored} stored; runs {runs_seen}, journal {size} B"
        )
    if any(int(r.attrs.get("nranks", 2) or 2) != 2 for r in runs):
        tally["bogus"] += 1
        notes.append(f"{key} at {delay:.3f} s: a run of {[r.attrs.get('nranks') for r in runs]} ranks")
    if runs and runs[-1].status != "complete":
        tally["interrupted runs"] += 1
        out = subprocess.run(
            need_ranks(2).argv(2)
            + fabricprobe_argv()
            + ["sweep", "--resume", str(path), "--quiet", "--progress", "none"],
            capture_output=True,
            text=True,
            env=mpi_env(),
            timeout=600,
        )
        after = load_runs(str(path))[-1]
        keys = [p["key"] for p in after.points]
        if out.returncode != 0 or after.status != "complete" or len(keys) != len(set(keys)):
            tally["not resumable"] += 1
            notes.append(f"{key} at {delay:.3f} s: resume exit {out.returncode}, {after.status}: {out.stderr[-200:]}")


def main() -> int:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    tally: Counter = Counter()
    notes: list[str] = []
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        started = time.monotonic()
        probe = subprocess.run(
            need_ranks(2).argv(2) + fabricprobe_argv() + ["sweep", "-o", f"{tmp}/probe.h5", *SWEEP],
            capture_output=True,
            text=True,
            env=mpi_env(),
        )
        length = time.monotonic() - started
        assert probe.returncode == 0, probe.stderr[-1000:]
        for i in range(trials):
            folder = Path(tmp) / f"t{i}"
            folder.mkdir()
            trial(folder, rng, length, tally, notes)
    print(f"{trials} trials, sweep length {length:.1f} s")
    for key in sorted(tally):
        print(f"{key}: {tally[key]}")
    for line in notes[:40]:
        print("  ", line)
    return 1 if any(tally[k] for k in ("unreadable", "lost", "bogus", "not resumable")) else 0


if __name__ == "__main__":
    raise SystemExit(main())
