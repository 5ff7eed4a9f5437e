"""What `lab up` leaves behind for `run`, `status` and `down`: STATE_ROOT/NAME/ holds lab.json (the
lab and the MPI library it was set up for), `agent` (the remote-shell stand-in the launcher uses to
start daemons inside a host namespace) and `mpiexec` (the launcher wrapper: runs the real mpiexec
inside the first host with the lab's hosts and TCP options). /run is a tmpfs: a reboot, which also
removes every namespace, removes the state too.

Ownership: `lab up` first writes STATE_ROOT/NAME/OWNER (claim), before it makes anything, and `lab
down` removes a lab's namespaces, groups, daemons and folder only where that marker is present in a
real folder directly under STATE_ROOT (owned). Anything else — a name never brought up, a folder
someone else made, a symlink — is left alone: root's `lab down` must not be able to delete or kill
what fabricprobe did not create."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from fabricprobe.errors import UsageError
from fabricprobe.lab import ENV_VAR
from fabricprobe.lab.config import LabConfig, check_name

STATE_ROOT = Path(os.environ.get("FABRICPROBE_LAB_STATE", "/run/fabricprobe-lab"))
OWNER = "OWNER"  # the record `lab up` writes first: this lab's name and the namespaces it makes
MADE_BY = "fabricprobe lab up"


def directory(name: str) -> Path:
    """STATE_ROOT/NAME for a valid lab name only (check_name), so no path built from it leaves STATE_ROOT."""
    return STATE_ROOT / check_name(name)


def _marker(name: str) -> dict | None:
    """The ownership record of STATE_ROOT/NAME, or None where `lab up` did not make that folder: it must
    be a real folder directly under STATE_ROOT with a regular OWNER file naming this lab."""
    d = directory(name)
    marker = d / OWNER
    try:
        if d.is_symlink() or not d.is_dir() or d.resolve().parent != STATE_ROOT.resolve() or marker.is_symlink():
            return None
        record = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("made_by") != MADE_BY or record.get("name") != name:
        return None
    return record


def owned(name: str) -> bool:
    """Whether STATE_ROOT/NAME is a lab folder `lab up` made (its OWNER record names this lab)."""
    return _marker(name) is not None


def owned_namespaces(name: str) -> list[str]:
    """The namespaces `lab up` made for lab `name` (every shape it was brought up in), [] if not owned."""
    found = (_marker(name) or {}).get("namespaces")
    return [ns for ns in found if isinstance(ns, str)] if isinstance(found, list) else []


def claim(name: str, namespaces: tuple[str, ...]) -> None:
    """Mark STATE_ROOT/NAME as made by `lab up`, with the namespaces it is about to make (added to those
    of earlier shapes), before anything is made: a crash half-way leaves a lab `down` may remove.
    Refuses a folder that exists without the marker, and a symlink."""
    d = directory(name)
    if d.is_symlink() or (d.exists() and not owned(name)):
        raise UsageError(f"{d} exists and was not made by `fabricprobe lab up`: choose another --name")
    d.mkdir(parents=True, exist_ok=True)
    every = sorted(set(owned_namespaces(name)) | set(namespaces))
    tmp = d / f"{OWNER}.tmp"
    tmp.write_text(json.dumps({"made_by": MADE_BY, "name": name, "namespaces": every}))
    tmp.replace(d / OWNER)


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


def forget(name: str) -> bool:
    """Remove the lab's state folder, only if `lab up` made it (owned); whether it did."""
    if not owned(name):
        return False
    shutil.rmtree(directory(name), ignore_errors=True)
    return True
