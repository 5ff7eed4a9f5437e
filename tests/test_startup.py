"""What a rank loads to start (issue 68: start-up at scale, where every rank's imports hit a shared file
system at once): ranks other than 0 of a sweep never import the report, tuning, trainers or doctor
packages, rich or h5py, which only rank 0 uses (it draws and writes), nor what only rank 0 asks with
(json, subprocess) or only an error needs (difflib); a sweep of the library's collectives imports no
algorithm file of fabricprobe's own (the registry loads them when one is asked for); no rank of a sweep of the
library's collectives imports Numba (the timing loops are compiled by llvmlite: timing/compiled.py),
which only fabricprobe's own algorithms' kernels load; a command line names its subcommand, and only
that one's parser is built."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from mpirun import run_mpi

from fabricprobe.cli.main import SUBCOMMANDS, build_parser, subcommand_modules
from fabricprobe.store import load_runs

DRIVER = str(Path(__file__).parent / "drivers" / "modules_at_exit.py")
ROOT_ONLY = ("h5py", "rich", "fabricprobe.report", "fabricprobe.tuning", "fabricprobe.trainers", "fabricprobe.doctor")
LIBRARY_ONLY = {f"fabricprobe.collectives.{m}" for m in ("algorithm", "registry", "cost", "library", "library_rma")}
SWEEP = ["sweep", "--collectives", "allreduce", "--sizes", "8", "--iters", "10", "--max-time", "0.05"]


def _packages(modules: list[str], packages: tuple[str, ...] = ROOT_ONLY) -> list[str]:
    return sorted({p for p in packages for m in modules if m == p or m.startswith(p + ".")})


@pytest.fixture(scope="module")
def library_sweep(tmp_path_factory) -> Path:
    """One 2-rank sweep of the library's allreduce under the driver, for the tests of what it imported:
    each rank's modules and loaders, and the results file r.h5, in the folder returned."""
    folder = tmp_path_factory.mktemp("library_sweep")
    out = run_mpi(2, [], python_args=[DRIVER, str(folder), *SWEEP, "-o", str(folder / "r.h5")])
    assert out.returncode == 0, out.stderr[-3000:]
    return folder


@pytest.mark.mpi
def test_ranks_other_than_0_import_none_of_what_rank_0_alone_uses(library_sweep):
    tmp_path = library_sweep
    rank0, rank1 = ((tmp_path / f"modules.{r}").read_text().split() for r in (0, 1))
    assert _packages(rank1) == [], _packages(rank1)
    assert {"h5py", "rich", "fabricprobe.report"} <= set(_packages(rank0))  # the check sees them where they are
    assert len(rank1) < len(rank0)
    assert _packages(rank0, ("numba",)) == _packages(rank1, ("numba",)) == []
    own = [m for m in rank1 if m.startswith("fabricprobe.collectives.") and m not in LIBRARY_ONLY]
    assert own == []  # no algorithm file of fabricprobe's own: the library's alone (collectives/registry.py)
    assert _packages(rank1, ("json", "subprocess", "difflib", "glob", "secrets", "fabricprobe.lab.state")) == []
    (run,) = load_runs(str(tmp_path / "r.h5"))
    assert run.attrs["numba_version"] == "not loaded"  # the run says which Numba ran: none
    assert run.attrs["numpy_version"] == np.__version__ and run.attrs["h5py_version"] == h5py.__version__
    if run.attrs["mpi_vendor"] == "Open MPI":  # ompi_info, started after MPI_Init, read in the provenance
        assert json.loads(run.attrs["mpi_build"])["configure"]


@pytest.mark.mpi
def test_the_doctors_other_ranks_import_neither_h5py_nor_rich(tmp_path):
    """The doctor at scale: its record (h5py) and report (rich) are rank 0's, which alone checks the
    output, writes it and draws; every rank imported both before."""
    doctor = ["doctor", "--sizes", "8,1K", "--iterations", "5,2", "--ring-size", "1K", "--ring-reps", "1"]
    out = run_mpi(2, [], python_args=[DRIVER, str(tmp_path), *doctor, "-o", str(tmp_path / "d.h5")])
    assert out.returncode == 0, out.stderr[-3000:]
    rank0, rank1 = ((tmp_path / f"modules.{r}").read_text().split() for r in (0, 1))
    assert _packages(rank1, ("h5py", "rich")) == []
    assert _packages(rank0, ("h5py", "rich")) == ["h5py", "rich"]  # the check sees them where they are


@pytest.mark.mpi
def test_numba_is_loaded_where_a_hand_written_algorithm_reduces(tmp_path):
    """The other side of the check above: a sweep of fabricprobe's ring allreduce loads Numba for its
    reduction kernel, on every rank."""
    out = run_mpi(
        2, [], python_args=[DRIVER, str(tmp_path), *SWEEP, "--algorithms", "ring", "-o", str(tmp_path / "r.h5")]
    )
    assert out.returncode == 0, out.stderr[-3000:]
    for r in (0, 1):
        modules = (tmp_path / f"modules.{r}").read_text().split()
        assert _packages(modules, ("numba",)) == ["numba"]
        assert "fabricprobe.collectives.allreduce_ring" in modules  # the registry loaded it when asked
    (run,) = load_runs(str(tmp_path / "r.h5"))
    assert run.attrs["numba_version"] == importlib.metadata.version("numba")  # recorded when the run ended


@pytest.mark.mpi
def test_rank_0_reads_the_measurements_modules_for_every_rank(library_sweep):
    """Once MPI has started, rank 0 imports the measurement's modules (the engine, llvmlite and what they
    import) and the other ranks are given their code (mpienv/shared_imports.py): none of them is read
    from the file system by rank 1."""
    tmp_path = library_sweep
    rank0, rank1 = (dict(line.split() for line in (tmp_path / f"loaders.{r}").read_text().splitlines()) for r in (0, 1))
    kept = {name for name, loader in rank0.items() if loader == "_SendingLoader"}
    served = {name for name, loader in rank1.items() if loader == "_ServedLoader"}
    assert {"fabricprobe.engine.measurement", "fabricprobe.engine.sweep", "llvmlite.binding"} <= kept
    assert kept & set(rank1) == served  # every module rank 0 read that rank 1 imported, rank 1 was given
    assert len(served) > 50 and not any(loader == "_ServedLoader" for loader in rank0.values())
    assert (tmp_path / "r.h5").exists() and load_runs(str(tmp_path / "r.h5"))[0].status == "complete"


def test_a_command_line_builds_its_subcommands_parser_only():
    assert subcommand_modules(["sweep", "--quick"]) == ["sweep_cmd"]
    assert subcommand_modules(["tune-sweep", "-n", "4"]) == ["tune_cmd"]
    every = subcommand_modules(["--help"])
    assert every == subcommand_modules([]) == subcommand_modules(["no-such-command"]) == list(dict.fromkeys(every))
    assert set(every) == set(SUBCOMMANDS.values())


@pytest.mark.process
def test_building_and_reading_the_sweeps_command_line_imports_no_shutil_nor_shlex():
    """Every rank parses its command line: argparse's formatter imported shutil (and bz2, lzma) for the
    terminal's width, and the launcher arguments' default was split by shlex."""
    code = (
        "import sys\nfrom fabricprobe.cli.main import build_parser\n"
        "build_parser(['sweep']).parse_args(['sweep', '--sizes', '8'])\n"
        "print(sorted(m for m in ('shutil', 'bz2', 'lzma', 'shlex') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("columns", [None, "57", "0", "wide"])
def test_the_help_is_as_wide_as_shutil_says_the_terminal_is(columns, monkeypatch):
    import shutil

    from fabricprobe.cli.parser import terminal_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


def test_every_subcommand_is_built_by_the_module_the_table_names():
    """SUBCOMMANDS is the one list of which module defines which subcommand: each module's parser
    defines exactly the subcommands the table gives it, and --help lists every one."""
    import argparse

    def names(parser: argparse.ArgumentParser) -> set[str]:
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return set(sub.choices)

    assert names(build_parser()) == set(SUBCOMMANDS)
    for name, module in SUBCOMMANDS.items():
        assert names(build_parser([name])) == {n for n, m in SUBCOMMANDS.items() if m == module}


def test_the_import_check_finds_a_planted_package():
    assert _packages(["numpy", "h5py._conv", "fabricprobe.tuning.plan"]) == ["fabricprobe.tuning", "h5py"]
    assert _packages([sys.__name__, "richly"]) == []


def _tool(folder: Path, name: str, body: str) -> str:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.process
def test_the_librarys_build_tools_run_at_once_and_are_read_when_needed(tmp_path, monkeypatch):
    """rank 0 starts ompi_info and the compiler wrapper right after MPI_Init and reads them in the
    provenance (mpienv/build.py: Asked): both are running before either is read, each answer is parsed,
    and a tool that fails or is missing is left out."""
    from fabricprobe.mpienv import build

    started = tmp_path / "started"
    tools = {
        "mpicc": _tool(tmp_path, "mpicc", f"echo wrapper >> {started}; sleep 0.3; echo 'cc -lmpi'"),
        "ompi_info": _tool(tmp_path, "ompi_info", f"echo info >> {started}; sleep 0.3; echo 'config:cli: --with-x'"),
    }
    monkeypatch.setattr(build, "tool", lambda name, vendor: tools.get(name))
    asked = build.Asked("Open MPI", "Open MPI v5")
    for _ in range(200):  # both started before anything is read
        if started.exists() and sorted(started.read_text().split()) == ["info", "wrapper"]:
            break
        time.sleep(0.01)
    assert sorted(started.read_text().split()) == ["info", "wrapper"]
    expected = {"wrapper": tools["mpicc"], "wrapper_command": "cc -lmpi", "configure": "--with-x"}
    assert asked.result() == expected
    tools["ompi_info"] = _tool(tmp_path, "ompi_info", "exit 1")
    tools["mpicc"] = str(tmp_path / "no-such-mpicc")
    assert build.Asked("Open MPI", "").result() == {}
    mpich = "MPICH Version: 4.0\nconfigure: --with-device=ch4"
    assert build.Asked("MPICH", mpich).result() == {"configure": "--with-device=ch4"}  # MPICH says it itself


@pytest.mark.process
def test_a_run_refused_before_its_provenance_leaves_no_build_tool_running(tmp_path, monkeypatch):
    from fabricprobe.mpienv import build

    hang = _tool(tmp_path, "ompi_info", "exec sleep 60")
    monkeypatch.setattr(build, "tool", lambda name, vendor: hang if name == "ompi_info" else None)
    asked = build.Asked("Open MPI", "")
    (proc,) = [p for p in (asked._wrapper, asked._info) if p is not None]
    assert proc.poll() is None
    asked.discard()
    assert proc.poll() is not None  # ended and reaped


def test_the_registry_loads_an_algorithm_file_when_one_of_its_algorithms_is_asked_for(monkeypatch):
    """collectives/registry.py, from the state a rank starts in (the library's files alone): the
    library's names check without loading anything more; an algorithm not registered, an unknown name,
    "all", or a question about every algorithm load every file, once."""
    from fabricprobe.collectives import registry

    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_loaded", set())
    monkeypatch.setattr(registry, "_everything", False)
    loads: list[str] = []
    real = registry.importlib.import_module

    def counted(name: str):
        loads.append(name)
        return real(name)

    monkeypatch.setattr(registry.importlib, "import_module", counted)
    registry.load(registry.FIRST)
    assert registry.get("allreduce", "library") is not None and registry.choices(["library"]) == ["library", "mpi4py"]
    assert loads == [f"{registry.PACKAGE}.{m}" for m in registry.FIRST]
    ring = registry.get("allreduce", "ring")
    assert ring is not None and ring.collective == "allreduce" and "ring" in registry.choices(["library"])
    every = len(loads)
    assert registry.get("bcast", "ring") is None
    every_name = registry.choices(["nope"])
    assert len(loads) == every  # loaded once: a name no file defines does not scan again
    assert {a.name for a in registry.algorithms()} == set(every_name)


@pytest.mark.process
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or (os.cpu_count() or 1) < 2, reason="needs 2 cores")
def test_the_build_tools_run_on_any_core_though_rank_0_is_bound(tmp_path, monkeypatch):
    """A launcher binds rank 0 to a core and its children inherit it: ompi_info would take rank 0's
    core while the others sleep. Asked lets the tools run on every core of the node."""
    from fabricprobe.mpienv import build

    hang = _tool(tmp_path, "ompi_info", "exec sleep 60")
    monkeypatch.setattr(build, "tool", lambda name, vendor: hang if name == "ompi_info" else None)
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(mine)})  # as a launcher binds a rank
    try:
        asked = build.Asked("Open MPI", "")
    finally:
        os.sched_setaffinity(0, mine)
    try:
        assert os.sched_getaffinity(asked._info.pid) == mine  # every core this process may use
    finally:
        asked.discard()


def test_the_quiet_barrier_sleeps_until_every_rank_arrived(monkeypatch):
    """mpienv/waiting.py: the others wait for rank 0 sleeping between tests of an MPI_Ibarrier (they
    spun inside MPI, a core each), and return once it completes."""
    from fabricprobe.mpienv import waiting

    class Request:
        tests = 0

        def Test(self) -> bool:
            Request.tests += 1
            return Request.tests > 3

    class Comm:
        def Ibarrier(self) -> Request:
            return Request()

    slept: list[float] = []
    monkeypatch.setattr(waiting.time, "sleep", slept.append)
    waiting.quiet_barrier(Comm())
    assert Request.tests == 4 and slept == [waiting.QUIET_POLL_S] * 3
