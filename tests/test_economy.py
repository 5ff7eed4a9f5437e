"""tune-sweep --budget's search (tuning.economy) on synthetic collectives whose times are known, and
tune-eval's regret (tuning.regret) on hand-made tunings; the search on real measurements is in
test_economy_fixtures.py."""

from __future__ import annotations

import math

import pytest

from fabricprobe.tuning.economy import search as economy
from fabricprobe.tuning.economy.search import LIBRARY, Grid, Model, Observation, State

SIZES = [8 << (2 * k) for k in range(10)]  # 8 B .. 2 MiB by ×4
COMMS = [2, 3, 4, 6, 8]


def true_time(label: str, n: int, size: int) -> float:
    """Latency-bound and bandwidth-bound algorithms crossing over: "library:small" wins below ~32 KiB,
    "library:large" above, "slow" never; the default is in between everywhere."""
    alpha, beta = {
        LIBRARY: (20e-6, 1.0e9),
        "library:small": (14e-6, 0.5e9),
        "library:large": (60e-6, 3.0e9),
        "slow": (50e-6, 0.3e9),
    }[label]
    return alpha * math.log2(n) + size * (n - 1) / n / beta


def synthetic_measure(calls: list | None = None):
    def measure(keys, screening):
        if calls is not None:
            calls.append((list(keys), screening))
        out = {}
        for coll, label, n, size in keys:
            t = true_time(label, n, size)
            spread = 0.5 if screening else 0.02
            duration = 0.01 + (6 if screening else 200) * t
            calls_made = 6 if screening else 200
            out[(coll, label, n, size)] = Observation(
                t, t * (1 - spread), t * (1 + spread), duration, calls_made, t, screening
            )
        return out

    return measure


def grid() -> Grid:
    return Grid({"allreduce": [LIBRARY, "library:small", "library:large", "slow"]}, COMMS, SIZES)


def winners(min_gain: float = 0.05) -> dict:
    """The candidate that beats the default by more than twice min_gain at each grid point."""
    out = {}
    for n in COMMS:
        for s in SIZES:
            times = {label: true_time(label, n, s) for label in grid().candidates["allreduce"]}
            best = min(times, key=times.get)
            if best != LIBRARY and times[best] < times[LIBRARY] * (1 - 2 * min_gain):
                out[("allreduce", best, n, s)] = times[best]
    return out


def test_the_whole_grid_at_budget_one_in_two_rounds():
    calls = []
    state = economy.run(grid(), synthetic_measure(calls), budget=1.0)
    assert state.rounds == 2 and len(state.seen) == grid().size()
    assert [screening for _, screening in calls] == [False, False]
    assert {k[1] for k in calls[0][0]} == {LIBRARY}  # the default's pass first


def found_every_winner(state: State) -> None:
    """Every clear winner measured, its interval below the default's: what tune needs to choose it."""
    missing = [
        k
        for k in winners()
        if k not in state.seen or state.seen[k].high_s >= state.seen[(k[0], LIBRARY, k[2], k[3])].low_s
    ]
    assert not missing, f"winners tune cannot choose: {missing[:5]}"


def test_a_budgeted_search_measures_every_winner_for_less():
    calls = []
    state = economy.run(grid(), synthetic_measure(calls), budget=0.5)
    found_every_winner(state)
    full = sum(o.duration_s for o in synthetic_measure()(list(grid().points()), False).values())
    assert state.spent_s < 0.5 * full
    assert calls[1][1] is True  # round two screens
    assert state.rounds <= economy.MAX_ROUNDS
    never_measured = [k for k in grid().points() if k[1] == "slow" and k in state.seen and not state.seen[k].screening]
    assert len(never_measured) < len(SIZES) * len(COMMS) // 4  # the hopeless candidate is mostly only screened


def test_the_winner_check_fails_on_a_search_that_stops_after_screening(monkeypatch):
    """Planted bug: no refinement round. The check above must catch it."""
    monkeypatch.setattr(economy, "worth_measuring", lambda state, min_gain: [])
    state = economy.run(grid(), synthetic_measure(), budget=0.5)
    with pytest.raises(AssertionError, match="winners tune cannot choose"):
        found_every_winner(state)


def test_the_budget_bounds_what_is_spent():
    full = sum(o.duration_s for o in synthetic_measure()(list(grid().points()), False).values())
    for budget in (0.1, 0.25, 0.5):
        state = economy.run(grid(), synthetic_measure(), budget=budget)
        default_pass = sum(o.duration_s for k, o in state.seen.items() if k[1] == LIBRARY)
        assert state.spent_s <= max(budget * full * 1.15, default_pass * 1.15), budget


def _state_with(points: dict) -> State:
    state = State(grid())
    for key, t in points.items():
        state.seen[key] = Observation(t, t * 0.99, t * 1.01, 0.1, 100, t)
    return state


def test_the_model_interpolates_in_log_log_and_knows_it_is_unsure_between_points():
    sizes = [8, 128, 2048, 32768]
    state = _state_with({("allreduce", LIBRARY, 4, s): 1e-6 * s**0.5 for s in sizes})
    model = Model(state)
    p = model.predict("allreduce", LIBRARY, 4, 512)  # between 128 and 2048: exact on a power law
    assert p is not None and not p.final
    assert p.log_s == pytest.approx(math.log(1e-6 * 512**0.5))
    measured = model.predict("allreduce", LIBRARY, 4, 128)
    assert measured.final and measured.half < p.half
    far = model.predict("allreduce", LIBRARY, 4, 2 << 20)  # four ×4 steps beyond the last: less sure still
    assert far.half > p.half
    assert model.predict("allreduce", "library:small", 4, 512) is None  # nothing of it measured


def test_a_candidate_is_carried_to_other_communicator_sizes_by_its_ratio_to_the_default():
    points = {("allreduce", LIBRARY, n, s): 1e-5 * n for n in (2, 8) for s in SIZES}
    points.update({("allreduce", "library:large", 8, s): 0.5e-5 * 8 for s in SIZES})
    model = Model(_state_with(points))
    p = model.predict("allreduce", "library:large", 2, 512)
    assert p.log_s == pytest.approx(math.log(0.5e-5 * 2))  # half the default there too
    assert p.half >= economy.TRANSFER_PRIOR * 2  # two doublings away, no pair to calibrate on


def test_leave_one_out_error_grows_at_a_protocol_switch():
    xs = [3.0, 5.0, 7.0, 9.0, 11.0]
    smooth = [1.0, 2.0, 3.0, 4.0, 5.0]
    switch = [1.0, 2.0, 4.5, 4.0, 5.0]
    assert economy.step_error(xs, smooth, 2.0) == economy.FLOOR
    assert economy.step_error(xs, switch, 2.0) > 0.5


def test_the_budget_grid_keeps_each_collectives_algorithms_apart():
    """Planted in the first version: the launches were keyed by label alone, so every collective's
    default ("library") and allgather's ring replaced allreduce's, and a two-collective budgeted
    sweep crashed in its third round."""
    from fabricprobe.engine.config import SweepConfig
    from fabricprobe.tuning.economy.budgeted import budget_grid, launched_jobs
    from fabricprobe.tuning.plan.library import Variant

    variants = [
        Variant("allreduce", "default", "", {}),
        Variant("allreduce", "ring", "", {"X": "4"}),
        Variant("allgather", "default", "", {}),
        Variant("allgather", "ring", "", {"Y": "2"}),
    ]
    jobs = launched_jobs(variants)
    assert jobs[("allreduce", "library:ring")].env == {"X": "4"}
    assert jobs[("allgather", "library:ring")].env == {"Y": "2"}
    g = budget_grid(jobs, {"allreduce": ["rabenseifner"]}, ["allreduce", "allgather"], [2, 4], SweepConfig(sizes=[8]))
    assert g.candidates == {
        "allreduce": ["library", "library:ring", "rabenseifner"],
        "allgather": ["library", "library:ring"],
    }
