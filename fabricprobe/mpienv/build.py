"""How the MPI library in use was built, as its own tools tell it: the compiler wrapper's command
line (`mpicc --showme` for Open MPI, `mpicc -show` for MPICH and Intel MPI) and the configure line
(`ompi_info -c` for Open MPI; MPICH prints its own in MPI_Get_library_version). A site's MPI is
known by these: the same version number built with or without UCX, Slurm or PMIx support measures
differently. The tools are found as the launcher is (mpienv.launcher): beside this Python (a
wheel), else by the vendor's own name (Debian's mpicc.openmpi / mpicc.mpich), else on PATH.
Run by rank 0 only, once per run: ompi_info -c took 0.23 s here, a wrapper 5 ms."""

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


def _output(argv: list[str]) -> str:
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def configure_line(vendor: str, version_string: str) -> str:
    if vendor == "Open MPI":
        info = tool("ompi_info", vendor)
        text = _output([info, "--parsable", "-c"]) if info else ""
        found = re.search(r"^config:cli:\s*(.*)$", text, re.M)
        return found.group(1).strip() if found else ""
    found = re.search(r"configure:\s*(.*)$", version_string, re.M)  # MPICH, MVAPICH
    return found.group(1).strip() if found else ""


def collect(vendor: str, version_string: str) -> dict[str, str]:
    """{"wrapper": path, "wrapper_command": its compile line, "configure": the configure line};
    what cannot be found is left out."""
    out: dict[str, str] = {}
    cc = tool("mpicc", vendor)
    flag = _SHOW.get(vendor)
    if cc and flag:
        shown = _output([cc, flag])
        if shown:
            out |= {"wrapper": cc, "wrapper_command": shown}
    configure = configure_line(vendor, version_string)
    if configure:
        out["configure"] = configure
    return out
