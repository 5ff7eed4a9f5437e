"""Collective algorithms: one file per algorithm, all found through one registry."""

from fabricprobe.collectives import library  # noqa: F401  (registers the library's algorithms)
from fabricprobe.collectives.base import LIBRARY, Algorithm, Batch, TimerUnavailable, all_names, get, names_for

__all__ = ["LIBRARY", "Algorithm", "Batch", "TimerUnavailable", "all_names", "get", "names_for"]
