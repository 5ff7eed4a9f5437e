"""One collective call whose algorithm can be recognised afterwards (run under mpiexec).

    python -m fabricprobe.tuning.verify.probe COLLECTIVE BYTES trace|monitor|smoke

- trace: reductions only. A commutative user-defined sum records how many elements each local
  reduction step combines; after 12 untraced calls (MPICH hands some collectives to another path
  after a few calls) one traced call is made. Prints {"trace": [[steps of rank 0], ...]} on rank 0.
- monitor: exactly one call (monitorK: K calls), for Open MPI's pml monitoring (enabled by the caller
  through the environment: fingerprint.monitoring_env), which records every internal
  point-to-point message at MPI_Finalize.
- smoke: 13 calls with the built-in sum and nothing recorded: does the library survive the file
  where the trace cannot look (MPICH leaves that only run with built-in ops)?
- path: no call; which component of the library serves the collective on this job's ranks, as
  mpienv.coll_path resolves it from the library's settings (with the file's environment) and the
  ranks' hosts. Prints {"path": {"component": ..., "text": ..., "shape": ...}} on rank 0.
Sizes are S as fabricprobe defines them (the whole vector; for allgather/alltoall/reduce_scatter the
whole buffer), float32.

    python -m fabricprobe.tuning.verify.probe --group '[[COLLECTIVE, BYTES, METHOD], ...]'

runs many probes in one job (one environment: fingerprint.probe_group). trace, smoke and path as above,
on MPI_COMM_WORLD; monitorK from the monitoring's counters read inside the job
(mpienv.monitoring, `OMPI_MCA_pml_monitoring_enable=1`) around the K-th call on a new duplicate of
MPI_COMM_WORLD, so that every fingerprint is of a communicator's first (or K-th) call, as in a job of
its own. Prints {"item": I, "found": FINGERPRINT} on rank 0 after each.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager, nullcontext

import numpy as np

from fabricprobe.specs import SPECS
from fabricprobe.specs.base import Case

WARMUP = 12


def call(comm, collective: str, nbytes: int, op) -> None:
    """One call of the collective through its spec's mpi4py call, on float32 buffers of S = nbytes."""
    from mpi4py import MPI

    spec = SPECS[collective]
    case = Case(
        collective=collective,
        comm=comm,
        rank=comm.rank,
        nranks=comm.size,
        dtype_name="float32",
        dtype=np.dtype(np.float32),
        op="sum",
        root=0,
        in_place=False,
        layout=spec.layout(nbytes, 4, comm.size),
    )
    spec.allocate(case)
    spec.prepare(case)
    spec.mpi4py_call(case, MPI, op=op)()


def trace(comm, collective: str, nbytes: int) -> list[list[int]] | None:
    """The reduction steps of every rank in one call (on rank 0; None elsewhere): a commutative
    user-defined sum records how many elements each local reduction step combines, after WARMUP untraced
    calls. Also run inside a job (tune-sweep's one launch proves a run-time switch with it)."""
    from mpi4py import MPI

    steps: list[int] = []
    record = [False]

    def traced_sum(inbuf, inoutbuf, datatype):
        a = np.frombuffer(inbuf, np.float32)
        b = np.frombuffer(inoutbuf, np.float32)
        b += a
        if record[0]:
            steps.append(int(a.size))

    op = MPI.Op.Create(traced_sum, commute=True)
    try:
        for _ in range(WARMUP):
            call(comm, collective, nbytes, op)
        comm.Barrier()
        record[0] = True
        call(comm, collective, nbytes, op)
        record[0] = False
    finally:
        op.Free()
    gathered = comm.gather(steps, root=0)
    return gathered if comm.rank == 0 else None


def served_path(MPI, comm, collective: str) -> dict[str, str]:
    """{"component", "text", "shape"} of the component serving `collective` on comm (every rank calls)."""
    from fabricprobe.engine.served import api_name
    from fabricprobe.mpienv import coll_path
    from fabricprobe.mpienv.library import library_info

    hosts = comm.allgather(MPI.Get_processor_name())
    shape = coll_path.CommShape.of_hosts(hosts)
    vendor = library_info(MPI).vendor
    api = api_name(collective, vendor)
    path = coll_path.resolve(coll_path.read(MPI, vendor, [api]), api, shape) if api else None
    if path is None:
        return {"component": "unknown", "text": f"not known for {vendor}", "shape": shape.describe()}
    return {"component": path.component, "text": path.describe(), "shape": shape.describe()}


def monitored(MPI, comm, counters, collective: str, nbytes: int, calls: int) -> str:
    """The messages of the calls-th call of `collective` on a new duplicate of comm, every rank's
    sends (source, peer, bytes, messages) sorted, as fingerprint.probe canonicalises the file's (and
    its errors: no message in the job's calls at all, or none in the last of several)."""
    from fabricprobe.mpienv.monitoring import sent_between

    dup = comm.Dup()
    try:
        start = counters.read()
        for _ in range(calls - 1):
            call(dup, collective, nbytes, MPI.SUM)
        before = counters.read()
        call(dup, collective, nbytes, MPI.SUM)
        after = counters.read()
    finally:
        dup.Free()
    mine = (sent_between(before, after, comm.rank), sent_between(start, after, comm.rank))
    gathered = comm.gather(mine, root=0)
    if comm.rank != 0:
        return ""
    pairs = sorted(pair for last, _ in gathered for pair in last)
    if not any(every for _, every in gathered):
        return "error: pml monitoring recorded no messages (no fingerprint to compare)"
    if not pairs:
        return "error: the second call's messages could not be told (a pair only in the one-call job, or none)"
    return json.dumps(pairs)


def group(MPI, comm, items: list) -> None:
    """Every (collective, bytes, method[, writes]) of `items` in this job, one result line each on rank 0.
    `writes` ([[control variable, value], ...], monitoring only): the algorithm forced through MPI_T
    before the new communicator the call runs on is made, and set back after it."""
    counters = None
    if any(item[2].startswith("monitor") for item in items):
        from fabricprobe.mpienv.monitoring import MessageCounters

        counters = MessageCounters(MPI, comm)
    tool = None
    try:
        for i, (collective, nbytes, method, *writes) in enumerate(items):
            if writes and writes[0] and tool is None:
                from fabricprobe.mpienv.mpit import ToolInterface

                tool = ToolInterface(MPI)
            if method.startswith("monitor"):
                with forced(tool, dict(writes[0])) if writes and writes[0] else nullcontext():
                    found = monitored(MPI, comm, counters, collective, nbytes, int(method[len("monitor") :] or 1))
            elif method == "path":
                found = json.dumps(served_path(MPI, comm, collective), sort_keys=True)
            elif method == "smoke":
                for _ in range(WARMUP + 1):
                    call(comm, collective, nbytes, MPI.SUM)
                comm.Barrier()
                found = "ok"
            else:
                found = json.dumps(trace(comm, collective, nbytes))
            if comm.rank == 0:
                print(json.dumps({"item": i, "found": found}), flush=True)
    finally:
        if counters is not None:
            counters.close()
        if tool is not None:
            tool.close()


@contextmanager
def forced(tool, writes: dict[str, str]):
    """The control variables written (a library that applies them to communicators made after the
    write: Open MPI's coll_tuned_<coll>_algorithm), and their values at entry written back after."""
    originals = {name: tool.read(name) for name in writes}
    try:
        for name, value in writes.items():
            tool.write(name, value)
        yield
    finally:
        for name, value in originals.items():
            tool.write(name, value)


def main() -> int:
    import mpi4py

    mpi4py.rc.thread_level = "single"
    from mpi4py import MPI

    if sys.argv[1] == "--group":
        group(MPI, MPI.COMM_WORLD, json.loads(sys.argv[2]))
        return 0
    collective, nbytes, method = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    comm = MPI.COMM_WORLD
    if method.startswith("monitor"):  # monitorK: K calls (fingerprint.second_call subtracts two jobs)
        for _ in range(int(method[len("monitor") :] or 1)):
            call(comm, collective, nbytes, MPI.SUM)
        return 0
    if method == "path":
        found = served_path(MPI, comm, collective)
        if comm.rank == 0:
            print(json.dumps({"path": found}))
        return 0
    if method == "smoke":  # the built-in op, as applications call it, past MPICH's path switch
        for _ in range(WARMUP + 1):
            call(comm, collective, nbytes, MPI.SUM)
        comm.Barrier()
        if comm.rank == 0:
            print(json.dumps({"smoke": "ok"}))
        return 0
    gathered = trace(comm, collective, nbytes)
    if comm.rank == 0:
        print(json.dumps({"trace": gathered}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
