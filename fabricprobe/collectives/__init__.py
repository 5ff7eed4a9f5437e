"""Collective algorithms: one file per algorithm, all found through one registry.

Every module in this package (not the building blocks in `blocks/`) defines ALGORITHMS, the
algorithms it implements, and is imported and registered here, so adding an algorithm is adding a
file (docs/architecture.md walks through it).
"""

import importlib
import pkgutil

from fabricprobe.collectives.algorithm import LIBRARY, Algorithm
from fabricprobe.collectives.registry import algorithms, all_names, get, names_for, register
from fabricprobe.timing.batch import Batch, TimerUnavailable

for _module in pkgutil.iter_modules(__path__):
    if _module.ispkg or _module.name in ("algorithm", "registry", "cost"):
        continue
    for _algorithm in importlib.import_module(f"{__name__}.{_module.name}").ALGORITHMS:
        register(_algorithm)

__all__ = [
    "LIBRARY",
    "Algorithm",
    "Batch",
    "TimerUnavailable",
    "algorithms",
    "all_names",
    "get",
    "names_for",
    "register",
]
