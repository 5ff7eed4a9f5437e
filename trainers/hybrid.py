"""HyPar-Flow-style hybrid parallelism: the MLP's layers split into s pipeline stages (consecutive
ranks), the pipeline replicated r = p / s times. A replica takes its share of the global batch in m
micro-batches: activations go forward stage to stage (send/recv), errors come back, gradients
accumulate over the micro-batches (GPipe fill-and-drain), and each stage then allreduces its slice
of the gradient with the same stage of the other replicas. The gradient equals the sequential
model's on the whole global batch."""

from __future__ import annotations

import numpy as np

from fabricprobe.errors import UsageError
from trainers.comm_ops import allreduce_fn, bucketed, dense_bytes_sent
from trainers.core import Trainer
from trainers.data import shard
from trainers.mlp import softmax_xent_grad


class Hybrid(Trainer):
    name = "hybrid"

    def __init__(self, comm, data, opts, device=None) -> None:
        super().__init__(comm, data, opts, device)
        s, p = opts.stages, comm.size
        if s < 1 or p % s:
            raise UsageError(f"invalid --stages {s}: the {p} ranks must form whole pipelines (p divisible by s)")
        if s > self.model.nlayers:
            raise UsageError(f"invalid --stages {s}: the model has only {self.model.nlayers} layers")
        if opts.micro_batches < 1:
            raise UsageError(f"invalid --micro-batches {opts.micro_batches}: at least 1")
        self.s, self.r = s, p // s
        self.stage, self.replica = comm.rank % s, comm.rank // s
        self.pipe = self.device.comm(comm.Split(self.replica, self.stage))  # this replica's pipeline, by stage
        self.dp = comm.Split(self.stage, self.replica)  # this stage in every replica
        bounds = np.linspace(0, self.model.nlayers, s + 1).round().astype(int)
        self.lo, self.hi = int(bounds[self.stage]), int(bounds[self.stage + 1])
        self.part = self.model.param_slice(self.lo, self.hi)
        self.allreduce = self.device.collective(allreduce_fn(opts.allreduce, opts.selection))
        self.summed = self.model.xp.zeros(self.part.stop - self.part.start, self.dtype)

    def step(self, idx: np.ndarray) -> float:
        c, m, o = self.clock, self.model, self.opts
        xp, on = m.xp, self.device.index
        mine = shard(idx, self.replica, self.r)
        micro = [mb for mb in np.array_split(mine, o.micro_batches) if mb.size]
        first, last = self.stage == 0, self.stage == self.s - 1
        width_in, width_out = m.sizes[self.lo], m.sizes[self.hi]
        caches, loss = [], 0.0
        m.grads[self.part] = 0
        for mb in micro:  # forward: fill the pipe
            if first:
                x = self.data.x_train[on(mb)]
            else:
                x = xp.empty((mb.size, width_in), self.dtype)
                with c.timing("wait"):  # upstream compute and transfer both show here
                    self.pipe.Recv(x, source=self.stage - 1, tag=1)
            with c.timing("compute"):
                out, cache = m.forward(x, self.lo, self.hi)
            caches.append(cache)
            if last:
                with c.timing("compute"):
                    part_loss, g = softmax_xent_grad(out, self.data.y_train[on(mb)])
                loss += part_loss
                caches[-1] = (cache, g.astype(self.dtype))
            else:
                with c.timing("comm"):
                    self.pipe.Send(xp.ascontiguousarray(out), dest=self.stage + 1, tag=1)
                c.bytes_sent += out.nbytes
        for mb, entry in zip(micro, caches):  # backward: drain
            if last:
                cache, g = entry
            else:
                cache, g = entry, xp.empty((mb.size, width_out), self.dtype)
                with c.timing("wait"):
                    self.pipe.Recv(g, source=self.stage + 1, tag=2)
            with c.timing("compute"):
                g_in = m.backward(g, cache, self.lo, accumulate=True)
            if not first:
                with c.timing("comm"):
                    self.pipe.Send(xp.ascontiguousarray(g_in.astype(self.dtype)), dest=self.stage - 1, tag=2)
                c.bytes_sent += g_in.nbytes
        grads = m.grads[self.part]
        if self.r > 1:
            with c.timing("comm"):
                bucketed(self.allreduce, self.dp, grads, self.summed, 0, c)
            c.bytes_sent += dense_bytes_sent(grads.nbytes, self.r)
        else:
            self.summed[:] = grads
        with c.timing("compute"):
            m.params[self.part] -= (o.lr / idx.size) * self.summed
        return loss

    def full_gradient(self) -> np.ndarray | None:
        """The last step's summed gradient, assembled on rank 0 from replica 0's stages."""
        pieces = self.comm.gather((self.replica, self.part.start, self.summed.copy()), root=0)
        if self.comm.rank != 0:
            return None
        full = self.model.xp.zeros_like(self.model.grads)
        for replica, start, piece in pieces:
            if replica == 0:
                full[start : start + piece.size] = piece
        return full

    def eval_model(self):
        pieces = self.comm.gather((self.replica, self.part.start, self.model.params[self.part].copy()), root=0)
        if self.comm.rank != 0:
            return None
        for replica, start, piece in pieces:
            if replica == 0:
                self.model.params[start : start + piece.size] = piece
        return self.model

    def describe(self) -> dict:
        return {
            "collective": f"pipeline send/recv + allreduce:{self.opts.allreduce}",
            "stages": self.s,
            "replicas": self.r,
        }
