"""MPI_T control variables of the library mpi4py loads, exercised without MPI_Init (run in a child
process; prints one JSON object). Environment: the test may set the algorithm variable
(MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM / OMPI_MCA_coll_tuned_allreduce_algorithm) to check that value
names map to what the library reads."""

from __future__ import annotations

import json

import mpi4py

mpi4py.rc.initialize = False
mpi4py.rc.finalize = False
from mpi4py import MPI  # noqa: E402

from fabricprobe.mpienv.library import identify_library  # noqa: E402
from fabricprobe.mpienv.mpit import MpitError, NotWritable, ToolInterface  # noqa: E402

vendor = identify_library(MPI.Get_library_version()).vendor
ALGORITHM = {"Open MPI": "coll_tuned_allreduce_algorithm", "MPICH": "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"}[vendor]
# a variable MPI_T calls constant (Open MPI), to be refused
CONSTANT = {"Open MPI": "coll_tuned_allreduce_algorithm_count", "MPICH": None}[vendor]

out: dict = {"vendor": vendor}
with ToolInterface(MPI) as tool:
    var = tool.find(ALGORITHM)
    out["found"] = var is not None
    out["scope"], out["writable"], out["datatype"] = var.scope, var.writable, var.datatype
    out["names"] = [name for _, name in var.values]
    start = tool.read(var)
    out["start"], out["start_name"] = start, var.name_of(start)
    target = next(name for name in reversed(out["names"]) if name != out["start_name"])
    out["target"] = target
    out["written"] = tool.write(var, target)
    out["target_value"] = var.value_of(target)
    out["read_after"] = tool.read(var)
    out["back"] = tool.write(var, start)
    out["missing"] = tool.find("no_such_variable_of_any_library") is None
    try:
        var.value_of("no_such_algorithm")
        out["bad_name"] = "accepted"
    except MpitError as exc:
        out["bad_name"] = str(exc)
    if CONSTANT is not None:
        constant = tool.find(CONSTANT)
        out["constant_scope"] = constant.scope
        try:
            tool.write(constant, 1)
            out["constant_write"] = "accepted"
        except NotWritable as exc:
            out["constant_write"] = str(exc)
    rules = tool.find("coll_tuned_use_dynamic_rules")
    out["dynamic_rules"] = None if rules is None else {"scope": rules.scope, "writable": rules.writable}
    if rules is not None and not rules.writable:
        try:
            tool.write(rules, "true")
            out["dynamic_rules"]["write"] = "accepted"
        except NotWritable as exc:
            out["dynamic_rules"]["write"] = str(exc)
print(json.dumps(out))
