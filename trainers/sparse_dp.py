"""Top-k sparsified data-parallel SGD with error feedback: each rank sends only the k largest entries
of (its gradient + what it has not sent yet) through a sparse allreduce (TopkA, gTop-k, SparCML, the
hierarchical pair); every rank applies the same sparse sum. Bytes are counted as the algorithms
send them (fabricprobe.sparse.traffic)."""

from __future__ import annotations

import time

import numpy as np

from fabricprobe import collectives, tuned
from fabricprobe.console import warn_line
from fabricprobe.errors import UsageError
from fabricprobe.sparse import traffic
from fabricprobe.sparse.error_feedback import ErrorFeedback
from fabricprobe.sparse.vector import SparseResult
from trainers.core import Trainer
from trainers.mlp import gradient_sum


class SparseDP(Trainer):
    name = "sparse_dp"

    def __init__(self, comm, data, opts) -> None:
        super().__init__(comm, data, opts)
        if not 0 < opts.density <= 1:
            raise UsageError(f"invalid --density {opts.density}: 0 < density <= 1")
        self.tuned = opts.sparse_algorithm == "tuned"
        if self.tuned:  # the selection's sparse algorithm for this communicator, density and size
            if tuned.load(opts.selection or None) is None:
                warn_line("--sparse-algorithm tuned without a selection file: TopkA (topk_allgather)")
        else:
            self.alg = collectives.get("sparse_allreduce", opts.sparse_algorithm)
            if self.alg is None:
                raise UsageError(
                    f"unknown --sparse-algorithm {opts.sparse_algorithm!r}: choose tuned or one of "
                    f"{', '.join(collectives.names_for('sparse_allreduce'))}"
                )
        self.feedback = ErrorFeedback(self.model.grads.size, self.dtype, density=opts.density)
        self.feedback.enabled = opts.error_feedback
        self.result = SparseResult(self.model.grads.size, self.dtype)

    def step(self, idx: np.ndarray) -> float:
        c, m = self.clock, self.model
        x, y = self.local(idx)
        with c.timing("compute"):
            loss = gradient_sum(m, x, y)
            sent = self.feedback.compress(m.grads)
        with c.timing("wait"):
            self.comm.Barrier()
        traffic.reset()
        t0 = time.perf_counter()
        with c.timing("comm"):
            if self.tuned:
                name = tuned.sparse_allreduce(sent, self.result, self.opts.density, self.comm)
            else:
                self.alg.run(self.comm, sent, self.result, "sum", 0)
                name = self.opts.sparse_algorithm
        c.bucket(m.grads.nbytes, name, time.perf_counter() - t0)
        c.bytes_sent = traffic.sent()
        with c.timing("compute"):
            self.result.add_to(m.params, -self.opts.lr / idx.size)
        return loss

    def describe(self) -> dict:
        return {"collective": f"sparse_allreduce:{self.opts.sparse_algorithm}", "k": self.feedback.k}
