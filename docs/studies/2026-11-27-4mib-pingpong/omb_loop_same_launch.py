"""OMB's timed loop against fabricprobe's, taking turns inside one launch, on the same memory.

    python docs/studies/2026-11-27-4mib-pingpong/omb_loop_same_launch.py [--launches 10] [--blocks 12] [--bytes 4194304]

Across launches, fabricprobe's 4 MiB Open MPI numbers read faster than OMB's by amounts that move
from set to set (docs/performance.md); a launch-to-launch spread of 20-40% on this VM hides whether
the difference is in what each tool times. Here it cannot hide: in every launch (n = 2) blocks of 50
timed iterations alternate between fabricprobe's compiled loop (timing/loops.native_pingpong, and
native_timed_calls in barrier mode for the allreduce, float32 sum) and OMB 7.4's loops compiled from
docs/studies/2026-11-27-4mib-pingpong/omb_loops.c with the environment's mpicc, each on fabricprobe's buffers
(memory/host.aligned_empty) and on OMB's (posix_memalign, memset), in an order that reverses every
block. Each launch prints each variant's median block mean and the median over blocks of OMB's loop
over fabricprobe's on the same buffers (1: the loops agree); the summary gives those ratios' range.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
VARIANTS = (  # (whose loop, whose buffers)
    ("fabricprobe", "fabricprobe"),
    ("OMB", "fabricprobe"),
    ("fabricprobe", "OMB"),
    ("OMB", "OMB"),
)


def worker(lib_path: str, size: int, blocks: int) -> None:
    import numpy as np
    from mpi4py import MPI

    from fabricprobe.memory.host import aligned_empty
    from fabricprobe.timing import loops
    from fabricprobe.timing.native import NativeMPI

    lib = ctypes.CDLL(lib_path)
    lib.pingpong.restype = lib.allreduce.restype = ctypes.c_double
    lib.pingpong.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    lib.allreduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    lib.page_buffer.restype = ctypes.c_void_p
    lib.page_buffer.argtypes = [ctypes.c_size_t, ctypes.c_int]
    comm = MPI.COMM_WORLD
    rank, nat = comm.rank, NativeMPI(MPI)
    h = nat.handle
    status = np.zeros(nat.status_size, np.uint8)
    fp_s, fp_r = aligned_empty(size, np.uint8), aligned_empty(size, np.uint8)
    fp_s[:], fp_r[:] = 97, 98
    buffers = {
        "fabricprobe": (fp_s.ctypes.data, fp_r.ctypes.data),
        "OMB": (lib.page_buffer(size, 97), lib.page_buffer(size, 98)),
    }

    def fp_pingpong(s: int, r: int) -> float:
        out = np.empty(60)
        comm.Barrier()
        peer, byte, world, at = 1 - rank, h(MPI.BYTE), h(comm), status.ctypes.data
        rc = loops.native_pingpong(nat.wtime, nat.send, nat.recv, s, r, size, byte, peer, world, at, rank == 0, out)
        assert rc == 0
        return float(out[10:].mean()) * 1e6 if rank == 0 else 0.0

    def fp_allreduce(s: int, r: int) -> float:
        out = np.empty(60)
        args = (s, r, size // 4, h(MPI.FLOAT), h(MPI.SUM), h(comm))
        assert loops.native_timed_calls(nat.wtime, nat.barrier, h(comm), nat.allreduce, args, loops.BARRIER, out) == 0
        return float(out[10:].mean()) * 1e6

    tests = {
        "latency": (fp_pingpong, lambda s, r: lib.pingpong(s, r, size, 50, rank)),
        "allreduce": (fp_allreduce, lambda s, r: lib.allreduce(s, r, size // 4, 50)),
    }
    for test, (fp_loop, omb_loop) in tests.items():
        fp_loop(*buffers["fabricprobe"])  # compiles or loads the loop before any block is timed
        got: dict[tuple[str, str], list[float]] = {v: [] for v in VARIANTS}
        for b in range(blocks):
            for variant in VARIANTS if b % 2 else VARIANTS[::-1]:
                loop_of, buffers_of = variant
                t = (fp_loop if loop_of == "fabricprobe" else omb_loop)(*buffers[buffers_of])
                if test == "allreduce":
                    t = comm.allreduce(t) / comm.size  # OMB's Avg: the mean over ranks
                got[variant].append(t)
        if rank == 0:
            ratio = statistics.median(o / f for o, f in zip(got[VARIANTS[1]], got[VARIANTS[0]]))
            medians = " ".join(f"{statistics.median(v):.1f}" for v in got.values())
            print(f"{test} {medians} {ratio:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--blocks", type=int, default=12)
    parser.add_argument("--bytes", type=int, default=4 << 20)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.bytes, args.blocks)
        return
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        lib = os.path.join(tmp, "libomb_loops.so")
        build = [str(BIN / "mpicc"), "-O2", "-shared", "-fPIC", "-o", lib, str(HERE / "omb_loops.c")]
        subprocess.run(build, check=True)
        ratios: dict[str, list[float]] = {"latency": [], "allreduce": []}
        print(f"{args.bytes} B, n = 2, {args.blocks} blocks of 50 iterations per variant; us, median block mean")
        names = [f"{loop} loop, {buffers} buffers" for loop, buffers in VARIANTS]
        print("test  " + " | ".join(names) + " | OMB loop / fabricprobe loop, fabricprobe buffers")
        for _ in range(args.launches):
            cmd = [str(BIN / "mpiexec"), "-n", "2", sys.executable, __file__, "--worker", lib]
            cmd += ["--bytes", str(args.bytes), "--blocks", str(args.blocks)]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                print(line)
                ratios[line.split()[0]].append(float(line.split()[-1]))
        for test, values in ratios.items():
            print(
                f"{test}: OMB's loop over fabricprobe's, per launch: median {statistics.median(values):.3f}, "
                f"range {min(values):.3f}-{max(values):.3f} ({len(values)} launches)"
            )


if __name__ == "__main__":
    main()
