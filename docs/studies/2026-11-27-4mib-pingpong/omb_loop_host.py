"""OMB's osu_latency loop run from a Python process, after whatever the process is told to do first.

    mpiexec -n 2 python 4mib-pingpong/omb_loop_host.py LIB [--bytes 4194304] [--iters 500] [--first WHAT,...]

LIB is 4mib-pingpong/omb_loops.c built as a shared library. The loop and its posix_memalign'd buffers are
OMB's; only the process around them changes. With nothing first this is a minimal Python host (mpi4py
and ctypes, MPI initialised at mpi4py's default thread level, multiple; OMB and fabricprobe initialise
at single). --first does each WHAT in turn, after MPI_Init and before the buffers are made and the loop
runs:
    a module name     import it (numpy, numba, fabricprobe.timing.loops: what a fabricprobe rank has
                      loaded before it times)
    spin[:S]          S seconds (1.5) of busy Python
    sleep[:S]         S seconds (1.5) asleep
    touch:MB          allocate MB MiB (anonymous memory, numpy's allocator not involved) and write every
                      page, kept until the end: memory a process takes before its buffers
    dlopen:PATH       load a shared library without using it (numba's libllvmlite.so: 179 MB)
    thread            start one idle thread (numpy's OpenBLAS starts one on this 2-core machine)
    env:NAME=VALUE    set an environment variable (for the imports after it: OPENBLAS_NUM_THREADS=1)
    level:LEVEL       initialise MPI at that thread level (single, as OMB and fabricprobe do), not
                      mpi4py's multiple; this one item applies before MPI_Init, wherever it is listed
Used by 4mib-pingpong/omb_4mib_host.sh and omb_4mib_first.sh; prints rank 0's mean half round trip in µs.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import os
import threading
import time

import mpi4py

KEPT: list = []  # what --first made, alive until the loop is done
PAUSE_S = 1.5  # longer than the imports alone (0.5 s for one process here), as fabricprobe's set-up before timing is


def before(what: str) -> None:
    what, _, arg = what.partition(":")
    if what == "spin":
        start = time.perf_counter()
        while time.perf_counter() - start < float(arg or PAUSE_S):
            pass
    elif what == "sleep":
        time.sleep(float(arg or PAUSE_S))
    elif what == "touch":
        KEPT.append(bytearray(int(float(arg) * (1 << 20))))  # zero-filled: the kernel faults in every page
    elif what == "dlopen":
        KEPT.append(ctypes.CDLL(arg))
    elif what == "thread":
        threading.Thread(target=threading.Event().wait, daemon=True).start()
    elif what == "env":
        name, _, value = arg.partition("=")
        os.environ[name] = value
    else:
        importlib.import_module(what)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lib")
    parser.add_argument("--bytes", type=int, default=4 << 20)
    parser.add_argument("--iters", type=int, default=500)
    parser.add_argument("--first", default="")
    args = parser.parse_args()
    first = [w for w in args.first.split(",") if w]
    levels = [w.partition(":")[2] for w in first if w.startswith("level:")]
    mpi4py.rc.thread_level = levels[-1] if levels else "multiple"
    from mpi4py import MPI

    for what in first:
        if not what.startswith("level:"):
            before(what)
    lib = ctypes.CDLL(args.lib)
    lib.pingpong.restype = ctypes.c_double
    lib.pingpong.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    lib.page_buffer.restype = ctypes.c_void_p
    lib.page_buffer.argtypes = [ctypes.c_size_t, ctypes.c_int]
    rank = MPI.COMM_WORLD.rank
    send, recv = lib.page_buffer(args.bytes, 97), lib.page_buffer(args.bytes, 98)
    us = lib.pingpong(send, recv, args.bytes, args.iters, rank)
    if rank == 0:
        print(f"{us:.1f}")


if __name__ == "__main__":
    main()
