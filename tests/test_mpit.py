"""The MPI tool interface from Python (fabricprobe.mpienv.mpit) on the library this environment loads
(both wheels in CI; Debian's Open MPI 4.1 and MPICH 4.0 in tests/site), and the pure parts of the
run-time switch: MPICH's value names, the switch plan's decisions, the proofs' verdicts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mpirun import launcher, mpi_env

from fabricprobe.mpienv.mpich_names import description_values
from fabricprobe.mpienv.mpit import ControlVariable, MpitError
from fabricprobe.tuning.measure.mpit_switch import INDISTINGUISHABLE, NO_FINGERPRINT, SWITCHED, proofs
from fabricprobe.tuning.plan.library import Variant
from fabricprobe.tuning.plan.mpich import MPICH
from fabricprobe.tuning.plan.openmpi import OpenMPI
from fabricprobe.tuning.plan.switch import plan_switch

DRIVER = Path(__file__).parent / "drivers" / "mpit_check.py"
DATA = Path(__file__).parent / "data"


def mpit_check(env: dict[str, str] | None = None) -> dict:
    found = launcher()
    if found is None or found.vendor not in ("Open MPI", "MPICH"):
        pytest.skip("needs Open MPI or MPICH")
    out = subprocess.run([sys.executable, str(DRIVER)], capture_output=True, text=True, env=mpi_env(env), timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- the library loaded here ----


@pytest.mark.process
def test_an_algorithm_variable_is_found_read_written_and_read_back():
    found = mpit_check()
    assert found["found"] and found["writable"] and found["datatype"] == "int"
    assert "recursive_doubling" in found["names"]
    assert found["start_name"] == {"Open MPI": "ignore", "MPICH": "auto"}[found["vendor"]]
    assert found["written"] == found["target_value"] == found["read_after"] != found["start"]
    assert found["back"] == found["start"]
    assert found["missing"] and "no_such_algorithm" in found["bad_name"]


@pytest.mark.process
def test_value_names_are_the_values_the_library_reads_from_its_environment():
    """MPICH attaches no enumeration: recursive_doubling is 3 because the description lists it fourth.
    Set through the environment, the value read at start must carry that name."""
    vendor = launcher().vendor if launcher() else ""
    env = {
        "MPICH": {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling"},
        "Open MPI": {"OMPI_MCA_coll_tuned_allreduce_algorithm": "3"},
    }.get(vendor, {})
    found = mpit_check(env)
    assert found["start_name"] == "recursive_doubling"


@pytest.mark.process
def test_a_constant_variable_is_refused():
    found = mpit_check()
    if found["vendor"] != "Open MPI":
        pytest.skip("MPICH marks no control variable constant or read-only (5.0.2: 466, none)")
    assert found["constant_scope"] == "constant" and "scope constant" in found["constant_write"]


# ---- MPICH's value names ----


def test_mpich_5_descriptions_give_one_name_per_line():
    text = "Variable to select allreduce algorithm\nauto - Internal\nnb     - Force nb\nsmp    - Force smp\n"
    assert description_values(text) == ["auto", "nb", "smp"]
    device = "Variable to select whether the device can override the\nMPIR-level collective algorithms.\n"
    assert description_values(device + "all     - Always\nnone    - Never\npercoll - Per coll") == [
        "all",
        "none",
        "percoll",
    ]


def test_mpich_4_glued_names_are_written_by_their_suffix():
    """MPICH 4.0.2's POSIX variable: the names run into descriptions that end in no word the parser
    knows ("...allreducempir"); a name is then the one glued entry ending with it after a letter."""
    glued = (
        "Variable to select algorithm for intra-node allreducempir           - Fallback to MPIR collectives"
        "release_gather - Force shm optimized algo using release, gather primitivesauto - Internal algorithm "
        "selection (can be overridden with MPIR_CVAR_CH4_POSIX_COLL_SELECTION_TUNING_JSON_FILE)"
    )
    names = description_values(glued)
    var = ControlVariable(
        1, "MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM", "int", 1, "all_eq", False, glued, tuple(enumerate(names))
    )
    assert (var.value_of("mpir"), var.value_of("auto")) == (0, 2)
    sched = ControlVariable(2, "X", "int", 1, "all_eq", False, "", ((0, "auto"), (1, "sched_auto")))
    assert sched.value_of("auto") == 0  # exact first; "sched_auto" never stands for "auto"
    with pytest.raises(MpitError):
        ControlVariable(3, "Y", "int", 1, "all_eq", False, "", ((0, "xsched_auto"),)).value_of("auto")


# ---- the switch plan ----


def _described(**over) -> dict:
    info = {"datatype": "int", "scope": "all", "writable": True, "values": [], "value": 0}
    return {name: {**info, **value} for name, value in over.items()}


def _ompi() -> OpenMPI:
    return OpenMPI(
        text="\n".join(
            f"mca:coll:tuned:param:coll_tuned_allreduce_algorithm:enumerator:value:{i}:{name}"
            for i, name in enumerate(("ignore", "basic_linear", "ring"))
        )
    )


def test_writable_variables_are_switched_and_a_read_only_one_goes_to_its_own_launch():
    lib = _ompi()
    variants = [v for v in lib.variants("allreduce") if v.name in ("default", "ring", "basic_linear")]
    names = {"values": [[0, "false"], [1, "true"]]}
    plan = plan_switch(
        lib,
        variants,
        _described(coll_tuned_use_dynamic_rules=names, coll_tuned_allreduce_algorithm={"values": [[0, "ignore"]]}),
    )
    assert plan.new_communicator and not plan.by_launch and not plan.launch_env
    ring = next(v for v in variants if v.name == "ring")
    assert plan.writes["allreduce"]["ring"] == {
        "coll_tuned_use_dynamic_rules": "1",
        "coll_tuned_allreduce_algorithm": ring.ident,
    }
    # Open MPI before 5.0.6: dynamic rules read-only, but it may stand for the whole launch
    ro = _described(
        coll_tuned_use_dynamic_rules={**names, "writable": False, "scope": "readonly"},
        coll_tuned_allreduce_algorithm={"values": [[0, "ignore"]]},
    )
    plan = plan_switch(lib, variants, ro)
    assert plan.launch_env == {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"} and not plan.by_launch
    assert plan.writes["allreduce"]["ring"] == {"coll_tuned_allreduce_algorithm": ring.ident}
    # the algorithm variable itself read-only: every forced allreduce to a launch of its own
    ro["coll_tuned_allreduce_algorithm"].update(writable=False, scope="readonly")
    plan = plan_switch(lib, variants, ro)
    assert not plan.writes and {v.name for v, _ in plan.by_launch} == {"ring", "basic_linear"}
    assert all("cannot be written at run time" in why for _, why in plan.by_launch)


def test_a_variable_missing_or_reading_another_name_than_its_default_is_not_switched(monkeypatch):
    lib = MPICH(text=(DATA / "mpivars-mpich-4.0.2.txt").read_text())
    variants = lib.variants("allreduce")
    values = [[0, "auto"], [1, "nb"], [2, "smp"], [3, "recursive_doubling"]]
    posix = {"values": [[0, "mpir"], [1, "release_gather"], [2, "auto"]], "value": 2}
    monkeypatch.delenv("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", raising=False)
    good = _described(
        MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM={"values": values}, MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM=posix
    )
    plan = plan_switch(lib, variants, good)
    assert set(plan.writes["allreduce"]) == {v.name for v in variants if v.name != "default"} and not plan.by_launch
    # MPICH 4.0.2's glued POSIX names: "auto" found by its suffix, as the write finds it
    glued = {
        "values": [[0, "allreducempir"], [1, "llectivesrelease_gather"], [2, ", gather primitivesauto"]],
        "value": 2,
    }
    plan = plan_switch(
        lib,
        variants,
        {
            **good,
            "MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM": {**good["MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM"], **glued},
        },
    )
    assert not plan.by_launch and "mpir" in plan.writes["allreduce"]
    # the names do not match what the library reads at start: auto should be 0
    shifted = _described(
        MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM={"values": values, "value": 1},
        MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM=posix,
    )
    plan = plan_switch(lib, variants, shifted)
    assert list(plan.writes["allreduce"]) == ["mpir"]  # it writes the POSIX variable only, whose names hold
    assert {v.name for v, _ in plan.by_launch} == {v.name for v in variants} - {"default", "mpir"}
    assert all("cannot be trusted" in why for _, why in plan.by_launch)
    # not described at all (a library without the variable)
    plan = plan_switch(lib, variants, {"MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM": posix["values"] and None})
    assert all("no MPI_T control variable" in why for _, why in plan.by_launch)


def test_a_library_without_control_variables_switches_nothing():
    from fabricprobe.tuning.plan.intel import IntelMPI

    lib = IntelMPI(ranges={"allreduce": 3})
    plan = plan_switch(lib, lib.variants("allreduce"), {})
    assert not plan.writes and len(plan.by_launch) == 3 and not lib.switches_at_run_time


def test_proofs_compare_each_switched_trace_with_the_defaults():
    traces = {
        ("allreduce", "", 4): [[8], [8]],
        ("allreduce", "ring", 4): [[4, 4], [4, 4]],
        ("allreduce", "rabenseifner", 4): [[8], [8]],
        ("allreduce", "broken", 4): "error: refused",
        ("bcast", "", 4): None,
        ("bcast", "chain", 4): None,
    }
    verdicts = {(p["collective"], p["algorithm"]): p["verdict"] for p in proofs(traces)}
    assert verdicts == {
        ("allreduce", "ring"): SWITCHED,
        ("allreduce", "rabenseifner"): INDISTINGUISHABLE,
        ("allreduce", "broken"): "error: refused",
        ("bcast", "chain"): NO_FINGERPRINT,
    }


def test_a_variant_of_a_library_that_names_no_variable_is_launched():
    lib = MPICH(text=(DATA / "mpivars-mpich-4.0.2.txt").read_text())
    odd = Variant("allreduce", "odd", "x", {"SOMETHING_ELSE": "1"})
    plan = plan_switch(lib, [odd], {})
    assert plan.by_launch and "SOMETHING_ELSE has no MPI_T control variable" in plan.by_launch[0][1]
