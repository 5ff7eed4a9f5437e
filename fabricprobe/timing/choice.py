"""Which timer measures a point: the one place it is decided.

native  a compiled loop calls the MPI C API (what a C benchmark times); only algorithms with a compiled
        Batch (the library's) and only where the native binding loads
python  MPI_Wtime around each Python call: hand-written algorithms, device buffers (their copies and
        stream synchronisations are Python calls), and --timer python
--timer auto takes native where it can; --timer native where it cannot is an error for that point,
never a silent fallback.
"""

from __future__ import annotations

from fabricprobe.timing.batch import TimerUnavailable

TIMERS = ("auto", "native", "python")


def timer_for(requested: str, name: str, compiled: bool, native_failure: str | None, device: bool) -> str:
    """The timer for one point of algorithm `name` (compiled: it has a native Batch); native_failure is
    why the native binding did not load (None when it did)."""
    if requested == "python" or device:
        return "python"
    if compiled and native_failure is None:
        return "native"
    if requested == "native":
        raise TimerUnavailable(
            f"{name} is written in Python; it has no native timer"
            if not compiled
            else f"the native timer is unavailable here: {native_failure}"
        )
    return "python"


def floor_timers(requested: str, native_failure: str | None) -> list[str]:
    """Timers whose floor (an empty timed region) a run records: native where any point can use it, and python."""
    return (["native"] if requested != "python" and native_failure is None else []) + ["python"]
