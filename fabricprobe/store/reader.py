"""Reading results files. Readers never lock the file, so a running sweep can always write."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import h5py
import numpy as np

from fabricprobe.errors import UsageError
from fabricprobe.store.attrs import read_attrs
from fabricprobe.store.schema import FORMAT, SCHEMA_VERSION, row_to_dict


def _open_read(path: str) -> h5py.File:
    try:
        return h5py.File(path, "r", locking=False)
    except TypeError:  # h5py without the locking argument
        return h5py.File(path, "r")


def check_results_file(path: str) -> None:
    """Raise UsageError unless `path` is a fabricprobe results file this version can read."""
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    if not h5py.is_hdf5(path):
        raise UsageError(f"{path} is not a fabricprobe results file (not HDF5)")
    try:
        with _open_read(path) as f:
            fmt = f.attrs.get("format")
            version = f.attrs.get("schema_version")
    except OSError as exc:
        raise UsageError(f"{path} cannot be read: {exc}") from None
    if isinstance(fmt, bytes):
        fmt = fmt.decode()
    if fmt != FORMAT:
        raise UsageError(f"{path} is an HDF5 file but not a fabricprobe results file")
    if version is None or int(version) > SCHEMA_VERSION:
        raise UsageError(f"{path} has schema version {version}; this fabricprobe reads up to {SCHEMA_VERSION}")


@dataclass
class Run:
    path: str
    id: str
    attrs: dict[str, Any]
    points: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.attrs.get("status", ""))

    @property
    def config(self) -> dict[str, Any]:
        config = self.attrs.get("config")
        return config if isinstance(config, dict) else {}

    def samples(self, index: int) -> np.ndarray | None:
        with _open_read(self.path) as f:
            ds = f["runs"][self.id]["samples"].get(f"{index:06d}")
            return None if ds is None else ds[()]

    @property
    def label(self) -> str:
        return f"{os.path.basename(self.path)}:{self.id}"


def load_runs(path: str) -> list[Run]:
    """Every run in a results file, oldest first."""
    check_results_file(path)
    runs = []
    with _open_read(path) as f:
        group = f.get("runs")
        if group is None:
            return []
        for run_id in sorted(group.keys()):
            g = group[run_id]
            table = g["points"][()] if "points" in g else np.zeros(0)
            runs.append(Run(path, run_id, read_attrs(g), [row_to_dict(r) for r in table]))
    return runs


def select_run(runs: list[Run], which: str | None, path: str) -> Run:
    """A run by id ("3", "0003"), by position ("-1" = last), or the last one when None."""
    if not runs:
        raise UsageError(f"{path} holds no runs")
    if which is None:
        return runs[-1]
    text = which.strip()
    if text.lstrip("-").isdigit() and text.startswith("-"):
        pos = int(text)
        if -len(runs) <= pos < 0:
            return runs[pos]
    elif text.isdigit():
        for run in runs:
            if int(run.id) == int(text):
                return run
    ids = ", ".join(r.id for r in runs)
    raise UsageError(f"{path} has no run {which!r} (runs: {ids})")
