"""What a stored point can hold: a check of every value a reader trusts before it is shown. A point
row that no measurement gives (a negative size, count or time, an infinite time, a status no point
has) is damage however it got there (an edited file, a flip HDF5's checksums did not cover), named
with its run and index, and left out of what is shown (docs/schema.md)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from fabricprobe.mpienv.datatypes import DTYPES
from fabricprobe.sizes import MAX_BYTES
from fabricprobe.specs import SPECS
from fabricprobe.specs.rma import SYNCS
from fabricprobe.store.schema import (
    EMPTY,
    POINT_ERROR,
    POINT_NOT_RUNNABLE,
    POINT_OK,
    POINT_WRONG,
    STATUS_ABORTED,
    STATUS_COMPLETE,
    STATUS_INTERRUPTED,
    STATUS_RUNNING,
)

STATUSES = frozenset({POINT_OK, POINT_WRONG, POINT_ERROR, POINT_NOT_RUNNABLE})
RUN_STATUSES = frozenset({STATUS_RUNNING, STATUS_COMPLETE, STATUS_ABORTED, STATUS_INTERRUPTED})

COLLECTIVES = frozenset(SPECS) | {EMPTY}
POINT_DTYPES = frozenset(DTYPES) | {"byte"}
MODES = frozenset({"barrier", "loop", "window", *SYNCS})  # docs/methodology.md; one-sided tests: their sync
UNDECODABLE = "\ufffd"  # what bytes that are not UTF-8 read as

# Times in seconds: NaN where not measured (a failed point), else finite and not negative
_NOT_TIMES = frozenset({"started_unix"})
# Counts and sizes: not negative
_AT_LEAST = {"index": 0, "bytes": 0, "requested_bytes": 0, "count": 0, "iterations": 0, "nranks": 0}


def implausible(point: dict[str, Any]) -> str | None:
    """Why a point's names or numbers cannot be a measurement ("negative median_s (-1)"), or None."""
    status = point.get("status")
    if status is not None and status not in STATUSES:
        return f'status "{status}", which no point has'
    for name, known in (("collective", COLLECTIVES), ("dtype", POINT_DTYPES), ("mode", MODES)):
        value = point.get(name)
        if value is not None and value not in known and (value or name == "collective"):  # "": not recorded
            return f'{name} "{value}", which no point has'
    algorithm = point.get("algorithm")
    if algorithm is not None and (not algorithm or UNDECODABLE in algorithm):
        return f'algorithm "{algorithm}", which no point has'
    if point.get("bytes", 0) > MAX_BYTES:
        return f"bytes {point['bytes']} above the {MAX_BYTES} a point can have"
    why = _times(point)
    if why is not None:
        return why
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


def _times(point: dict[str, Any]) -> str | None:
    """A measured point's statistics in the order every sample gives them: a median, between min and max."""
    if point.get("status") != POINT_OK or "median_s" not in point:
        return None
    if point.get("nranks", 1) < 1:
        return f"a measured point on {point['nranks']} ranks"
    median = point["median_s"]
    if isinstance(median, float) and math.isnan(median):
        return "an ok point without a median"
    low, high = point.get("min_s", 0.0), point.get("max_s", 0.0)
    if high > 0 and not low <= median <= high:  # files whose rows predate min_s/max_s hold 0 there
        return f"median_s {median:g} outside [min_s {low:g}, max_s {high:g}]"
    return None


# A run's attributes a reader trusts, and the type each must have where present
_RUN_TYPES = {"config": dict, "hosts": list, "notes": list, "resumed_at": list}
_CONFIG_LISTS = ("sizes", "collectives", "algorithms", "modes", "dtypes")


def implausible_run(attrs: dict[str, Any]) -> str | None:
    """Why a run's attributes cannot be what a writer wrote ("status 7, which no run has"), or None.
    Attributes a run predates are absent and not asked for."""
    status = attrs.get("status")
    if status is not None and status not in RUN_STATUSES:
        return f'status "{status}", which no run has'
    for name, kind in _RUN_TYPES.items():
        if name in attrs and not isinstance(attrs[name], kind):
            return f"{name} is not a {'JSON object' if kind is dict else 'list'}"
    config = attrs.get("config") or {}
    for name in _CONFIG_LISTS:
        if name in config and not isinstance(config[name], list):
            return f"config's {name} is not a list"
    for name in ("started", "ended"):
        value = attrs.get(name)
        if value and not _a_date(value):
            return f"{name} {value!r} is not a date"
    for name, lo in (("nranks", 1), ("planned_points", 0)):
        value = attrs.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < lo):
            return f"{name} {value!r} is not a whole number of at least {lo}"
    return None


def _a_date(value: Any) -> bool:
    try:
        datetime.fromisoformat(str(value))
    except ValueError:
        return False
    return True


def left_out(attrs: dict[str, Any], points: list[dict[str, Any]]) -> list[tuple[int | None, str]]:
    """What readers leave out of one run, as (position in `points`, why): (None, why) alone when its
    attributes are what no writer gives (the whole run), else one for each point whose names or numbers
    no measurement gives or whose index an earlier point has. Readers and repair word them."""
    why = implausible_run(attrs) if attrs else None
    if why is not None:
        return [(None, why)]
    out, seen = [], set()
    for at, point in enumerate(points):
        why = implausible(point) or ("its index repeated" if point.get("index") in seen else None)
        seen.add(point.get("index"))
        if why is not None:
            out.append((at, why))
    return out
