"""A point's timings in the results file (docs/schema.md): /runs/<id>/samples/<n>, iterations ×
columns of seconds, every rank's column up to stats.FULL_RANKS ranks; beyond, the kept ranks'
columns (their numbers in the dataset's `ranks` attribute), beside /runs/<id>/maxima/<n> (each
iteration's slowest time) and /runs/<id>/per_rank/<n> (ranks × stats.RANK_FIELDS, float32). Files written
before have the first form only, which reads as a full PointTimes."""

from __future__ import annotations

import h5py
import numpy as np

from fabricprobe.stats import PointTimes

REDUCED_PARTS = ("maxima", "per_rank")
# A rank's summary to 7 digits: the row's statistics were computed from float64 as the point ended; this
# table is what stays to look at, and in float32 it costs 20 bytes a rank, not 40 (docs/scale.md).
PER_RANK_TYPE = np.float32


def name_of(index: int) -> str:
    return f"{index:06d}"


def write(group: h5py.Group, index: int, times: PointTimes) -> None:
    """Store a point's timings in its run's group, replacing any there (none without a sample)."""
    if times.samples.size == 0:
        return
    name = name_of(index)
    _store(group, "samples", name, times.samples)
    if not times.full:
        group["samples"][name].attrs["ranks"] = np.asarray(times.ranks, dtype=np.int64)
        _store(group, "maxima", name, times.maxima)
        _store(group, "per_rank", name, times.per_rank.astype(PER_RANK_TYPE))


def read(group: h5py.Group, index: int) -> PointTimes | None:
    """A point's timings, or None where none were stored (h5py's errors pass through: damage)."""
    name = name_of(index)
    if "samples" not in group or name not in group["samples"]:
        return None
    ds = group["samples"][name]
    samples = ds[()]
    if "ranks" not in ds.attrs:
        return PointTimes(samples)
    ranks = tuple(int(r) for r in ds.attrs["ranks"])
    per_rank = group["per_rank"][name][()].astype(np.float64)
    return PointTimes(samples, ranks, group["maxima"][name][()], per_rank)


def _store(group: h5py.Group, part: str, name: str, data: np.ndarray) -> None:
    folder = group.require_group(part)
    if name in folder:
        del folder[name]
    big = data.size > 1024
    folder.create_dataset(
        name,
        data=data,
        compression="gzip" if big else None,
        compression_opts=4 if big else None,
        shuffle=big,
        chunks=True,
        fletcher32=True,
    )
