"""CPU quotas for emulated hosts, to make a slow (busy) node on purpose: every process a host runs
(the launcher's daemon and the ranks) is put in a cgroup of that host by the lab's agent and
mpiexec wrapper, and `lab slow HOST --cpu 10%` caps the group at a tenth of one core. `ip netns
exec` mounts a fresh /sys, where no cgroup is visible, so the lab's groups are also bind-mounted
under its state folder (/run is left alone), and the agent joins through that path. The period is
10 ms, not the kernel's 100 ms, so a throttled rank stalls often and briefly (as a core shared
with a busy neighbour does) rather than for 90 ms at a time. cgroup v1 (cpu controller) and v2."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

from fabricprobe.errors import UsageError
from fabricprobe.lab.config import check_name
from fabricprobe.lab.state import directory

PERIOD_US = 10_000
V1 = Path("/sys/fs/cgroup/cpu")
V2 = Path("/sys/fs/cgroup")
_CPU = re.compile(r"^(\d+(?:\.\d+)?)(%?)$")


def cgroup_root() -> Path | None:
    """Where host groups go, or None when this machine has no usable cpu controller."""
    if (V1 / "cpu.cfs_quota_us").exists() and os.access(V1, os.W_OK):
        return V1
    try:
        if "cpu" in (V2 / "cgroup.controllers").read_text().split() and os.access(V2, os.W_OK):
            return V2
    except OSError:
        pass
    return None


def folder(lab_name: str) -> Path | None:
    base = cgroup_root()
    return base / f"fabricprobe-lab-{check_name(lab_name)}" if base else None


def visible(lab_name: str) -> Path:
    """The lab's groups as every namespace of the lab sees them (a bind mount in its state folder)."""
    return directory(lab_name) / "cgroup"


def parse_cpu(text: str) -> float | None:
    """ "10%" -> 0.1 (of one core), "0.5" -> 0.5, "normal" -> None (no cap)."""
    t = text.strip().lower()
    if t in ("normal", "none", "unlimited"):
        return None
    m = _CPU.match(t)
    value = float(m.group(1)) / (100 if m.group(2) else 1) if m else 0.0
    if not m or not 0 < value <= (os.cpu_count() or 1):
        raise UsageError(f"invalid --cpu {text!r}: a share of one core such as 10% or 0.25, at most the cores here")
    return value


def create(lab_name: str, hosts: tuple[str, ...]) -> None:
    """One group per host (no cap yet); nothing happens where there is no cpu controller."""
    top = folder(lab_name)
    if top is None:
        return
    top.mkdir(exist_ok=True)
    if top.parent == V2:  # v2: the controller must be handed down to the lab's groups
        for parent in (V2, top):
            try:
                (parent / "cgroup.subtree_control").write_text("+cpu")
            except OSError:
                pass
    for host in hosts:
        (top / host).mkdir(exist_ok=True)
    seen = visible(lab_name)
    if not os.path.ismount(seen):
        seen.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "--bind", str(top), str(seen)], check=False, capture_output=True)


def set_quota(lab_name: str, host: str, cores: float | None) -> None:
    top = folder(lab_name)
    group = top / host if top else None
    if group is None or not group.is_dir():
        raise UsageError("this machine has no writable cgroup cpu controller: a slow rank cannot be emulated here")
    quota = int(cores * PERIOD_US) if cores is not None else None
    if (group / "cpu.max").exists():
        (group / "cpu.max").write_text(f"{quota if quota else 'max'} {PERIOD_US}")
    else:
        (group / "cpu.cfs_quota_us").write_text("-1")  # lift the cap before the period changes
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(quota if quota else -1))


def quota(lab_name: str, host: str) -> float | None:
    top = folder(lab_name)
    if top is None or not (top / host).is_dir():
        return None
    group = top / host
    try:
        if (group / "cpu.max").exists():
            q, p = (group / "cpu.max").read_text().split()
            return None if q == "max" else int(q) / int(p)
        q = int((group / "cpu.cfs_quota_us").read_text())
        return None if q < 0 else q / int((group / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None


def remove(lab_name: str) -> None:
    """Kill anything left in the lab's groups, then remove them (after the namespaces are gone)."""
    seen = visible(lab_name)
    if os.path.ismount(seen):
        subprocess.run(["umount", "-l", str(seen)], check=False, capture_output=True)
    top = folder(lab_name)
    if top is None or not top.is_dir():
        return
    for group in [*sorted(p for p in top.iterdir() if p.is_dir()), top]:
        try:
            for pid in (group / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        except OSError:
            pass
    for group in [*sorted(p for p in top.iterdir() if p.is_dir()), top]:
        try:
            group.rmdir()
        except OSError:
            pass


def join_line(lab_name: str, host_var: str) -> str:
    """Shell: put this shell (and so everything it runs) in the host's group, where there is one."""
    if folder(lab_name) is None:
        return ":"
    procs = f"{visible(lab_name)}/{host_var}/cgroup.procs"
    return f'[ -w "{procs}" ] && echo $$ > "{procs}"'
