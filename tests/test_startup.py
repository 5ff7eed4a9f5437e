"""What a rank loads to start (issue 68: start-up at scale, where every rank's imports hit a shared file
system at once): ranks other than 0 of a sweep never import the report, tuning, trainers or doctor
packages, rich or h5py, which only rank 0 uses (it draws and writes); no rank of a sweep of the
library's collectives imports Numba (the timing loops are compiled by llvmlite: timing/compiled.py),
which only fabricprobe's own algorithms' kernels load; a command line names its subcommand, and only
that one's parser is built."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mpirun import run_mpi

from fabricprobe.cli.main import SUBCOMMANDS, build_parser, subcommand_modules

DRIVER = str(Path(__file__).parent / "drivers" / "modules_at_exit.py")
ROOT_ONLY = ("h5py", "rich", "fabricprobe.report", "fabricprobe.tuning", "fabricprobe.trainers", "fabricprobe.doctor")
SWEEP = ["sweep", "--collectives", "allreduce", "--sizes", "8", "--iters", "10", "--max-time", "0.05"]


def _packages(modules: list[str], packages: tuple[str, ...] = ROOT_ONLY) -> list[str]:
    return sorted({p for p in packages for m in modules if m == p or m.startswith(p + ".")})


@pytest.mark.mpi
def test_ranks_other_than_0_import_none_of_what_rank_0_alone_uses(tmp_path):
    out = run_mpi(2, [], python_args=[DRIVER, str(tmp_path), *SWEEP, "-o", str(tmp_path / "r.h5")])
    assert out.returncode == 0, out.stderr[-3000:]
    rank0, rank1 = ((tmp_path / f"modules.{r}").read_text().split() for r in (0, 1))
    assert _packages(rank1) == [], _packages(rank1)
    assert {"h5py", "rich", "fabricprobe.report"} <= set(_packages(rank0))  # the check sees them where they are
    assert len(rank1) < len(rank0)
    assert _packages(rank0, ("numba",)) == _packages(rank1, ("numba",)) == []


@pytest.mark.mpi
def test_numba_is_loaded_where_a_hand_written_algorithm_reduces(tmp_path):
    """The other side of the check above: a sweep of fabricprobe's ring allreduce loads Numba for its
    reduction kernel, on every rank."""
    out = run_mpi(
        2, [], python_args=[DRIVER, str(tmp_path), *SWEEP, "--algorithms", "ring", "-o", str(tmp_path / "r.h5")]
    )
    assert out.returncode == 0, out.stderr[-3000:]
    for r in (0, 1):
        assert _packages((tmp_path / f"modules.{r}").read_text().split(), ("numba",)) == ["numba"]


def test_a_command_line_builds_its_subcommands_parser_only():
    assert subcommand_modules(["sweep", "--quick"]) == ["sweep_cmd"]
    assert subcommand_modules(["tune-sweep", "-n", "4"]) == ["tune_cmd"]
    every = subcommand_modules(["--help"])
    assert every == subcommand_modules([]) == subcommand_modules(["no-such-command"]) == list(dict.fromkeys(every))
    assert set(every) == set(SUBCOMMANDS.values())


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
