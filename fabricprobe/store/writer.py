"""Writing results (rank 0 only). The file is opened, appended to and closed for every point,
so a run killed at any moment between points leaves a file that opens cleanly with every
completed point in it."""

from __future__ import annotations

import os
from typing import Any

import h5py
import numpy as np

from fabricprobe.errors import UsageError
from fabricprobe.store.attrs import write_attrs
from fabricprobe.store.reader import check_results_file
from fabricprobe.store.safety import deferred_signals, retry_locked
from fabricprobe.store.schema import FORMAT, POINT_DTYPE, SCHEMA_VERSION, STATUS_RUNNING, make_row


def check_output_path(path: str) -> None:
    """Raise UsageError unless results can be appended to `path`; touches nothing."""
    if os.path.isdir(path):
        raise UsageError(f"cannot write results to {path}: it is a directory")
    if os.path.exists(path):
        check_results_file(path)
        if not os.access(path, os.W_OK):
            raise UsageError(f"cannot write results to {path}: permission denied")
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"cannot write results to {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write results to {path}: directory {parent} is not writable")


def open_results(path: str) -> h5py.File:
    """Open a results file for appending, creating its format attributes if it is new (lock-retrying)."""

    def opener() -> h5py.File:
        f = h5py.File(path, "a")
        if "format" not in f.attrs:
            f.attrs["format"] = FORMAT
            f.attrs["schema_version"] = SCHEMA_VERSION
            f.require_group("runs")
        return f

    return retry_locked(opener)


class ResultsWriter:
    """Appends one run's points to a results file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.run_id: str | None = None

    def _open(self) -> h5py.File:
        return open_results(self.path)

    def start_run(self, attrs: dict[str, Any]) -> str:
        with deferred_signals(), self._open() as f:
            runs = f.require_group("runs")
            number = max((int(k) for k in runs.keys() if k.isdigit()), default=0) + 1
            run_id = f"{number:04d}"
            group = runs.create_group(run_id)
            write_attrs(group, {**attrs, "status": STATUS_RUNNING})
            group.create_dataset("points", shape=(0,), maxshape=(None,), dtype=POINT_DTYPE, chunks=(64,))
            group.create_group("samples")
        self.run_id = run_id
        return run_id

    def attach(self, run_id: str) -> None:
        """Continue an existing run (resume)."""
        self.run_id = run_id

    def append_point(self, values: dict[str, Any], samples: np.ndarray | None) -> None:
        row = make_row(values)
        with deferred_signals(), self._open() as f:
            group = f["runs"][self.run_id]
            if samples is not None and samples.size:
                group["samples"].create_dataset(
                    f"{int(values['index']):06d}",
                    data=samples,
                    compression="gzip",
                    compression_opts=4,
                    shuffle=True,
                    chunks=True if samples.size > 1024 else None,
                )
            table = group["points"]
            n = table.shape[0]
            table.resize((n + 1,))
            table[n] = row[0]

    def update_run(self, attrs: dict[str, Any]) -> None:
        with deferred_signals(), self._open() as f:
            write_attrs(f["runs"][self.run_id], attrs)
