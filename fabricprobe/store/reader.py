"""Reading results files: the HDF5 file with its journal's records on top (a run in progress, or one
whose writer was killed, reads complete up to its last recorded point). Readers never lock anything
and never write; a file HDF5 cannot read is reported as damaged, with the command that salvages it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import h5py
import numpy as np

from fabricprobe.errors import DamagedError, UsageError
from fabricprobe.inputs import is_digits, regular_file
from fabricprobe.stats import RANK_FIELDS, PointTimes
from fabricprobe.store import damage, journal, timings
from fabricprobe.store.attrs import AttrsDamaged, read_attrs, shown_as_text
from fabricprobe.store.plausible import left_out
from fabricprobe.store.schema import FORMAT, SCHEMA_VERSION, row_to_dict


def _open_read(path: str) -> h5py.File:
    try:
        return h5py.File(path, "r", locking=False)
    except TypeError:  # h5py without the locking argument
        return h5py.File(path, "r")


def damaged(path: str, exc: BaseException) -> DamagedError:
    """The one line for a results file HDF5 cannot read (exit EXIT_DAMAGED)."""
    why = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
    return DamagedError(f"{path} is damaged ({why}); fabricprobe repair {path} keeps every intact point")


def check_results_file(path: str) -> None:
    """Raise UsageError unless `path` is a fabricprobe results file this version can read."""
    if not regular_file(path, "results file"):
        if journal.read(path).records:
            return  # a first run whose journal was never folded (its writer was killed)
        raise UsageError(f"{path}: no such file")
    if not h5py.is_hdf5(path):
        raise UsageError(f"{path} is not a fabricprobe results file (not HDF5)")
    try:
        with _open_read(path) as f:
            fmt = f.attrs.get("format")
            version = f.attrs.get("schema_version")
    except (OSError, KeyError, ValueError, RuntimeError) as exc:  # KeyError: the root's header fails its checksum
        raise damaged(path, exc) from None
    if isinstance(fmt, bytes):
        fmt = fmt.decode()
    if fmt != FORMAT:
        raise UsageError(f"{path} is an HDF5 file but not a fabricprobe results file")
    if version is not None and int(version) < 1:
        raise DamagedError(f"{path} has schema version {version}, which no fabricprobe writes: it is damaged")
    if version is None or int(version) > SCHEMA_VERSION:
        raise UsageError(f"{path} has schema version {version}; this fabricprobe reads up to {SCHEMA_VERSION}")


@dataclass
class Run:
    path: str
    id: str
    attrs: dict[str, Any]
    points: list[dict[str, Any]] = field(default_factory=list)
    journal_times: dict[int, PointTimes] = field(default_factory=dict)  # points not folded yet
    damage: list[str] = field(default_factory=list)  # what the file lost (store.damage), the same for each run

    @property
    def status(self) -> str:
        return str(self.attrs.get("status", ""))

    @property
    def config(self) -> dict[str, Any]:
        config = self.attrs.get("config")
        return config if isinstance(config, dict) else {}

    def samples(self, index: int) -> np.ndarray | None:
        """A point's stored sample matrix: every rank's column, or the kept ranks' (times())."""
        times = self.times(index)
        return None if times is None else times.samples

    def times(self, index: int) -> PointTimes | None:
        """A point's timings as stored (stats.PointTimes), None where none were."""
        if index in self.journal_times:
            return self.journal_times[index]
        if not os.path.exists(self.path):
            return None
        try:
            with _open_read(self.path) as f:
                # `in`, then [...]: h5py's Group.get returns None for an object whose header fails its
                # checksum as for one that is absent, and a damaged sample array read as "no samples"
                # (bitflip_study: 1 silent corruption in 20 flips)
                if self.id not in f["runs"]:
                    return None
                times = timings.read(f["runs"][self.id], index)
        except (OSError, KeyError, ValueError, RuntimeError) as exc:
            raise damaged(self.path, exc) from None
        if times is not None and not _times_of_a_sweep(times):
            raise damaged(self.path, ValueError(f"run {self.id} point {index}'s samples are not a matrix of times"))
        return times

    @property
    def label(self) -> str:
        return f"{os.path.basename(self.path)}:{self.id}"


def _times_matrix(samples: Any) -> bool:
    """Whether stored samples are what a sweep writes: iterations × ranks of seconds, NaN where not timed."""
    if not isinstance(samples, np.ndarray) or samples.ndim != 2 or samples.dtype.kind != "f":
        return False
    finite = samples[np.isfinite(samples)]
    return not (finite < 0).any()


def _times_of_a_sweep(times: PointTimes) -> bool:
    """The samples a matrix of times; for a point of many ranks, one maximum per iteration, one row of
    RANK_FIELDS per rank, and kept ranks among them."""
    if not _times_matrix(times.samples):
        return False
    if times.full:
        return True
    iterations, ranks = times.samples.shape[0], times.per_rank.shape[0]
    return (
        times.maxima.shape == (iterations,)
        and _times_matrix(times.maxima.reshape(-1, 1))
        and times.per_rank.shape == (ranks, len(RANK_FIELDS))
        and len(times.ranks) == times.samples.shape[1]
        and all(0 <= r < ranks for r in times.ranks)
    )


def load_runs(path: str, since: int = 0) -> list[Run]:
    """Every run in a results file and its journal, oldest first; with `since`, the runs from the
    since-th on only, nothing of the older ones read (tune's before/after reads what it added after
    each repetition, to a tune-sweep file that every verification makes longer: docs/tuning.md).

    The journal is read before the file, and both again if a fold replaced the file meanwhile (a fold
    adds the journal to a new file, then removes the journal: read across it, the old file and the
    emptied journal would miss the folded records)."""
    return _load(path, since)[since:]


def count_runs(path: str) -> int:
    """How many runs load_runs() would return, none of them read."""
    return len(run_ids(path))


def run_ids(path: str) -> list[str]:
    """The ids of the file's and its journal's runs, oldest first, none of them read (a run whose
    attributes are damaged keeps its id: a new run must not take it)."""
    return [run.id for run in _load(path, since=None)]


def _load(path: str, since: int | None) -> list[Run]:
    """Every run, oldest first; read for those from the since-th on (None: for none) and for any a
    damaged journal record names (its loss says which points it is missing); the others are names."""
    check_results_file(path)
    for _ in range(20):
        before = _inode(path)
        found = journal.read(path)
        started = {r.run for r in found.records if r.kind == journal.START}
        named = {run for run in found.damaged_runs if run is not None}
        runs, unchecked = _read_file(path, since, started, named)
        if _inode(path) == before:  # no fold replaced the file while we read
            break
    orphans = _overlay(runs, found.records, path)
    losses = unchecked + damage.journal_damage(path, found, orphans, runs) + _drop_implausible(runs)
    damage.say(path, losses)
    damage.say_cut_short(path, damage.cut_short(path, found, runs))
    for run in runs.values():
        run.damage = losses
    return [runs[k] for k in sorted(runs)]


def _drop_implausible(runs: dict[str, Run]) -> list[str]:
    """Leave out every run whose attributes and every point whose numbers no writer gives
    (store.plausible), one loss each."""
    losses = []
    for run_id in list(runs):
        run = runs[run_id]
        found = left_out(run.attrs, run.points)
        if found and found[0][0] is None:
            losses.append(f"run {run_id}: {found[0][1]}, so its {len(run.points)} points are not shown")
            del runs[run_id]
            continue
        for at, why in found:
            losses.append(f"run {run_id} point {run.points[at].get('index')}: {why}")
        gone = {at for at, _ in found}
        run.points = [p for at, p in enumerate(run.points) if at not in gone]
    return losses


def _inode(path: str) -> int:
    """Which file is at path now (a fold puts a new one there), 0 when none."""
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return 0


def _read_file(
    path: str, since: int | None, journal_runs: set[str], named: set[str]
) -> tuple[dict[str, Run], list[str]]:
    """The file's runs; those before the since-th of all (the file's and the journal's `journal_runs`,
    in order; None: every one) are named only, nothing of them read, unless a damaged record `named`
    them. A run whose attributes fail their checksum is left out, its loss named (the second list):
    what it says it measured (its configuration, its library) cannot be trusted."""
    runs: dict[str, Run] = {}
    losses: list[str] = []
    if not os.path.exists(path):
        return runs, losses
    try:
        with _open_read(path) as f:
            group = f["runs"] if "runs" in f else None  # not .get: see Run.samples
            if group is not None and not isinstance(group, h5py.Group):
                raise ValueError("/runs is not a group")
            ids = sorted(group.keys()) if group is not None else []
            every = sorted(set(ids) | journal_runs)
            unread = set(every if since is None else every[:since]) - named
            for run_id in ids:
                if run_id in unread:  # known to be there (the journal's records may name it), not read
                    runs[run_id] = Run(path, run_id, {})
                    continue
                try:
                    runs[run_id] = _read_run(path, run_id, group[run_id])
                except AttrsDamaged as exc:
                    points = group[run_id]["points"].shape[0]
                    losses.append(f"{exc}, so its {points} points are not shown")
    except (OSError, KeyError, ValueError, RuntimeError) as exc:
        raise damaged(path, exc) from None
    return runs, losses


def _read_run(path: str, run_id: str, g: Any) -> Run:
    """One run as stored; ValueError where its layout is not the schema's (a points table of another
    type, a run that is not a group): damage, never a traceback."""
    if not isinstance(g, h5py.Group):
        raise ValueError(f"run {run_id} is not a group")
    if "points" not in g:
        raise ValueError(f"run {run_id} has no points table")
    table = g["points"]
    if not isinstance(table, h5py.Dataset) or table.dtype.names is None or table.ndim != 1:
        raise ValueError(f"run {run_id}'s points table is not a table of points")
    try:
        rows = [row_to_dict(r) for r in table[()]]
    except (TypeError, IndexError) as exc:
        raise ValueError(f"run {run_id}'s points do not read: {exc}") from None
    return Run(path, run_id, read_attrs(g), rows)


def _overlay(runs: dict[str, Run], records: list[journal.Record], path: str) -> dict[str, list[int]]:
    """The journal's records applied to runs as fold would apply them to the file; returns, per run
    whose start record is in neither (damaged), the indices of its intact point records."""
    orphans: dict[str, list[int]] = {}
    for r in records:
        if r.kind == journal.START:
            run = runs.setdefault(r.run, Run(path, r.run, {}))
            run.attrs.update(_as_read(r.attrs or {}))
        elif r.run not in runs:
            orphans.setdefault(r.run, []).extend([r.index] if r.kind == journal.POINT else [])
            continue
        elif r.kind == journal.UPDATE:
            runs[r.run].attrs.update(_as_read(r.attrs or {}))
        elif all(p["index"] != r.index for p in runs[r.run].points):
            runs[r.run].points.append(row_to_dict(r.row[0]))
            if r.times is not None and r.times.samples.size:
                runs[r.run].journal_times[r.index] = r.times
    return orphans


def _as_read(attrs: dict[str, Any]) -> dict[str, Any]:
    """Attributes as a reader of the folded file would see them (None is stored as "")."""
    return shown_as_text({k: ("" if v is None else v) for k, v in attrs.items()})


def no_runs(path: str) -> UsageError:
    """The error for a file with no run to show: damage's (exit 4) when its runs were lost to damage
    said above, else bad input."""
    if damage.seen():
        return DamagedError(f"{path} holds no run that could be read")
    return UsageError(f"{path} holds no runs")


def select_run(runs: list[Run], which: str | None, path: str) -> Run:
    """A run by id ("3", "0003"), by position ("-1" = last), or the last one when None."""
    if not runs:
        raise no_runs(path)
    if which is None:
        return runs[-1]
    text = which.strip()
    if text.startswith("-") and is_digits(text[1:]):
        pos = int(text)
        if -len(runs) <= pos < 0:
            return runs[pos]
    elif is_digits(text):
        for run in runs:
            if int(run.id) == int(text):
                return run
    ids = ", ".join(r.id for r in runs)
    raise UsageError(f"{path} has no run {which!r} (runs: {ids})")
