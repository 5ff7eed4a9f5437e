"""Synchronous data-parallel SGD: each rank computes the summed gradient of its shard of the global
batch, one allreduce (or a few fusion buckets) adds them, every rank applies the same update. With
the same global batch the parameters equal single-process SGD's, whatever p and algorithm. The one
trainer that runs on a GPU (--device cupy): its only communication is the gradient allreduce."""

from __future__ import annotations

import numpy as np

from trainers.comm_ops import allreduce_fn, bucketed, dense_bytes_sent
from trainers.core import Trainer
from trainers.mlp import gradient_sum


class DPSGD(Trainer):
    name = "dp_sgd"

    def __init__(self, comm, data, opts, device=None) -> None:
        super().__init__(comm, data, opts, device)
        self.allreduce = self.device.collective(allreduce_fn(opts.allreduce, opts.selection))
        self.summed = self.model.xp.zeros_like(self.model.grads)

    def step(self, idx: np.ndarray) -> float:
        c, m = self.clock, self.model
        x, y = self.local(idx)
        with c.timing("compute"):
            loss = gradient_sum(m, x, y)
        if self.comm.size > 1:
            with c.timing("wait"):  # load imbalance shows here, not in the collective's time
                self.comm.Barrier()
            with c.timing("comm"):
                bucketed(self.allreduce, self.comm, m.grads, self.summed, self.opts.bucket_bytes, c)
            c.bytes_sent = dense_bytes_sent(m.grads.nbytes, self.comm.size)
        else:
            self.summed[:] = m.grads
        with c.timing("compute"):
            m.params -= (self.opts.lr / idx.size) * self.summed
        return loss
