"""Under mpiexec: (dp) run dp_sgd for a few steps in float64 with each allreduce algorithm of the
list and save each one's parameters (rank 0) so the test can compare p ranks with one; (hybrid) one
hybrid step's gradient against the sequential model's gradient on the same global batch. Prints one
JSON line on rank 0.

--device staged|direct runs dp_sgd's device path (trainers.device) with numpy standing in for CuPy:
a memory with CuPy's interface whose "device" arrays are numpy arrays, counting its copies."""

from __future__ import annotations

import argparse
import json
import sys

import mpi4py

mpi4py.rc.thread_level = "single"
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from fabricprobe.memory import DIRECT, STAGED  # noqa: E402
from trainers.core import Options, run  # noqa: E402
from trainers.data import batches, load  # noqa: E402
from trainers.device import Device  # noqa: E402
from trainers.dp_sgd import DPSGD  # noqa: E402
from trainers.easgd import EASGD  # noqa: E402
from trainers.hybrid import Hybrid  # noqa: E402
from trainers.mlp import MLP, gradient_sum  # noqa: E402


class StandInMemory:
    """CuPy's memory interface over numpy: pinned host arrays, copies down and up (counted)."""

    kind = "standin"

    def __init__(self) -> None:
        self.downloads = self.uploads = self.syncs = 0

    def pinned(self, length: int, dtype) -> np.ndarray:
        return np.empty(length, dtype)

    def download(self, dev, host) -> None:
        self.downloads += 1
        np.copyto(host, dev)

    def upload(self, host, dev) -> None:
        self.uploads += 1
        np.copyto(dev, host)

    def synchronize(self) -> None:
        self.syncs += 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("dp", "hybrid", "easgd"))
    ap.add_argument("--allreduce", default="library")
    ap.add_argument("--save", default="")
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--device", choices=("host", "staged", "direct"), default="host")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    data = load("digits", dtype=np.float64)
    memory = StandInMemory()
    transfer = {"staged": STAGED, "direct": DIRECT}.get(args.device, "")
    device = Device("standin", np, memory, transfer) if transfer else None
    copies = lambda: {"downloads": memory.downloads, "uploads": memory.uploads}  # noqa: E731
    if args.what == "easgd":  # sync EASGD: the parameter allreduce and the final broadcast on the device
        opts = Options(epochs=1, batch=60, lr=0.2, dtype="float64", mode="sync", tau=2, eval_every=10**9)
        trainer = EASGD(comm, data, opts, device)
        run(trainer)
        final = trainer.finish()
        if comm.rank == 0:
            np.save(args.save, final.params)
            print(json.dumps({"nranks": comm.size, **copies()}))
        return 0
    if args.what == "dp":  # each algorithm of the list in turn, its parameters to --save with {algorithm} filled
        runs = {}
        for algorithm in args.allreduce.split(","):
            memory.downloads = memory.uploads = 0
            opts = Options(
                epochs=1, batch=60, lr=0.2, dtype="float64", allreduce=algorithm, eval_every=10**9, bucket_bytes=20000
            )
            trainer = DPSGD(comm, data, opts, device)
            log, _ = run(trainer)
            params = comm.gather(trainer.model.params.copy(), root=0)
            if comm.rank == 0:
                spread = max(float(np.abs(p - params[0]).max()) for p in params)  # every rank holds the same model
                np.save(args.save.replace("{algorithm}", algorithm), params[0])
                runs[algorithm] = {"spread": spread, "calls": len(log.buckets), **copies()}
        if comm.rank == 0:
            print(json.dumps({"nranks": comm.size, "runs": runs}))
        return 0
    opts = Options(batch=60, lr=0.2, dtype="float64", stages=args.stages, micro_batches=3, allreduce=args.allreduce)
    trainer = Hybrid(comm, data, opts, device)
    idx = batches(data.y_train.size, opts.batch, 0, opts.seed)[0]
    trainer.step(idx)
    full = trainer.full_gradient()
    if comm.rank == 0:
        sequential = MLP(trainer.model.sizes, seed=opts.seed, dtype=np.float64)
        gradient_sum(sequential, data.x_train[idx], data.y_train[idx])
        err = float(np.abs(full - sequential.grads).max() / np.abs(sequential.grads).max())
    copied = comm.gather(copies(), root=0)
    if comm.rank == 0:
        print(json.dumps({"nranks": comm.size, "relative_error": err, "copies": copied}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
