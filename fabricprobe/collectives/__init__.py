"""Collective algorithms: one file per algorithm, all found through one registry.

Every module in this package (not the building blocks in `blocks/`) defines ALGORITHMS, the
algorithms it implements; the registry finds each file, and imports it the first time an algorithm
it does not hold yet is asked for (the library's own when the package loads), so adding an algorithm
is adding a file (docs/architecture.md walks through it).
"""

from fabricprobe.collectives import registry
from fabricprobe.collectives.algorithm import LIBRARY, Algorithm
from fabricprobe.collectives.registry import algorithms, choices, get, names_for, register
from fabricprobe.timing.batch import Batch, TimerUnavailable

registry.load(registry.FIRST)

__all__ = [
    "LIBRARY",
    "Algorithm",
    "Batch",
    "TimerUnavailable",
    "algorithms",
    "choices",
    "get",
    "names_for",
    "register",
]
