"""The run-time switch inside tune-sweep's one launch (engine.switching.LibrarySwitch over MPI_T): before
each point, the control variables of the point's variant are written on every rank (tuning.plan.switch
chose them; every other variable back to its value at start), and where the library applies a write
only to communicators made after it (Open MPI) the point runs on a duplicate made right after the
write, kept for the variant's later points. MPICH applies a write to the next call, on any
communicator; a forced algorithm also drives MPICH's own internal collectives (measured: a forced smp
allreduce made the next MPI_Comm_split hang), so no communicator is made while one is forced: the
sweep makes its sub-communicators before the first point, and restore() ends every run at the default.

Each switched (collective, variant, communicator size) is proven where a fingerprint can tell: for the
reductions, the trace of tuning.verify.probe (reduction steps of a commutative user-defined sum, after
12 calls) taken in-process right after the first switch, against the default's on the same
communicator: "switched" when they differ, "indistinguishable" when the default leaves the same trace
(common on 2 ranks), "no fingerprint" for collectives without one here (bcast, allgather, alltoall:
Open MPI's pml monitoring needs a launch of its own; tune --verify proves the rules it keeps that way).
The switch costs 0.05 ms (MPICH) and 1.6 ms (Open MPI, its duplicate made) as measured for issue 33;
the point's own warm-up follows it, as a launch's first calls would.

Rank 0 notes the variant it switches to in a state file beside the results, so that tune-sweep can
name the variant that hung or crashed the job and measure it in a launch of its own."""

from __future__ import annotations

from typing import Any

from fabricprobe.mpienv import topology
from fabricprobe.mpienv.mpit import MpitError, ToolInterface
from fabricprobe.specs import SPECS
from fabricprobe.tuning.measure import switch_state
from fabricprobe.tuning.verify import probe

PROOF_BYTES = 64 * 1024  # the traced call's size: large enough that the algorithms' steps differ

SWITCHED = "switched"
INDISTINGUISHABLE = "indistinguishable"
NO_FINGERPRINT = "no fingerprint"


class MpitSwitch:
    """engine.switching.LibrarySwitch through MPI_T control variables; `job` is SwitchPlan.as_job()."""

    def __init__(self, MPI: Any, job: dict, state_path: str | None = None) -> None:
        self.MPI = MPI
        self.method = job["method"]
        self.new_communicator = bool(job["new_communicator"])
        self.writes: dict[str, dict[str, dict[str, str]]] = job["writes"]
        self.state_path = state_path
        self.tool = ToolInterface(MPI)
        variables = sorted({v for per in self.writes.values() for w in per.values() for v in w})
        self.originals = {v: self.tool.read(v) for v in variables}
        self.current = dict(self.originals)
        self.made: dict[tuple, tuple[Any, Any]] = {}  # (collective, variant, id(comm)) -> (comm, duplicate)
        self.traces: dict[tuple[str, str, int], Any] = {}  # (collective, variant, nranks) -> trace or "error: ..."
        self.ended: dict[tuple[str, str, int], Any] = {}  # the traces of the run restore() ended
        self.noted: tuple | None = None
        self.served_by: dict[str, dict[str, str]] = job.get("served_by", {})
        self.paths: dict[tuple[str, int], dict] = {}  # (collective, size) -> probe.served_path

    def select(self, collective: str, variant: str, comm: Any) -> Any:
        wanted = self.writes.get(collective, {}).get(variant, {}) if variant else {}
        self._note(collective, variant, comm.size)
        self._write(wanted)
        if variant and self.new_communicator:
            key = (collective, variant, id(comm))
            held = self.made.get(key)
            if held is None or held[0] is not comm:
                duplicate = comm.Dup()
                topology.set_active(duplicate, topology.active(comm))
                self.made[key] = held = (comm, duplicate)
            comm = held[1]
        if collective in self.writes:
            self._prove(collective, variant, comm)
        return comm

    def not_here(self, collective: str, variant: str, comm: Any) -> str:
        """Why the variant is not measured on comm: it changes a component (han) that does not serve
        the collective there (one node; one rank per node), so it would measure the default again.
        Found by mpienv.coll_path with the library's settings as at start (every rank of comm calls)."""
        component = self.served_by.get(collective, {}).get(variant)
        if not component:
            return ""
        key = (collective, comm.size)
        if key not in self.paths:
            self._write({})
            self.paths[key] = probe.served_path(self.MPI, comm, collective)
        path = self.paths[key]
        if path["component"] == component:
            return ""
        return f"{path['text']} serves {collective} on {path['shape']}: {variant} changes {component}, idle there"

    def _write(self, wanted: dict[str, str]) -> None:
        for variable, original in self.originals.items():
            value = wanted.get(variable, original)
            var = self.tool.find(variable)
            raw = var.value_of(value) if isinstance(value, str) else value
            if self.current[variable] != raw:
                self.current[variable] = self.tool.write(var, raw)

    def _prove(self, collective: str, variant: str, comm: Any) -> None:
        key = (collective, variant, comm.size)
        if key in self.traces:
            return
        if not SPECS[collective].reduces:
            self.traces[key] = None
            return
        try:
            self.traces[key] = probe.trace(comm, collective, PROOF_BYTES)
        except (self.MPI.Exception, RuntimeError) as exc:  # e.g. an algorithm that refuses a user-defined op
            self.traces[key] = f"error: {exc}"

    def _note(self, collective: str, variant: str, nranks: int) -> None:
        """Rank 0: the variant about to run, in the state file (atomically replaced), when it changes."""
        now = (collective, variant, nranks)
        if self.state_path is None or self.MPI.COMM_WORLD.rank != 0 or now == self.noted:
            return
        self.noted = now
        switch_state.note(self.state_path, collective, variant, nranks)

    def restore(self) -> None:
        """Every rank, at the end of each run: the default back, the duplicates freed, and the run's
        traces set aside for record() (the next run proves its switches afresh, on every rank alike:
        a rank that kept them would skip a proof the others make, and the job would hang)."""
        self._write({})
        for _, duplicate in self.made.values():
            duplicate.Free()
        self.made.clear()
        self.ended, self.traces = self.traces, {}

    def record(self) -> dict:
        """The switching of the run restore() ended: its collectives' writes and proofs (rank 0)."""
        used = {collective for collective, _, _ in self.ended}
        return {
            "method": self.method,
            "new_communicator": self.new_communicator,
            "writes": {c: w for c, w in self.writes.items() if c in used},
            "originals": self.originals,
            "proofs": proofs(self.ended),
        }

    def close(self) -> None:
        try:
            self.tool.close()
        except MpitError:
            pass


def same_steps(a: list[list[int]], b: list[list[int]]) -> bool:
    """Whether two traces hold the same reduction steps on every rank, in any order. Under Open MPI's
    han (several nodes) the order of one algorithm's steps changes from run to run (its pipelined
    inter-node and node-local tasks interleave: 2 of 5 repeats in the lab, 1 MiB on 2 × 2, the same
    steps), so an order that differs proves nothing."""
    return len(a) == len(b) and all(sorted(x) == sorted(y) for x, y in zip(a, b))


def proofs(traces: dict[tuple[str, str, int], Any]) -> list[dict]:
    """Per switched (collective, variant, communicator size): the verdict of its trace against the
    default's on the same communicator size, with both traces."""
    out = []
    for (collective, variant, nranks), trace in sorted(traces.items()):
        if not variant:
            continue
        default = traces.get((collective, "", nranks))
        if trace is None:
            verdict = NO_FINGERPRINT
        elif isinstance(trace, str):
            verdict = trace
        elif default is None or isinstance(default, str):
            verdict = "error: no trace of the default to compare with"
        else:
            verdict = INDISTINGUISHABLE if same_steps(trace, default) else SWITCHED
        out.append(dict(collective=collective, algorithm=variant, nranks=nranks, verdict=verdict, trace=trace))
    return out
