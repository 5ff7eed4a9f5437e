"""What every table says about what it measured, in one place: the timed region (barrier or loop
mode, OMB's ping-pong or window), the timer (native C calls or mpi4py), the buffers and transfer,
and which way a ratio reads. One convention for ratios everywhere, docs included: a *speedup* is
the reference's time over this time, so above 1 means faster than the reference."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fabricprobe.mpienv.datatypes import BYTE, NO_OP
from fabricprobe.sizes import format_size
from fabricprobe.specs import SPECS
from fabricprobe.specs.base import OMB_WINDOW
from fabricprobe.store.schema import PAIR_LABELS

# A mean iteration time this far above the median is dominated by outliers: the series table marks
# the mean, the OSU export (whose Avg is a mean) says so.
OUTLIER_RATIO = 1.25
DEFAULT_WINDOW = OMB_WINDOW  # for results files that predate the window's record


def on_device_buffers(points: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any of these points was measured on device buffers (--buffer cupy|numba)."""
    return any(p.get("buffer", "host") != "host" for p in points)


def speedup(reference_s: float, time_s: float) -> float:
    """How many times faster than the reference (the one ratio convention of every report)."""
    return reference_s / time_s if time_s > 0 else float("nan")


def timed_region(collective: str, mode: str, window: int = DEFAULT_WINDOW) -> str:
    """ "barrier mode", "loop mode", or the point-to-point loop's own shape (no barrier in those)."""
    spec = SPECS.get(collective)
    return spec.timed_region(mode, window) if spec is not None else f"{mode} mode"


def timer_label(timers: Iterable[str]) -> str:
    """ "native timer" (C calls from a compiled loop), "python timer" (mpi4py calls), or both."""
    names = sorted({t for t in timers if t})
    if not names:
        return ""
    return f"{' and '.join(names)} timer{'s' if len(names) > 1 else ''}"


def buffer_label(buffer: str, transfer: str) -> str:
    """ "host buffers", "cupy buffers, staged" and the like: always said, host included."""
    return f"{buffer or 'host'} buffers" + (f", {transfer}" if transfer else "")


def run_window(config: dict) -> int:
    return int(config.get("window") or DEFAULT_WINDOW)


def describe(what: Mapping[str, Any], timers: Iterable[str] = (), window: int = DEFAULT_WINDOW) -> list[str]:
    """A title's parts for the identifying fields present in `what` (a point, a series key or a case):
    algorithm, datatype, op, in-place, the timed region, the timer, pair, density, buffers, ranks."""
    parts = []
    if what.get("algorithm"):
        parts.append(what["algorithm"])
    if what.get("dtype", BYTE) != BYTE:
        parts.append(what["dtype"])
    if what.get("op", NO_OP) != NO_OP:
        parts.append(what["op"])
    if what.get("in_place"):
        parts.append("in-place")
    if "mode" in what:
        parts.append(timed_region(what["collective"], what["mode"], window))
    timer = timer_label(timers)
    if timer:
        parts.append(timer)
    if what.get("pair"):
        parts.append(f"{PAIR_LABELS.get(what['pair'], what['pair'])} pair")
    if what.get("density"):
        parts.append(f"density {what['density']:g}")
    if "buffer" in what:
        parts.append(buffer_label(what["buffer"], what.get("transfer", "")))
    if "nranks" in what:
        parts.append(f"{what['nranks']} ranks")
    return parts


def title(head: str, what: Mapping[str, Any], timers: Iterable[str] = (), window: int = DEFAULT_WINDOW) -> str:
    """ "HEAD · algorithm · … · N ranks": every table's title, so that none leaves out what it measured."""
    return " · ".join([head, *describe(what, timers, window)])


def row_name(p: Mapping[str, Any]) -> str:
    """One stored point in a line of text, for lists of rows (the bound's furthest rows, launch groups):
    collective/algorithm, size where it has one, pair kind, ranks, and a mode other than barrier."""
    parts = [p["collective"] + ("" if p["algorithm"] == "library" else f"/{p['algorithm']}")]
    spec = SPECS.get(p["collective"])
    if spec is None or spec.sized:
        parts.append(format_size(p["bytes"]))
    if p.get("pair"):
        parts.append(p["pair"])
    parts.append(f"on {p['nranks']}")
    if p["mode"] != "barrier":
        parts.append(f"({p['mode']})")
    return " ".join(parts)
