"""Grouping points into series: one table (or one plotted line) per series."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from fabricprobe.store.schema import identity


def series_key(point: dict[str, Any]) -> tuple:
    """A series: everything that identifies a point but its size (one table, one plotted line)."""
    return identity(point, without=("bytes",))


def group_series(points: list[dict[str, Any]]) -> "OrderedDict[tuple, list[dict[str, Any]]]":
    """Points grouped by series, in first-seen order, each series sorted by size."""
    groups: OrderedDict[tuple, list[dict[str, Any]]] = OrderedDict()
    for point in points:
        groups.setdefault(series_key(point), []).append(point)
    for rows in groups.values():
        rows.sort(key=lambda p: p["bytes"])
    return groups
