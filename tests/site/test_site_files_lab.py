"""The files `tune` writes for a site, read by a site's own readers (issue 65), on the hostile output
paths of tests/site_readers.py: Debian's Open MPI 4.1 (`/usr/bin/ompi_info` with the MCA parameter file,
and with env.sh's environment) or MPICH 4.0 (MPI_Init with env.sh's environment: it aborts on a file it
cannot open), Debian's Lmod loading the modulefile, and Slurm applying the TaskProlog to a task in the
lab's cluster (`srun --task-prolog`, which slurmstepd reads as it reads slurm.conf's TaskProlog). Run
by `nox -s site`, which installs them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from site_readers import (
    CASES,
    LMOD_INIT,
    expected_env,
    folder_name,
    lmod,
    mpich,
    nothing_ran,
    ompi_info,
    refused,
    sourced,
    tune_into,
)
from test_slurm_lab import REASON, _client, cluster  # noqa: F401 - the lab's Slurm cluster fixture

from fabricprobe.mpienv.library import library_of_this_python

pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))
WRITTEN = [c for c in CASES if not refused(c, "Open MPI") or not refused(c, "MPICH")]
DEBIAN_OMPI_INFO = "/usr/bin/ompi_info"  # Debian's Open MPI (MPICH installs none)


def _vendor() -> str:
    return library_of_this_python().vendor


def _tuned(case, parent: Path, vendor: str) -> Path | None:
    """The case's folder as `tune` wrote it (None where this library's readers refuse it: each wheel's
    run of tests/test_site_files.py checks those refusals)."""
    parent.mkdir(parents=True)
    name = folder_name(case, parent)
    out = tune_into(parent, name, vendor)
    if refused(case, vendor):
        assert out.returncode == 2 and not list(parent.iterdir()), out.stderr
        return None
    assert out.returncode == 0, out.stderr[-2000:]
    return parent / name


@pytest.mark.parametrize("case", WRITTEN, ids=[c.id for c in WRITTEN])
def test_the_sites_library_and_lmod_read_exactly_the_values(case, tmp_path):
    vendor = _vendor()
    folder = _tuned(case, tmp_path / "case", vendor)
    if folder is None:
        pytest.skip(f"{vendor}'s readers cannot carry it: refused")
    expected = expected_env(folder, vendor)
    load = folder / "load"
    env = sourced("bash", load / "env.sh")
    found = {"Lmod": lmod(load / "modulefile.lua", tmp_path)}
    if vendor == "Open MPI":
        mca = {"OMPI_MCA_mca_param_files": str(load / "openmpi-mca-params.conf")}
        found["ompi_info 4.1, MCA file"] = ompi_info(DEBIAN_OMPI_INFO, mca)
        found["ompi_info 4.1, env.sh"] = ompi_info(DEBIAN_OMPI_INFO, {k: v for k, v in env.items() if "OMPI" in k})
    else:
        found["MPICH 4.0, env.sh"] = mpich(env, ("/usr/bin/mpiexec.mpich", "-n", "1"))
    for reader, got in found.items():
        assert {k: got.get(k) for k in expected} == expected, reader
    assert nothing_ran(tmp_path)


def test_lmod_is_there():
    assert LMOD_INIT.exists(), "nox -s site installs Debian's lmod"


def _task_env(prolog: Path) -> dict[str, str]:
    """The environment of a task Slurm started with the TaskProlog (srun --task-prolog)."""
    out = subprocess.run(
        [_client("srun"), "-N", "1", "-n", "1", f"--task-prolog={prolog}", "env", "-0"],
        capture_output=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return {
        os.fsdecode(k): os.fsdecode(v)
        for k, _, v in (item.partition(b"=") for item in out.stdout.split(b"\0") if b"=" in item)
    }


def test_slurm_applies_the_taskprolog_with_exactly_the_values(cluster):  # noqa: F811
    """Every written case in one module's cluster (a step each, about 0.2 s)."""
    _, work = cluster
    vendor = _vendor()
    wrong = {}
    for case in WRITTEN:
        parent = work / "prologs" / case.id
        folder = _tuned(case, parent, vendor)
        if folder is None:
            continue
        expected = expected_env(folder, vendor)
        got = _task_env(folder / "load" / "slurm-task-prolog.sh")
        if {k: got.get(k) for k in expected} != expected:
            wrong[case.id] = (expected, {k: got.get(k) for k in expected})
    assert not wrong, wrong
    assert nothing_ran(work / "prologs")
