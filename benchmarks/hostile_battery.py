"""The hostile battery of docs/testing.md (issue 67): what no writer makes, given to every reader, and what
each does with it. Fresh inputs, not the tests' own table:

    python benchmarks/hostile_battery.py [--flips 300] [--cuts 30] [--seed 67] [--inputs-only | --no-inputs]

1. bad inputs (>= 300): each reader (report and its exports, compare, plot, tune, tune-eval, model,
   repair, sweep --resume and --config, train's dataset) given files of the wrong kind (empty, random,
   text, JSON, a truncated or foreign HDF5 file, a directory, a device, a named pipe, a symbolic-link
   loop, a control character in the name) and results files whose layout or values no writer makes
   (attributes of the wrong type, points with unknown names or impossible numbers), each in its own
   process: a bad input must end in one error line, exit 2 or 4, no traceback, within 60 s;
2. journal flips: one random bit of a killed run's journal, read the way every reader reads (load_runs);
3. HDF5 flips: one random bit of the folded file, half of them inside a run's attribute values;
4. truncations: the journal or the HDF5 file cut at a random length.
For 2-4 a reader that shows anything other than the original must say so (one warning or error line),
and every point it does not show must be named (its run, or the damaged record's offset); a changed
value shown in silence is SILENT, an exception other than the one-line error a TRACEBACK.
Counts in a table on stdout; exit 1 on any TRACEBACK, HANG, SILENT or exit 0 for a bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import h5py
import numpy as np

from fabricprobe.errors import DamagedError, UsageError
from fabricprobe.store import ResultsWriter, damage, journal, load_runs
from fabricprobe.store.attrs import seal

POINTS = 12
ATTRS = {
    "nranks": 2,
    "mpi_vendor": "Open MPI",
    "mpi_library_version": "Open MPI v5.0.11, package: Open MPI root@host Distribution",
    "launcher": "/opt/openmpi/bin/mpiexec -n 2",
    "hosts": ["node-a", "node-b"],
    "config": {"algorithms": ["library", "ring", "recursive_doubling"], "in_place": False, "sizes": [8, 1024]},
}


def _row(run: int, i: int) -> dict:
    t = 1e-6 * (i + 1) * (run + 1)
    point = dict(index=i, key=f"r{run}k{i}", collective="allreduce", algorithm="library", status="ok", bytes=8 << i)
    times = dict(median_s=t, mean_s=t, min_s=0.9 * t, max_s=1.5 * t, ci_low_s=t, ci_high_s=t, osu_avg_s=t)
    return point | dict(nranks=2, dtype="float32", op="sum", mode="barrier", count=2 << i, iterations=20) | times


def make(folder: Path) -> Path:
    """3 complete runs folded into r.h5 and a 4th killed with its 12 points in the journal."""
    path = folder / "r.h5"
    for run in range(4):
        w = ResultsWriter(str(path))
        w.start_run(ATTRS)
        w.update_run({"planned_points": POINTS})
        for i in range(POINTS):
            w.append_point(_row(run, i), np.full((20, 2), float(run * 100 + i)))
        if run == 3:
            del w  # killed: its records stay in the journal
            break
        w.update_run({"status": "complete"})
        w.close()
    return path


def content(path: Path) -> dict:
    """Everything a reader gets: per run its attributes and points."""
    out = {}
    for run in load_runs(str(path)):
        points = {}
        for p in run.points:
            samples = run.samples(p["index"])
            points[p["index"]] = repr(sorted(p.items())) + ("" if samples is None else samples.tobytes().hex())
        out[run.id] = (repr(sorted((k, repr(v)) for k, v in run.attrs.items())), points)
    return out


def judge(path: Path, truth: dict, said: list[str]) -> str:
    """What one damaged copy gives a reader: harmless, said (and every lost point named), or a finding."""
    said.clear()
    damage.forget()
    try:
        shown = content(path)
    except DamagedError:
        return "refused: damage, exit 4"
    except UsageError as exc:
        return f"REFUSED WITH EXIT 2: {exc}"[:160]
    except Exception as exc:  # noqa: BLE001 - anything else is a finding
        return f"TRACEBACK: {type(exc).__name__}: {exc}"[:160]
    if shown == truth:
        return "said, nothing lost" if said else "harmless (nothing readable changed)"
    if not said:
        return "SILENT"
    text = " ".join(said)
    for run_id, (attrs, points) in truth.items():
        got = shown.get(run_id)
        lost = set(points) - set(got[1]) if got else set(points)
        changed = got is not None and (
            got[0] != attrs or any(got[1][i] != points[i] for i in set(points) & set(got[1]))
        )
        if changed and "status" not in got[0]:
            return f"SILENT: run {run_id} shown changed"
        if lost and f"run {run_id}" not in text and "journal record at byte" not in text:
            return f"UNNAMED: run {run_id} lost {len(lost)} points"
    return "said, the loss named"


def flip(victim: Path, rng: random.Random, where: tuple[int, int] | None = None) -> int:
    data = bytearray(victim.read_bytes())
    lo, hi = where or (0, len(data))
    at = rng.randrange(lo, hi)
    data[at] ^= 1 << rng.randrange(8)
    victim.write_bytes(bytes(data))
    return at


def attribute_spans(path: Path) -> list[tuple[int, int]]:
    """Byte ranges of the runs' attribute values as stored now (the last copy of each in the file)."""
    data = path.read_bytes()
    spans = []
    with h5py.File(path, "r") as f:
        for run in f["runs"].values():
            for value in run.attrs.values():
                raw = value.encode() if isinstance(value, str) else np.asarray(value).tobytes()
                at = data.rfind(raw) if len(raw) >= 4 else -1
                if at >= 0:
                    spans.append((at, at + len(raw)))
    return spans


def damaged_copies(base: Path, tmp: Path, flips: int, cuts: int, rng: random.Random) -> Counter:
    truth = content(base / "r.h5")
    said: list[str] = []
    damage.warn_line = said.append  # what a reader says, collected
    tally: Counter = Counter()
    spans = attribute_spans(base / "r.h5")
    kinds = [("journal flip", None)] * flips + [("HDF5 flip", None)] * (flips // 2)
    kinds += [("HDF5 attribute flip", s) for s in rng.choices(spans, k=flips - flips // 2)]
    kinds += [("journal cut", None)] * (cuts * 2 // 3) + [("HDF5 cut", None)] * (cuts - cuts * 2 // 3)
    for k, (kind, span) in enumerate(kinds):
        work = tmp / f"c{k}"
        shutil.copytree(base, work)
        path = work / "r.h5"
        victim = Path(journal.journal_path(str(path))) if kind.startswith("journal") else path
        if "cut" in kind:
            size = victim.stat().st_size
            with open(victim, "r+b") as f:
                f.truncate(rng.randrange(1, size))
        else:
            flip(victim, rng, span)
        verdict = judge(path, truth, said)
        tally[(kind, verdict)] += 1
        shutil.rmtree(work)
    return tally


# ---- bad inputs, each in its own process ----

READERS = {
    "report": ["report", "{f}"],
    "report json": ["report", "{f}", "--format", "json"],
    "report csv": ["report", "{f}", "--format", "csv"],
    "report osu": ["report", "{f}", "--format", "osu"],
    "report nccl-tests": ["report", "{f}", "--format", "nccl-tests"],
    "report summary": ["report", "{f}", "--summary"],
    "compare": ["compare", "{f}", "{f}"],
    "plot": ["plot", "{f}", "-o", "{d}/p.png"],
    "tune": ["tune", "{f}", "-o", "{d}/tuned"],
    "tune-eval": ["tune-eval", "{f}"],
    "model": ["model", "{f}"],
    "repair": ["repair", "{f}"],
}


def _wrong_files(d: Path, base: Path) -> dict[str, Path]:
    """Files of the wrong kind, made fresh in d."""
    rng = np.random.default_rng(11)
    out = {}

    def put(name: str, data: bytes) -> None:
        out[name] = d / name
        out[name].write_bytes(data)

    put("empty.h5", b"")
    put("random.h5", rng.bytes(4096))
    put("text.h5", b"allreduce 8 1.2\n" * 50)
    put("json.h5", json.dumps({"runs": {"0001": {}}}).encode())
    whole = (base / "r.h5").read_bytes()
    put("half.h5", whole[: len(whole) // 2])
    put("header-only.h5", whole[:512])
    with h5py.File(d / "foreign.h5", "w") as f:
        f["data"] = np.arange(10)
    out["foreign.h5"] = d / "foreign.h5"
    (d / "adir.h5").mkdir()
    out["directory"] = d / "adir.h5"
    out["device"] = Path("/dev/zero")
    os.mkfifo(d / "fifo.h5")
    out["named pipe"] = d / "fifo.h5"
    os.symlink(d / "loop-b.h5", d / "loop-a.h5")
    os.symlink(d / "loop-a.h5", d / "loop-b.h5")
    out["symlink loop"] = d / "loop-a.h5"
    out["missing"] = d / "missing.h5"
    return out


def _planted(d: Path, base: Path) -> dict[str, Path]:
    """Results files whose layout or values no writer makes, sealed (their checksum holds) as if an
    editor had written them: only the readers' own checks stand between them and the screen."""

    def attr(name, value):
        return lambda f: f["runs/0001"].attrs.__setitem__(name, value)

    def point(field, value):
        def change(f):
            table = f["runs/0001/points"]
            row = table[3]
            row[field] = value
            table[3] = row

        return change

    def samples_of(shape_or_data):
        def change(f):
            g = f["runs/0001/samples"]
            del g["000003"]
            g["000003"] = shape_or_data

        return change

    changes = {
        "status an integer": attr("status", 7),
        "config not JSON": attr("config", "{algorithms"),
        "config a list": attr("config", "[1, 2]"),
        "config's sizes text": attr("config", json.dumps({"sizes": "8,1024"})),
        "nranks negative": attr("nranks", -2),
        "nranks text": attr("nranks", "two"),
        "hosts a number": attr("hosts", "5"),
        "planned_points text": attr("planned_points", "many"),
        "started not a date": attr("started", "yesterday"),
        "notes an object": attr("notes", json.dumps({"a": 1})),
        "point: unknown collective": point("collective", b"allreduce_v9"),
        "point: unknown algorithm": point("algorithm", b"\xff\xfe"),
        "point: empty collective": point("collective", b""),
        "point: unknown dtype": point("dtype", b"float128"),
        "point: unknown mode": point("mode", b"sideways"),
        "point: NaN median of an ok point": point("median_s", float("nan")),
        "point: huge bytes": point("bytes", 2**62),
        "point: median above max": point("median_s", 1e3),
        "point: duplicate index": point("index", 2),
        "point: nranks 0": point("nranks", 0),
        "samples 1-D": samples_of(np.arange(5.0)),
        "samples of text": samples_of(np.array([b"abc"] * 4)),
        "samples negative": samples_of(-np.ones((20, 2))),
    }
    out = {}
    for name, change in changes.items():
        path = d / f"planted-{len(out)}.h5"
        shutil.copy(base / "r.h5", path)
        with h5py.File(path, "r+") as f:
            change(f)
            seal(f["runs/0001"])
        out[name] = path
    return out


def bad_inputs(base: Path, tmp: Path) -> tuple[Counter, list[str]]:
    d = tmp / "inputs"
    d.mkdir()
    cases = []
    for fname, f in {**_wrong_files(d, base), **_planted(d, base)}.items():
        for rname, argv in READERS.items():
            cases.append((f"{rname} <- {fname}", [a.format(f=f, d=d) for a in argv], {}))
    weird = d / "ctrl\x1b[2J\nname.h5"
    shutil.copy(base / "r.h5", weird)
    for rname in ("report", "report json", "compare", "tune-eval"):
        cases.append(
            (
                f"{rname} <- a name with an escape and a newline (missing)",
                [a.format(f=str(weird) + "x", d=d) for a in READERS[rname]],
                {},
            )
        )
    for name, value in (("sweep --config", "{fifo}"), ("sweep --config", "{dir}"), ("sweep --config", "{random}")):
        target = {"{fifo}": d / "fifo.h5", "{dir}": d / "adir.h5", "{random}": d / "random.h5"}[value]
        cases.append((f"{name} <- {target.name}", ["sweep", "--config", str(target)], {}))
    for what, f in (("random", d / "random.h5"), ("text", d / "text.h5"), ("empty", d / "empty.h5")):
        data = tmp / f"data-{what}"
        data.mkdir()
        shutil.copy(f, data / "digits.csv.gz")
        cases.append(
            (f"train dp_sgd <- a {what} dataset", ["train", "dp_sgd", "--steps", "1"], {"FABRICPROBE_DATA": str(data)})
        )
    for value in ("0", "-5", "abc", "1e9", "99999999999999999999"):
        cases.append((f"report with COLUMNS={value}", ["report", str(base / "r.h5")], {"COLUMNS": value}))
    env0 = {k: v for k, v in os.environ.items() if not k.startswith("FABRICPROBE_")}
    with ThreadPoolExecutor(max_workers=2) as pool:  # repair cases each get their own copy (below)
        verdicts = list(pool.map(lambda case: _run_case(case, env0), _own_copies(cases, d)))
    tally: Counter = Counter()
    problems = []
    for label, verdict, said in verdicts:
        tally[verdict] += 1
        if verdict.split()[0].isupper():
            problems.append(f"{verdict}: {label}: {said!r}")
    return tally, problems


def _own_copies(cases: list, d: Path) -> list:
    """repair rewrites its file: each repair case gets a copy of its own, so cases run side by side."""
    out = []
    for k, (label, argv, env) in enumerate(cases):
        if argv[0] == "repair" and Path(argv[1]).is_file() and not Path(argv[1]).is_symlink():
            copy = d / f"repair-{k}" / Path(argv[1]).name
            copy.parent.mkdir()
            shutil.copy(argv[1], copy)
            argv = ["repair", str(copy)]
        out.append((label, argv, env))
    return out


def _one_damage_warning(stderr: str) -> bool:
    warnings = [line for line in stderr.splitlines() if line.startswith("fabricprobe: warning")]
    return sum("is damaged" in line for line in warnings) == 1


def _run_case(case: tuple, env0: dict) -> tuple[str, str, str]:
    """(label, verdict, the end of what it said) for one bad input in its own process."""
    label, argv, env = case
    try:
        out = subprocess.run(
            [sys.executable, "-m", "fabricprobe", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            env={**env0, **env},
            stdin=subprocess.DEVNULL,
            errors="replace",
        )
    except subprocess.TimeoutExpired:
        return label, "HANG", ""
    errors = [line for line in out.stderr.splitlines() if line.startswith("fabricprobe: error")]
    said = (out.stderr or out.stdout)[-240:]
    columns_case = label.startswith("report with COLUMNS")
    samples_case = "<- samples" in label and argv[0] != "tune-eval"
    if "Traceback" in out.stderr or out.returncode == 70:
        verdict = "TRACEBACK"
    elif columns_case:
        verdict = "ran, exit 0" if out.returncode == 0 else f"COLUMNS REFUSED {out.returncode}"
    elif samples_case and out.returncode == 0:
        verdict = "exit 0: this reader shows nothing read from samples"
    elif out.returncode == 0:
        verdict = "EXIT 0"
    elif out.returncode in (2, 4) and len(errors) == 1:
        verdict = f"refused in one line, exit {out.returncode}"
    elif out.returncode == 4 and not errors and _one_damage_warning(out.stderr):
        verdict = "the rest shown, the loss named in one warning, exit 4"
    elif out.returncode in (1, 4) and argv[0] == "repair":
        verdict = f"repair said what it lost, exit {out.returncode}"
    else:
        verdict = f"OTHER exit {out.returncode}, {len(errors)} error lines"
    return label, verdict, said


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flips", type=int, default=300)
    ap.add_argument("--cuts", type=int, default=30)
    ap.add_argument("--seed", type=int, default=67)
    ap.add_argument("--inputs-only", action="store_true")
    ap.add_argument("--no-inputs", action="store_true")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    findings = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        base = tmp / "base"
        base.mkdir()
        make(base)
        print("| what | verdict | count |\n|---|---|---:|")
        if not args.inputs_only:
            for (kind, verdict), n in sorted(damaged_copies(base, tmp, args.flips, args.cuts, rng).items()):
                print(f"| {kind} | {verdict} | {n} |")
                if any(w in verdict for w in ("SILENT", "TRACEBACK", "UNNAMED", "EXIT 2")):
                    findings.append(f"{kind}: {verdict}")
        if not args.no_inputs:
            tally, problems = bad_inputs(base, tmp)
            for verdict, n in sorted(tally.items()):
                print(f"| bad input | {verdict} | {n} |")
            print(f"| bad inputs | in all | {sum(tally.values())} |")
            findings += problems
    for line in findings:
        print("  ", line)
    return 1 if findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
