"""How far window mode's clocks drift apart over a minute (docs/methodology.md): synchronize once
(timing/windows.py, as a window-mode sweep starts), then measure the offset the model leaves on every
rank every STEP seconds for SECONDS, without refreshing it (a window-mode sweep refreshes before each
batch; this shows what the refresh is for). Prints one markdown table on rank 0.

    mpiexec -n 4 python benchmarks/clock_drift.py [SECONDS [STEP]]
"""

from __future__ import annotations

import sys
import time

from mpi4py import MPI

from fabricprobe.timing import windows

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
step = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
comm = MPI.COMM_WORLD
model, _ = windows.synchronize(comm, MPI.Wtime)
drift = comm.gather(model.b * 1e6, root=0)
rows = [(0.0, windows.residuals(comm, MPI.Wtime, model))]
start = MPI.Wtime()
while MPI.Wtime() - start < seconds - 1e-9:
    time.sleep(step)
    rows.append((MPI.Wtime() - start, windows.residuals(comm, MPI.Wtime, model)))
if comm.rank == 0:
    print(f"{comm.size} ranks; fitted drift against rank 0: {', '.join(f'{d:.3f}' for d in drift)} ppm\n")
    print("| seconds after the sync | " + " | ".join(f"rank {r} µs" for r in range(1, comm.size)) + " |")
    print("|---|" + "---|" * (comm.size - 1))
    for t, found in rows:
        print(f"| {t:.0f} | " + " | ".join(f"{x * 1e6:+.2f}" for x in found[1:]) + " |")
