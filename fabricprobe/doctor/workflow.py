"""One doctor run on every rank: topology, the pairwise pass, the rank pass, the diagnosis on rank
0, optionally the confirmation of the suspects (one pair at a time, longer), the record, the report."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from fabricprobe.console import make_console, set_rank, warn_line
from fabricprobe.doctor import measure, schedule
from fabricprobe.doctor.diagnose import Diagnosis, diagnose
from fabricprobe.doctor.results import Measurements, pair_table, rank_table
from fabricprobe.errors import UsageError
from fabricprobe.mpienv import provenance, topology
from fabricprobe.mpienv.init import init_mpi
from fabricprobe.mpienv.waiting import root_decides

THREAD_LEVEL = "single"


@dataclass(frozen=True)
class DoctorOptions:
    output: str
    small_bytes: int = 8
    large_bytes: int = 1 << 20
    small_iters: int = 50
    large_iters: int = 10
    ring_bytes: int = 4 << 20
    ring_reps: int = 4
    threshold: float = 0.15
    confirm: bool = False
    confirm_factor: int = 3  # the confirmation's iterations, relative to the first pass
    every_pair: bool = False  # every pair of ranks (N·k−1 rounds), not each pair of nodes (schedule.by_nodes)


def _confirm(
    comm, MPI, opts: DoctorOptions, m: Measurements | None, first: Diagnosis | None, node: int, slot: tuple[int, int]
):
    todo = (first.suspect_pairs, any(f.kind == "rank" for f in first.findings)) if comm.rank == 0 else None
    suspects, slow_ranks = comm.bcast(todo, root=0)
    suspects = [tuple(p) for p in suspects]
    iters = (opts.small_iters * opts.confirm_factor, opts.large_iters * opts.confirm_factor)
    got = measure.confirm_pass(comm, MPI, suspects, opts.small_bytes, opts.large_bytes, iters)
    ring = None
    if slow_ranks:  # every rank's blocks again, 3× as many: a rank is only slow beside the others
        ring = measure.ring_pass(comm, MPI, node, *slot, opts.ring_bytes, 1, blocks=5 * opts.confirm_factor)
    if comm.rank != 0:
        return None
    for j, (a, b) in enumerate(zip(m.pairs["a"].tolist(), m.pairs["b"].tolist())):
        if (a, b) in got:
            m.pairs["confirm_small_s"][j], m.pairs["confirm_large_s"][j] = got[(a, b)]
    if ring is not None:
        for row in ring:
            m.ranks["confirm_compute_s"][row[0]], m.ranks["confirm_reduced_bytes"][row[0]] = row[2], row[3]
    second = diagnose(m, opts.threshold, m.oversubscribed)
    before = {f.where for f in first.findings}
    for f in second.findings:
        f.confirmed = ring is not None if f.kind == "rank" else any(p in got for p in _pairs_of(m, f))
    gone = sorted(before - {f.where for f in second.findings})
    if gone:
        second.notes.append("not confirmed by the second measurement: " + ", ".join(gone))
    second.notes.append(
        f"confirmation: {len(got)} suspect pairs measured again alone, {iters[1]} iterations each"
        + (f"; every rank's reductions again, {5 * opts.confirm_factor} blocks" if ring is not None else "")
    )
    return second


def _pairs_of(m: Measurements, f) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in zip(m.pairs["a"], m.pairs["b"]) if a in f.ranks or b in f.ranks]


def _record():
    """The record's module (h5py's with it): rank 0's alone, which writes (every rank imported it, and
    rich for the report, at scale each a file-system lookup at once: docs/scale.md, "Start-up")."""
    from fabricprobe.doctor import record

    return record


def run_doctor(opts: DoctorOptions, argv: list[str]) -> int:
    MPI = init_mpi(THREAD_LEVEL)
    comm = MPI.COMM_WORLD
    set_rank(comm.rank)
    root_decides(comm, lambda: _record().check_writable(opts.output))  # rank 0 alone opens it (h5py)
    if comm.size < 2:  # it measured no pair and reported "No suspects"
        raise UsageError("the doctor measures pairs of ranks: run it under mpiexec -n 2 or more (srun -n 2 ...)")
    topo = topology.detect(comm)
    prov = provenance.collect(MPI, comm, topo, THREAD_LEVEL, argv)
    node_of = list(topo.node_of)
    plan = schedule.plan(comm.size, node_of, opts.every_pair)
    seconds: dict[str, float] = {}

    t0 = time.perf_counter()
    pairs = measure.pairwise_pass(
        comm,
        MPI,
        plan,
        node_of,
        opts.small_bytes,
        opts.large_bytes,
        (opts.small_iters, opts.large_iters),
        bool(prov["oversubscribed"]),
    )
    seconds["pairwise pass"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    slot = measure.block_slots(comm.rank, comm.size, bool(prov["oversubscribed"]))
    ranks = measure.ring_pass(comm, MPI, node_of[comm.rank], *slot, opts.ring_bytes, opts.ring_reps)
    seconds["rank pass"] = time.perf_counter() - t0

    m = first = None
    if comm.rank == 0:
        m = Measurements(
            hosts=list(topo.hosts),
            node_of=node_of,
            small_bytes=opts.small_bytes,
            large_bytes=opts.large_bytes,
            pairs=pair_table(pairs),
            ranks=rank_table(ranks),
            pass_seconds=seconds,
            rounds=len(plan),
            turns=sum(len(r) for r in plan),
            oversubscribed=bool(prov["oversubscribed"]),
        )
        first = diagnose(m, opts.threshold, m.oversubscribed)
    final = first
    if opts.confirm:
        t0 = time.perf_counter()
        final = _confirm(comm, MPI, opts, m, first, node_of[comm.rank], slot)
        if comm.rank == 0:
            m.pass_seconds["confirmation"] = time.perf_counter() - t0
    if comm.rank == 0:
        from fabricprobe.doctor.render import render

        written, rid = _record().save(opts.output, m, final.as_dict(), prov, asdict(opts), warn_line)
        console = make_console()
        render(console, m, final.as_dict(), prov)
        console.print(f"recorded {written} (run {rid}); heat map: fabricprobe plot {written} -o pairs.png")
    comm.Barrier()
    return 0
