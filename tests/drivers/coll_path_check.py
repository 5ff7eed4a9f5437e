"""Run under mpiexec (Open MPI) with `--mca coll_base_verbose 10`: rank 0 prints one JSON line with
what fabricprobe.mpienv.coll_path resolves for each collective on MPI_COMM_WORLD, from the library's
MPI_T settings and the ranks' hosts. The test reads the library's own selection from the verbose
lines on stderr and compares.

    mpiexec -n P --mca coll_base_verbose 10 python tests/drivers/coll_path_check.py
"""

from __future__ import annotations

import json

from mpi4py import MPI

from fabricprobe.mpienv import coll_path

APIS = ["allreduce", "bcast", "reduce", "allgather", "alltoall", "reduce_scatter_block", "barrier", "gather", "scatter"]

comm = MPI.COMM_WORLD
hosts = comm.allgather(MPI.Get_processor_name())
shape = coll_path.CommShape.of_hosts(hosts)
settings = coll_path.read(MPI, "Open MPI", APIS)
paths = {api: coll_path.resolve(settings, api, shape) for api in APIS}
comm.Barrier()
if comm.rank == 0:
    out = {api: {"component": p.component, "levels": list(p.levels), "text": p.describe()} for api, p in paths.items()}
    print(json.dumps({"shape": shape.describe(), "paths": out}), flush=True)
