"""Every number a user reads, held against an independent computation on planted input (issue 67): the
timed region of the compiled and the Python loop against a planted clock, every statistic against a
reference written here from its definition, the bandwidths and busbw factors against nccl-tests'
formulas, OMB's columns (µs, MB/s = 10^6 bytes) and nccl-tests' fields (µs, GB/s = 10^9 bytes) as their
own suites define them. Each check must be able to fail: MUTANTS plants wrong numbers of each kind
(the `numbers` class of benchmarks/mutation_score.py), and every one is caught.

Before this, 3 of 8 planted wrong numbers passed the suite: a compiled loop whose clock started before
the barrier (every latency held a barrier), OMB bandwidth in MiB/s where OMB prints 10^6 bytes, and
another that no test held against an independent computation."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import math
import re

import numpy as np
import pytest
from numba import njit

from fabricprobe import stats
from fabricprobe.report import export, nccl_tests
from fabricprobe.specs import SPECS
from fabricprobe.store.reader import Run
from fabricprobe.store.schema import make_row, row_to_dict
from fabricprobe.timing import compiled, loops

# ---- a planted clock: the barrier costs 1,000 s, the timed call 1 s, nothing else moves the clock ----

BARRIER_S, CALL_S = 1000.0, 1.0


class PlantedClock:
    def __init__(self) -> None:
        self.now = 0.0

    def wtime(self) -> float:
        return self.now

    def barrier(self, *_: object) -> int:
        self.now += BARRIER_S
        return 0

    def call(self, *_: object) -> int:
        self.now += CALL_S
        return 0


def native_loop_times(loop, mode: int, n: int = 5) -> np.ndarray:
    """What a compiled timing loop records, its MPI calls replaced by C callbacks of the planted clock."""
    clock = PlantedClock()
    wtime = ctypes.CFUNCTYPE(ctypes.c_double)(clock.wtime)
    barrier = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(clock.barrier)  # a communicator handle as MPICH's
    call = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(clock.call)
    out = np.zeros(n)
    assert loop(wtime, barrier, 0, call, (0,), mode, out) == 0
    return out


def python_loop_times(loop, mode: int, n: int = 5) -> np.ndarray:
    clock = PlantedClock()
    out = np.zeros(n)
    loop(clock.call, clock.barrier, clock.wtime, mode, out)
    return out


def check_timed_regions() -> None:
    """Only the call lies between the two clock reads: barrier mode's barrier and loop mode's one
    barrier are outside (OMB, nccl-tests)."""
    for mode in (loops.BARRIER, loops.LOOP):
        assert list(native_loop_times(compiled.native_timed_calls, mode)) == [CALL_S] * 5, ("compiled", mode)
        assert list(python_loop_times(loops.python_timed_calls, mode)) == [CALL_S] * 5, ("python", mode)


# ---- statistics, from their definitions ----


def planted_samples() -> np.ndarray:
    """41 iterations × 3 ranks, every value distinct; rank 2 the slowest in most iterations, one rank
    not timing one iteration (NaN)."""
    rng = np.random.default_rng(67)
    samples = rng.permutation(np.arange(1, 41 * 3 + 1, dtype=np.float64)).reshape(41, 3) * 1e-6
    samples[:, 2] += 1e-4 * (np.arange(41) % 3 != 0)
    samples[5, 0] = np.nan
    return samples


def _percentile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, Hyndman & Fan's type 7)."""
    h = (len(ordered) - 1) * q
    lo = math.floor(h)
    return ordered[lo] + (h - lo) * (ordered[min(lo + 1, len(ordered) - 1)] - ordered[lo])


def check_statistics() -> None:
    samples = planted_samples()
    s = stats.summarize(samples)
    iterations = [max(v for v in row if not math.isnan(v)) for row in samples.tolist()]  # the slowest rank's
    ordered = sorted(iterations)
    n = len(ordered)
    mean = sum(ordered) / n
    assert s.n == n == 41
    assert s.min_s == ordered[0] and s.max_s == ordered[-1]
    assert s.median_s == ordered[n // 2]  # n odd
    assert math.isclose(s.mean_s, mean, rel_tol=1e-12)
    assert math.isclose(s.std_s, math.sqrt(sum((x - mean) ** 2 for x in ordered) / (n - 1)), rel_tol=1e-12)
    assert math.isclose(s.p90_s, _percentile(ordered, 0.90), rel_tol=1e-12)
    assert math.isclose(s.p99_s, _percentile(ordered, 0.99), rel_tol=1e-12)
    half = 1.959963984540054 * math.sqrt(n) / 2  # the median's order-statistic interval at 95%
    assert (s.ci_low_s, s.ci_high_s) == (ordered[math.floor(n / 2 - half)], ordered[math.ceil(n / 2 + half)])
    per_rank = [[v for v in col if not math.isnan(v)] for col in samples.T.tolist()]
    means = [sum(c) / len(c) for c in per_rank]  # OMB: each rank's mean, then avg/min/max over ranks
    assert math.isclose(s.osu_avg_s, sum(means) / 3, rel_tol=1e-12)
    assert math.isclose(s.osu_min_s, min(means), rel_tol=1e-12)
    assert math.isclose(s.osu_max_s, max(means), rel_tol=1e-12)
    assert s.slowest_rank == 2


# ---- bandwidths and busbw factors: nccl-tests' PERFORMANCE.md ----

NCCL_FACTORS = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "bcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def check_bandwidths() -> None:
    for name, factor in NCCL_FACTORS.items():
        for n in range(1, 10):
            assert math.isclose(SPECS[name].busbw_factor(n), factor(n), abs_tol=1e-15), (name, n)
    algbw, busbw = stats.bandwidths(3_000_000, 2e-3, 1.5)
    assert math.isclose(algbw, 1.5) and math.isclose(busbw, 2.25)  # 3e6 B / 2 ms = 1.5e9 B/s


# ---- exports: OMB's text and nccl-tests' JSON ----


def _point(collective: str, index: int, nbytes: int, avg_s: float, nranks: int = 4) -> dict:
    spec = SPECS[collective]
    values = dict(
        index=index,
        key=f"{collective}{nbytes}",
        collective=collective,
        algorithm="library",
        status="ok",
        nranks=nranks,
        dtype="byte" if spec.pt2pt else "float32",
        op="sum",
        mode="barrier",
        timer="native",
        bytes=nbytes,
        requested_bytes=nbytes,
        count=nbytes if spec.pt2pt else nbytes // 4,
        iterations=100,
        median_s=avg_s,
        mean_s=avg_s,
        ci_low_s=avg_s,
        ci_high_s=avg_s,
        osu_avg_s=avg_s,
        osu_min_s=avg_s * 0.5,
        osu_max_s=avg_s * 2.0,
        busbw_factor=spec.busbw_factor(nranks),
        wrong=0,
    )
    return row_to_dict(make_row(values)[0])


def planted_run() -> Run:
    points = [
        _point("allreduce", 0, 1 << 20, 250e-6),
        _point("bw", 1, 1 << 20, 100e-6, nranks=2),
        _point("bibw", 2, 1 << 20, 100e-6, nranks=2),
    ]
    return Run("planted.h5", "0001", {"config": {}, "nranks": 4, "status": "complete"}, points)


def _osu_rows(text: str, title: str) -> list[list[float]]:
    block = text.split(f"# OSU MPI {title}")[1].split("\n# OSU ")[0]
    return [[float(x) for x in line.split()] for line in block.splitlines() if re.match(r"^\d", line)]


def check_osu_export() -> None:
    """OMB prints latency in µs (avg, min, max over ranks of each rank's mean) and bandwidth in MB/s of
    10^6 bytes from the mean time per message (osu_bibw: both directions)."""
    text = export.to_osu([planted_run()])
    assert _osu_rows(text, "Allreduce Latency Test") == [[1 << 20, 250.0, 125.0, 500.0, 100.0]]
    assert _osu_rows(text, "Bandwidth Test") == [[1 << 20, round((1 << 20) / 100e-6 / 1e6, 2)]]
    assert _osu_rows(text, "Bi-Directional Bandwidth Test") == [[1 << 20, round(2 * (1 << 20) / 100e-6 / 1e6, 2)]]


def check_nccl_tests_export() -> None:
    """nccl-tests: time in µs, algbw = bytes / time in GB/s of 10^9 bytes, busbw = algbw × the factor."""
    docs = nccl_tests.to_nccl_tests([planted_run()])
    assert len(docs) == 1
    text = json.dumps(docs[0])
    times = [float(x) for x in re.findall(r'"time": ([0-9.e+-]+)', text)]
    algbw = [float(x) for x in re.findall(r'"alg_bw": ([0-9.e+-]+)', text)]
    busbw = [float(x) for x in re.findall(r'"bus_bw": ([0-9.e+-]+)', text)]
    assert times and all(math.isclose(t, 250.0) for t in times), text
    assert algbw and all(math.isclose(a, (1 << 20) / 250e-6 / 1e9) for a in algbw), text
    assert busbw and all(math.isclose(b, 1.5 * (1 << 20) / 250e-6 / 1e9) for b in busbw), text


CHECKS = (check_timed_regions, check_statistics, check_bandwidths, check_osu_export, check_nccl_tests_export)


def test_every_number_holds_against_its_independent_computation():
    for check in CHECKS:
        check()


# ---- planted wrong numbers: each must make a check fail ----


@njit(cache=False)
def _clock_before_barrier(wtime, barrier, comm, call, args, mode, out):  # pragma: no cover - compiled
    for i in range(out.size):
        t0 = wtime()
        barrier(comm)
        call(*args)
        out[i] = wtime() - t0
    return 0


@njit(cache=False)
def _loop_clock_before_barrier(wtime, barrier, comm, call, args, mode, out):  # pragma: no cover - compiled
    prev = wtime()
    barrier(comm)
    for i in range(out.size):
        call(*args)
        now = wtime()
        out[i] = now - prev
        prev = now
    return 0


def _python_clock_before_barrier(call, barrier, wtime, mode, out):
    for i in range(len(out)):
        t0 = wtime()
        barrier()
        call()
        out[i] = wtime() - t0


def _summary_with(**wrong):
    """summarize() with some of its numbers computed another (wrong) way from the same samples."""
    real = stats.summarize

    def summarize(samples):
        s = real(samples)
        times = np.sort(stats.per_iteration(np.asarray(samples, dtype=np.float64)))
        return dataclasses.replace(s, **{k: f(s, times, np.asarray(samples)) for k, f in wrong.items()})

    return summarize


def _osu_value_in(unit_bytes: float, time_scale: float = 1e6):
    def value(point):
        spec = SPECS[point["collective"]]
        if export._bandwidth_test(spec):
            return spec.busbw_factor(point["nranks"]) * point["bytes"] / point["osu_avg_s"] / unit_bytes
        return point["osu_avg_s"] * time_scale

    return value


def _nccl_measurement_in(unit_bytes: float):
    real = nccl_tests._measurement

    def measurement(point):
        m = real(point)
        if m is not None:
            m["alg_bw"] = point["bytes"] / unit_bytes / point["osu_avg_s"]
            m["bus_bw"] = m["alg_bw"] * point["busbw_factor"]
        return m

    return measurement


_MEDIAN_CI = stats.median_ci  # the real one, which a mutant calls at another confidence

MUTANTS = {
    "compiled loop: clock read before the barrier": (compiled, "native_timed_calls", _clock_before_barrier),
    "compiled loop mode: clock read before its barrier": (compiled, "native_timed_calls", _loop_clock_before_barrier),
    "Python loop: clock read before the barrier": (loops, "python_timed_calls", _python_clock_before_barrier),
    "an iteration's time the mean over ranks, not the slowest": (
        stats,
        "per_iteration",
        lambda samples: np.nanmean(samples[~np.all(np.isnan(samples), axis=1)], axis=1),
    ),
    "median the mean of the two middle values' neighbours": (
        stats,
        "summarize",
        _summary_with(median_s=lambda s, t, _: float((t[len(t) // 2 - 1] + t[len(t) // 2]) / 2)),
    ),
    "standard deviation of the population (ddof 0)": (
        stats,
        "summarize",
        _summary_with(std_s=lambda s, t, _: float(t.std())),
    ),
    "p99 the nearest rank, not interpolated": (
        stats,
        "summarize",
        _summary_with(p99_s=lambda s, t, _: float(t[min(int(0.99 * len(t)), len(t) - 1)])),
    ),
    "OMB's average over every sample, not over each rank's mean": (
        stats,
        "summarize",
        _summary_with(osu_avg_s=lambda s, t, x: float(np.nanmean(x))),
    ),
    "the median's interval at 90%, not 95%": (
        stats,
        "median_ci",
        lambda ordered, z=1.645: _MEDIAN_CI(ordered, 1.645),
    ),
    "algbw in GiB/s (2^30)": (
        stats,
        "bandwidths",
        lambda nbytes, seconds, factor: (nbytes / seconds / 2**30, nbytes / seconds / 2**30 * factor),
    ),
    "OMB bandwidth in MiB/s (2^20), not MB/s": (export, "_osu_value", _osu_value_in(2**20)),
    "OMB latency in ms, not µs": (export, "_osu_value", _osu_value_in(1e6, time_scale=1e3)),
    "nccl-tests bandwidth in GiB/s (2^30), not GB/s": (nccl_tests, "_measurement", _nccl_measurement_in(2**30)),
    "allreduce busbw factor (n-1)/n, not 2(n-1)/n": (
        type(SPECS["allreduce"]),
        "busbw_factor",
        lambda self, n: (n - 1) / n,
    ),
    "allgather busbw factor 1, not (n-1)/n": (type(SPECS["allgather"]), "busbw_factor", lambda self, n: 1.0),
    "bibw counted in one direction": (type(SPECS["bibw"]), "busbw_factor", lambda self, n: 1.0),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_planted_wrong_number_is_caught(monkeypatch, name):
    where, attr, wrong = MUTANTS[name]
    monkeypatch.setattr(where, attr, wrong)
    failed = []
    for check in CHECKS:
        try:
            check()
        except AssertionError:
            failed.append(check.__name__)
    assert failed, f"planted: {name}; no check caught it"
