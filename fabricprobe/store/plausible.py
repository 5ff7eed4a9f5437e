"""What a stored point can hold: a check of every value a reader trusts before it is shown. A point
row that no measurement gives (a negative size, count or time, an infinite time, a status no point
has) is damage however it got there (an edited file, a flip HDF5's checksums did not cover), named
with its run and index, and left out of what is shown (docs/schema.md)."""

from __future__ import annotations

import math
from typing import Any

from fabricprobe.store.schema import POINT_ERROR, POINT_NOT_RUNNABLE, POINT_OK, POINT_WRONG

STATUSES = frozenset({POINT_OK, POINT_WRONG, POINT_ERROR, POINT_NOT_RUNNABLE})

# Times in seconds: NaN where not measured (a failed point), else finite and not negative
_NOT_TIMES = frozenset({"started_unix"})
# Counts and sizes: not negative
_AT_LEAST = {"index": 0, "bytes": 0, "requested_bytes": 0, "count": 0, "iterations": 0, "nranks": 0}


def implausible(point: dict[str, Any]) -> str | None:
    """Why a point's numbers cannot be a measurement ("negative median_s (-1)"), or None."""
    status = point.get("status")
    if status is not None and status not in STATUSES:
        return f'status "{status}", which no point has'
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
