"""Fit the model's parameters from one run's own points.

α and β come from the run's ping-pong latency points (half round trips), per level: the intra-
node pair and the inter-node pair. γ comes from the reduce_local kernel points. Each line
t = a + b·n is fitted by least squares on relative error, so the 8-byte and the 4-MiB points
weigh alike (plain least squares would let the largest sizes decide α).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fabricprobe.costmodel.params import Link, Params
from fabricprobe.errors import UsageError


@dataclass(frozen=True)
class LineFit:
    intercept: float
    slope: float
    points: int
    rel_rms: float  # root-mean-square relative residual of the fit


def fit_line(nbytes: np.ndarray, seconds: np.ndarray) -> LineFit:
    """t = intercept + slope·n, minimising Σ((fit − t)/t)²; both coefficients kept ≥ 0."""
    n = np.asarray(nbytes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    keep = np.isfinite(t) & (t > 0)
    n, t = n[keep], t[keep]
    if n.size < 2 or np.unique(n).size < 2:
        raise ValueError("need at least two sizes")
    design = np.column_stack([1.0 / t, n / t])
    coef, *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    a, b = (max(float(c), 0.0) for c in coef)
    rel = (a + b * n - t) / t
    return LineFit(a, b, int(n.size), float(np.sqrt(np.mean(rel**2))))


def _series(points: list[dict[str, Any]], **match: Any) -> list[dict[str, Any]]:
    return [p for p in points if p["status"] == "ok" and all(p[k] == v for k, v in match.items())]


@dataclass(frozen=True)
class Fitted:
    params: Params
    fits: dict[str, LineFit]  # "intra", "inter", "gamma", and "mpi4py" when measured


def fit_run(points: list[dict[str, Any]], label: str = "the run") -> Fitted:
    """Parameters from a run's latency and reduce_local points; UsageError when they are missing."""
    fits: dict[str, LineFit] = {}
    for pair in ("intra", "inter"):
        rows = _series(points, collective="latency", algorithm="library", mode="barrier", pair=pair)
        if len(rows) >= 2:
            fits[pair] = fit_line(np.array([p["bytes"] for p in rows]), np.array([p["median_s"] for p in rows]))
    if not fits:
        raise UsageError(
            f"{label} has no ping-pong latency points to fit α and β: measure them with "
            "`fabricprobe sweep --collectives ...,latency` (two or more sizes)"
        )
    kernel = _series(points, collective="reduce_local", op="sum", mode="barrier")
    preferred = [p for p in kernel if p["dtype"] == "float32"] or kernel
    if len({p["bytes"] for p in preferred}) < 2:
        raise UsageError(
            f"{label} has no reduce_local points to fit γ: measure them with "
            "`fabricprobe sweep --collectives ...,reduce_local` (two or more sizes)"
        )
    fits["gamma"] = fit_line(np.array([p["bytes"] for p in preferred]), np.array([p["median_s"] for p in preferred]))
    intra = fits.get("intra") or fits["inter"]
    inter = fits.get("inter") or intra
    # Hand-written algorithms send through mpi4py: the mpi4py ping-pong's extra latency is their
    # per-message software cost (0 when the run did not measure it).
    overhead = 0.0
    py_rows = _series(points, collective="latency", algorithm="mpi4py", mode="barrier")
    if len({p["bytes"] for p in py_rows}) >= 2:
        level = "intra" if any(p["pair"] == "intra" for p in py_rows) else "inter"
        rows = [p for p in py_rows if p["pair"] == level]
        fits["mpi4py"] = fit_line(np.array([p["bytes"] for p in rows]), np.array([p["median_s"] for p in rows]))
        overhead = max(0.0, fits["mpi4py"].intercept - (intra if level == "intra" else inter).intercept)
    params = Params(
        intra=Link(intra.intercept, intra.slope),
        inter=Link(inter.intercept, inter.slope),
        gamma=fits["gamma"].slope,
        message_overhead=overhead,
        reduce_overhead=fits["gamma"].intercept,
    )
    return Fitted(params, fits)
