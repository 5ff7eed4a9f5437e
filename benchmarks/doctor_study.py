"""Does the doctor name the fault that was injected, and only it? Random injections in the fabric
lab (root): one host's link slowed to a fraction of the lab's rate, or one host's CPU capped, and
control trials with nothing injected; each trial runs `fabricprobe doctor --confirm` across the lab
and compares its findings with the injection. Also the pairwise pass's wall time against N.

    python benchmarks/doctor_study.py --trials 50 --fractions 0.6,0.8 --busy-trials 20 --controls 10
    python benchmarks/doctor_study.py --trials 0 --busy-trials 0 --controls 0 --scaling 2,4,6,8
    python benchmarks/doctor_study.py --rediagnose doctor_study.h5 --json doctor_study.json   # today's diagnosis

A trial is right when the findings hold exactly the injected (kind, host): a "link" finding on the
slowed host or a "rank" finding on the capped one. Precision = right findings / all findings,
recall = trials whose injection was found / trials. Every trial's findings go to --json."""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fabricprobe.doctor import record
from fabricprobe.lab.config import parse_rate

NAME = "fpds"
SUBNET = "10.216.0.0/24"


def fp(*args: str) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "fabricprobe", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"fabricprobe {' '.join(args)} failed: {out.stderr.strip()[-400:]}")
    return out


def up(hosts: int, per_host: int, rate: str) -> list[str]:
    shape = ["--hosts", str(hosts), "--ranks-per-host", str(per_host), "--rate", rate]
    fp("lab", "up", "--name", NAME, "--subnet", SUBNET, *shape)
    return [f"{NAME}{i}" for i in range(hosts)]


def doctor(path: str, extra: list[str]) -> tuple[dict, dict]:
    fp("lab", "run", "--name", NAME, "--", "doctor", "--confirm", "-o", path, *extra)
    rid, m, meta = record.load(path)
    return meta["diagnosis"], {"run": rid, "pass_seconds": m.pass_seconds, "rounds": m.rounds, "turns": m.turns}


def named(diagnosis: dict) -> list[tuple[str, str]]:
    """(kind, host) of every finding; a pair finding names both hosts."""
    out = []
    for f in diagnosis["findings"]:
        host = f["where"].split("'s link")[0] if f["kind"] == "link" else f["where"].rsplit(" on ", 1)[-1]
        out.append((f["kind"], host if f["kind"] != "pair" else f["where"]))
    return out


def trials(args, hosts: list[str], rng: random.Random, path: str) -> list[dict]:
    rate = parse_rate(args.rate)
    plan = [("control", None, None)] * args.controls
    for frac in [float(x) for x in args.fractions.split(",") if x]:
        plan += [("link", frac, None)] * args.trials
    plan += [("rank", None, args.cpu)] * args.busy_trials
    rng.shuffle(plan)
    out = []
    for i, (kind, frac, cpu) in enumerate(plan):
        host = rng.choice(hosts)
        fp("lab", "slow", "--name", NAME, "--clear")
        if kind == "link":
            fp("lab", "slow", "--name", NAME, host, f"{int(rate * frac)}bit")
        elif kind == "rank":
            fp("lab", "slow", "--name", NAME, host, "--cpu", cpu)
        diag, info = doctor(path, args.doctor_args.split())
        found = named(diag)
        info["slowdowns"] = [f["slowdown"] for f in diag["findings"]]
        truth = [] if kind == "control" else [(kind, host)]
        row = {
            "trial": i,
            "injected": kind,
            "fraction": frac,
            "cpu": cpu,
            "host": host if truth else None,
            "found": found,
            "right": sum(1 for f in found if f in truth),
            "wrong": sum(1 for f in found if f not in truth),
            "recalled": bool(truth) and truth[0] in found,
            **info,
        }
        out.append(row)
        print(json.dumps(row), flush=True)
    fp("lab", "slow", "--name", NAME, "--clear")
    return out


def summary(rows: list[dict]) -> list[dict]:
    groups: dict[str, list[dict]] = {}
    for r in rows:
        key = r["injected"] + (f" at {r['fraction']:.0%} of line rate" if r["fraction"] else "")
        key += f" (CPU capped at {r['cpu']})" if r["cpu"] else ""
        groups.setdefault(key, []).append(r)
    out = []
    for key, rs in groups.items():
        right = sum(r["right"] for r in rs)
        found = right + sum(r["wrong"] for r in rs)
        inj = [r for r in rs if r["injected"] != "control"]
        out.append(
            {
                "injection": key,
                "trials": len(rs),
                "findings": found,
                "precision": right / found if found else None,
                "recall": sum(r["recalled"] for r in inj) / len(inj) if inj else None,
                "false_findings": sum(r["wrong"] for r in rs),
                # measured / expected cost of every finding that named the injection
                "slowdown_range": _range([x for r in rs if r["right"] for x in r.get("slowdowns", [])]),
            }
        )
    return out


def _range(values: list[float]) -> list[float] | None:
    return [round(min(values), 2), round(max(values), 2)] if values else None


def rediagnose(path: str, study_json: str) -> int:
    """Diagnose every kept run again with the code as it is now (the measurements are what they
    were); print the runs whose findings differ from the recorded ones and, where --json names the
    study's file, the trials and the summary again into it ("rediagnosed")."""
    import h5py

    from fabricprobe.doctor.diagnose import diagnose

    with h5py.File(path, "r") as f:
        runs = sorted(f["doctor"].keys())
    now: dict[str, list[tuple[str, str]]] = {}
    slowdowns: dict[str, list[float]] = {}
    differ = 0
    for rid in runs:
        _, m, meta = record.load(path, rid)
        diag = diagnose(m, meta["options"]["threshold"], m.oversubscribed).as_dict()
        now[rid], slowdowns[rid] = named(diag), [f["slowdown"] for f in diag["findings"]]
        if now[rid] != named(meta["diagnosis"]):
            differ += 1
            print(f"{rid}: recorded {named(meta['diagnosis'])}, now {now[rid]}")
    print(f"{len(runs)} runs diagnosed again: {differ} differ")
    study = Path(study_json)
    if study.exists():
        result = json.loads(study.read_text())
        trials = []
        for row in result.get("trials", []):
            found = [tuple(f) for f in now[row["run"]]]
            truth = [] if row["injected"] == "control" else [(row["injected"], row["host"])]
            right = sum(1 for f in found if f in truth)
            trials.append(
                {
                    **row,
                    "found": found,
                    "right": right,
                    "wrong": len(found) - right,
                    "recalled": bool(truth) and truth[0] in found,
                    "slowdowns": slowdowns[row["run"]],
                }
            )
        result["rediagnosed"] = {"trials": trials, "summary": summary(trials), "differ": differ}
        for s in result["rediagnosed"]["summary"]:
            print(json.dumps(s))
        study.write_text(json.dumps(result, indent=1))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--ranks-per-host", type=int, default=1)
    ap.add_argument("--rate", default="400mbit")
    ap.add_argument("--trials", type=int, default=50, help="link injections per fraction")
    ap.add_argument("--fractions", default="0.6,0.8")
    ap.add_argument("--busy-trials", type=int, default=20)
    ap.add_argument("--cpu", default="10%")
    ap.add_argument("--controls", type=int, default=10)
    ap.add_argument("--scaling", default="", help="host counts for the wall-time study, e.g. 2,4,6,8")
    ap.add_argument("--doctor-args", default="", help="more options for doctor")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default="doctor_study.json")
    ap.add_argument("--record", default="", help="keep every trial's doctor run in this HDF5 file")
    ap.add_argument("--rediagnose", metavar="FILE", help="only diagnose the runs kept in FILE again")
    args = ap.parse_args()
    if args.rediagnose:
        return rediagnose(args.rediagnose, args.json)
    rng = random.Random(args.seed)
    result: dict = {"args": vars(args), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    with tempfile.TemporaryDirectory() as tmp:
        path = args.record or str(Path(tmp) / "doctor.h5")
        try:
            if args.trials or args.busy_trials or args.controls:
                hosts = up(args.hosts, args.ranks_per_host, args.rate)
                result["trials"] = trials(args, hosts, rng, path)
                result["summary"] = summary(result["trials"])
                for s in result["summary"]:
                    print(json.dumps(s))
            scaling = []
            for n in [int(x) for x in args.scaling.split(",") if x]:
                up(n, 1, args.rate)
                for rep in range(3):
                    _, info = doctor(path, args.doctor_args.split())
                    scaling.append({"ranks": n, "rep": rep, **info})
                    print(json.dumps(scaling[-1]), flush=True)
            result["scaling"] = scaling
        finally:
            subprocess.run([sys.executable, "-m", "fabricprobe", "lab", "down", "--name", NAME], capture_output=True)
    Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
