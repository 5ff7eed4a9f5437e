"""What every trainer shares: options, the per-step clock (compute / communication / waiting), the
step loop with evaluation and live progress, and the gathered log that record.py writes."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

import numpy as np

from fabricprobe.memory import memory_for
from trainers.data import Dataset, batches, shard
from trainers.device import Device
from trainers.mlp import MLP, accuracy


@dataclass
class Options:
    dataset: str = "digits"
    epochs: int = 30
    batch: int = 64  # global batch: split across the ranks that compute gradients
    lr: float = 0.1
    hidden: tuple[int, ...] = (128, 64)
    seed: int = 0
    eval_every: int = 50
    dtype: str = "float32"
    samples: int = 4000  # synthetic dataset size
    allreduce: str = "tuned"  # tuned (fabricprobe.tuned), library, or a hand-written algorithm
    selection: str = ""  # the selection file for "tuned" ("" = $FABRICPROBE_SELECTION)
    ranks_per_node: tuple[int, ...] = ()  # virtual topology (as tuned with tune-sweep --ranks-per-node); () = hardware
    device: str = "host"  # where the model, data and gradients live: host (numpy) or cupy (trainers.device)
    bucket_bytes: int = 0  # fusion buckets for the gradient allreduce; 0 = one call
    tau: int = 4  # easgd: communication period
    alpha: float = 0.0  # easgd: elastic coefficient α = ηρ (0 = 0.9 / workers, so β = pα = 0.9)
    mode: str = "sync"  # easgd: sync, fcfs or round_robin
    density: float = 0.01  # sparse_dp: fraction of gradient entries sent
    sparse_algorithm: str = "topk_allgather"
    error_feedback: bool = True
    stages: int = 2  # hybrid: pipeline stages (ranks per replica)
    micro_batches: int = 4  # hybrid
    target: float = 0.0  # stop at this test accuracy (0 = run every epoch)

    def as_attrs(self) -> dict[str, Any]:
        d = asdict(self)
        d["hidden"] = ",".join(map(str, self.hidden))
        d["ranks_per_node"] = ",".join(map(str, self.ranks_per_node))
        return {f"opt_{k}": v for k, v in d.items()}


class Clock:
    """Seconds of the current step spent computing, communicating and waiting for other ranks."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.compute = self.comm = self.wait = 0.0
        self.bytes_sent = 0
        self.buckets: list[tuple[int, str, float]] = []  # (bytes, algorithm, seconds) per collective call

    def bucket(self, nbytes: int, algorithm: str, seconds: float) -> None:
        self.buckets.append((nbytes, algorithm, seconds))

    @contextmanager
    def timing(self, kind: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            setattr(self, kind, getattr(self, kind) + time.perf_counter() - t0)


STEP_FIELDS = ("step", "epoch", "loss", "t_compute", "t_comm", "t_wait", "bytes_sent")
BUCKET_FIELDS = ("step", "bucket", "bytes", "algorithm", "seconds")  # one gradient collective call


@dataclass
class Log:
    steps: list[tuple] = field(default_factory=list)  # STEP_FIELDS per step (this rank)
    evals: list[tuple[int, float]] = field(default_factory=list)  # (step, test accuracy)
    buckets: list[tuple[int, int, int, str, float]] = field(default_factory=list)  # BUCKET_FIELDS

    def step_array(self) -> np.ndarray:
        dt = np.dtype(
            [
                ("step", "i8"),
                ("epoch", "i4"),
                ("loss", "f8"),
                ("t_compute", "f8"),
                ("t_comm", "f8"),
                ("t_wait", "f8"),
                ("bytes_sent", "i8"),
            ]
        )
        return np.array(self.steps, dtype=dt) if self.steps else np.zeros(0, dt)


class Trainer:
    """A trainer computes on some ranks' shards; subclasses define step() and the model to evaluate."""

    name = "trainer"

    def __init__(self, comm: Any, data: Dataset, opts: Options, device: Device | None = None) -> None:
        self.device = device if device is not None else Device("host", np, memory_for("host"))
        self.comm, self.data, self.opts = comm, self.device.put(data), opts
        self.dtype = np.dtype(opts.dtype)
        self.model = MLP(
            [data.features, *opts.hidden, data.classes], seed=opts.seed, dtype=self.dtype, xp=self.device.xp
        )
        self.clock = Clock()

    # which ranks take a share of each global batch, and this rank's index among them
    def workers(self) -> list[int]:
        return list(range(self.comm.size))

    def local(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w = self.workers()
        mine = shard(idx, w.index(self.comm.rank), len(w)) if self.comm.rank in w else idx[:0]
        mine = self.device.index(mine)
        return self.data.x_train[mine], self.data.y_train[mine]

    def step(self, idx: np.ndarray) -> float:
        """One global batch; returns this rank's summed loss. Times go to self.clock."""
        raise NotImplementedError

    def eval_model(self) -> MLP | None:
        """The model whose test accuracy is reported now (None on ranks that do not report)."""
        return self.model if self.comm.rank == 0 else None

    def finish(self) -> MLP | None:
        """The final model to evaluate (after any last synchronisation)."""
        return self.eval_model()

    def describe(self) -> dict[str, Any]:
        return {"collective": self.opts.allreduce}


def run(trainer: Trainer, progress: Any = None) -> tuple[Log, float]:
    """The step loop; returns (this rank's log, final test accuracy on the reporting rank, else nan)."""
    opts, data, comm = trainer.opts, trainer.data, trainer.comm
    log = Log()
    if getattr(trainer, "is_server", lambda: False)():
        trainer.serve()  # an async master: it takes no steps of its own
        final = trainer.finish()
        return log, accuracy(final, data.x_test, data.y_test) if final is not None else float("nan")
    step = 0
    plan = [(e, b) for e in range(opts.epochs) for b in batches(data.y_train.size, opts.batch, e, opts.seed)]
    for epoch, idx in plan:
        trainer.clock.reset()
        loss = trainer.step(idx)
        c = trainer.clock
        log.steps.append((step, epoch, loss, c.compute, c.comm, c.wait, c.bytes_sent))
        log.buckets.extend((step, i, nbytes, alg, t) for i, (nbytes, alg, t) in enumerate(c.buckets))
        step += 1
        if step % opts.eval_every == 0 or step == len(plan):
            model = trainer.eval_model()
            acc = accuracy(model, data.x_test, data.y_test) if model is not None else float("nan")
            log.evals.append((step, acc))
            if progress is not None:
                progress(step, len(plan), acc)
            stop = comm.bcast(bool(opts.target and acc >= opts.target), root=0) if trainer.synchronous else False
            if stop:
                break
    getattr(trainer, "done", lambda: None)()
    final = trainer.finish()
    acc = accuracy(final, data.x_test, data.y_test) if final is not None else float("nan")
    return log, acc


Trainer.synchronous = True  # async trainers cannot stop all ranks on rank 0's word mid-run
