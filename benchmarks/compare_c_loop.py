"""fabricprobe vs a minimal C timing loop, MPI_Allreduce float32 sum at 8 B and 4 MiB.

    python benchmarks/compare_c_loop.py [--ranks 2] [--reps 7] [--hugepages]

Builds c_allreduce_loop.c with the environment's own mpicc (the embedded wheel's), then runs C,
fabricprobe --timer native and fabricprobe --timer python round-robin, `--reps` times, with the same
iteration and warm-up counts and the same buffer placement (--hugepages for both, or neither), so
slow and fast phases of a shared machine hit all three alike. Prints each median (of the
per-iteration max over ranks), the median over repetitions of the per-repetition ratio, and the ratio
of the best (lowest) medians, which a shared machine's slow phases disturb least. Results go in
docs/performance.md."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
SIZES = {8: (10000, 1000), 4 << 20: (200, 20)}  # bytes -> (iterations, warm-up)


def env() -> dict[str, str]:
    return {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def mpiexec(n: int) -> list[str]:
    out = subprocess.run([str(BIN / "mpiexec"), "--version"], capture_output=True, text=True, env=env()).stdout
    extra = ["--oversubscribe"] if "Open MPI" in out else []
    return [str(BIN / "mpiexec"), *extra, "-n", str(n)]


def build(workdir: Path) -> Path:
    exe = workdir / "c_allreduce_loop"
    subprocess.run([str(BIN / "mpicc"), "-O2", "-o", str(exe), str(HERE / "c_allreduce_loop.c")], check=True, env=env())
    return exe


def c_median(exe: Path, n: int, nbytes: int, hugepages: bool) -> float:
    iters, warm = SIZES[nbytes]
    out = subprocess.run(
        mpiexec(n) + [str(exe), str(nbytes), str(iters), str(warm), str(int(hugepages))],
        capture_output=True,
        text=True,
        check=True,
        env=env(),
    )
    return float(out.stdout.strip())


def fabricprobe_median(n: int, nbytes: int, timer: str, workdir: Path, hugepages: bool) -> float:
    iters, warm = SIZES[nbytes]
    path = workdir / f"fp-{timer}.h5"
    path.unlink(missing_ok=True)
    subprocess.run(
        mpiexec(n)
        + [
            sys.executable,
            "-m",
            "fabricprobe",
            "sweep",
            "-o",
            str(path),
            "--collectives",
            "allreduce",
            "--sizes",
            str(nbytes),
            "--iters",
            str(iters),
            "--warmup",
            str(warm),
            "--ci-target",
            "0",
            "--timer",
            timer,
            "--no-validate",
            "--progress",
            "none",
            "--quiet",
            *(["--hugepages"] if hugepages else []),
        ],
        check=True,
        env=env(),
        capture_output=True,
    )
    from fabricprobe.store import load_runs

    point = next(p for p in load_runs(str(path))[-1].points if p["collective"] == "allreduce")
    return point["median_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--hugepages", action="store_true", help="2 MiB-aligned huge-page buffers in both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        exe = build(workdir)
        rows = {(size, who): [] for size in SIZES for who in ("C", "native", "python")}
        for rep in range(args.reps):
            for size in SIZES:
                rows[(size, "C")].append(c_median(exe, args.ranks, size, args.hugepages))
                for timer in ("native", "python"):
                    rows[(size, timer)].append(fabricprobe_median(args.ranks, size, timer, workdir, args.hugepages))
            print(
                f"rep {rep + 1}/{args.reps}: "
                + ", ".join(
                    f"{size} B {who} {rows[(size, who)][-1] * 1e6:.3f} us"
                    for size in SIZES
                    for who in ("C", "native", "python")
                ),
                file=sys.stderr,
            )
    version = subprocess.run(
        [
            sys.executable,
            "-c",
            "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0].replace(chr(0), ''))",
        ],
        capture_output=True,
        text=True,
    ).stdout.strip()
    placement = "2 MiB huge pages" if args.hugepages else "4 KiB pages"
    print(f"\nMPI_Allreduce float32 sum, n={args.ranks}, {args.reps} interleaved repetitions, {placement}, {version}\n")
    print(
        "| size | C loop median µs (min–max over reps) | fabricprobe native | fabricprobe python | "
        "native / C: median ratio, best ratio | python / C: median ratio, best ratio |"
    )
    print("|---|---|---|---|---|---|")
    for size in SIZES:
        c, nat, py = (rows[(size, w)] for w in ("C", "native", "python"))

        def cell(values: list[float]) -> str:
            return f"{statistics.median(values) * 1e6:.3f} ({min(values) * 1e6:.3f}–{max(values) * 1e6:.3f})"

        def ratios(values: list[float], c: list[float] = c) -> str:
            per_rep = statistics.median(a / b for a, b in zip(values, c))
            return f"{per_rep:.3f}, {min(values) / min(c):.3f}"

        label = "8 B" if size == 8 else "4 MiB"
        print(f"| {label} | {cell(c)} | {cell(nat)} | {cell(py)} | {ratios(nat)} | {ratios(py)} |")


if __name__ == "__main__":
    main()
