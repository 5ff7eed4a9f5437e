"""The harness's bound on samples: rank 0 holds iterations × stored columns float64 values per point
(every rank's up to stats.FULL_RANKS ranks, each iteration's maximum and the kept ranks' beyond), so
the iteration cap shrinks as ranks grow to FULL_RANKS and no further, and a capped point says so."""

from __future__ import annotations

import numpy as np

from fabricprobe.engine import harness
from fabricprobe.engine.harness import SAMPLE_CAP, STOP_FIXED, STOP_ITERATION_CAP, Budget, iteration_cap
from fabricprobe.stats import FULL_RANKS, SLOWEST_KEPT


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

    def Reduce(self, send, recv, op=None, root=0):  # every rank timed the same: rank 0 is the slowest
        recv[0][...] = send[0]

    def Recv(self, buf, source=0, tag=0):
        buf[:] = 1e-6


def fast_batch(out: np.ndarray, mode: int) -> None:
    out[:] = np.random.default_rng(out.size).normal(1e-6, 5e-7, out.size)  # noisy: never converges


def test_cap_shrinks_with_ranks_up_to_the_ranks_whose_every_sample_is_kept():
    budget = Budget(iterations=100, warmup=0, max_time=1e9, ci_target=1e-9, max_iterations=10**9)
    assert iteration_cap(budget, 2) == SAMPLE_CAP // 2
    assert iteration_cap(budget, FULL_RANKS) == SAMPLE_CAP // FULL_RANKS
    assert iteration_cap(budget, FULL_RANKS + 1) == iteration_cap(budget, 10**9) == SAMPLE_CAP // (1 + SLOWEST_KEPT)
    assert iteration_cap(Budget(100, 0, 1e9, 1e-9), 10**9) == 1_000_000  # max_iterations


def test_adaptive_point_stops_at_the_cap_with_bounded_samples():
    comm = FakeComm(FULL_RANKS)
    budget = Budget(iterations=100, warmup=0, max_time=1e9, ci_target=1e-9)
    m = harness.measure(fast_batch, comm, budget, 0)
    assert m.stop_reason == STOP_ITERATION_CAP
    assert m.iterations == SAMPLE_CAP // FULL_RANKS and m.times.samples.shape == (m.iterations, FULL_RANKS)
    assert m.times.full and comm.gathered_values == m.times.samples.size <= SAMPLE_CAP


def test_beyond_the_full_ranks_rank_0_gathers_summaries_not_samples():
    comm = FakeComm(4096)
    budget = Budget(iterations=100, warmup=0, max_time=1e9, ci_target=1e-9, max_iterations=10**9)
    m = harness.measure(fast_batch, comm, budget, 0)
    assert m.stop_reason == STOP_ITERATION_CAP and m.iterations == SAMPLE_CAP // (1 + SLOWEST_KEPT)
    t = m.times
    assert not t.full and t.samples.shape == (m.iterations, SLOWEST_KEPT) and t.maxima.shape == (m.iterations,)
    assert t.per_rank.shape == (4096, 5) and comm.gathered_values == 4096 * 4  # each rank's summary only
    assert t.ranks == (0, 1) and t.per_rank[0, 4] == m.iterations  # rank 0 slowest in every iteration


def test_fixed_iterations_beyond_the_cap_are_cut_and_labelled():
    budget = Budget(iterations=SAMPLE_CAP, warmup=0, max_time=1e9, ci_target=0)
    m = harness.measure(fast_batch, FakeComm(FULL_RANKS), budget, 0)
    assert (m.iterations, m.stop_reason) == (SAMPLE_CAP // FULL_RANKS, STOP_ITERATION_CAP)
    m = harness.measure(fast_batch, FakeComm(64), Budget(iterations=50, warmup=0, max_time=1, ci_target=0), 0)
    assert (m.iterations, m.stop_reason) == (50, STOP_FIXED)
