"""Can one Open MPI launch alternate the library's default and a rules file? (issue 54)

    OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_dynamic_rules_filename=rules4.conf \
        mpiexec --oversubscribe -n 4 python pair.py

Writes coll_tuned_use_dynamic_rules 1, 0, 1, 0, 1 through MPI_T; after each write a new communicator
(MPI_Comm_dup) traces a 64 KiB allreduce (tuning.verify.probe.trace: the reduction steps each rank
makes); rank 0 prints the value written, the value read back, any error, and the trace."""

import json

from mpi4py import MPI

from fabricprobe.mpienv.mpit import ToolInterface
from fabricprobe.tuning.verify.probe import trace

tool = ToolInterface(MPI)
rows = []
for value in [1, 0, 1, 0, 1]:
    try:
        tool.write("coll_tuned_use_dynamic_rules", value)
        error = ""
    except Exception as exc:  # a library that keeps the variable read-only
        error = str(exc)
    comm = MPI.COMM_WORLD.Dup()
    rows.append((value, tool.read("coll_tuned_use_dynamic_rules"), error, json.dumps(trace(comm, "allreduce", 65536))))
    comm.Free()
if MPI.COMM_WORLD.rank == 0:
    for row in rows:
        print(row)
tool.close()
