"""Window mode's clock synchronization against planted clocks (tests/test_windows.py), under mpiexec:
rank r's clock reads MPI_Wtime·(1 + r·DRIFT) + r·OFFSET. Prints, on rank 0, one JSON line: the
residual offsets the model leaves per rank right after the synchronization, SECONDS later, and after
one refresh then (as window mode makes before each batch), and those of the planted clocks
uncorrected (the check must be able to fail).

    mpiexec -n 3 python tests/drivers/clock_sync_check.py OFFSET DRIFT SECONDS
"""

import json
import sys
import time

from mpi4py import MPI

from fabricprobe.timing import windows

offset, drift, later = (float(x) for x in sys.argv[1:4])
comm = MPI.COMM_WORLD
r = comm.rank


def planted() -> float:
    return MPI.Wtime() * (1.0 + r * drift) + r * offset


model, history = windows.synchronize(comm, planted)
after = windows.residuals(comm, planted, model)
raw = windows.residuals(comm, planted, windows.ClockModel())
time.sleep(later)
end = windows.residuals(comm, planted, model)  # the first model alone, SECONDS later
clock = windows.WindowClock(planted, model, history=history)
windows.refresh(comm, clock)  # what window mode does before each batch
refreshed = windows.residuals(comm, planted, clock.model)
drifts = comm.gather(clock.model.b, root=0)
if r == 0:
    print(json.dumps({"after": after, "end": end, "refreshed": refreshed, "uncorrected": raw, "fitted_drift": drifts}))
