"""docs/scale.md: what one rank and one point cost as the job grows, against a bare mpi4py rank.

    python benchmarks/scale_costs.py OUT.json [--ranks 2,4,8,16,32,64] [--pairs 7] [--pss-ranks 8]
        [--parts startup,launch,memory,results,shared] [--bound]

- start-up: one 2-rank, one-point sweep (allreduce, 8 B) and one bare 2-rank job (`import numpy;
  from mpi4py import MPI; barrier`), each rank under `strace -f -e trace=%file,getdents64`: the
  file-system metadata calls of rank 1 (every traced call but execve), the failed ones (= -1), and the
  modules it imported (`python -X importtime` lines). Run once untraced first, so bytecode is cached.
- launch: `--pairs` interleaved pairs of the same two launches, untraced: wall seconds and CPU seconds
  (user + system of every process the launcher waited for). The suite's launcher passes Open MPI's
  --oversubscribe, which leaves ranks unbound; `--bound` launches with `mpiexec -n N` alone, each rank
  bound to a core as Open MPI does by default.
- memory: `--pss-ranks` ranks of each, every rank's PSS (/proc/PID/smaps_rollup) sampled every 0.1 s
  while all of them are alive (the ranks, not processes they fork); the mean over ranks of each rank's
  peak. The sweep measures allreduce at 8 B, 1 KiB, 64 KiB and 1 MiB, so that it runs a while.
- shared (not in the default parts): `--pairs` interleaved pairs of the one-point sweep with rank 0
  reading the measurement's modules for every rank (mpienv/shared_imports.py) and with each rank
  reading its own (FABRICPROBE_SHARED_IMPORTS=off): 2 ranks bound, and 8 ranks on the 2 cores.
- results: for each --ranks count, `sweep --collectives allreduce --algorithms library --sizes 8,64K
  --iters 400 --ci-target 0` (the same iterations at every count) into a fresh file: per point the
  stored timings (samples, and beyond 16 ranks maxima and per-rank rows), their bytes raw and as
  stored (gzip), and the launch's wall time.

Needs strace (apt-get install strace). The launcher is the venv's (tests/mpirun.py)."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import startup_calls  # noqa: E402
from many_ranks import pss_kib  # noqa: E402  (this folder: a script's own is first on sys.path)
from mpirun import fabricprobe_argv, launcher, mpi_env  # noqa: E402

BARE = startup_calls.BARE
BARE_WAITING = BARE + "import time\ntime.sleep(3)\nMPI.COMM_WORLD.Barrier()\n"
QUIET_ALLREDUCE = ["sweep", "--collectives", "allreduce", "--progress", "none", "--quiet"]
FIXED_ITERATIONS = 400


def _commands(folder: Path, n: int, bare_text: str = BARE) -> dict[str, list[str]]:
    bare = folder / "bare.py"
    bare.write_text(bare_text)
    return {
        "fabricprobe": [*fabricprobe_argv(), *QUIET_ALLREDUCE, "--sizes", "8", "-o", str(folder / "s.h5")],
        "bare": [sys.executable, str(bare)],
    }


def _launch(n: int, argv: list[str], folder: Path, bound: bool = False, env: dict | None = None) -> tuple[float, float]:
    """(wall s, CPU s of everything the launcher waited for)."""
    start = [launcher().mpiexec, "-n", str(n)] if bound else launcher().argv(n)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(start + argv, cwd=folder, env=env or mpi_env(), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]} failed: {done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def startup(folder: Path) -> dict:
    out = {}
    for name, argv in _commands(folder, 2).items():
        _launch(2, argv, folder)  # bytecode cached, as after `pip install`
        trace = startup_calls.traced(launcher().argv(2), argv, folder / name, mpi_env(), importtime=True)
        calls, failed = startup_calls.counted(trace)
        modules = [x for x in (trace / "imp.1").read_text().splitlines() if x.startswith("import time:")][1:]
        out[name] = {"metadata_calls": calls, "failed": failed, "modules": len(modules)}
    return out


def launches(folder: Path, pairs: int, bound: bool = False) -> dict:
    commands = _commands(folder, 2)
    got: dict[str, list] = {name: [] for name in commands}
    for _ in range(pairs):
        for name, argv in commands.items():
            got[name].append(_launch(2, argv, folder, bound))
    return {name: _times(xs) for name, xs in got.items()}


def _times(launched: list[tuple[float, float]]) -> dict[str, list[float]]:
    """_launch's (wall, CPU) pairs as the JSON keeps them."""
    return {"wall_s": [round(w, 3) for w, _ in launched], "cpu_s": [round(c, 3) for _, c in launched]}


def _ranks_running(marker: str) -> list[int]:
    """The python processes whose command line holds `marker` and whose parent is not one of them: the
    ranks, not a process a rank forked (the set-up's watcher, engine/setup_watch.py, is a fork)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if cmd and cmd[0].endswith(b"python") and marker.encode() in b" ".join(cmd):
                found[int(entry.name)] = parent
    return [pid for pid, parent in found.items() if parent not in found]


def memory(folder: Path, n: int) -> dict:
    commands = _commands(folder, n, BARE_WAITING)
    sweep = [*QUIET_ALLREDUCE, "--sizes", "8,1K,64K,1M", "-o", str(folder / "m.h5")]
    commands["fabricprobe"] = [*fabricprobe_argv(), *sweep]
    markers = {"fabricprobe": "fabricprobe", "bare": "bare.py"}
    out = {}
    for name, argv in commands.items():
        peaks: dict[int, int] = {}
        done = threading.Event()

        def sample(marker=markers[name], peaks=peaks, done=done):
            while not done.is_set():
                ranks = _ranks_running(marker)
                sizes = [(pid, pss_kib(pid)) for pid in ranks]
                if len(ranks) == n and all(size is not None for _, size in sizes):
                    # all alive: once one has exited, the pages it shared count among fewer (the last
                    # rank's PSS doubled as the others exited)
                    for pid, size in sizes:
                        peaks[pid] = max(peaks.get(pid, 0), size)
                time.sleep(0.1)

        watcher = threading.Thread(target=sample, daemon=True)
        watcher.start()
        _launch(n, argv, folder)
        done.set()
        watcher.join()
        ranks = list(peaks.values())
        out[name] = {"ranks": len(ranks), "pss_mib_mean_of_peaks": round(sum(ranks) / max(len(ranks), 1) / 1024, 1)}
    return out


def results(folder: Path, counts: list[int]) -> list[dict]:
    import h5py

    rows = []
    for n in counts:
        path = folder / f"r{n}.h5"
        fixed = ["--iters", str(FIXED_ITERATIONS), "--ci-target", "0"]  # the same sweep at every rank count
        argv = [*fabricprobe_argv(), *QUIET_ALLREDUCE, "--algorithms", "library", "--sizes", "8,64K", *fixed]
        argv += ["-o", str(path)]
        wall, _ = _launch(n, argv, folder)
        with h5py.File(path, "r") as f:
            run = f["runs"][sorted(f["runs"])[-1]]
            sets = [run[part][k] for part in ("samples", "maxima", "per_rank") if part in run for k in run[part]]
            points = len(run["samples"])
            rows.append(
                {
                    "ranks": n,
                    "points": points,
                    "iterations": [run["samples"][k].shape[0] for k in sorted(run["samples"])],
                    "raw_bytes_per_point": round(sum(ds.size * ds.dtype.itemsize for ds in sets) / points),
                    "stored_bytes_per_point": round(sum(ds.id.get_storage_size() for ds in sets) / points),
                    "file_bytes": path.stat().st_size,
                    "wall_s": round(wall, 2),
                }
            )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def shared(folder: Path, pairs: int) -> dict:
    """The one-point sweep with rank 0 reading the measurement's modules for every rank and with each
    rank reading its own (FABRICPROBE_SHARED_IMPORTS=off), interleaved: 2 ranks bound, 8 unbound."""
    argv = _commands(folder, 2)["fabricprobe"]
    own = {**mpi_env(), "FABRICPROBE_SHARED_IMPORTS": "off"}
    out: dict = {}
    for label, n, bound in (("2 ranks, bound", 2, True), ("8 ranks, --oversubscribe", 8, False)):
        runs: dict[str, list] = {"shared": [], "each its own": []}
        for i in range(pairs):
            for mode in ("shared", "each its own") if i % 2 else ("each its own", "shared"):
                runs[mode].append(_launch(n, argv, folder, bound, own if mode == "each its own" else None))
        out[label] = {mode: _times(got) for mode, got in runs.items()}
        print(json.dumps({label: out[label]}), flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--ranks", default="2,4,8,16,32,64")
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--pss-ranks", type=int, default=8)
    ap.add_argument("--parts", default="startup,launch,memory,results", help="which measurements (and shared)")
    ap.add_argument("--bound", action="store_true", help="launch: mpiexec -n N, ranks bound to cores")
    args = ap.parse_args()
    parts = args.parts.split(",")
    report: dict = {}
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        folder = Path(tmp)
        if "startup" in parts:
            report["startup"] = startup(folder)
            print(json.dumps(report["startup"]), flush=True)
        if "launch" in parts:
            report["launch"] = launches(folder, args.pairs, args.bound)
            print(json.dumps(report["launch"]), flush=True)
        if "memory" in parts:
            report["memory"] = memory(folder, args.pss_ranks)
            print(json.dumps(report["memory"]), flush=True)
        if "shared" in parts:
            report["shared"] = shared(folder, args.pairs)
        if "results" in parts:
            report["results"] = results(folder, [int(x) for x in args.ranks.split(",")])
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
