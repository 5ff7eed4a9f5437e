"""The algorithm registry: every implementation of every collective, the library's own included, found
by (collective, name). The package imports every algorithm module and registers its ALGORITHMS."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import LIBRARY, Algorithm

_REGISTRY: dict[tuple[str, str], Algorithm] = {}


def register(algorithm: Algorithm) -> Algorithm:
    key = (algorithm.collective, algorithm.name)
    if key in _REGISTRY:
        raise ValueError(f"algorithm {key} registered twice")
    _REGISTRY[key] = algorithm
    return algorithm


def get(collective: str, name: str) -> Algorithm | None:
    return _REGISTRY.get((collective, name))


def names_for(collective: str, buffer: str = "host") -> list[str]:
    """Algorithm names available for a collective on a buffer kind, the library's first."""
    names = [name for (coll, name), alg in _REGISTRY.items() if coll == collective and buffer in alg.buffers]
    return sorted(names, key=lambda n: (n != LIBRARY, n))


def all_names() -> list[str]:
    return sorted({name for (_, name) in _REGISTRY}, key=lambda n: (n != LIBRARY, n))


def algorithms() -> list[Algorithm]:
    """Every registered algorithm, by collective then name (the library's first)."""
    return sorted(_REGISTRY.values(), key=lambda a: (a.collective, a.name != LIBRARY, a.name))
