"""The harness's bound on samples: rank 0 holds iterations × ranks float64 values per point, so the
iteration cap shrinks as ranks grow, and a capped point says so."""

from __future__ import annotations

import numpy as np

from fabricprobe.engine import harness
from fabricprobe.engine.harness import SAMPLE_CAP, STOP_FIXED, STOP_ITERATION_CAP, Budget, iteration_cap


class FakeComm:
    """Rank 0 of a communicator of `size` ranks whose peers all time what rank 0 timed."""

    def __init__(self, size: int) -> None:
        self.size, self.rank = size, 0
        self.gathered_values = 0

    def allreduce(self, value, op=None):
        return value

    def bcast(self, value, root=0):
        return value

    def Gather(self, local, gathered, root=0):
        gathered[:] = local
        self.gathered_values += gathered.size


def fast_batch(out: np.ndarray, mode: int) -> None:
    out[:] = np.random.default_rng(out.size).normal(1e-6, 5e-7, out.size)  # noisy: never converges


def test_cap_shrinks_with_ranks():
    budget = Budget(iterations=100, warmup=0, max_time=1e9, ci_target=1e-9)
    assert iteration_cap(budget, 2) == budget.max_iterations
    assert iteration_cap(budget, 1024) == SAMPLE_CAP // 1024
    assert iteration_cap(budget, 10**9) == budget.min_iterations


def test_adaptive_point_stops_at_the_cap_with_bounded_samples():
    comm = FakeComm(4096)
    budget = Budget(iterations=100, warmup=0, max_time=1e9, ci_target=1e-9)
    m = harness.measure(fast_batch, comm, budget, 0)
    assert m.stop_reason == STOP_ITERATION_CAP
    assert m.iterations == SAMPLE_CAP // 4096 and m.samples.shape == (SAMPLE_CAP // 4096, 4096)
    assert m.samples.size <= SAMPLE_CAP and comm.gathered_values == m.samples.size


def test_fixed_iterations_beyond_the_cap_are_cut_and_labelled():
    budget = Budget(iterations=SAMPLE_CAP, warmup=0, max_time=1e9, ci_target=0)
    m = harness.measure(fast_batch, FakeComm(64), budget, 0)
    assert (m.iterations, m.stop_reason) == (SAMPLE_CAP // 64, STOP_ITERATION_CAP)
    m = harness.measure(fast_batch, FakeComm(64), Budget(iterations=50, warmup=0, max_time=1, ci_target=0), 0)
    assert (m.iterations, m.stop_reason) == (50, STOP_FIXED)
