"""Collective algorithms: one file per algorithm, all found through one registry.

Every module in this package is imported here, and each algorithm module registers itself
(`ALGORITHM = register(Algorithm(...))`), so adding an algorithm is adding a file.
"""

import importlib
import pkgutil

from fabricprobe.collectives.base import LIBRARY, Algorithm, Batch, TimerUnavailable, all_names, get, names_for

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["LIBRARY", "Algorithm", "Batch", "TimerUnavailable", "all_names", "get", "names_for"]
