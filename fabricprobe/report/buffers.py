"""What a run's message buffers were made after: the setting that moves Open MPI's large messages.

A process that has written memory before it makes its message buffers reads Open MPI's shared-memory
transfers of 1 MiB and more faster: on the test VM OMB's own 4 MiB ping-pong read 1.09x faster with
64 MiB written first and 1.31x with 1024 MiB (docs/performance.md, "The setting"). OMB makes its
buffers right after MPI_Init; fabricprobe, by default, after its imports and set-up. The run records
which (memory/arena.py, the `buffer_memory` attribute) and this module says it: a line in the run's
header, a note where the setting bears on the rows, a warning where early buffers did not fit, and the
difference when `compare` sets two runs with different settings side by side.
"""

from __future__ import annotations

import math
from typing import Any

from fabricprobe.store import Run
from fabricprobe.store.schema import EMPTY

AFFECTED_FROM = 1 << 20  # the sizes at which the setting was seen to matter (1 MiB: within ±5%; 4 MiB: up to 1.31x)


def _record(attrs: dict[str, Any]) -> dict[str, list] | None:
    record = attrs.get("buffer_memory") or None
    return record if record and record.get("written_before_mib") else None


def _span(values: list[float]) -> str:
    read = [v for v in values if v >= 0]
    if not read:
        return "an unknown amount (no /proc/self/status)"
    lo, hi = min(read), max(read)
    return f"{lo:.0f} MiB" if round(lo) == round(hi) else f"{lo:.0f}–{hi:.0f} MiB"


def _setting(attrs: dict[str, Any]) -> tuple[int, str] | None:
    """(early MiB, 0 for buffers made when needed; what the ranks had written), None for a run that
    predates the record."""
    record = _record(attrs)
    return (max(record["early_mib"]), _span(record["written_before_mib"])) if record else None


def early_mib(attrs: dict[str, Any]) -> int:
    setting = _setting(attrs)
    return setting[0] if setting else 0


def describe(attrs: dict[str, Any]) -> str | None:
    """The setting in a phrase ("made when first needed, after 72 MiB written by each rank"), None for a
    run that predates the record."""
    setting = _setting(attrs)
    if setting is None:
        return None
    early, written = setting
    if early:
        return f"from {early} MiB written at each rank's start, after {written} (OMB's setting)"
    return f"made when first needed, after {written} written by each rank"


def header_line(attrs: dict[str, Any]) -> str | None:
    setting = _setting(attrs)
    if setting is None:
        return None
    early, written = setting
    if early:
        return (
            f"message buffers: from {early} MiB each rank wrote at its start, when it had written "
            f"{written} (RssAnon): OMB's setting, --early-buffers"
        )
    return (
        f"message buffers: made when first needed, when each rank had written {written} (RssAnon); "
        "OMB makes its own right after MPI_Init (--early-buffers)"
    )


def buffer_warning(attrs: dict[str, Any]) -> str | None:
    """Early buffers that did not fit were mapped late: those points did not have the setting asked for."""
    record = _record(attrs)
    if record is None or not early_mib(attrs) or not any(record["missed"]):
        return None
    held = max(record["peak_used_mib"])
    return (
        f"{max(record['missed'])} message buffer(s) on some rank did not fit in --early-buffers "
        f"{early_mib(attrs)} and were made late; the buffers held up to {held:.1f} MiB at once: "
        f"give at least --early-buffers {math.ceil(held)}"
    )


def buffer_note(run: Run) -> str | None:
    """Open MPI, buffers made late, and host points of 1 MiB or more: say what OMB's setting would change."""
    attrs = run.attrs
    setting = _setting(attrs)
    large = [
        p
        for p in run.points
        if p["collective"] != EMPTY and p["bytes"] >= AFFECTED_FROM and p["buffer"] == "host" and p["status"] == "ok"
    ]
    if setting is None or setting[0] or attrs.get("mpi_vendor") != "Open MPI" or not large:
        return None
    return (
        "on Open MPI's shared memory, when the buffers are made moves the times of 1 MiB and more "
        "(docs/performance.md); `fabricprobe sweep --early-buffers MIB` measures in OMB's setting."
    )


def difference(a: dict[str, Any], b: dict[str, Any], label_a: str, label_b: str) -> str | None:
    """compare: the two runs' settings, where they differ (early against late)."""
    if describe(a) is None or describe(b) is None or bool(early_mib(a)) == bool(early_mib(b)):
        return None
    return (
        f"message buffers differ: {label_a}'s {describe(a)}, {label_b}'s {describe(b)}; on Open MPI's shared "
        "memory this alone moves the times of 1 MiB and more (docs/performance.md)"
    )
