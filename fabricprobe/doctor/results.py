"""What the doctor measured, as plain arrays (one row per pair, one per rank): the measuring code
fills them, the diagnosis, the record and the report read them. Costs are "larger is worse": a
half round trip in seconds, the time of a large message, a rank's seconds of reduction."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

PAIR_FIELDS = [
    ("a", "i4"),
    ("b", "i4"),
    ("round", "i4"),
    ("turn", "i4"),
    ("inter", "?"),
    ("small_s", "f8"),  # 10th percentile of the half round trips at the small size
    ("large_s", "f8"),  # median half round trip at the large size
    ("large_spread", "f8"),  # (p75 − p25) / median of the large size's half round trips
    ("confirm_small_s", "f8"),  # the same from the confirmation pass (NaN: not re-measured)
    ("confirm_large_s", "f8"),
]
RANK_FIELDS = [
    ("rank", "i4"),
    ("node", "i4"),
    ("compute_s", "f8"),  # fastest block of back-to-back reductions (the rank's speed)
    ("reduced_bytes", "f8"),  # bytes reduced in one block
    ("ring_step_s", "f8"),  # mean time of one ring step on this rank (exchange + reduction)
    ("ring_reduce_s", "f8"),  # mean time of the reduction within a ring step
    ("confirm_compute_s", "f8"),  # compute_s from the confirmation's longer pass (NaN: not run)
    ("confirm_reduced_bytes", "f8"),
]


def pair_table(rows: list[tuple]) -> np.ndarray:
    return np.array(rows, dtype=PAIR_FIELDS)


def rank_table(rows: list[tuple]) -> np.ndarray:
    return np.array(rows, dtype=RANK_FIELDS)


@dataclass
class Measurements:
    hosts: list[str]  # rank -> host name
    node_of: list[int]  # rank -> node index
    small_bytes: int
    large_bytes: int
    pairs: np.ndarray  # PAIR_FIELDS
    ranks: np.ndarray  # RANK_FIELDS
    pass_seconds: dict[str, float] = field(default_factory=dict)  # wall time of each pass
    rounds: int = 0
    turns: int = 0
    oversubscribed: bool = False  # more ranks than cores: latencies are not compared

    def node_name(self, node: int) -> str:
        return self.hosts[self.node_of.index(node)]

    # A confirmation can clear a suspect, never make one: each cost is the faster of the two
    # measurements (NaN where there was no second). Replacing the first by the second named a
    # healthy rank that was 1.18× the median in the second pass only (doctor_study.py, 4 × 1 lab).

    def latency(self) -> np.ndarray:
        """Per pair: the small size's time, the faster of the first pass and the confirmation."""
        return np.fmin(self.pairs["small_s"], self.pairs["confirm_small_s"])

    def large_time(self) -> np.ndarray:
        return np.fmin(self.pairs["large_s"], self.pairs["confirm_large_s"])

    def reduction_per_byte(self) -> np.ndarray:
        """Per rank: seconds per byte reduced, the faster of the first pass and the confirmation."""
        r = self.ranks
        first = r["compute_s"] / np.maximum(r["reduced_bytes"], 1)
        again = r["confirm_compute_s"] / np.maximum(r["confirm_reduced_bytes"], 1)
        return np.fmin(first, again)
