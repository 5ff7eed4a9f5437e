"""A rank's file-system metadata calls at start-up, counted by strace: every call that names a file
(stat, open, readlink, access, ...) and every getdents, of rank 1 of a 2-rank job, execve left out;
the failed ones are those that returned -1. Used by tests/site/test_startup_calls.py and
benchmarks/scale_costs.py (docs/scale.md, "Start-up")."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

BARE = "import numpy\nfrom mpi4py import MPI\nMPI.COMM_WORLD.Barrier()\n"  # the bare rank compared against
RANK = "${OMPI_COMM_WORLD_RANK:-$PMI_RANK}"
TRACE = ["strace", "-f", "-e", "trace=%file,getdents64"]


def have_strace() -> bool:
    return shutil.which("strace") is not None


def traced(start: list[str], argv: list[str], folder: Path, env: dict[str, str], importtime: bool = False) -> Path:
    """Launch `start + argv` (start: the launcher and its -n 2) with each rank's python under strace;
    the calls land in folder/st.RANK and, with importtime, the imports in folder/imp.RANK."""
    folder.mkdir(parents=True, exist_ok=True)
    python, *rest = argv
    inner = " ".join(
        [*TRACE, "-o", f"{folder}/st.{RANK}", python, *(["-X", "importtime"] if importtime else []), *rest]
    )
    line = f"exec {inner} 2>{folder}/imp.{RANK}" if importtime else f"exec {inner}"
    done = subprocess.run([*start, "sh", "-c", line], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed under strace: {done.stderr[-2000:]}")
    return folder


def counted(folder: Path, rank: int = 1) -> tuple[int, int]:
    """(metadata calls, failed ones) of one rank's trace."""
    lines = (folder / f"st.{rank}").read_text().splitlines()
    calls = [x for x in lines if not re.match(r"\d+ (execve|\+\+\+|---)", x)]
    return len(calls), sum(" = -1 " in x for x in calls)
