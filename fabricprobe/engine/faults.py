"""Test hooks that plant a fault, so the tests can show validation and the watchdog work.

    FABRICPROBE_FAULT_WRONG=<collective>:<rank>  rank corrupts its result after validation calls
    FABRICPROBE_FAULT_HANG=<collective>:<rank>   rank never enters that collective's first point
                                                 (setup:<rank>: never leaves the sweep's set-up)

They are read from the environment, so every run that uses them records them in its
provenance (environment variables with the FABRICPROBE_ prefix are stored).
"""

from __future__ import annotations

import os
import time

import numpy as np


def _target(var: str) -> tuple[str, int] | None:
    value = os.environ.get(var, "")
    coll, _, rank = value.partition(":")
    if not coll or not rank.isdigit():
        return None
    return coll, int(rank)


def corrupt_result(collective: str, rank: int, recv: np.ndarray) -> None:
    if _target("FABRICPROBE_FAULT_WRONG") == (collective, rank) and recv.size:
        recv.flat[0] = recv.flat[0] + 1 if recv.dtype.kind in "iu" else np.float32(12345.0)


def hang_if_asked(collective: str, rank: int) -> None:
    if _target("FABRICPROBE_FAULT_HANG") == (collective, rank):
        while True:  # the other ranks block in the collective; the watchdog must end the job
            time.sleep(3600)
