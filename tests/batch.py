"""Several `fabricprobe` command lines in one mpiexec job (tests/drivers/commands.py): the cases a test
module would launch one by one at the same rank count, measured in one launch instead, each with its own
results file, output and exit status. A module builds its cases once (a module-scoped fixture) and each
test asserts on its own case, so a failure is still named as pytest names the test.

What needs a job of its own keeps one: kills, interrupts, hangs and the watchdog, resume, start-up
figures (MPI_Init's time), --early-buffers (it acts at the process's first step), anything judged by
what the launcher itself prints."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mpirun import run_mpi

DRIVER = Path(__file__).parent / "drivers" / "commands.py"


@dataclass
class Case:
    """One command line: `{out}` in argv stands for the case's own results file."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Outcome:
    """What the case did: its exit status, every rank's output in rank order, its results file; and what
    the job printed outside every case (the library's words at MPI_Finalize, the launcher's)."""

    returncode: int
    stdout: str
    stderr: str
    results: Path
    job_stderr: str


def run_batch(n: int, cases: dict[str, Case], folder: Path, timeout: float = 600) -> dict[str, Outcome]:
    """Run every case on n ranks in one launch; the outcome of each, by name. A case that ended the job
    fails every case after it, with the job's output and the name of the case that ended it."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "folder": str(folder),
        "cases": [
            {"id": name, "argv": [a.replace("{out}", str(folder / f"{name}.h5")) for a in c.argv], "env": c.env}
            for name, c in cases.items()
        ],
    }
    (folder / "cases.json").write_text(json.dumps(spec))
    job = run_mpi(n, [], python_args=[str(DRIVER), str(folder / "cases.json")], timeout=timeout)
    return {name: _outcome(folder, name, n, job) for name in cases}


def _outcome(folder: Path, name: str, n: int, job: subprocess.CompletedProcess) -> Outcome:
    status = folder / f"{name}.status"
    if not status.exists():
        ran = [p.name.split(".")[0] for p in sorted(folder.glob("*.0.err"), key=lambda p: p.stat().st_mtime)]
        raise AssertionError(
            f"the batch ended (exit {job.returncode}) before case {name!r} finished; the last case started was "
            f"{ran[-1] if ran else None!r}:\n{job.stdout[-2000:]}\n{job.stderr[-3000:]}"
        )

    def joined(suffix: str) -> str:
        return "".join((folder / f"{name}.{r}.{suffix}").read_text(errors="replace") for r in range(n))

    return Outcome(int(status.read_text()), joined("out"), joined("err"), folder / f"{name}.h5", job.stderr)
