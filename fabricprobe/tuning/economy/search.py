"""tune-sweep --budget: which (algorithm, communicator size, message size) points to measure next, from
what has been measured, so that tune makes the exhaustive sweep's choices from a fraction of its time.

The model, per (collective, candidate, communicator size): the measured medians, interpolated linearly
in log(time) against log(size) between measured sizes; beyond them extrapolated along the nearest two,
with a slope between flat and linear growth (MAX_SLOPE). Its uncertainty at an unmeasured size is the
measurement's own interval at the neighbours plus the series' interpolation error per grid step times
the steps to the nearest measured size; the error per step is each series' own leave-one-out error
(every interior point predicted from its neighbours without it), never less than FLOOR. Collective
times are smooth in log-log between protocol switches, and a switch is where the leave-one-out error
is large, so the model is least sure exactly where the algorithms' order can change. At a communicator
size where a candidate is not measured, its ratio to the default is carried over from the nearest
size where it is, with an error per doubling calibrated on the candidates measured at two sizes.
(The α-β-γ cost models of costmodel/ describe fabricprobe's algorithms, not the library's forced
ones, which have no formula here; the interpolation needs none.)

A candidate is worth measuring at a point when, within its uncertainty, it could be the winner tune
would choose there: its optimistic time is below both the best pessimistic time of any candidate and
the default's time less tune's --min-gain (a candidate that cannot beat the default by that much is
never chosen), unless tune can already decide the point (the predicted best is measured and its
interval lies clear of every other). Points are taken in order of that possible gain per second of
predicted measurement time (cost()), a round at a time: each round is one launch per library
algorithm, as the library reads a forced algorithm at MPI_Init.

The rounds: the library's default everywhere first, in full (tune compares every candidate with it,
and its costs are every point's baseline); then every other candidate screened (SCREEN_ITERS timed
calls, no adaptive repetition) on as much of the grid as SEED_SHARE of the budget left allows; then
up to three refinement rounds that measure in full the candidates that could still win, each spending
at most ROUND_SHARE of what is left. The budget is a fraction of the exhaustive sweep's measurement
time, which is not known until it is measured: exhaustive_estimate() says how it is guessed and how
far the guess was off here (docs/tuning.md gives the fractions actually spent).

Pure functions on plain data: the CLI's driver (tuning.economical) measures what they ask for by
launching jobs, tune-eval's replay (tuning.replay) looks it up in an exhaustive file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fabricprobe.collectives.algorithm import LIBRARY
from fabricprobe.engine.config import SweepConfig
from fabricprobe.tuning.choose.rules import MIN_GAIN

FLOOR = 0.05  # least interpolation error per grid step (log): 5% per ×4 in size, the noise between runs here
SEED_SHARE = 0.9  # of the budget left after the default's pass, what screening may spend (replayed: 0.3-0.9)
ROUND_SHARE = 0.5  # of the budget left, what one refinement round may spend (so there is a next round)
MAX_ROUNDS = 6  # default pass, a probe screening, the screening pass, three refinements
SCREEN_ITERS = 5  # a screening measurement: this many timed calls, fixed (no adaptive repetition)
SCREEN_WARMUP = 1  # untimed calls before a screening's timed ones, above SCREEN_SMALL_BYTES
# At and below it, 20: with 1, the live screenings in one launch (MPICH n=2, right after a switch) read a
# median 1.32-1.34x the full measurement of the same point at <= 8 KiB (1.04x above), the first calls
# falling from 3.4 to 1.8 us: every candidate looked slower than the default and was left out. Twenty
# calls of a few microseconds cost nothing beside the point's fixed overhead.
SCREEN_WARMUP_SMALL = 20
SCREEN_SMALL_BYTES = SweepConfig.large_threshold  # the sweep's small/large boundary, one place (8 KiB)


def screening_warmup(size: int) -> int:
    """Untimed calls before a screening's SCREEN_ITERS timed ones at this message size."""
    return SCREEN_WARMUP_SMALL if size <= SCREEN_SMALL_BYTES else SCREEN_WARMUP


TRANSFER_PRIOR = 0.25  # error per doubling of the communicator of a ratio to the default carried across sizes
TRANSFER_FLOOR = 0.1  # least such error, however well the measured ratios agree


@dataclass(frozen=True)
class Observation:
    median_s: float
    low_s: float
    high_s: float
    duration_s: float  # wall time of the measurement, warm-up and validation included
    calls: int = 0  # timed and warm-up calls it made
    mean_s: float = 0.0  # mean time of a timed call
    screening: bool = False  # SCREEN_ITERS calls only: a wide interval, to be measured in full if it matters

    @property
    def overhead_s(self) -> float:
        """What the point cost beyond its calls: validation, barriers, setting up the buffers."""
        return max(self.duration_s - self.calls * self.mean_s, 0.0)


@dataclass
class Grid:
    """What the exhaustive sweep would measure: per collective its candidates (point labels: "library"
    for the default, "library:NAME" forced, fabricprobe's names), on every communicator size and size."""

    candidates: dict[str, list[str]]
    comm_sizes: list[int]
    sizes: list[int]
    max_time: float = math.inf  # the sweep's --max-time: the timed calls of a point stop there

    def points(self):
        for coll, labels in self.candidates.items():
            for label in labels:
                for n in self.comm_sizes:
                    for s in self.sizes:
                        yield (coll, label, n, s)

    def size(self) -> int:
        return sum(len(labels) for labels in self.candidates.values()) * len(self.comm_sizes) * len(self.sizes)


Key = tuple[str, str, int, int]  # (collective, label, communicator size, requested bytes)


@dataclass
class State:
    """What has been measured (and what was tried and gave nothing usable: an algorithm that does not
    run at that communicator size or count is not asked for again)."""

    grid: Grid
    seen: dict[Key, Observation] = field(default_factory=dict)
    tried: set[Key] = field(default_factory=set)
    spent_s: float = 0.0
    rounds: int = 0

    def add(self, wanted: list[Key], measured: dict[Key, Observation]) -> None:
        self.tried.update(wanted)
        for key, obs in measured.items():
            self.seen[key] = obs
            self.spent_s += obs.duration_s
        self.rounds += 1

    def unavailable(self, key: Key) -> bool:
        return key in self.tried and key not in self.seen


def _log_interval(obs: Observation) -> tuple[float, float]:
    centre = math.log(obs.median_s)
    half = max(math.log(max(obs.high_s, obs.median_s) / obs.median_s), math.log(obs.median_s / max(obs.low_s, 1e-12)))
    return centre, half


# Beyond the measured sizes a collective's time grows no faster than linearly with the size: log(time)
# against log2(size) has a slope between 0 (latency-bound) and ln 2 (bandwidth-bound), and
# extrapolation keeps to that (with 20% room). Two noisy neighbours gave slopes that predicted
# 10^9 s at 4 MiB before this.
MAX_SLOPE = 1.2 * math.log(2)


def _interpolate(xs: list[float], ys: list[float], x: float) -> float:
    if len(xs) == 1:
        return ys[0]
    if xs[0] <= x <= xs[-1]:
        i = max(k for k in range(len(xs) - 1) if xs[k] <= x)
        x0, x1, y0, y1 = xs[i], xs[i + 1], ys[i], ys[i + 1]
        return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    i = 0 if x < xs[0] else len(xs) - 2
    x0, x1, y0, y1 = xs[i], xs[i + 1], ys[i], ys[i + 1]
    slope = min(max((y1 - y0) / (x1 - x0), 0.0), MAX_SLOPE)
    anchor_x, anchor_y = (x0, y0) if x < xs[0] else (x1, y1)
    return anchor_y + slope * (x - anchor_x)


def step_error(xs: list[float], ys: list[float], step: float) -> float:
    """The series' leave-one-out interpolation error per grid step (log time), at least FLOOR."""
    errors = []
    for i in range(1, len(xs) - 1):
        guess = _interpolate(xs[:i] + xs[i + 1 :], ys[:i] + ys[i + 1 :], xs[i])
        steps = min(xs[i] - xs[i - 1], xs[i + 1] - xs[i]) / step
        errors.append(abs(ys[i] - guess) / max(steps, 1.0))
    return max([FLOOR, *errors])


@dataclass(frozen=True)
class Prediction:
    log_s: float  # predicted log(median time)
    half: float  # half-width of its interval, log
    final: bool  # measured in full (a screening measurement is not)

    @property
    def low(self) -> float:
        return self.log_s - self.half

    @property
    def high(self) -> float:
        return self.log_s + self.half


class Model:
    """Predictions of every candidate at every grid point from a State's measurements."""

    def __init__(self, state: State):
        self.state = state
        self.series: dict[tuple[str, str, int], tuple[list[float], list[float], list[float], float]] = {}
        self._transfer: dict[str, float] = {}
        logs = [math.log2(max(s, 1)) for s in state.grid.sizes]
        gaps = [b - a for a, b in zip(logs, logs[1:]) if b > a]
        self.step = min(gaps) if gaps else 1.0
        by_series: dict[tuple[str, str, int], list[tuple[float, Observation]]] = {}
        for (coll, label, n, s), obs in state.seen.items():
            by_series.setdefault((coll, label, n), []).append((math.log2(max(s, 1)), obs))
        for key, rows in by_series.items():
            rows.sort(key=lambda r: r[0])
            xs = [x for x, _ in rows]
            ys, halves = (list(v) for v in zip(*(_log_interval(o) for _, o in rows)))
            self.series[key] = (xs, ys, halves, step_error(xs, ys, self.step))

    def predict(self, coll: str, label: str, n: int, size: int) -> Prediction | None:
        """None when nothing of this candidate is measured yet. At a communicator size where it is not
        measured, its ratio to the default is carried over from the nearest size where it is."""
        found = self._on(coll, label, n, size)
        if found is not None or label == LIBRARY:
            return found
        donors = [m for (c, lab, m) in self.series if c == coll and lab == label]
        if not donors:
            return None
        m = min(donors, key=lambda m: (abs(math.log2(m / n)), -m))
        there, base_there, base_here = (
            self._on(coll, label, m, size),
            self._on(coll, LIBRARY, m, size),
            self._on(coll, LIBRARY, n, size),
        )
        if there is None or base_there is None or base_here is None:
            return None
        carried = self.transfer_error(coll) * max(abs(math.log2(m / n)), 1.0)
        return Prediction(there.log_s - base_there.log_s + base_here.log_s, there.half + carried, False)

    def _on(self, coll: str, label: str, n: int, size: int) -> Prediction | None:
        """The candidate at a communicator size from its own measurements there, None without any."""
        obs = self.state.seen.get((coll, label, n, size))
        if obs is not None:
            centre, half = _log_interval(obs)
            return Prediction(centre, half, not obs.screening)
        found = self.series.get((coll, label, n))
        if found is None:
            return None
        xs, ys, halves, per_step = found
        x = math.log2(max(size, 1))
        steps = min(abs(x - xi) for xi in xs) / self.step
        near = sorted(range(len(xs)), key=lambda i: abs(xs[i] - x))[:2]
        noise = max(halves[i] for i in near)
        return Prediction(_interpolate(xs, ys, x), noise + per_step * max(steps, 1.0), False)

    def transfer_error(self, coll: str) -> float:
        """How far a candidate's ratio to the default moves per doubling of the communicator, from the
        candidates measured at two communicator sizes at the same message size (the 75th percentile,
        at least TRANSFER_FLOOR); TRANSFER_PRIOR before any such pair exists."""
        if coll in self._transfer:
            return self._transfer[coll]
        moves = []
        seen = self.state.seen
        comms: dict[tuple[str, int], list[int]] = {}  # (label, size) -> communicator sizes measured
        for c, label, n, size in seen:
            if c == coll:
                comms.setdefault((label, size), []).append(n)
        for (c, label, n, size), obs in seen.items():
            if c != coll or label == LIBRARY or (c, LIBRARY, n, size) not in seen:
                continue
            larger = [m for m in comms[(label, size)] if m > n]
            if not larger or (c, LIBRARY, min(larger), size) not in seen:
                continue
            m = min(larger)
            here = math.log(obs.median_s / seen[(c, LIBRARY, n, size)].median_s)
            there = math.log(seen[(c, label, m, size)].median_s / seen[(c, LIBRARY, m, size)].median_s)
            moves.append(abs(here - there) / abs(math.log2(m / n)))
        if moves:
            moves.sort()
            value = max(TRANSFER_FLOOR, moves[int(0.75 * (len(moves) - 1))])
        else:
            value = TRANSFER_PRIOR
        self._transfer[coll] = value
        return value


def cost(state: State, coll: str, label: str, n: int, size: int, model: Model) -> float:
    """Predicted seconds to measure this point in full: the default's overhead there plus the timed
    calls the default made, at this candidate's predicted time per call, capped at --max-time (the
    harness stops there). The screening pass gives every candidate a time per call; before it, the
    default's own is used. Measured: a bcast's forced algorithms at n=8 took up to 40× the default's
    time per call, and a cost taken as the default's let one round spend three times its share."""
    base = state.seen.get((coll, LIBRARY, n, size))
    if base is None:
        return 1.0
    per_call = base.mean_s
    if label != LIBRARY:
        p = model.predict(coll, label, n, size)
        if p is not None:  # within 50× the default's either way: a prediction, not a measurement
            per_call = min(max(math.exp(p.log_s), base.mean_s / 50), base.mean_s * 50)
    timed = min(base.calls * per_call, max(state.grid.max_time, 10 * per_call))
    return base.overhead_s + timed


def screening_cost(state: State, coll: str, n: int, size: int, scale: float = 1.0) -> float:
    """Predicted seconds of a screening measurement: the default's overhead there and SCREEN_ITERS +
    screening_warmup(size) calls at the default's time, times `scale` (screening_scale)."""
    base = state.seen.get((coll, LIBRARY, n, size))
    if base is None:
        return 1.0
    return scale * (base.overhead_s + (SCREEN_ITERS + screening_warmup(size)) * base.mean_s)


def screening_scale(state: State) -> float:
    """What the screenings measured so far cost against screening_cost's price for them (1 before any).
    The price takes the default's full-point overhead, not all of which a screening in one launch pays
    (among it, the first point at a collective, communicator and size fills the oracle's inputs and
    expected results, which later points reuse): the live screenings cost 1/4.3 (Open MPI n=8), 1/2.2 (MPICH n=2)
    and 1/1.15 (lab 2x2) of their price, so the screening pass covered a fraction of the grid it could
    afford, and 94% of MPICH's regret at --budget 0.25 was at points whose best candidate was never
    measured."""
    paid = priced = 0.0
    for (coll, label, n, size), obs in state.seen.items():
        if obs.screening and label != LIBRARY and (coll, LIBRARY, n, size) in state.seen:
            paid += obs.duration_s
            priced += screening_cost(state, coll, n, size)
    return min(max(paid / priced, 0.05), 20.0) if priced > 0 else 1.0


def exhaustive_estimate(state: State) -> float:
    """The exhaustive sweep's measurement time as far as it can be told: the full measurements' own
    time plus, for every other point, the default's time there. Replayed on Open MPI at n=8 this was
    0.5-1.3× the exhaustive time (alltoall's default costs twice the average candidate, allreduce's
    less than fabricprobe's own algorithms); scaling each candidate by its measured cost against the
    default's, or summing the model's per-point predictions, was off by up to 1.7× and 4×. A point that
    was asked for and never came back (not runnable there) counts nothing: counted as 1 s for every
    candidate, the 18 default points of 8 B allgather, alltoall and reduce_scatter on 3-8 ranks (2
    float32 elements do not divide among them) made the live estimate at n=8 441 s instead of 297 s,
    against a real 215 s: the budget was spent twice over."""
    total = 0.0
    for coll, label, n, size in state.grid.points():
        obs = state.seen.get((coll, label, n, size))
        if obs is None and state.unavailable((coll, label, n, size)):
            continue  # asked for and not runnable there: the exhaustive sweep has no such point either
        if obs is None or obs.screening:
            if state.unavailable((coll, LIBRARY, n, size)):
                continue  # no default there (a count this communicator cannot divide): no point at all
            obs = state.seen.get((coll, LIBRARY, n, size))
        total += obs.duration_s if obs is not None else 1.0
    return total


def default_pass(grid: Grid) -> list[Key]:
    """Round one: the library's default at every point of the grid."""
    return [(coll, LIBRARY, n, s) for coll in grid.candidates for n in grid.comm_sizes for s in grid.sizes]


def _thinned(values: list[int], stride: int) -> list[int]:
    """Every stride-th value, the first and last always."""
    return sorted(set(values[::stride]) | {values[0], values[-1]})


def screening_pass(state: State, allowance_s: float, probe: bool = False) -> list[Key]:
    """Rounds two and three: every other candidate screened on a subset of the grid, the largest that
    fits in allowance_s (the cheapest when none does): every k-th size (the smallest and largest always)
    on every j-th communicator size (the largest always; the others are predicted from it by the ratio
    to the default). The probe (round two) is the coarsest subset only: what it costs prices the rest
    (screening_scale)."""
    sizes, comms = state.grid.sizes, state.grid.comm_sizes
    others = [(coll, label) for coll, labels in state.grid.candidates.items() for label in labels if label != LIBRARY]
    comm_subsets = [_thinned(comms, j) for j in (1, 2)] + [sorted({comms[0], comms[-1]}), [comms[-1]]]
    strides = (1, 2, 3, 5, max(len(sizes) - 1, 1))
    if probe:
        comm_subsets, strides = [[comms[-1]]], (max(len(sizes) - 1, 1),)
    scale = screening_scale(state)
    plans = []
    for comm_subset in comm_subsets:
        for stride in strides:
            keys = [
                (c, lab, n, s)
                for c, lab in others
                for n in comm_subset
                for s in _thinned(sizes, stride)
                if (c, lab, n, s) not in state.seen and not state.unavailable((c, lab, n, s))
            ]
            plans.append((sum(screening_cost(state, k[0], k[2], k[3], scale) for k in keys), keys))
    fitting = [p for p in plans if p[0] <= allowance_s]
    if fitting:
        return max(fitting, key=lambda p: (len(p[1]), -p[0]))[1]
    # Not even the coarsest fits: its cheapest points (the small sizes) up to the allowance, so that
    # refinement keeps a share of the budget.
    cheapest = min(plans, key=lambda p: p[0])[1]
    priced = sorted(((screening_cost(state, k[0], k[2], k[3], scale), k) for k in cheapest), key=lambda pk: pk[0])
    keys, spend = [], 0.0
    for price, key in priced:
        spend += price
        if spend > allowance_s:
            break
        keys.append(key)
    return keys


def worth_measuring(state: State, min_gain: float) -> list[tuple[Key, float]]:
    """(point, predicted cost()) of every candidate not measured in full that could still be the one
    tune chooses at a point it cannot decide yet, largest possible gain (log time) per predicted
    second first."""
    model = Model(state)
    out = []
    for coll, labels in state.grid.candidates.items():
        for n in state.grid.comm_sizes:
            for s in state.grid.sizes:
                default = model.predict(coll, LIBRARY, n, s)
                if default is None or state.unavailable((coll, LIBRARY, n, s)):
                    continue  # not a point of the grid (the size holds no element per rank there)
                preds = {}
                for label in labels:
                    if state.unavailable((coll, label, n, s)):
                        continue
                    p = model.predict(coll, label, n, s)
                    if p is not None:
                        preds[label] = p
                if not preds or _settled(state, preds, (coll, n, s), default, min_gain):
                    continue
                best_high = min(p.high for p in preds.values())
                bar = min(best_high, default.log_s + math.log(1 - min_gain))
                for label, p in preds.items():
                    if not p.final and p.low < bar:
                        gain = bar - p.low
                        price = cost(state, coll, label, n, s, model)
                        out.append((gain / max(price, 1e-6), (coll, label, n, s), price))
    out.sort(key=lambda r: -r[0])
    return [(key, price) for _, key, price in out]


def _settled(state: State, preds: dict[str, Prediction], point: tuple[str, int, int], default, min_gain) -> bool:
    """Whether tune already decides this point from what is measured: the predicted best is measured
    (a screening is enough), its interval lies below every other candidate's, and it is the default
    or beats the default's interval by min_gain."""
    best = min(preds, key=lambda label: preds[label].log_s)
    coll, n, size = point
    if (coll, best, n, size) not in state.seen:
        return False
    others = [p.low for label, p in preds.items() if label != best]
    if others and preds[best].high >= min(others):
        return False
    return best == LIBRARY or preds[best].high < default.low + math.log(1 - min_gain)


def next_round(state: State, budget: float, min_gain: float = MIN_GAIN) -> tuple[list[Key], bool]:
    """The points the next round measures and whether it screens them; no points when done. budget is
    the fraction (0, 1] of the exhaustive measurement time to spend."""
    if state.rounds == 0:
        return [k for k in default_pass(state.grid) if k not in state.seen], False
    if budget >= 1:  # the exhaustive sweep: everything else in one round
        if state.rounds > 1:
            return [], False
        return [k for k in state.grid.points() if k not in state.seen and k not in state.tried], False
    if state.rounds >= MAX_ROUNDS:
        return [], False
    left = budget * exhaustive_estimate(state) - state.spent_s
    if left <= 0:
        return [], False
    if state.rounds == 1:  # the probe: the coarsest screening, to learn what a screening costs here
        return screening_pass(state, SEED_SHARE * left, probe=True), True
    if state.rounds == 2:
        keys = screening_pass(state, SEED_SHARE * left)
        if keys:
            return keys, True
    allowance = left * (ROUND_SHARE if state.rounds < MAX_ROUNDS - 1 else 1.0)
    picked: list[Key] = []
    spend = 0.0
    for key, price in worth_measuring(state, min_gain):
        if picked and spend + price > allowance:
            continue
        picked.append(key)
        spend += price
    return picked, False


def run(grid: Grid, measure, budget: float, min_gain: float = MIN_GAIN) -> State:
    """Measure round after round (measure(keys, screening) -> {key: Observation} of what it measured)
    until nothing is worth measuring or the budget is spent."""
    state = State(grid)
    while True:
        wanted, screening = next_round(state, budget, min_gain)
        if not wanted:
            return state
        state.add(wanted, measure(wanted, screening))
