"""Values made once per live communicator (device proxies, NCCL communicators, GPU maps).

Keyed by id(comm); the communicator itself is kept beside the value, so a freed communicator whose id
is reused never hands its successor a stale value."""

from __future__ import annotations

from typing import Any, Callable


def per_communicator(cache: dict, comm: Any, make: Callable[[], Any], *key: Any) -> Any:
    """make() for comm (and the extra key), computed on first use and kept."""
    k = (id(comm), *key)
    held = cache.get(k)
    if held is None or held[0] is not comm:
        held = (comm, make())
        cache[k] = held
    return held[1]
