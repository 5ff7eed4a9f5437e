"""What a stored point can hold: a check of every number a reader trusts before it is shown. A point
row whose numbers no measurement gives (a negative size, count or time, an infinite time) is damage
however it got there (a flipped bit in a folded file passes HDF5's checksum only if it was written so;
an edited file passes none), named with its run and index, and left out of what is shown
(docs/schema.md)."""

from __future__ import annotations

import math
from typing import Any

# Times in seconds: NaN where not measured (a failed point), else finite and not negative
_NOT_TIMES = frozenset({"started_unix"})
# Counts and sizes: not negative
_AT_LEAST = {"index": 0, "bytes": 0, "requested_bytes": 0, "count": 0, "iterations": 0, "nranks": 0}


def implausible(point: dict[str, Any]) -> str | None:
    """Why a point's numbers cannot be a measurement ("negative median_s (-1)"), or None."""
    for name, lo in _AT_LEAST.items():
        value = point.get(name)
        if value is not None and value < lo:
            return f"{name} {value} below {lo}"
    for name, value in point.items():
        if not name.endswith("_s") or name in _NOT_TIMES or not isinstance(value, float):
            continue
        if math.isnan(value):
            continue
        if math.isinf(value) or value < 0:
            return f"{'infinite' if math.isinf(value) else 'negative'} {name} ({value:g})"
    return None
