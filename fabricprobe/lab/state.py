"""What `lab up` leaves behind for `run`, `status` and `down`: STATE_ROOT/NAME/ holds lab.json (the
lab and the MPI library it was set up for), `agent` (the remote-shell stand-in the launcher uses to
start daemons inside a host namespace) and `mpiexec` (the launcher wrapper: runs the real mpiexec
inside the first host with the lab's hosts and TCP options). /run is a tmpfs: a reboot, which also
removes every namespace, removes the state too."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from fabricprobe.lab.config import LabConfig

STATE_ROOT = Path(os.environ.get("FABRICPROBE_LAB_STATE", "/run/fabricprobe-lab"))
ENV_VAR = "FABRICPROBE_LAB"  # set for every rank a lab launches: the path of its lab.json


def directory(name: str) -> Path:
    return STATE_ROOT / name


def record_path(name: str) -> Path:
    return directory(name) / "lab.json"


def save(
    lab: LabConfig,
    vendor: str,
    scripts: dict[str, str],
    faults: dict | None = None,
    scheduler: str = "none",
    mpi_version: str = "",
) -> Path:
    """Write lab.json and the scripts atomically enough: a half-written lab.json is never read.
    `faults`: host -> {"rate_bits": ..., "cpu": ...} for hosts made slow on purpose (`lab slow`);
    `scheduler`: "slurm" when `lab up --scheduler slurm` started one (scripts then has bin/srun, ...)."""
    d = directory(lab.name)
    d.mkdir(parents=True, exist_ok=True)
    for fname, text in scripts.items():
        path = d / fname
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
    record = {
        **lab.as_dict(),
        "mpi_vendor": vendor,
        "mpi_version": mpi_version,
        "scheduler": scheduler,
        "faults": faults or {},
    }
    tmp = record_path(lab.name).with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(record_path(lab.name))
    return record_path(lab.name)


def load(name: str) -> tuple[LabConfig, str] | None:
    """(lab, MPI vendor) of lab `name`, or None when it was never set up (or its state is unreadable)."""
    try:
        record = json.loads(record_path(name).read_text())
        return LabConfig.from_dict(record), record.get("mpi_vendor", "")
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _record(name: str) -> dict:
    try:
        found = json.loads(record_path(name).read_text())
        return found if isinstance(found, dict) else {}
    except (OSError, ValueError):
        return {}


def scheduler(name: str) -> str:
    """ "slurm" when the lab runs a scheduler, else "none"."""
    return str(_record(name).get("scheduler") or "none")


def mpi_version(name: str) -> str:
    return str(_record(name).get("mpi_version") or "")


def faults(name: str) -> dict:
    """host -> {"rate_bits", "cpu"} of the hosts made slow on purpose ({} when none)."""
    try:
        return dict(_record(name).get("faults") or {})
    except (TypeError, ValueError):
        return {}


def from_environment() -> dict | None:
    """The lab record of the run this process belongs to (None outside a lab)."""
    path = os.environ.get(ENV_VAR)
    if not path:
        return None
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def forget(name: str) -> None:
    shutil.rmtree(directory(name), ignore_errors=True)
