"""The doctor's HDF5 record: a file of doctor runs, each a group /doctor/RUN with the pair and rank
tables, the hosts, the options, the provenance and the diagnosis (JSON attributes), so a run can be
reported and plotted again without the machine. A run is added through the store's update
(a copy that replaces the original only when complete and on disk): an interrupted write leaves the
previous file as it was, never half a run."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import h5py
import numpy as np

from fabricprobe.doctor.results import PAIR_FIELDS, RANK_FIELDS, Measurements
from fabricprobe.errors import UsageError
from fabricprobe.inputs import regular_file
from fabricprobe.store.fold import update

SCHEMA = "fabricprobe-doctor"
VERSION = 1


def is_doctor_file(path: str) -> bool:
    if not regular_file(path, "input"):  # a named pipe would block HDF5's open
        return False
    try:
        with h5py.File(path, "r") as f:
            return f.attrs.get("schema") == SCHEMA
    except (OSError, ValueError, KeyError, RuntimeError):  # KeyError: a root header failing its checksum
        return False


def _root_reads(path: str) -> bool:
    if not regular_file(path, "input"):
        return True  # absent: is_doctor_file's answer says so
    try:
        with h5py.File(path, "r") as f:
            f.attrs.get("schema")
        return True
    except (KeyError, RuntimeError):
        return False
    except (OSError, ValueError):
        return True  # not HDF5 at all, or absent: is_doctor_file's answer says so


def check_writable(path: str) -> None:
    """Before measuring: the output is a doctor file or nothing yet, in a writable folder."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write {path}: folder {folder} is missing or not writable")
    if os.path.exists(path) and not is_doctor_file(path):
        raise UsageError(f"{path} exists and is not a doctor record: give another -o (a sweep file is never changed)")


def _run_id(existing: list[str]) -> str:
    base = time.strftime("doctor-%Y%m%d-%H%M%S", time.gmtime())
    rid, k = base, 1
    while rid in existing:
        k += 1
        rid = f"{base}-{k}"
    return rid


def save(path: str, m: Measurements, diagnosis: dict, provenance: dict, options: dict, say=None) -> tuple[str, str]:
    """Add one run under the file's writer lock (fold.update: another doctor writing it is waited for,
    a sweep that keeps it gets the record beside it, said through say); returns (the file, its id)."""

    def add(f: h5py.File) -> str:
        f.attrs["schema"] = SCHEMA
        f.attrs["schema_version"] = VERSION
        runs = f.require_group("doctor")
        rid = _run_id(list(runs.keys()))
        g = runs.create_group(rid)
        g.create_dataset("pairs", data=m.pairs.astype(PAIR_FIELDS))
        g.create_dataset("ranks", data=m.ranks.astype(RANK_FIELDS))
        g.create_dataset("hosts", data=np.array(m.hosts, dtype=h5py.string_dtype()))
        g.create_dataset("node_of", data=np.asarray(m.node_of, dtype=np.int32))
        g.attrs["small_bytes"] = m.small_bytes
        g.attrs["large_bytes"] = m.large_bytes
        g.attrs["rounds"] = m.rounds
        g.attrs["turns"] = m.turns
        g.attrs["oversubscribed"] = m.oversubscribed
        g.attrs["pass_seconds"] = json.dumps(m.pass_seconds)
        g.attrs["options"] = json.dumps(options)
        g.attrs["provenance"] = json.dumps(provenance, default=str)
        g.attrs["diagnosis"] = json.dumps(diagnosis, default=float)
        return rid

    return update(path, add, extra_bytes=m.pairs.nbytes + m.ranks.nbytes, results=False, say=say)


def load(path: str, run: str | None = None) -> tuple[str, Measurements, dict[str, Any]]:
    """(run id, measurements, {options, provenance, diagnosis}) of one run (default: the last)."""
    try:
        return _load(path, run)
    except (OSError, KeyError, ValueError, RuntimeError) as exc:  # an HDF5 object failing its checksum
        if os.path.exists(path) and h5py.is_hdf5(path):
            why = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise UsageError(f"{path} is damaged ({why}); measure again with fabricprobe doctor") from None
        raise


def _load(path: str, run: str | None) -> tuple[str, Measurements, dict[str, Any]]:
    if not _root_reads(path):
        raise OSError("its root group fails its checksum")
    if not is_doctor_file(path):
        raise UsageError(f"{path} is not a doctor record (written by fabricprobe doctor)")
    with h5py.File(path, "r") as f:
        runs = sorted(f["doctor"].keys())
        if not runs:
            raise UsageError(f"{path} holds no doctor runs")
        rid = runs[-1] if run in (None, "-1") else run
        if rid not in runs:
            raise UsageError(f"{path} has no doctor run {run!r}; it has {', '.join(runs)}")
        g = f["doctor"][rid]
        m = Measurements(
            hosts=[h.decode() if isinstance(h, bytes) else str(h) for h in g["hosts"][()]],
            node_of=[int(x) for x in g["node_of"][()]],
            small_bytes=int(g.attrs["small_bytes"]),
            large_bytes=int(g.attrs["large_bytes"]),
            pairs=g["pairs"][()],
            ranks=g["ranks"][()],
            pass_seconds=json.loads(g.attrs["pass_seconds"]),
            rounds=int(g.attrs["rounds"]),
            turns=int(g.attrs["turns"]),
            oversubscribed=bool(g.attrs.get("oversubscribed", False)),
        )
        meta = {k: json.loads(g.attrs[k]) for k in ("options", "provenance", "diagnosis")}
    return rid, m, meta
