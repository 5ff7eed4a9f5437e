"""The site path for real: a Slurm cluster of 2 emulated hosts (`lab up --scheduler slurm`), the
library a site has (Debian's Open MPI 4.1 or MPICH 4.0, mpi4py built against it), jobs through srun
and sbatch, tune-sweep as job steps of one allocation, `tune --verify`, and `lab down` leaving no
daemon behind. Run by `nox -s site` (which installs the Debian packages and builds mpi4py); under
any other environment it says why it does not run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from fabricprobe.errors import UsageError
from fabricprobe.lab import network, slurm, state
from fabricprobe.mpienv.library import library_of_this_python
from fabricprobe.store.reader import load_runs

NAME = f"fps{os.getpid() % 10000}"
SUBNET = "10.215.33.0/24"
WANTED = {"openmpi": ("Open MPI", "4.1"), "mpich": ("MPICH", "4.0")}
PLUGIN = {"Open MPI": "pmix", "MPICH": "pmi2"}


def _reason() -> str | None:
    site = os.environ.get("FABRICPROBE_SITE_MPI")
    if site not in WANTED:
        return "the site tests run under `nox -s site` (FABRICPROBE_SITE_MPI=openmpi|mpich, mpi4py built from source)"
    if os.geteuid() != 0:
        return "the Slurm lab needs root (network namespaces, munge and Slurm daemons)"
    try:
        network.preflight()
        slurm.preflight()
    except UsageError as exc:
        return str(exc)
    return None


REASON = _reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))


def _fp(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "fabricprobe", *args], capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"fabricprobe {' '.join(args)}: {out.stdout[-3000:]}{out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def cluster():
    vendor, version = WANTED[os.environ["FABRICPROBE_SITE_MPI"]]
    library = library_of_this_python()
    assert library.vendor == vendor and library.version.startswith(version), library.version_string
    # results under /var/tmp: every lab node has a /tmp of its own, as real nodes do
    work = Path(tempfile.mkdtemp(prefix="fabricprobe-site-", dir="/var/tmp"))
    _fp(
        "lab", "up", "--name", NAME, "--subnet", SUBNET, "--hosts", "2", "--ranks-per-host", "2", "--scheduler", "slurm"
    )
    try:
        yield library, work
    finally:
        pids = [p for p in slurm.folder(NAME).glob("*.pid")]
        daemons = [int(p.read_text().split()[0]) for p in pids]
        _fp("lab", "down", "--name", NAME)
        assert daemons and not [pid for pid in daemons if Path(f"/proc/{pid}").exists()]
        assert network.existing(NAME) == [] and not state.directory(NAME).exists()
        shutil.rmtree(work, ignore_errors=True)


def _client(program: str) -> str:
    return str(state.directory(NAME) / "bin" / program)


def test_lab_status_shows_the_scheduler_nodes(cluster):
    status = json.loads(_fp("lab", "status", "--name", NAME, "--json").stdout)
    assert status["scheduler"] == "slurm"
    assert {h: link["slurm"] for h, link in status["links"].items()} == {f"{NAME}0": "idle", f"{NAME}1": "idle"}


def test_validated_sweep_through_srun_across_the_hosts(cluster):
    library, work = cluster
    out_file = work / "srun.h5"
    argv = [_client("srun"), "-N", "2", "--ntasks-per-node", "2", f"--mpi={PLUGIN[library.vendor]}"]
    argv += [sys.executable, "-m", "fabricprobe", "sweep", "--collectives", "allreduce,bcast,allgather"]
    argv += ["--sizes", "8,64K", "--iters", "20", "--max-time", "0.05", "-o", str(out_file), "--progress", "none"]
    out = subprocess.run(argv + ["--quiet"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    (run,) = load_runs(str(out_file))
    assert run.status == "complete"
    attrs = run.attrs
    assert attrs["hosts"] == [f"{NAME}0", f"{NAME}0", f"{NAME}1", f"{NAME}1"] and attrs["nnodes"] == 2
    assert attrs["mpi_vendor"] == library.vendor and attrs["mpi_version"] == library.version
    assert attrs["scheduler"] == "slurm" and attrs["placement_check"] == "slurm agrees"
    job = json.loads(attrs["scheduler_job"])
    assert job["job_num_nodes"] == "2" and job["mpi_type"] == PLUGIN[library.vendor]
    assert "configure" in json.loads(attrs["mpi_build"])
    points = [p for p in run.points if p["collective"] in ("allreduce", "bcast", "allgather")]
    assert {p["collective"] for p in points} == {"allreduce", "bcast", "allgather"} and len(points) >= 5
    assert all(p["status"] == "ok" and p["wrong"] == 0 for p in points)  # every result validated


def test_sbatch_script_runs_the_sweep(cluster):
    _, work = cluster
    script = work / "sweep.sbatch"
    script.write_text(
        "#!/bin/sh\n#SBATCH -N 2\n#SBATCH --ntasks-per-node 2\n"
        f"srun {sys.executable} -m fabricprobe sweep --collectives allreduce --sizes 8 --iters 10 "
        f"--max-time 0.05 -o {work / 'sbatch.h5'} --progress none --quiet\n"
    )
    out = subprocess.run(
        [_client("sbatch"), "--wait", "-o", str(work / "slurm-%j.out"), str(script)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr + "".join(p.read_text() for p in work.glob("slurm-*.out"))
    (run,) = load_runs(str(work / "sbatch.h5"))
    assert run.status == "complete" and run.attrs["nranks"] == 4 and run.attrs["scheduler"] == "slurm"


def test_tune_sweep_in_one_allocation_and_verified_files(cluster):
    library, work = cluster
    results, tuned = work / "tuning.h5", work / "tuned"
    _fp(
        "lab", "run", "--name", NAME, "--", "tune-sweep", "-n", "4", "-o", str(results),
        "--collectives", "allreduce", "--sizes", "8,64K,1M", "--iters", "20", "--max-time", "0.05",
    )  # fmt: skip
    runs = load_runs(str(results))
    # every forced algorithm a step of one allocation (one job id), each with its own step id
    jobs = {json.loads(r.attrs["scheduler_job"])["job_id"] for r in runs}
    steps = [json.loads(r.attrs["scheduler_job"])["step_id"] for r in runs]
    assert len(jobs) == 1 and len(set(steps)) == len(runs) > 2
    _fp(
        "lab",
        "run",
        "--name",
        NAME,
        "--",
        "tune",
        str(results),
        "-o",
        str(tuned),
        "--verify",
        "--reps",
        "2",
        "--min-gain",
        "0",
    )
    manifest = json.loads((tuned / "tuning.json").read_text())
    assert manifest["verification"]["passed"], manifest["verification"]
    written = sorted(p.name for p in tuned.iterdir())
    assert manifest["verification"]["summary"].get("verified", 0) >= 1, manifest["verification"]
    assert not [n for n in written if n.endswith((".REJECTED", ".UNVERIFIED"))], written
    if library.vendor == "Open MPI":  # algorithm ids as 4.1's own ompi_info lists them
        (conf,) = [n for n in written if n.startswith("ompi_rules") and n.endswith(".conf")]
        rules = (tuned / conf).read_text()
        assert "Open MPI v4.1" in rules.splitlines()[0]
