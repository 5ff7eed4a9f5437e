"""Elastic averaging SGD (Zhang, Choromanska, LeCun 2015; You, Buluç, Demmel SC'17 for the variants).
Workers take local SGD steps on their shard; every τ steps each is pulled toward a centre variable x̃
and x̃ toward them, with α = ηρ:

- sync: every rank is a worker; one allreduce of the parameters every τ steps gives
  x_i ← x_i − α(x_i − x̃),  x̃ ← x̃ + α Σ_i (x_i − x̃)   (β = pα), deterministic, replicated x̃.
- fcfs: rank 0 holds x̃ and serves whichever worker asks first (MPI_ANY_SOURCE): the worker receives
  x̃, sends d = α(x_i − x̃), and sets x_i ← x_i − d; the master sets x̃ ← x̃ + d (Async EASGD).
- round_robin: the same exchange, but the master serves workers strictly in rank order (the
  original EASGD), so a worker waits for its turn.
Async workers never block on the master: every τ steps a worker posts its request and a non-blocking
receive of x̃ and goes on computing; the step on which the receive has completed (MPI_Test) applies
the elastic update with that x̃ and sends d without waiting. t_comm is the time spent posting and
testing; t_wait is only the final wait at the end of training (a worker that finds its previous
exchange still open when the next is due waits for it too, and that shows in t_wait)."""

from __future__ import annotations

import numpy as np

from fabricprobe.errors import UsageError
from trainers.comm_ops import dense_bytes_sent
from trainers.core import Trainer
from trainers.mlp import MLP, gradient_sum

MODES = ("sync", "fcfs", "round_robin")
REQUEST, CENTRE, DELTA, DONE = 11, 12, 13, 14


class EASGD(Trainer):
    name = "easgd"

    def __init__(self, comm, data, opts, device=None) -> None:
        super().__init__(comm, data, opts, device)
        if opts.mode not in MODES:
            raise UsageError(f"invalid --mode {opts.mode!r}: choose from {', '.join(MODES)}")
        self.xcomm = self.device.comm(comm)  # the parameter exchange, on the device's arrays
        if opts.tau < 1:
            raise UsageError(f"invalid --tau {opts.tau}: at least 1")
        if opts.mode != "sync" and comm.size < 2:
            raise UsageError(f"--mode {opts.mode} needs at least 2 ranks (a master and a worker)")
        self.nworkers = len(self.workers())
        self.alpha = opts.alpha or 0.9 / self.nworkers
        self.centre = MLP(self.model.sizes, seed=opts.seed, dtype=self.dtype, xp=self.model.xp)  # x̃ starts at x_i
        self.total = self.model.xp.empty_like(self.model.params)
        self.t = 0
        self.synchronous = opts.mode == "sync"
        self._pending = None  # async: the open receive of x̃, or None
        self._sends: list = []  # async: requests of sends still in flight (and the buffers they read)

    def workers(self) -> list[int]:
        return list(range(self.comm.size)) if self.opts.mode == "sync" else list(range(1, self.comm.size))

    def is_server(self) -> bool:
        return self.opts.mode != "sync" and self.comm.rank == 0

    def step(self, idx: np.ndarray) -> float:
        c, m = self.clock, self.model
        x, y = self.local(idx)
        with c.timing("compute"):
            loss = gradient_sum(m, x, y)
            m.params -= (self.opts.lr / max(y.size, 1)) * m.grads
        self.t += 1
        if self.opts.mode == "sync":
            if self.t % self.opts.tau == 0:
                self._elastic()
        else:
            self._async_progress(due=self.t % self.opts.tau == 0)
        return loss

    def _elastic(self) -> None:
        c, x, xc = self.clock, self.model.params, self.centre.params
        if self.opts.mode == "sync":
            if self.comm.size > 1:
                with c.timing("wait"):
                    self.comm.Barrier()
            with c.timing("comm"):
                self.xcomm.Allreduce(x, self.total)
            c.bytes_sent += dense_bytes_sent(x.nbytes, self.comm.size)
            with c.timing("compute"):
                d = self.alpha * (x - xc)
                xc += self.alpha * (self.total - self.comm.size * xc)
                x -= d
            return

    def _async_progress(self, due: bool) -> None:
        """Finish an exchange whose x̃ has arrived; open a new one when one is due."""
        c, x, xc = self.clock, self.model.params, self.centre.params
        if self._pending is not None:
            with c.timing("comm"):
                arrived = self._pending.Test()
            if not arrived and due:  # the next exchange is due and the last is still open
                with c.timing("wait"):
                    self._pending.Wait()
                arrived = True
            if arrived:
                self._pending = None
                with c.timing("compute"):
                    d = self.alpha * (x - xc)
                    x -= d
                with c.timing("comm"):
                    self._sends = [(r, buf) for r, buf in self._sends if not r.Test()]  # drop finished sends
                    self._sends.append((self.comm.Isend(d, dest=0, tag=DELTA), d))
                c.bytes_sent += d.nbytes
        if due and self._pending is None:
            with c.timing("comm"):
                flag = np.zeros(1, np.int8)
                self._sends.append((self.comm.Isend(flag, dest=0, tag=REQUEST), flag))
                self._pending = self.comm.Irecv(xc, source=0, tag=CENTRE)
            c.bytes_sent += 1

    def serve(self) -> None:
        """The master's loop (async modes): serve exchanges until every worker has said it is done."""
        from mpi4py import MPI

        xc, d = self.centre.params, np.empty_like(self.centre.params)
        flag, status = np.zeros(1, np.int8), MPI.Status()
        active = set(self.workers())
        turn = 0
        order = self.workers()
        while active:
            if self.opts.mode == "fcfs":
                self.comm.Recv(flag, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
            else:  # round robin: only the worker whose turn it is
                src = order[turn % len(order)]
                turn += 1
                if src not in active:
                    continue
                self.comm.Recv(flag, source=src, tag=MPI.ANY_TAG, status=status)
            src, tag = status.Get_source(), status.Get_tag()
            if tag == DONE:
                active.discard(src)
                continue
            self.comm.Send(xc, dest=src, tag=CENTRE)
            self.comm.Recv(d, source=src, tag=DELTA)
            xc += d

    def done(self) -> None:
        if self.opts.mode == "sync":
            return
        from mpi4py import MPI

        with self.clock.timing("wait"):
            if self._pending is not None:  # the master answers every request: finish the last exchange
                self._pending.Wait()
                d = self.alpha * (self.model.params - self.centre.params)
                self.model.params -= d
                self._sends.append((self.comm.Isend(d, dest=0, tag=DELTA), d))
                self._pending = None
            MPI.Request.Waitall([r for r, _ in self._sends])
            self._sends = []
        self.comm.Send(np.zeros(1, np.int8), dest=0, tag=DONE)

    def eval_model(self):
        reporter = 0 if self.opts.mode == "sync" else 1
        if self.comm.rank != reporter:
            return None
        return self.centre if self.opts.mode == "sync" else self.model

    def finish(self):
        self.xcomm.Bcast(self.centre.params, root=0)  # the master's x̃ (sync: identical everywhere)
        return self.centre if self.comm.rank == 0 else None

    def describe(self) -> dict:
        return {
            "collective": "allreduce" if self.opts.mode == "sync" else f"p2p:{self.opts.mode}",
            "alpha": self.alpha,
            "beta": self.alpha * self.nworkers,
        }
