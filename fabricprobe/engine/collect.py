"""What rank 0 collects of each timed batch (engine/harness.py). Up to stats.FULL_RANKS ranks, every
rank's samples (`EveryRank`). Beyond, each iteration's slowest time and the rank that took it, in one
MPI_MAXLOC reduction (`SlowestOnly`); each rank keeps its own samples until the point ends, then sends
rank 0 their summary, and the kept ranks (stats.kept_ranks) send their samples. Rank 0 then holds
iterations × (1 + stats.SLOWEST_KEPT) values, not iterations × ranks (docs/scale.md).

Both give the harness the same thing per batch: on rank 0 the iterations some rank left untimed
(window mode), then, once kept, the batch's per-iteration times it decides on."""

from __future__ import annotations

from typing import Any

import numpy as np

from fabricprobe.stats import FULL_RANKS, PointTimes, kept_ranks, per_iteration, rank_summary

# MPI_DOUBLE_INT's layout ({double; int;}, padded to 16 bytes), for MPI_MAXLOC over (time, rank)
TIME_RANK = np.dtype([("time", np.float64), ("rank", np.int32)], align=True)
_TAG_SAMPLES = 29


def collector(comm: Any, MPI: Any, windowed: bool) -> "EveryRank | SlowestOnly":
    return EveryRank(comm, windowed) if comm.size <= FULL_RANKS else SlowestOnly(comm, MPI, windowed)


class EveryRank:
    """Every rank's samples, gathered on rank 0 after each batch."""

    def __init__(self, comm: Any, windowed: bool) -> None:
        self.comm, self.windowed, self.root = comm, windowed, comm.rank == 0
        self.chunks: list[np.ndarray] = []  # rank 0: each batch's (iterations × ranks) samples
        self.gathered: np.ndarray | None = None

    def collect(self, local: np.ndarray) -> np.ndarray | None:
        """Rank 0, window mode: the iterations some rank reached late (None otherwise)."""
        self.gathered = np.empty((self.comm.size, local.size)) if self.root else None
        self.comm.Gather(local, self.gathered, root=0)
        return np.isnan(self.gathered).any(axis=0) if self.root and self.windowed else None

    def keep(self, local: np.ndarray, late: np.ndarray | None) -> np.ndarray | None:
        """Keep the batch, its late iterations untimed on every rank; rank 0: its iteration times."""
        if not self.root:
            return None
        if late is not None:
            self.gathered[:, late] = np.nan
        self.chunks.append(self.gathered.T)
        return per_iteration(self.gathered.T)

    def times(self) -> PointTimes | None:
        return PointTimes(np.ascontiguousarray(np.concatenate(self.chunks))) if self.root else None


class SlowestOnly:
    """Each iteration's slowest time and rank on rank 0; every rank's samples stay where they were timed."""

    def __init__(self, comm: Any, MPI: Any, windowed: bool) -> None:
        self.comm, self.MPI, self.windowed, self.root = comm, MPI, windowed, comm.rank == 0
        self.mine: list[np.ndarray] = []  # this rank's samples of every kept batch
        self.maxima: list[np.ndarray] = []  # rank 0
        self.slowest: list[np.ndarray] = []  # rank 0
        self.top: np.ndarray | None = None

    def collect(self, local: np.ndarray) -> np.ndarray | None:
        MPI = self.MPI
        pair = np.empty(local.size, TIME_RANK)
        pair["time"] = np.where(np.isnan(local), -np.inf, local)  # a rank that did not time is never the slowest
        pair["rank"] = self.comm.rank
        self.top = np.empty_like(pair) if self.root else None
        recv = [self.top, MPI.DOUBLE_INT] if self.root else None
        self.comm.Reduce([pair, MPI.DOUBLE_INT], recv, op=MPI.MAXLOC, root=0)
        if not self.windowed:
            return None
        untimed = np.isnan(local).astype(np.uint8)
        late = np.empty_like(untimed) if self.root else None
        self.comm.Reduce(untimed, late, op=MPI.MAX, root=0)
        return late.astype(bool) if self.root else None

    def keep(self, local: np.ndarray, late: np.ndarray | None) -> np.ndarray | None:
        if self.windowed:  # every rank leaves the late windows untimed, as EveryRank does on rank 0
            late = self.comm.bcast(late, root=0)
            local[late] = np.nan
        self.mine.append(local)
        if not self.root:
            return None
        maxima, ranks = self.top["time"].copy(), self.top["rank"].astype(np.int64)
        if late is not None:
            maxima[late], ranks[late] = -np.inf, 0
        maxima[maxima == -np.inf] = np.nan  # no rank timed it: as per_iteration leaves it out
        self.maxima.append(maxima)
        self.slowest.append(ranks)
        return maxima[~np.isnan(maxima)]

    def times(self) -> PointTimes | None:
        comm, root = self.comm, self.root
        mine = np.concatenate(self.mine) if self.mine else np.empty(0)
        table = np.empty((comm.size, 4)) if root else None
        comm.Gather(rank_summary(mine), table, root=0)
        per_rank = kept = None
        if root:
            counts = np.bincount(np.concatenate(self.slowest), minlength=comm.size) if self.slowest else 0
            per_rank = np.column_stack([table, np.zeros(comm.size) + counts])
            kept = kept_ranks(per_rank)
        kept = comm.bcast(kept, root=0)
        columns = []
        for r in kept:
            if r == 0 and root:
                columns.append(mine)
            elif comm.rank == r:
                comm.Send(mine, dest=0, tag=_TAG_SAMPLES)
            elif root:
                got = np.empty(mine.size)
                comm.Recv(got, source=r, tag=_TAG_SAMPLES)
                columns.append(got)
        if not root:
            return None
        samples = np.column_stack(columns) if columns else np.empty((mine.size, 0))
        maxima = np.concatenate(self.maxima) if self.maxima else np.empty(0)
        return PointTimes(samples, tuple(kept), maxima, per_rank)
