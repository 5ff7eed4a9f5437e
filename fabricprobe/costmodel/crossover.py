"""Where the fastest algorithm changes with message size: predicted (from the model) and measured."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def _preference(name: str) -> int:
    """Tie-break: a two-level algorithm that costs exactly what a flat one does (one node) is not
    a different winner."""
    return 1 if name.startswith(("hierarchical", "single_leader")) else 0


def best(times: list[tuple[float, str]]) -> str:
    """The fastest algorithm; times within 1e-9 relative are ties, broken by preference then name."""
    if not times:
        return ""
    fastest = min(t for t, _ in times)
    tied = [name for t, name in times if t <= fastest * (1 + 1e-9)]
    return min(tied, key=lambda n: (_preference(n), n))


def predicted_winners(
    predict: Callable[[str, float], float | None], algorithms: list[str], sizes: np.ndarray
) -> list[str]:
    out = []
    for n in sizes:
        out.append(best([(t, a) for a in algorithms if (t := predict(a, float(n))) is not None]))
    return out


def crossovers(
    predict: Callable[[str, float], float | None],
    algorithms: list[str],
    lo: float = 1.0,
    hi: float = float(1 << 30),
    steps: int = 400,
) -> list[tuple[float, str, str]]:
    """(size, winner below, winner from there on) where the predicted winner changes, located
    by bisection between the points of a logarithmic grid."""
    grid = np.geomspace(lo, hi, steps)
    winners = predicted_winners(predict, algorithms, grid)
    out = []
    for i in range(1, len(grid)):
        if winners[i] != winners[i - 1]:
            a, b = grid[i - 1], grid[i]
            for _ in range(40):
                mid = np.sqrt(a * b)
                if predicted_winners(predict, algorithms, np.array([mid]))[0] == winners[i - 1]:
                    a = mid
                else:
                    b = mid
            out.append((float(b), winners[i - 1], winners[i]))
    return out


def measured_crossovers(by_algorithm: dict[str, dict[int, dict[str, Any]]]) -> list[tuple[int, str, str]]:
    """(first size, previous winner, new winner) along the measured sizes."""
    sizes = sorted({s for rows in by_algorithm.values() for s in rows})
    out, previous = [], None
    for size in sizes:
        timed = [(rows[size]["median_s"], name) for name, rows in by_algorithm.items() if size in rows]
        winner = min(timed)[1]
        if previous is not None and winner != previous:
            out.append((size, previous, winner))
        previous = winner
    return out
