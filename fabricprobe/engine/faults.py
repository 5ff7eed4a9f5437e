"""Test hooks that plant a fault, so the tests can show validation and the watchdog work.

    FABRICPROBE_FAULT_WRONG=<collective>:<rank>  rank corrupts its result after validation calls
    FABRICPROBE_FAULT_HANG=<collective>:<rank>   rank never enters that collective's first point
                                                 (setup:<rank>: never leaves the sweep's set-up;
                                                 mpi_init:<rank>: hangs holding the interpreter,
                                                 as MPI_Init inside mpi4py's import does;
                                                 <collective>/<algorithm>:<rank>: that algorithm's)
    FABRICPROBE_FAULT_ERROR=<collective>/<algorithm>  every rank's point of that algorithm fails with an
                                                 error before its calls, as a library refusing it does
    FABRICPROBE_FAULT_READONLY=<variable>,...    tune-sweep takes these MPI_T control variables for
                                                 read-only (tuning.plan.switch)
    FABRICPROBE_FAULT_LATE=<rank>:<k>            window mode: rank reaches every k-th window late (its
                                                 start moved a second back: it finds it passed)
    FABRICPROBE_FAULT_TIME=<seconds>             every timed call reads exactly that long, on every rank: a
                                                 planted fabric, so that a test of what judges a timing
                                                 (ReFrame's references) has fixed timings, whatever the load
    FABRICPROBE_FAULT_LATE_FIRST=<rank>:<b>      window mode: rank reaches every window of each point's
                                                 first b batches late, as a rank descheduled for a whole
                                                 batch does

They are read from the environment, so every run that uses them records them in its
provenance (environment variables with the FABRICPROBE_ prefix are stored).
"""

from __future__ import annotations

import os
import re
import time

import numpy as np

from fabricprobe.errors import UsageError
from fabricprobe.inputs import MAX_SECONDS, real

# Each variable's form (its value as a whole must match), said in the error line
_FORMS = {
    "FABRICPROBE_FAULT_WRONG": (r"\S+:[0-9]+", "<collective>:<rank>"),
    "FABRICPROBE_FAULT_HANG": (r"\S+:[0-9]+", "<collective>[/<algorithm>]:<rank>"),
    "FABRICPROBE_FAULT_ERROR": (r"[^/\s]+/\S+", "<collective>/<algorithm>"),
    "FABRICPROBE_FAULT_READONLY": (r"[A-Za-z_][A-Za-z0-9_]*(,[A-Za-z_][A-Za-z0-9_]*)*", "<variable>,..."),
    "FABRICPROBE_FAULT_LATE": (r"[0-9]+:[1-9][0-9]*", "<rank>:<k>, k at least 1"),
    "FABRICPROBE_FAULT_LATE_FIRST": (r"[0-9]+:[0-9]+", "<rank>:<batches>"),
    "FABRICPROBE_FAULT_TIME": (r".+", "<seconds>"),
    "FABRICPROBE_FAULT_UNMARKED": (r"1", "1"),
}


def check_environment(env: dict[str, str] | None = None) -> None:
    """The planted faults read from the environment, checked like options before anything runs: a value
    not of its form, or a FABRICPROBE_FAULT_ variable no fault reads, is one line and exit 2 (a
    malformed one was ignored, or stored as times: -1, nan, 1e308; "abc" was a traceback with the run
    left "running")."""
    env = os.environ if env is None else env
    for name, value in env.items():
        if not name.startswith("FABRICPROBE_FAULT_"):
            continue
        if name not in _FORMS:
            raise UsageError(f"{name} is no planted fault (known: {', '.join(sorted(_FORMS))})")
        pattern, form = _FORMS[name]
        if not re.fullmatch(pattern, value):
            raise UsageError(f"invalid {name} {value!r}: it must be {form}")
        if name == "FABRICPROBE_FAULT_TIME":
            real(value, name, lo=0.0, hi=MAX_SECONDS, lo_open=True)


class PlantedError(RuntimeError):
    """The error FABRICPROBE_FAULT_ERROR plants."""


def _target(var: str) -> tuple[str, int] | None:
    value = os.environ.get(var, "")
    coll, _, rank = value.rpartition(":")
    if not coll or not rank.isdigit():
        return None
    return coll, int(rank)


def corrupt_result(collective: str, rank: int, recv: np.ndarray) -> None:
    if _target("FABRICPROBE_FAULT_WRONG") == (collective, rank) and recv.size:
        recv.flat[0] = recv.flat[0] + 1 if recv.dtype.kind in "iu" else np.float32(12345.0)


def hang_if_asked(collective: str, rank: int, algorithm: str = "") -> None:
    target = _target("FABRICPROBE_FAULT_HANG")
    if target in ((collective, rank), (f"{collective}/{algorithm}", rank)):
        while True:  # the other ranks block in the collective; the watchdog must end the job
            time.sleep(3600)


def fail_if_asked(collective: str, algorithm: str) -> None:
    if os.environ.get("FABRICPROBE_FAULT_ERROR") == f"{collective}/{algorithm}":
        raise PlantedError(f"planted error in {collective}/{algorithm} (FABRICPROBE_FAULT_ERROR)")


def readonly_variables() -> set[str]:
    return {v.strip() for v in os.environ.get("FABRICPROBE_FAULT_READONLY", "").split(",") if v.strip()}


def hang_holding_the_interpreter_if_asked(phase: str, rank: int) -> None:
    """Block in C without releasing the GIL (ctypes.PyDLL keeps it), as a hang in MPI_Init does."""
    if _target("FABRICPROBE_FAULT_HANG") == (phase, rank):
        import ctypes

        libc = ctypes.PyDLL(None)
        while True:
            libc.sleep(3600)


def late_windows(rank: int, starts: np.ndarray, attempt: int = 0) -> np.ndarray:
    """`starts` with every k-th window a second in the past on the planted rank (FABRICPROBE_FAULT_LATE),
    or every window of a point's first b batches (FABRICPROBE_FAULT_LATE_FIRST; `attempt` counts the
    point's batches from 0, those run again included)."""
    first = _planted_on(rank, "FABRICPROBE_FAULT_LATE_FIRST")
    if first is not None and attempt < first:
        return starts - 1.0
    every = _planted_on(rank, "FABRICPROBE_FAULT_LATE")
    if every is None or every < 1:
        return starts
    out = starts.copy()
    out[::every] -= 1.0
    return out


def interrupt_unmarked() -> bool:
    """FABRICPROBE_FAULT_UNMARKED=1: an interrupted rank 0 leaves its run "running", as when the
    launcher's SIGKILL comes before its mark (the driver must mark it: engine/jobs.py)."""
    return os.environ.get("FABRICPROBE_FAULT_UNMARKED") == "1"


def plant_times(local: np.ndarray) -> None:
    """FABRICPROBE_FAULT_TIME: every timed slot of a batch (an untimed one stays NaN) reads that many seconds."""
    value = os.environ.get("FABRICPROBE_FAULT_TIME")
    if value:
        local[~np.isnan(local)] = float(value)


def _planted_on(rank: int, var: str) -> int | None:
    """k of VAR=<rank>:<k> when the fault is planted on this rank, else None."""
    target = _target(var)
    return target[1] if target is not None and target[0].isdigit() and int(target[0]) == rank else None
