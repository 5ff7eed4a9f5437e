"""Slurm ending fabricprobe's long-running commands at random instants, as it ends jobs on a cluster:
`scancel` and a job's time limit (both SIGCONT + SIGTERM to every process of the job, SIGKILL after
KillWait), each trial a batch job in the fabric lab's Slurm cluster (2 hosts x 2 ranks). After each,
what issue 65 asks: no process of the job left after KillWait, no run marked complete that lacks a
point, no point lost (every point the job printed as measured is in the file), and `--resume`
completing the run. docs/site.md, "Jobs ended by Slurm", has the table and the commands.

    fabricprobe lab up --name fpk --subnet 10.216.40.0/24 --hosts 2 --ranks-per-host 2 --scheduler slurm
    python benchmarks/slurm_kills.py /var/tmp/fp-kills --lab fpk --reps 10      # several hours
    fabricprobe lab down --name fpk

Run it with the Python of an environment whose mpi4py loads the site's MPI (`nox -s site` leaves one at
.nox/site-openmpi-4-1); the work folder must be outside /tmp (each lab node has a /tmp of its own). To
measure one commit while the checkout changes: `git worktree add /var/tmp/fpk-tree HEAD` and run
/var/tmp/fpk-tree/benchmarks/slurm_kills.py with PYTHONPATH=/var/tmp/fpk-tree (the jobs inherit it).
Slurm keeps time limits in minutes and checks them about every 30 s: a time-limit trial's kill comes
1-2 minutes in, its instant drawn by a random sleep before the command starts; with the --resume a
trial took 2-10 minutes (three labs at once on 2 cores, docs/site.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fabricprobe.lab import state  # noqa: E402
from fabricprobe.store.reader import load_runs  # noqa: E402
from fabricprobe.store.schema import EMPTY  # noqa: E402

PY = sys.executable
FP = f"{PY} -m fabricprobe"
SRUN = "srun"  # the PMI plugin: the lab's MpiDefault, set by `lab up` for the library it finds
KILL_WAIT_S = 5  # the lab's slurm.conf
PROGRESS = re.compile(r"^\s*\[\s*(\d+)/(\d+)\]", re.M)  # "[ 4/10] ...", "  [12/30] ..."


@dataclass
class Command:
    name: str
    run: Callable[[Path, bool], str]  # the batch script's command lines (long: for a time-limit trial)
    started: str  # what the job's output shows once the command is measuring ("[": a progress line)
    window_s: float  # a scancel lands uniformly in this many seconds after `started`
    resume: Callable[[Path, bool], str] | None = None  # the command that finishes it (with its own options)
    local: bool = False  # run here (ReFrame submits the check's job itself), not as a batch job


def _sweep(w: Path, long: bool) -> str:
    # a time-limit trial's sweep outlasts the limit (1 minute, checked every 30 s, after up to 30 s of
    # sleep) by a few minutes: what its --resume measures (50,000 calls: 15 minutes on a loaded machine)
    iters = "20000" if long else "10000"
    return (
        f"{SRUN} {FP} sweep -o {w}/s.h5 --collectives allreduce,bcast,allgather --sizes 8,64K,1M "
        f"--iters {iters} --ci-target 0 --max-time 120 --point-timeout 900 --no-bound-probe --progress plain --quiet"
    )


def _tune_sweep(w: Path, long: bool) -> str:
    iters = "20000" if long else "3000"
    return (
        f"{FP} tune-sweep -n 4 -o {w}/t.h5 --collectives allreduce,bcast --sizes 8,1M --iters {iters} "
        f"--max-time 4 --point-timeout 900 --algorithms none"
    )


def _tune_verify(w: Path, long: bool) -> str:
    reps = "20" if long else "6"
    return f"{FP} tune {w}/T.h5 -o {w}/tuning --verify --reps {reps}"


def _doctor(w: Path, long: bool) -> str:
    iters = "100000,6000" if long else "60000,600"
    return f"{SRUN} {FP} doctor -o {w}/d.h5 --iterations {iters} --ring-reps 1000"


def _train(w: Path, long: bool) -> str:
    epochs = "800" if long else "150"
    return f"{SRUN} {FP} train dp_sgd -o {w}/train.h5 --dataset mnist5k --epochs {epochs} --progress plain"


def _reframe(w: Path, long: bool) -> str:
    from fabricprobe.reframe import CHECKS

    # a time-limit trial: the check's job limited to 1 minute, its sweep 1.5-4 minutes long
    iters = str(random.Random(str(w)).randint(100000, 250000)) if long else "30000"
    options = f"options=--iters {iters} --ci-target 0 --max-time 300 --no-bound-probe"
    return (
        f"PATH={w.parent}/bin:$PATH HOME={w} {Path(PY).parent}/reframe -C {w.parent}/settings.py -c {CHECKS} -r "
        f"--prefix {w}/rfm -S collectives=allreduce -S sizes=8,1M -S '{options}' -S num_tasks=4 "
        f"-S num_tasks_per_node=2{' -S time_limit=1m' if long else ''}"
    )


COMMANDS = {
    c.name: c
    for c in (
        Command("sweep", _sweep, "[", 12, lambda w, _: f"{SRUN} {FP} sweep --resume {w}/s.h5 --progress none --quiet"),
        Command("tune-sweep", _tune_sweep, "[", 25, lambda w, long: _tune_sweep(w, long) + " --resume"),
        Command("tune-verify", _tune_verify, "verifying", 25),
        Command("doctor", _doctor, "", 20),
        Command("train", _train, "", 20),
        Command("reframe", _reframe, "", 20, local=True),
    )
}
REFRAME_SETTINGS = """
site_configuration = {
    "systems": [{"name": "lab", "descr": "fabricprobe's Slurm lab", "hostnames": [".*"],
                 "partitions": [{"name": "lab", "scheduler": "squeue", "launcher": "srun",
                                 "access": ["-p lab"], "environs": ["fp"], "max_jobs": 1}]}],
    "environments": [{"name": "fp"}],
}
"""


@dataclass
class Trial:
    command: str
    kind: str
    index: int
    job: str = ""
    state: str = ""
    delay_s: float = 0.0
    left: list[str] = field(default_factory=list)  # processes of the job alive after KillWait
    printed: int = 0  # points the job printed as measured
    stored: int = 0  # points in the file
    ended_at: str = ""  # when Slurm ended the job (its EndTime)
    complete_after: int = 0  # runs marked complete after Slurm ended the job: measured on past the kill
    statuses: list[str] = field(default_factory=list)
    resumed: str = ""  # "complete", "nothing to resume", "failed: ..."
    note: str = ""


def client(lab: str, program: str) -> str:
    return str(state.directory(lab) / "bin" / program)


def submit(lab: str, w: Path, body: str, time_limit: str | None) -> str:
    script = w / "job.sh"
    script.write_text(f"#!/bin/bash\n{body}\n")
    argv = [client(lab, "sbatch"), "--parsable", "-N", "2", "--ntasks-per-node", "2", "-o", str(w / "job.out")]
    argv += ["-D", str(w)] + (["--time", time_limit] if time_limit else []) + [str(script)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    return out.stdout.strip().split(";")[0]


def job_field(lab: str, job: str, name: str) -> str:
    out = subprocess.run([client(lab, "scontrol"), "show", "job", job], capture_output=True, text=True)
    found = re.search(rf"\b{name}=(\S+)", out.stdout)
    return found.group(1) if found else ""


def job_state(lab: str, job: str) -> str:
    return job_field(lab, job, "JobState") or "GONE"


def wait_until_done(lab: str, job: str, limit_s: float) -> str:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        st = job_state(lab, job)
        if st not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED"):
            return st
        time.sleep(0.5)
    return "STILL " + job_state(lab, job)


def jobs(lab: str) -> list[str]:
    out = subprocess.run([client(lab, "squeue"), "-h", "-o", "%i"], capture_output=True, text=True, check=True)
    return out.stdout.split()


def new_job(lab: str, before: set[str], proc: subprocess.Popen, limit_s: float = 300) -> str:
    """The job a local command (ReFrame) submitted: the first id squeue shows that it did not before."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and proc.poll() is None:
        fresh = [j for j in jobs(lab) if j not in before]
        if fresh:
            return fresh[0]
        time.sleep(0.2)
    raise SystemExit(f"no job appeared (the command exited {proc.poll()})")


def job_processes(lab: str, job: str) -> list[str]:
    """Every live process whose environment holds SLURM_JOB_ID=job of this lab's cluster (the batch
    script, srun, the launchers' daemons, the ranks), as "pid cmdline". Two labs at once number their
    jobs alike: the job id alone counted the other lab's job as left."""
    found = []
    needles = (f"\0SLURM_JOB_ID={job}\0".encode(), f"\0SLURM_CLUSTER_NAME={lab}\0".encode())
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = b"\0" + f.read() + b"\0"
            if not all(needle in environ for needle in needles):
                continue
            with open(f"/proc/{entry}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                line = f.read().replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry} {line[:160]}")
        except OSError:
            continue
    return found


def results_file(w: Path) -> Path | None:
    for name in ("s.h5", "t.h5", "T.h5"):
        if (w / name).exists() or (w / f"{name}.journal").exists():
            return w / name
    rfm = w / "rfm"
    found = [p for p in rfm.rglob("sweep.h5*") if p.name in ("sweep.h5", "sweep.h5.journal")] if rfm.exists() else []
    return found[0].parent / "sweep.h5" if found else None  # the journal alone, if killed before a fold


def check_results(trial: Trial, w: Path) -> None:
    trial.printed = printed(w) if trial.command in ("sweep", "tune-sweep") else 0
    path = results_file(w)
    if path is None:
        return
    runs = load_runs(str(path))
    mine = runs if trial.command != "tune-verify" else [r for r in runs if r.config.get("library_variant") in (
        "baseline", "tuned") or (r.config.get("library_variants") or None)]  # fmt: skip
    trial.statuses = [r.status for r in mine]
    trial.stored = sum(len(r.points) for r in runs) if trial.command in ("sweep", "tune-sweep") else 0
    if not trial.ended_at:
        return
    killed = datetime.fromisoformat(trial.ended_at).replace(tzinfo=timezone.utc)  # the lab's clock is UTC
    for r in mine:
        ended = r.attrs.get("ended")
        if r.status == "complete" and ended and datetime.fromisoformat(ended) > killed + timedelta(seconds=1):
            trial.complete_after += 1


def check_folder(trial: Trial, w: Path) -> None:
    """tune --verify's output folder: no temporary file, tuning.json whole where present, nothing named
    verified unless the verification ended."""
    folder = w / "tuning"
    if not folder.exists():
        return
    names = [p.name for p in folder.rglob("*") if p.is_file()]
    if [n for n in names if ".tmp" in n]:
        trial.note += "temporary file left; "
    if (folder / "tuning.json").exists():
        try:
            json.loads((folder / "tuning.json").read_text())
        except ValueError:
            trial.note += "tuning.json damaged; "


def resume(lab: str, trial: Trial, w: Path, command: Command) -> None:
    if command.resume is None or results_file(w) is None:
        return
    (w / "resume").mkdir()
    st = wait_until_done(lab, submit(lab, w / "resume", command.resume(w, trial.kind == "timelimit"), None), 1800)
    out = (w / "resume" / "job.out").read_text(errors="replace")
    if st != "COMPLETED":
        trial.resumed = "nothing to resume" if "nothing to resume" in out else f"failed: {st} {out[-300:]}"
        return
    trial.resumed = resume_verdict(results_file(w))


def resume_verdict(path: Path) -> str:
    """After --resume: "complete" when its last run is complete and no point was measured twice (the
    harness floor, EMPTY, is every sweep's own: each collective's run of a tune-sweep has one)."""
    runs = load_runs(str(path))
    keys = [p["key"] for r in runs for p in r.points if p["collective"] != EMPTY]
    whole = runs and runs[-1].status == "complete" and len(keys) == len(set(keys))
    return "complete" if whole else f"not whole: {[r.status for r in runs]}"


def one_trial(lab: str, root: Path, command: Command, kind: str, index: int, rng: random.Random) -> Trial:
    trial = Trial(command.name, kind, index)
    w = root / f"{command.name}-{kind}-{index}"
    shutil.rmtree(w, ignore_errors=True)
    w.mkdir(parents=True)
    if command.name == "tune-verify":
        shutil.copyfile(root / "T0.h5", w / "T.h5")
    long = kind == "timelimit"
    body = command.run(w, long)
    proc = None
    if command.local:  # ReFrame here, its check's job in Slurm: that job is the one ended
        before = set(jobs(lab))
        proc = subprocess.Popen(
            ["bash", "-c", body], cwd=w, stdout=open(w / "reframe.out", "w"), stderr=subprocess.STDOUT
        )
        trial.job = new_job(lab, before, proc)
    else:
        if long:
            trial.delay_s = round(rng.uniform(0, 30), 1)
            body = f"sleep {trial.delay_s}\n{body}"
        trial.job = submit(lab, w, body, "1" if long else None)
    if kind == "scancel":
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and job_state(lab, trial.job) in ("PENDING", "CONFIGURING", "RUNNING"):
            text = (w / "job.out").read_text(errors="replace") if (w / "job.out").exists() else ""
            shown = PROGRESS.search(text) if command.started == "[" else command.started in text
            if job_state(lab, trial.job) == "RUNNING" and shown:
                break
            time.sleep(0.2)
        trial.delay_s = round(rng.uniform(0.5, command.window_s), 1)
        time.sleep(trial.delay_s)
        if job_state(lab, trial.job) not in ("PENDING", "CONFIGURING", "RUNNING"):
            trial.note += "ended before the scancel; "
        subprocess.run([client(lab, "scancel"), trial.job], capture_output=True, check=True)
    trial.state = wait_until_done(lab, trial.job, 900)
    trial.ended_at = job_field(lab, trial.job, "EndTime")
    time.sleep(KILL_WAIT_S + 1)
    trial.left = job_processes(lab, trial.job)
    if proc is not None:
        code = proc.wait(timeout=600)
        said = (w / "reframe.out").read_text(errors="replace")
        verdict = "FAILED" if "[  FAILED  ]" in said or "FAILURE INFO" in said else "PASSED?"
        trial.note += f"reframe exit {code}, {verdict}; "
    check_results(trial, w)
    check_folder(trial, w)
    resume(lab, trial, w, command)
    return trial


def prepare(lab: str, root: Path, commands: list[str]) -> None:
    """The tune-sweep file tune --verify starts from, made once; ReFrame's settings and clients."""
    (root / "bin").mkdir(exist_ok=True)
    for program in ("sbatch", "squeue", "scancel"):
        link = root / "bin" / program
        if not link.exists():
            link.symlink_to(client(lab, program))
    (root / "settings.py").write_text(REFRAME_SETTINGS)
    if "tune-verify" in commands and not (root / "T0.h5").exists():
        w = root / "prepare"
        w.mkdir(exist_ok=True)
        body = f"{FP} tune-sweep -n 4 -o {root}/T0.h5 --collectives allreduce --sizes 8,64K,1M --iters 50 "
        body += "--max-time 0.3"
        st = wait_until_done(lab, submit(lab, w, body, None), 1800)
        if st != "COMPLETED":
            raise SystemExit(f"the tune-sweep tune --verify needs ended {st}: {(w / 'job.out').read_text()[-2000:]}")


def table(trials: list[Trial]) -> str:
    rows = ["| command | ended by | trials | processes left | runs complete after the kill | points lost | resumed |"]
    rows.append("|---|---|--:|--:|--:|--:|---|")
    for name in dict.fromkeys(t.command for t in trials):
        for kind in ("scancel", "timelimit"):
            mine = [t for t in trials if t.command == name and t.kind == kind]
            if not mine:
                continue
            lost = sum(max(0, t.printed - t.stored) for t in mine if t.command in ("sweep", "tune-sweep"))
            resumed = [t.resumed for t in mine if t.resumed]
            said = f"{sum(r == 'complete' for r in resumed)} of {len(resumed)} complete" if resumed else "n/a"
            rows.append(
                f"| {name} | {kind} | {len(mine)} | {sum(len(t.left) for t in mine)} | "
                f"{sum(t.complete_after for t in mine)} | {lost} | {said} |"
            )
    return "\n".join(rows)


def printed(w: Path) -> int:
    """The points a trial's job printed as measured (its output before any --resume)."""
    out = (w / "job.out").read_text(errors="replace") if (w / "job.out").exists() else ""
    total, last = 0, 0
    for k, _ in PROGRESS.findall(out):  # each sweep of a job counts from 1 (tune-sweep: one per collective)
        if int(k) <= last:
            total += last
        last = int(k)
    return total + last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path, nargs="+", help="the work folder (with --table: several)")
    parser.add_argument("--lab", default="")
    parser.add_argument("--table", action="store_true", help="the table again from WORK/trials.json")
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--kinds", default="scancel,timelimit")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=65)
    args = parser.parse_args()
    if args.table:
        trials = []
        for work in args.work:
            for t in json.loads((work / "trials.json").read_text()):
                trial = Trial(**t)
                if trial.command in ("sweep", "tune-sweep"):
                    w = work / f"{trial.command}-{trial.kind}-{trial.index}"
                    trial.printed = printed(w)
                    if trial.resumed == "complete" or trial.resumed.startswith("not whole"):
                        trial.resumed = resume_verdict(results_file(w))
                trials.append(trial)
        print(table(trials))
        return 0
    args.work = args.work[0]
    commands = args.commands.split(",")
    args.work.mkdir(parents=True, exist_ok=True)
    prepare(args.lab, args.work, commands)
    rng = random.Random(args.seed)
    trials = []
    for kind in args.kinds.split(","):
        for name in commands:
            for i in range(args.reps):
                t = one_trial(args.lab, args.work, COMMANDS[name], kind, i, rng)
                trials.append(t)
                print(json.dumps(vars(t)), flush=True)
                # after each trial: a battery stopped early keeps what it measured
                (args.work / "trials.json").write_text(json.dumps([vars(t) for t in trials], indent=1))
    print(table(trials))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
