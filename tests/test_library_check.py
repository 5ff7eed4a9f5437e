"""Which MPI library mpi4py loaded against the launcher that started the rank (issue 69): mpi4py's binary
wheel loads the library it finds, and a launcher of the other family starts each rank alone. The real
case, Debian's mpirun.mpich starting ranks that loaded Open MPI 4.1: tests/site/test_readme_site_path.py."""

from __future__ import annotations

import types

import pytest

from fabricprobe.cli.info_cmd import answer, hosts_line, launcher_line
from fabricprobe.mpienv import library_check

LAUNCH_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_SIZE", "PMI_RANK", "PMIX_RANK")
SLURM = ("SLURM_STEP_ID", "SLURM_PROCID", "SLURM_NTASKS")
LIB = "/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4"


@pytest.fixture
def launched(monkeypatch):
    """Set the variables one launcher sets, every other launcher's removed."""
    for name in LAUNCH_VARIABLES + SLURM:
        monkeypatch.delenv(name, raising=False)

    def by(**variables: str) -> None:
        for name, value in variables.items():
            monkeypatch.setenv(name, value)

    return by


@pytest.mark.parametrize(
    "variables, name, family",
    [
        ({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0", "PMIX_RANK": "0"}, "Open MPI's mpirun", "Open MPI"),
        ({"PMI_SIZE": "2", "PMI_RANK": "0"}, "a PMI launcher (MPICH's or Intel MPI's mpiexec)", "MPICH"),
        ({"SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "PMI_SIZE": "2"}, "srun", ""),
        ({"PMIX_RANK": "0"}, "a PMIx launcher", ""),
    ],
)
def test_the_launcher_is_named_from_its_variables(launched, variables, name, family):
    launched(**variables)
    assert library_check.launcher() == library_check.Launcher(name, family)


def test_no_launcher_outside_one(launched):
    assert library_check.launcher() is None
    assert library_check.mismatch("Open MPI", LIB, 1) == ""


def test_ranks_started_alone_by_the_other_familys_launcher_are_told_what_to_set(launched):
    """Debian's mpirun.mpich with Open MPI's library loaded: each rank in a world of 1."""
    launched(PMI_SIZE="2", PMI_RANK="1")
    line = library_check.mismatch("Open MPI", LIB, 1)
    assert "launched 2 ranks but mpi4py loaded Open MPI" in line and LIB in line
    assert "started alone in a world of 1" in line and "MPI4PY_LIBMPI" in line and "docs/site.md" in line


def test_a_library_of_the_other_family_is_named_even_where_the_world_agrees(launched):
    launched(OMPI_COMM_WORLD_SIZE="1", OMPI_COMM_WORLD_RANK="0")
    line = library_check.mismatch("MPICH", "/opt/mpich/lib/libmpi.so.12", 1)
    assert line.startswith("Open MPI's mpirun is Open MPI's, but mpi4py loaded MPICH (/opt/mpich/lib/libmpi.so.12)")


@pytest.mark.parametrize(
    "variables, vendor",
    [
        ({"OMPI_COMM_WORLD_SIZE": "2"}, "Open MPI"),
        ({"PMI_SIZE": "2"}, "MPICH"),
        ({"PMI_SIZE": "2"}, "Intel MPI"),  # MPICH's ABI and launchers
        ({"SLURM_STEP_ID": "3", "SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, "Open MPI"),
        ({"SLURM_STEP_ID": "3", "SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, "MPICH"),
        ({"PMI_SIZE": "2"}, "unknown"),  # a library not named: nothing can be told
    ],
)
def test_the_launchers_own_library_is_not_warned_of(launched, variables, vendor):
    launched(**variables)
    assert library_check.mismatch(vendor, LIB, 2) == ""


def test_a_world_smaller_than_launched_of_the_same_family_is_left_to_the_sweeps_own_check(launched):
    """A launcher killed in its first moments also leaves singletons (engine/session.py says that one)."""
    launched(OMPI_COMM_WORLD_SIZE="4")
    assert library_check.mismatch("Open MPI", LIB, 1) == ""


@pytest.mark.parametrize(
    "file, said",
    [
        ("/v/mpi4py/MPI.openmpi.cpython-311-x86_64-linux-gnu.so", "binary wheel, Open MPI ABI"),
        ("/v/mpi4py/MPI.mpich.cpython-311-x86_64-linux-gnu.so", "binary wheel, MPICH ABI"),
        ("/v/mpi4py/MPI.cpython-311-x86_64-linux-gnu.so", "built for Open MPI 4.1.4"),
    ],
)
def test_how_mpi4py_came_is_read_from_its_module(file, said):
    MPI = types.SimpleNamespace(__file__=file, get_vendor=lambda: ("Open MPI", (4, 1, 4)))
    assert library_check.mpi4py_build(MPI) == said


def test_the_loaded_library_is_a_mapped_file():
    """In this process (pytest loads no MPI unless a test did): a path, or said to be none."""
    path = library_check.loaded_library()
    assert path == "(no libmpi mapped)" or path.startswith("/")


def test_infos_answer_leads_with_the_library_and_fits_80_columns():
    prov = {
        "mpi_vendor": "Open MPI",
        "mpi_version": "4.1.4",
        "mpi_standard": "3.1",
        "mpi4py_version": "4.1.2",
        "hosts": ["n1"] * 32 + ["n2"] * 32 + ["n3"] * 32 + ["n4"] * 32 + ["n5"] * 32 + ["n6"],
        "cuda": "no, no device",
        "thread_level_provided": "single",
        "thread_level_requested": "single",
    }
    rows = answer(prov, LIB, "binary wheel, Open MPI ABI", "Open MPI's mpirun, 161 ranks")
    assert [key for key, _ in rows][:2] == ["MPI library", "loaded from"]
    assert dict(rows)["MPI library"] == "Open MPI 4.1.4 (MPI 3.1)"
    assert dict(rows)["hosts"] == "6 nodes: n1 (32 ranks), n2 (32 ranks), n3 (32 ranks), … 3 more"
    assert all(len(key) + 2 + len(value) <= 80 for key, value in rows)


def test_hosts_and_launcher_lines():
    assert hosts_line(["a"]) == "1 node: a (1 rank)"
    assert launcher_line(None, None, 1).startswith("none (this process alone")
    started = library_check.Launcher("srun", "")
    assert launcher_line(started, 4, 4) == "srun, 4 ranks"
    assert launcher_line(started, 4, 1) == "srun, 4 ranks launched, 1 in MPI's world"
