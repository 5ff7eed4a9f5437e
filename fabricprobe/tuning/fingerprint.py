"""Fingerprints of which algorithm ran: launch probe.py with a given environment and read its trace
(reduction steps per rank, any MPI) or Open MPI's pml monitoring (messages between every pair of ranks).
Two runs of the same algorithm at the same size on the same ranks give the same fingerprint."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from fabricprobe.mpienv.launcher import run_launch
from fabricprobe.specs import SPECS

_MONITOR = re.compile(r"^I\s+(\d+)\s+(\d+)\s+(\d+) bytes\s+(\d+) msgs sent", re.M)


def method_for(vendor: str, collective: str) -> str | None:
    if vendor == "Open MPI":
        return "monitor"
    if SPECS[collective].reduces:  # the trace counts the reduction steps of a user-defined op
        return "trace"
    return None


def probe(
    launcher: list[str],
    nranks: int,
    collective: str,
    nbytes: int,
    method: str,
    env: dict[str, str],
    timeout: float = 120,
) -> str:
    """The fingerprint as a canonical string, or "error: ..." when the probe failed."""
    argv = launcher + ["-n", str(nranks)]
    if method == "monitor":
        argv += ["--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "1"]
    argv += [sys.executable, "-m", "fabricprobe.tuning.probe", collective, str(nbytes), method]
    full_env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", **env}
    try:
        out = run_launch(argv, env=full_env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "error: timed out"
    if out.returncode != 0:
        return "error: " + " ".join(out.stderr.strip().splitlines()[-2:])[:300]
    if method == "monitor":
        pairs = sorted((int(s), int(d), int(b), int(m)) for s, d, b, m in _MONITOR.findall(out.stderr + out.stdout))
        if not pairs:
            # Two empty fingerprints are equal, so "[]" would let a file the library ignores pass.
            return "error: pml monitoring recorded no messages (no fingerprint to compare)"
        return json.dumps(pairs)
    if method == "smoke":
        return "ok" if '{"smoke": "ok"}' in out.stdout else "error: the smoke run printed nothing"
    lines = [line for line in out.stdout.splitlines() if line.startswith('{"trace"')]
    return json.dumps(json.loads(lines[-1])["trace"]) if lines else "error: no trace printed"
