"""Number formatting shared by the tables and exports."""

from __future__ import annotations

import math


def usec(seconds: float) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-"
    us = seconds * 1e6
    if us >= 100_000:
        return f"{us:,.0f}"
    if us >= 100:
        return f"{us:.1f}"
    return f"{us:.2f}"


def gbps(value: float) -> str:
    if value is None or not math.isfinite(value) or value == 0:
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:.2f}"


def percent(fraction: float) -> str:
    if fraction is None or not math.isfinite(fraction):
        return "-"
    return f"±{fraction * 100:.1f}%"


def ratio(value: float) -> str:
    """A speedup or an interval's end: 2 decimals, 3 within 0.005 of 1, so that an interval just above
    1 (a rule shown faster) never reads 1.00."""
    return f"{value:.3f}" if abs(value - 1) < 0.005 else f"{value:.2f}"
