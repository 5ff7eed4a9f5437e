"""The algorithm registry: every implementation of every collective, the library's own included, found
by (collective, name). Every module of the package but the building blocks defines ALGORITHMS; the
library's (library.py, library_rma.py) are registered when the package loads, and the others the
first time something asks for an algorithm that is not registered yet, or for all of them: a sweep of
the library's collectives imports none of fabricprobe's own algorithms (at scale every rank's imports
are file-system lookups at once: docs/scale.md, "Start-up")."""

from __future__ import annotations

import importlib
from typing import Iterable

from fabricprobe.collectives.algorithm import LIBRARY, Algorithm

PACKAGE = "fabricprobe.collectives"
FIRST = ("library", "library_rma")  # registered when the package loads: every sweep's default
NOT_ALGORITHMS = ("algorithm", "registry", "cost")  # modules of the package that define none

_REGISTRY: dict[tuple[str, str], Algorithm] = {}
_loaded: set[str] = set()  # the package's modules whose ALGORITHMS are registered
_everything = False  # every module is


def register(algorithm: Algorithm) -> Algorithm:
    key = (algorithm.collective, algorithm.name)
    if key in _REGISTRY:
        raise ValueError(f"algorithm {key} registered twice")
    _REGISTRY[key] = algorithm
    return algorithm


def load(modules: Iterable[str] | None = None) -> None:
    """Import and register the package's algorithm modules (all of them when `modules` is None)."""
    global _everything
    if modules is None:
        if _everything:
            return
        _everything = True
        import pkgutil

        path = importlib.import_module(PACKAGE).__path__
        found = pkgutil.iter_modules(path)
        modules = [m.name for m in found if not m.ispkg and m.name not in NOT_ALGORITHMS]
    for name in modules:
        if name not in _loaded:
            _loaded.add(name)
            for algorithm in importlib.import_module(f"{PACKAGE}.{name}").ALGORITHMS:
                register(algorithm)


def get(collective: str, name: str) -> Algorithm | None:
    if (collective, name) not in _REGISTRY:
        load()
    return _REGISTRY.get((collective, name))


def names_for(collective: str, buffer: str = "host") -> list[str]:
    """Algorithm names available for a collective on a buffer kind, the library's first."""
    load()
    names = [name for (coll, name), alg in _REGISTRY.items() if coll == collective and buffer in alg.buffers]
    return sorted(names, key=lambda n: (n != LIBRARY, n))


def choices(asked: Iterable[str]) -> list[str]:
    """The names to check `asked` against: the registered ones when they include every name asked (a
    sweep of the library's algorithms loads no other module), else every algorithm's."""
    asked = list(asked)
    if not set(asked) <= set(_names()):
        load()
    return _names()


def _names() -> list[str]:
    return sorted({name for (_, name) in _REGISTRY}, key=lambda n: (n != LIBRARY, n))


def algorithms() -> list[Algorithm]:
    """Every registered algorithm, by collective then name (the library's first)."""
    load()
    return sorted(_REGISTRY.values(), key=lambda a: (a.collective, a.name != LIBRARY, a.name))
