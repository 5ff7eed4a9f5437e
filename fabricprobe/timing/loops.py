"""Timing loops: the modes they time in and the Python ones; the native loops, which call the MPI C API,
are compiled in the rank (timing/compiled.py).

Every loop fills `out` with one duration per iteration on this rank, in seconds:
- BARRIER mode: untimed MPI_Barrier, then one timed call (OMB/IMB comparable);
- LOOP mode: one barrier, then back-to-back calls, each iteration timed from the previous
  one's end (nccl-tests / OMB-Py comparable);
- WINDOW mode (ReproMPI's windows, timing/windows.py): `out[i]` holds, on entry, the moment on this
  rank's clock at which call i starts on every rank (the same global time, through the clock model);
  the rank waits for it, calls, and writes the time from that moment to its end. A rank that reaches
  the moment late still calls (every rank makes every call) and writes NaN: the window is missed, and
  the harness leaves it untimed on every rank.
Native loops return 0 or the first non-zero MPI error code; the Python ones raise.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

BARRIER = 0
LOOP = 1
WINDOW = 2
MODES = {"barrier": BARRIER, "loop": LOOP, "window": WINDOW}

TAG_DATA = 17  # OMB's point-to-point loops: the messages timed
TAG_ACK = 18  # and the bandwidth test's acknowledgement


def python_timed_calls(
    call: Callable[[], object], barrier: Callable[[], object], wtime: Callable[[], float], mode: int, out: np.ndarray
) -> None:
    """The Python twin of native_timed_calls, for algorithms written in Python."""
    n = len(out)
    if mode == BARRIER:
        for i in range(n):
            barrier()
            t0 = wtime()
            call()
            out[i] = wtime() - t0
    elif mode == WINDOW:
        for i in range(n):
            start = out[i]
            late = wtime() > start
            while wtime() < start:
                pass
            call()
            out[i] = np.nan if late else wtime() - start
    else:
        barrier()
        prev = wtime()
        for i in range(n):
            call()
            now = wtime()
            out[i] = now - prev
            prev = now


def python_overlap(start, barrier, wtime, seconds: float, out: np.ndarray, out_compute: np.ndarray) -> None:
    """The Python twin of native_overlap: `start()` returns the request to wait on."""
    for i in range(len(out)):
        barrier()
        t0 = wtime()
        req = start()
        tc = wtime()
        x = 1.0
        while wtime() - tc < seconds:
            x = x * 1.0000001 + 1e-9
        out_compute[i] = wtime() - tc
        req.Wait()
        out[i] = wtime() - t0


def python_empty(barrier: Callable[[], object], wtime: Callable[[], float], mode: int, out: np.ndarray) -> None:
    """The Python timer's floor: a timed region around a call that does nothing."""

    def nothing() -> None:
        return None

    python_timed_calls(nothing, barrier, wtime, mode, out)
