"""How the MPI library in use was built, as its own tools tell it: the compiler wrapper's command
line (`mpicc --showme` for Open MPI, `mpicc -show` for MPICH and Intel MPI) and the configure line
(`ompi_info -c` for Open MPI; MPICH prints its own in MPI_Get_library_version). A site's MPI is
known by these: the same version number built with or without UCX, Slurm or PMIx support measures
differently. The tools are found as the launcher is (mpienv.launcher): beside this Python (a
wheel), else by the vendor's own name (Debian's mpicc.openmpi / mpicc.mpich), else on PATH.
Run by rank 0 only, once per run: ompi_info -c took 0.05 s here, a wrapper 5 ms."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

_SUFFIX = {"Open MPI": "openmpi", "MPICH": "mpich"}
_SHOW = {"Open MPI": "--showme", "MPICH": "-show", "Intel MPI": "-show"}


def tool(name: str, vendor: str) -> str | None:
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    suffix = _SUFFIX.get(vendor)
    return (shutil.which(f"{name}.{suffix}") if suffix else None) or shutil.which(name)


class Asked:
    """The library's tools, started at once (each a process of its own) and read when the answer is
    needed: a session starts them right after MPI_Init, so ompi_info's 0.05 s of start-up run while
    rank 0 opens the results file rather than after it (docs/scale.md, "A launch"). result() waits for
    them; discard() ends any still running (a run refused before it read them leaves nothing)."""

    def __init__(self, vendor: str, version_string: str) -> None:
        self.vendor, self.version_string = vendor, version_string
        cc, flag = tool("mpicc", vendor), _SHOW.get(vendor)
        info = tool("ompi_info", vendor) if vendor == "Open MPI" else None
        self.cc = cc if cc and flag else None
        self._wrapper = _start([cc, flag]) if self.cc else None
        self._info = _start([info, "--parsable", "-c"]) if info else None

    def result(self) -> dict[str, str]:
        """{"wrapper": path, "wrapper_command": its compile line, "configure": the configure line};
        what cannot be found is left out."""
        out: dict[str, str] = {}
        shown = _finish(self._wrapper)
        if shown:
            out |= {"wrapper": self.cc or "", "wrapper_command": shown}
        if self.vendor == "Open MPI":
            found = re.search(r"^config:cli:\s*(.*)$", _finish(self._info), re.M)
        else:  # MPICH, MVAPICH: MPI_Get_library_version says it
            found = re.search(r"configure:\s*(.*)$", self.version_string, re.M)
        configure = found.group(1).strip() if found else ""
        if configure:
            out["configure"] = configure
        return out

    def discard(self) -> None:
        for proc in (self._wrapper, self._info):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def _start(argv: list[str]) -> subprocess.Popen | None:
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
    except OSError:
        return None
    _unbind(proc.pid)
    return proc


def _unbind(pid: int) -> None:
    """Let a tool run on any core of the node, not rank 0's alone (launchers bind ranks to cores, and a
    child inherits the binding): the other ranks sleep meanwhile (mpienv/waiting.py)."""
    try:
        os.sched_setaffinity(pid, range(os.cpu_count() or 1))  # the kernel keeps it within the cpuset
    except (AttributeError, OSError):  # not Linux, or the tool already ended
        pass


def _finish(proc: subprocess.Popen | None) -> str:
    if proc is None:
        return ""
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return ""
    return out.strip() if proc.returncode == 0 else ""
