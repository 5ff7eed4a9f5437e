"""MPICH's shared-memory collectives spin while oversubscribed below MPI_THREAD_MULTIPLE: the run says
so and names the variables that avoid them (fabricprobe/mpienv/spinning.py has the measurement)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fabricprobe.mpienv.spinning import VARIABLE, spin_warning
from fabricprobe.report.warnings import run_warnings

MPICH_CROWDED = dict(
    oversubscribed=True,
    mpi_vendor="MPICH",
    thread_level_provided="single",
    environment={"MPIR_CVAR_POLLS_BEFORE_YIELD": "1"},
    ranks_per_node=[4],
    cores_per_node=[2],
)


def test_an_oversubscribed_mpich_run_at_thread_level_single_is_warned_with_the_setting():
    text = spin_warning(MPICH_CROWDED)
    assert "spin without yielding" in text and f"{VARIABLE}=0" in text


@pytest.mark.parametrize(
    "change",
    [
        {"oversubscribed": False},
        {"mpi_vendor": "Open MPI"},
        {"thread_level_provided": "multiple"},
        {"environment": {VARIABLE: "0"}},
    ],
)
def test_no_warning_where_the_collectives_do_not_spin_or_are_avoided(change):
    assert spin_warning({**MPICH_CROWDED, **change}) == ""


def test_a_shared_memory_limit_other_than_zero_still_spins():
    assert spin_warning({**MPICH_CROWDED, "environment": {VARIABLE: "65536"}})


def test_the_report_carries_the_warning():
    run = SimpleNamespace(attrs=MPICH_CROWDED, points=[], status="complete", config={}, path="r.h5")
    assert any("spin without yielding" in line for line in run_warnings(run))
