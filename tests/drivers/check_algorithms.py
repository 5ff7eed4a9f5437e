"""Run under mpiexec: every hand-written algorithm must equal the MPI library's own result.

    mpiexec -n P python tests/drivers/check_algorithms.py [--ranks-per-node 3,3,2] [--large N] [--each 1,2,3]
        [--buffer numba --transfer direct|staged|pipelined]   (device buffers; NUMBA_ENABLE_CUDASIM=1 without a GPU)

Random inputs (seeded per rank and case); counts 0, 1, p-1, p, p+1, a few odd ones and `--large`;
float32/float64/int32/int64; sum/max/min/prod; in place and not. Floats are compared with the
summation error bound |err| <= (p+1)·eps·Σ|x| (products: relative (p+1)·eps); everything else is
exact. Every buffer the MPI standard leaves untouched is checked on every rank: the send buffer, and
a non-root's input to a rooted reduction in place (its receive buffer holds it). Results go to buffers
that hold other data (77s), as a reused buffer does. Rank 0 prints one JSON line:
{"checked": N, "failures": [...]}.

A rank whose algorithm raises prints the case and aborts the job at once (the other ranks would wait
in the collective until the test's timeout): `--plant-fault raises` shows it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial

import mpi4py

mpi4py.rc.thread_level = "single"
import each_size  # noqa: E402 - this folder is on the path when a driver runs
import numpy as np  # noqa: E402
from each_size import for_each_size  # noqa: E402
from mpi4py import MPI  # noqa: E402

from fabricprobe import collectives  # noqa: E402
from fabricprobe.mpienv import topology  # noqa: E402
from fabricprobe.mpienv.datatypes import DTYPES, OPS  # noqa: E402
from fabricprobe.specs import SPECS  # noqa: E402

REDUCING = ("allreduce", "reduce", "reduce_scatter")
COLLECTIVES = ("allreduce", "reduce", "bcast", "allgather", "reduce_scatter")


def inputs(rng, n: int, dtype: np.dtype, op: str) -> np.ndarray:
    if dtype.kind == "f":
        values = rng.uniform(0.5, 1.5, n) if op == "prod" else rng.uniform(-1.0, 1.0, n)
    else:
        values = rng.choice([-1, 1, 2], n) if op == "prod" else rng.integers(-1000, 1000, n)
    return values.astype(dtype)


def reference(comm, coll: str, send: np.ndarray, op: str, root: int, recv_len: int) -> np.ndarray:
    """The MPI library's own result: the collective's spec makes the call (as the library backend does)."""
    out = np.zeros(recv_len, send.dtype)
    if coll == "bcast":
        out[...] = send
        send = None
    SPECS[coll].mpi4py_call(SPECS[coll].case_over(comm, send, out, op, root), MPI)()
    return out


def tolerance(comm, coll: str, send: np.ndarray, op: str, root: int, recv_len: int) -> np.ndarray | float:
    if send.dtype.kind != "f" or coll not in REDUCING or op in ("max", "min"):
        return 0.0
    eps = float(np.finfo(send.dtype).eps) * (comm.size + 1)
    if op == "prod":
        return eps  # relative; applied to |reference| below
    bound = reference(comm, coll, np.abs(send).astype(np.float64), "sum", root, recv_len)
    return eps * bound


DEVICE = None  # (DeviceContext, transfer) with --buffer


def run_on_device(coll: str, algorithm, comm, send, recv, op: str, root: int) -> None:
    """The algorithm on device twins of send/recv, through the sweep's own device path
    (fabricprobe.engine.device_point)."""
    from types import SimpleNamespace

    from fabricprobe.engine import device_point
    from fabricprobe.mpienv.datatypes import numpy_dtype
    from fabricprobe.specs.base import Case, Layout
    from fabricprobe.timing import loops

    ctx, transfer = DEVICE
    count = (
        recv.size // comm.size
        if coll == "allgather"
        else (recv.size if coll != "reduce_scatter" else (send.size if send is not None else recv.size) // comm.size)
    )
    host = Case(
        collective=coll,
        comm=comm,
        rank=comm.rank,
        nranks=comm.size,
        dtype_name=str(recv.dtype),
        dtype=numpy_dtype(str(recv.dtype)),
        op=op,
        root=root,
        in_place=send is None and coll != "bcast",
        layout=Layout(count, 0 if send is None else send.size, recv.size, count * recv.itemsize),
        send=send,
        recv=recv,
    )
    dev = device_point.twin(host, ctx.memory)
    device_point.load(host, dev, ctx.memory)
    device_point.device_batch(SimpleNamespace(transfer=transfer), algorithm, dev, ctx)(np.empty(1), loops.BARRIER)
    device_point.fetch(host, dev, ctx.memory)


def check(
    comm, coll: str, name: str, dtype: np.dtype, op: str, count: int, in_place: bool, root: int, seed: int
) -> str | None:
    p, r = comm.size, comm.rank
    rng = np.random.default_rng([seed, r, count, p])
    send_len = count * p if coll == "reduce_scatter" else count
    recv_len = count * p if coll == "allgather" else count
    send = inputs(rng, send_len, dtype, op)
    expected = reference(comm, coll, send, op, root, recv_len)
    tol = tolerance(comm, coll, send, op, root, recv_len)
    algorithm = collectives.get(coll, name)
    run = algorithm.run if DEVICE is None else partial(run_on_device, coll, algorithm)
    if coll == "bcast":
        recv = send.copy() if r == root else np.full(count, 77, dtype)
        run(comm, None, recv, op, root)
    elif in_place:
        if coll == "allgather":
            recv = np.full(recv_len, 77, dtype)
            recv[r * count : (r + 1) * count] = send
        elif coll == "reduce_scatter":
            recv = send.copy()
        else:
            recv = send.copy()
        run(comm, None, recv, op, root)
        if coll == "reduce" and r != root and not np.array_equal(recv, send):
            return "changed a non-root's input (in place: its receive buffer holds it)"
        recv = recv[:recv_len]
    else:
        recv = np.full(recv_len, 77, dtype)
        keep = send.copy()
        run(comm, send, recv, op, root)
        if not np.array_equal(keep, send):
            return "modified its send buffer"
    if coll == "reduce" and r != root:
        return None
    got = recv.astype(np.float64)
    want = expected.astype(np.float64)
    if op == "prod" and dtype.kind == "f":
        bad = np.abs(got - want) > tol * np.abs(want)
    else:
        bad = np.abs(got - want) > tol
    bad |= np.isnan(got)
    if bad.any():
        i = int(np.argmax(bad))
        return f"{int(bad.sum())} wrong, first at {i}: got {recv[i]!r}, expected {expected[i]!r}"
    return None


def abort_naming(comm, text: str) -> None:
    """Print what failed, give the launcher time to forward it, then end the whole job. Without the
    pause MPICH's launcher lost the line now and then (seen once in CI: empty stderr after MPI_Abort)."""
    print(text, file=sys.stderr, flush=True)
    time.sleep(1.0)
    comm.Abort(3)


def _off_by_one(comm, sendbuf, recvbuf, op, root=0):
    collectives.get("allreduce", "ring").run(comm, sendbuf, recvbuf, op, root)
    if comm.rank == comm.size - 1 and recvbuf.size:
        recvbuf[-1] += 1


def _raises(comm, sendbuf, recvbuf, op, root=0):
    """The last rank raises at count p + 1 while the others are inside the ring's exchanges."""
    if comm.rank == comm.size - 1 and recvbuf.size == comm.size + 1:
        raise IndexError("planted: the last rank fails")
    collectives.get("allreduce", "ring").run(comm, sendbuf, recvbuf, op, root)


def _accumulates_in_input(comm, sendbuf, recvbuf, op, root=0):
    """Binomial reduce that, in place, accumulates in a non-root's receive buffer (its input)."""
    from fabricprobe.collectives.blocks.binomial import binomial_reduce
    from fabricprobe.collectives.blocks.common import copy_into

    if sendbuf is not None:
        if comm.rank == root:
            copy_into(recvbuf, sendbuf)
            buf = recvbuf
        else:
            buf = sendbuf.copy()
    else:
        buf = recvbuf
    binomial_reduce(comm, buf, op, root)


PLANTED = {  # --plant-fault KIND: (collective, description, run)
    "wrong": ("allreduce", "ring, wrong in one element", _off_by_one),
    "raises": ("allreduce", "ring; the last rank raises at count p+1", _raises),
    "nonroot-input": ("reduce", "binomial; in place, a non-root's input is overwritten", _accumulates_in_input),
}


def main() -> int:
    each_size.keep_freed_memory()
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks-per-node", default=None)
    parser.add_argument("--each", default=None, help="communicator sizes to check in turn (each_size.py)")
    parser.add_argument("--layouts", default=None, help="P=NODES;...: virtual topologies to check in turn")
    parser.add_argument("--large", type=int, default=1 << 20)
    parser.add_argument("--large-at", default="", help="P=N,...: another large count on a communicator of P")
    parser.add_argument("--collectives", default=",".join(COLLECTIVES))
    parser.add_argument("--algorithms", default=None, help="only these (comma-separated)")
    parser.add_argument("--buffer", default="host", help="host, cupy or numba")
    parser.add_argument("--transfer", default="direct", help="device buffers: direct, staged or pipelined")
    parser.add_argument("--stage-chunk", type=int, default=1024, help="bytes per pipelined chunk")
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument(
        "--plant-fault",
        nargs="?",
        const="wrong",
        choices=sorted(PLANTED),
        help="check only a deliberately faulty algorithm (the checker must report it)",
    )
    args = parser.parse_args()
    if args.plant_fault:
        from fabricprobe.collectives import Algorithm, register

        coll, about, run = PLANTED[args.plant_fault]
        register(Algorithm("planted_fault", coll, about, run=run))
        args.collectives, args.algorithms = coll, "planted_fault"
    if args.buffer != "host":
        global DEVICE
        from fabricprobe.engine.device_point import DeviceContext
        from fabricprobe.memory import memory_for

        DEVICE = (DeviceContext(memory_for(args.buffer), "", args.stage_chunk), args.transfer)
    world = MPI.COMM_WORLD
    if args.layouts:  # one case per layout, each on a communicator of its size
        for size, layout in each_size.layouts(args.layouts):
            args.ranks_per_node = layout
            for_each_size(world, [size], lambda comm: check_all(comm, args))
        return 0
    for_each_size(world, each_size.sizes(args.each, world.size), lambda comm: check_all(comm, args))
    return 0


def check_all(comm, args) -> None:
    """Every case of every algorithm asked on comm; rank 0 prints the report line."""
    p = comm.size
    dtypes, all_ops = args.dtypes.split(","), args.ops.split(",")
    if args.ranks_per_node:
        sizes = topology.node_sizes(topology.parse_ranks_per_node(args.ranks_per_node), p)
        topology.set_active(comm, topology.virtual(topology.detect(comm), sizes))
    small = sorted({0, 1, max(p - 1, 0), p, p + 1, 7, 100})
    checked, failures, per_algorithm = 0, [], {}
    for coll in args.collectives.split(","):
        names = [n for n in collectives.names_for(coll, args.buffer) if n != collectives.LIBRARY]
        if args.algorithms:
            names = [n for n in names if n in args.algorithms.split(",")]
        for name in names:
            if args.transfer == "pipelined" and coll not in ("allreduce", "reduce", "bcast"):
                continue
            ops = all_ops if coll in REDUCING else ("sum",)
            places = (False,) if coll == "bcast" else (False, True)
            cases = [(dt, op, c, ip) for dt in dtypes for op in ops for c in small for ip in places]
            # The large count: float32 and float64 with sum, every op with float32, in place and not.
            # (Integer dtypes take the same code paths; the small counts cover them in every op.)
            large_ops = [(dt, "sum") for dt in ("float32", "float64") if dt in dtypes] + [
                ("float32", op) for op in ops if op != "sum" and "float32" in dtypes
            ]
            # For allgather and reduce_scatter the count is per rank: keep the whole buffer at --large.
            large = dict(map(int, pair.split("=")) for pair in args.large_at.split(",") if pair).get(p, args.large)
            large = large // p if coll in ("allgather", "reduce_scatter") else large
            # In place only changes where the input is read from; the small counts cover it for every
            # dtype and op, so at the large count one in-place case (float32 sum) suffices.
            cases += [
                (dt, op, large, ip)
                for dt, op in large_ops
                if coll in REDUCING or op == "sum"
                for ip in places
                if not ip or (dt, op) == ("float32", "sum")
            ]
            per_algorithm[f"{coll}/{name}"] = len(cases)
            for i, (dtname, op, count, in_place) in enumerate(cases):
                root = (i * 7 + 3) % p
                try:
                    error = check(comm, coll, name, DTYPES[dtname], op, count, in_place, root, seed=i)
                except Exception as exc:  # the other ranks wait in the collective: name the case, end the job
                    abort_naming(
                        comm,
                        f"check_algorithms: rank {comm.rank} raised in {coll}/{name} {dtname} {op} count={count} "
                        f"{'in-place' if in_place else 'out-of-place'} root={root}: {type(exc).__name__}: {exc}",
                    )
                checked += 1
                if error:  # gathered once at the end: a gather per case would dominate the run time
                    failures.append(
                        f"{coll}/{name} {dtname} {op} count={count} "
                        f"{'in-place' if in_place else 'out-of-place'} root={root} rank {comm.rank}: {error}"
                    )
    failures = [f for per_rank in comm.gather(failures, root=0) or [] for f in per_rank]
    if comm.rank == 0:
        print(
            json.dumps(
                {
                    "nranks": p,
                    "layout": args.ranks_per_node,
                    "checked": checked,
                    "per_algorithm": per_algorithm,
                    "failures": failures[:50],
                    "nfailures": len(failures),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
