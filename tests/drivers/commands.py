"""Run under mpiexec: several fabricprobe command lines in one job, so that the suite pays Python, numpy,
numba and MPI start-up once for all of them (tests/batch.py builds the cases and reads the verdicts).

    mpiexec -n P python tests/drivers/commands.py CASES.json

CASES.json: {"folder": F, "cases": [{"id": ..., "argv": [...], "env": {...}}, ...]}. For each case, in
order, every rank sets the case's environment variables (and only those of the FABRICPROBE_ family the
case names), sends its stdout and stderr to F/<id>.<rank>.out and .err, runs `fabricprobe ARGV` through
the command line's own main(), and puts everything back. Rank 0 then writes F/<id>.status with the exit
status. A case that ends the job (an internal error, MPI_Abort) leaves every later case without a status:
tests/batch.py names the case that was running.
"""

from __future__ import annotations

import json
import os
import sys

import mpi4py

mpi4py.rc.thread_level = "single"
from mpi4py import MPI  # noqa: E402

from fabricprobe.cli.main import main  # noqa: E402


def _redirected(fd: int, path: str) -> int:
    """Point fd at path; return a copy of what it pointed at."""
    saved = os.dup(fd)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(target, fd)
    os.close(target)
    return saved


def run_case(case: dict, folder: str, rank: int) -> int:
    env = {k: v for k, v in os.environ.items() if k.startswith("FABRICPROBE_FAULT")}
    for key in env:
        del os.environ[key]
    os.environ.update(case.get("env", {}))
    stem = os.path.join(folder, f"{case['id']}.{rank}")
    sys.stdout.flush()
    sys.stderr.flush()
    saved = _redirected(1, stem + ".out"), _redirected(2, stem + ".err")
    try:
        code = main(case["argv"])
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        for key in case.get("env", {}):
            os.environ.pop(key, None)
        os.environ.update(env)
    return code


def main_() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    comm = MPI.COMM_WORLD
    for case in spec["cases"]:
        code = run_case(case, spec["folder"], comm.rank)
        codes = comm.gather(code, root=0)
        if comm.rank == 0:
            with open(os.path.join(spec["folder"], f"{case['id']}.status"), "w") as f:
                f.write(str(max(codes)))
        comm.Barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main_())
