"""Which component serves each collective (mpienv.coll_path, issue 34): Open MPI's selection rule applied
to the library's MPI_T settings, checked against the library's own verbose selection on one node and
across the fabric lab's hosts; each point's served_by and the report's line; tune --verify calling a
coll/tuned rule that han keeps from ever being read "not consulted", never verified."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mpirun import launcher, mpi_env, run_local, run_mpi
from test_lab import NAME, _down, _up, _wrapper, needs_lab

from fabricprobe.mpienv.coll_path import PROVIDES, CommShape, Settings, mpich_path, openmpi_path
from fabricprobe.store import load_runs

DRIVER = Path(__file__).parent / "drivers" / "coll_path_check.py"

# Open MPI 5.0.11's defaults as MPI_T reads them (the wheel; coll_path.read in a 2-rank job)
OMPI5 = {
    "coll": "",
    **{f"coll_{c}_priority": p for c, p in (("basic", 10), ("tuned", 30), ("sm", 0), ("adapt", 0), ("han", 35))},
    **{f"coll_han_{c}_dynamic_global_communicator_module": 6 for c in PROVIDES["han"]},
    **{f"coll_han_{c}_dynamic_{lvl}_module": 3 for c in PROVIDES["han"] for lvl in ("inter_node", "intra_node")},
    **{f"coll_han_{c}_{ul}_module": "self" for c in PROVIDES["han"] for ul in ("up", "low")},
    **{f"coll_han_use_{c}_algorithm": "default" for c in PROVIDES["han"]},
    "coll_han_use_simple_gather": 1,
    "coll_han_use_dynamic_file_rules": 0,
    "coll_han_reproducible": 0,
}
ONE_NODE, TWO_BY_TWO, UNEVEN = CommShape.of([0] * 4), CommShape.of([0, 0, 1, 1]), CommShape.of([0, 0, 1, 1, 2])


def _ompi(**changes) -> Settings:
    return Settings("Open MPI", {**OMPI5, **changes})


def test_shapes_from_hosts():
    assert CommShape.of([0, 0, 1, 1]) == TWO_BY_TWO and CommShape.of([0, 0, 1, 1, 2]) == UNEVEN
    assert CommShape.of([0, 0]).describe() == "2 ranks of 1 node" and TWO_BY_TWO.describe() == "4 ranks of 2 nodes"


def test_open_mpi_one_node_is_tuned_and_several_nodes_are_han_with_its_levels():
    for api in ("allreduce", "bcast", "alltoall", "reduce_scatter_block", "barrier", "gather"):
        assert openmpi_path(_ompi(), api, ONE_NODE).describe() == "tuned"
    han = openmpi_path(_ompi(), "allreduce", TWO_BY_TWO)
    assert han.describe() == "han (inter-node: libnbc, node-local: tuned)" and not han.tuned_rules_consulted
    # the "simple" algorithms (barrier always, gather by default) run han's per-level module choice
    assert openmpi_path(_ompi(), "barrier", TWO_BY_TWO).levels == (("inter-node", "tuned"), ("node-local", "tuned"))
    assert openmpi_path(_ompi(), "gather", TWO_BY_TWO).levels == (("inter-node", "tuned"), ("node-local", "tuned"))
    for api in ("alltoall", "reduce_scatter_block"):  # han does not provide them
        assert openmpi_path(_ompi(), api, TWO_BY_TWO).tuned_rules_consulted
    # one rank a node: han gives every collective back at its first call (the lab's 4 × 1 trace is tuned's)
    for api in ("allreduce", "bcast", "barrier"):
        four_by_one = openmpi_path(_ompi(), api, CommShape.of([0, 1, 2, 3]))
        assert four_by_one.describe() == "tuned; han passes through: one rank a node", api


def test_open_mpi_settings_change_the_path_as_the_library_would():
    assert openmpi_path(_ompi(coll="^han"), "allreduce", TWO_BY_TWO).describe() == "tuned"
    assert openmpi_path(_ompi(coll_han_priority=20), "allreduce", TWO_BY_TWO).describe() == "tuned"
    assert openmpi_path(_ompi(coll="basic,libnbc"), "allreduce", TWO_BY_TWO).describe() == "basic"
    assert openmpi_path(_ompi(coll_sm_priority=40), "bcast", ONE_NODE).describe() == "sm"
    assert openmpi_path(_ompi(coll_sm_priority=40), "alltoall", ONE_NODE).describe() == "tuned"
    adapt_up = openmpi_path(
        _ompi(coll_han_allreduce_up_module="adapt", coll_han_allreduce_low_module=1), "allreduce", TWO_BY_TWO
    )
    assert adapt_up.levels == (("inter-node", "adapt"), ("node-local", "sm"))
    flat = openmpi_path(_ompi(coll_han_allreduce_dynamic_global_communicator_module=3), "allreduce", TWO_BY_TWO)
    assert flat.component == "tuned" and "han hands the whole communicator to tuned" in flat.note
    rules = openmpi_path(
        _ompi(coll_han_use_dynamic_file_rules=1, coll_han_dynamic_rules_filename="/x/han.txt"), "bcast", TWO_BY_TWO
    )
    assert rules.component == "han" and "han's rules file" in rules.note
    # nodes with different numbers of ranks: han hands these to the next component, not allreduce
    assert openmpi_path(_ompi(), "bcast", UNEVEN).describe().startswith("tuned; han falls back")
    assert openmpi_path(_ompi(), "allreduce", UNEVEN).component == "han"


def test_a_site_component_that_takes_collectives_over_is_named():
    hcoll = _ompi(coll_hcoll_priority=90, coll_hcoll_enable=1, coll_hcoll_np=2)
    path = openmpi_path(hcoll, "allreduce", TWO_BY_TWO)
    assert path.component == "hcoll" and "Open MPI's tuning files do not apply" in path.note
    assert openmpi_path(hcoll, "gather", TWO_BY_TWO).component == "han"  # hcoll has no gather
    assert openmpi_path(_ompi(coll_hcoll_priority=90, coll_hcoll_enable=0), "allreduce", ONE_NODE).component == "tuned"
    ucc_off = _ompi(coll_ucc_priority=10, coll_ucc_enable=0)
    assert openmpi_path(ucc_off, "allreduce", TWO_BY_TWO).component == "han"
    ucc_on = _ompi(coll_ucc_priority=100, coll_ucc_enable=1)
    assert openmpi_path(ucc_on, "alltoall", TWO_BY_TWO).component == "ucc"
    unknown = openmpi_path(_ompi(coll_xhc_priority=80), "allreduce", ONE_NODE)
    assert unknown.component == "tuned" and "xhc (priority 80)" in unknown.note


def test_mpich_composition_or_flat_mpir():
    mpich = Settings(
        "MPICH",
        {
            "MPIR_CVAR_DEVICE_COLLECTIVES": "percoll",
            "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": 1,
            "MPIR_CVAR_ALLREDUCE_COMPOSITION": 0,
            "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring",
        },
    )
    auto = mpich_path(mpich, "ALLREDUCE", TWO_BY_TWO)
    assert auto.component == "CH4 composition" and "built-in selection tree" in auto.note and "MPIR ring" in auto.note
    mpich.values["MPIR_CVAR_ALLREDUCE_COMPOSITION"] = 2
    assert mpich_path(mpich, "ALLREDUCE", TWO_BY_TWO).levels == (("composition", "NM only"),)
    mpich.values["MPIR_CVAR_DEVICE_COLLECTIVES"] = "none"
    assert mpich_path(mpich, "ALLREDUCE", TWO_BY_TWO).describe() == "MPIR (whole communicator: ring)"


# ---- against the library's own selection (coll_base_verbose) ----


def _selected(stderr: str) -> list[str]:
    """The components Open MPI enabled on MPI_COMM_WORLD, by priority, from the rank that said most
    (the ranks' lines reach the launcher's stderr interleaved, now and then glued into one line)."""
    blocks: dict[str, list[tuple[int, str]]] = {}
    inside: dict[str, bool] = {}
    for m in re.finditer(r"\[([^\]\s]+)\] coll:base:comm_select: ([^\[\n]*)", stderr):
        pid, text = m.group(1), m.group(2)
        if text.startswith("new communicator"):
            inside[pid] = "MPI_COMM_WORLD" in text
        elif inside.get(pid):
            sel = re.match(r"selecting\s+(\w+), priority\s+(-?\d+), Enabled", text)
            if sel:
                blocks.setdefault(pid, []).append((int(sel.group(2)), sel.group(1)))
    best = max(blocks.values(), key=len, default=[])
    return [name for _, name in sorted(best)]


def _expected(enabled: list[str], api: str) -> str:
    serving = [c for c in enabled if c in PROVIDES and api in PROVIDES[c]]
    return serving[-1] if serving else "none"


def _compare(out: subprocess.CompletedProcess) -> dict:
    assert out.returncode == 0, out.stderr[-2000:]
    enabled = _selected(out.stderr)
    assert enabled, out.stderr[-2000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    for api, path in found["paths"].items():
        assert path["component"] == _expected(enabled, api), (api, path, enabled)
    return found


@pytest.mark.process
@pytest.mark.parametrize(
    "extra, allreduce",
    [([], "tuned"), (["--mca", "coll_sm_priority", "40"], "sm"), (["--mca", "coll", "^tuned"], "basic")],
)
def test_the_resolution_agrees_with_open_mpis_own_selection_on_one_node(extra, allreduce):
    found = launcher()
    if found is None or found.vendor != "Open MPI":
        pytest.skip("Open MPI's verbose selection")
    out = subprocess.run(
        found.argv(2) + ["--mca", "coll_base_verbose", "10", *extra, sys.executable, str(DRIVER)],
        capture_output=True,
        text=True,
        timeout=120,
        env=mpi_env(),
    )
    assert _compare(out)["paths"]["allreduce"]["component"] == allreduce


@pytest.mark.process
def test_each_point_says_what_served_it_and_the_report_says_it_once(tmp_path):
    found = launcher()
    if found is None or found.vendor not in ("Open MPI", "MPICH"):
        pytest.skip("needs Open MPI or MPICH")
    path = tmp_path / "r.h5"
    args = ["sweep", "-o", str(path), "--collectives", "allreduce,barrier", "--algorithms", "library,ring"]
    out = run_mpi(2, args + ["--sizes", "8", "--iters", "5", "--max-time", "0.01", "--quiet"])
    assert out.returncode == 0, out.stderr[-2000:]
    run = load_runs(str(path))[-1]
    served = {(p["collective"], p["algorithm"]): p["served_by"] for p in run.points}
    assert served[("allreduce", "ring")] == "" and served[("empty", "native")] == ""
    want = "tuned" if found.vendor == "Open MPI" else "CH4 (composition: auto)"
    assert served[("allreduce", "library")].startswith(want) and served[("barrier", "library")].startswith(want)
    assert json.loads(run.attrs["coll_paths"])["allreduce"].startswith(want)
    report = run_local(["report", str(path)])
    assert "served on 2 ranks of 1 node: allreduce, barrier: " + want in " ".join(report.stdout.split())


# ---- across the fabric lab's hosts ----


@pytest.fixture
def lab():
    yield
    _down()


def _lab_openmpi() -> None:
    found = launcher()
    if found is None or found.vendor != "Open MPI":
        pytest.skip("han is Open MPI's")


@pytest.mark.process
@needs_lab
def test_han_across_two_hosts_agrees_with_the_library_and_reaches_the_report(lab, tmp_path):
    _lab_openmpi()
    _up(2, 2)
    out = subprocess.run(
        [_wrapper(), "-n", "4", "--mca", "coll_base_verbose", "10", sys.executable, str(DRIVER)],
        capture_output=True,
        text=True,
        timeout=300,
        env=mpi_env(),
    )
    found = _compare(out)
    assert found["shape"] == "4 ranks of 2 nodes"
    assert found["paths"]["allreduce"]["text"] == "han (inter-node: libnbc, node-local: tuned)"
    assert found["paths"]["alltoall"]["text"] == "tuned"
    path = tmp_path / "lab.h5"
    run = run_local(
        ["lab", "run", "--name", NAME, "-n", "4", "--", "sweep", "-o", str(path), "--collectives", "allreduce"]
        + ["--comm-sizes", "2,4", "--sizes", "8", "--iters", "5", "--max-time", "0.01", "--quiet"],
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    served = {p["nranks"]: p["served_by"] for p in load_runs(str(path))[-1].points if p["algorithm"] == "library"}
    assert served == {2: "tuned", 4: "han (inter-node: libnbc, node-local: tuned)"}
    report = " ".join(run_local(["report", str(path)]).stdout.split())
    assert "served on 4 ranks of 2 nodes: allreduce: han (inter-node: libnbc, node-local: tuned)" in report


@pytest.mark.process
@needs_lab
def test_a_tuned_rule_han_keeps_from_being_read_is_not_consulted_never_verified(lab, tmp_path):
    _lab_openmpi()
    from test_tuning_mpi import _emit, _ring_above_64k

    from fabricprobe.tuning.measure.shown import decisive
    from fabricprobe.tuning.plan.libraries import for_vendor
    from fabricprobe.tuning.verify.checks import NOT_CONSULTED, VERIFIED, verify

    _up(2, 2)
    table = _ring_above_64k("Open MPI", 4)
    checks = verify(table, for_vendor("Open MPI"), _emit("Open MPI", table, tmp_path), [_wrapper()])
    assert checks and {c.status for c in checks} == {NOT_CONSULTED}, [c.as_dict() for c in checks]
    assert "han (inter-node: libnbc, node-local: tuned) serves allreduce on 4 ranks of 2 nodes" in checks[0].detail
    assert not any(c.status == VERIFIED for c in checks)
    left = decisive(table, checks, [])  # never in a decisive file, whatever a before/after says
    assert left and all("not consulted" in g.line() for g in left) and not table.tuned()


def test_tune_writes_no_tuned_rule_where_han_served_the_default():
    """A tune-sweep on several nodes forces coll/tuned algorithms, but under han they run only on han's
    sub-communicators: a rule keyed on the whole communicator would never be read, so none is written."""
    from fabricprobe.store import Run
    from fabricprobe.tuning.choose.rules import DEFAULT, choose

    def point(n: int, algorithm: str, t: float, served: str) -> dict:
        return dict(
            collective="allreduce", status="ok", mode="barrier", in_place=False, dtype="float32", op="sum",
            algorithm=algorithm, nranks=n, bytes=1 << 20, median_s=t, ci_low_s=t * 0.99, ci_high_s=t * 1.01,
            served_by=served,
        )  # fmt: skip

    han = "han (inter-node: libnbc, node-local: tuned)"
    points = [point(2, "library", 2.0, "tuned"), point(2, "library:ring", 1.0, "tuned")]
    points += [point(4, "library", 2.0, han), point(4, "library:ring", 1.0, han)]
    run = Run("x.h5", "0001", {"mpi_vendor": "Open MPI", "mpi_library_version": "v", "nranks": 4}, points)
    table = choose([run])
    assert [r.winner for r in table.rules["allreduce"][2]] == ["ring"]
    assert [r.winner for r in table.rules["allreduce"][4]] == [DEFAULT]
    assert table.served_elsewhere == {"allreduce": {4: han}}
    run.points = [dict(p, served_by="") for p in points]  # files before served_by: rules as before
    assert [r.winner for r in choose([run]).rules["allreduce"][4]] == ["ring"]


def test_a_trace_whose_steps_only_change_order_is_no_proof_of_a_switch():
    """Under han the order of one algorithm's steps changes from run to run (lab, 1 MiB on 2 × 2)."""
    from fabricprobe.tuning.measure.mpit_switch import INDISTINGUISHABLE, SWITCHED, proofs

    default = [[16384, 2048, 2048], [], [16384], []]
    reordered = [[2048, 16384, 2048], [], [16384], []]
    other = [[65536, 65536], [65536, 65536], [65536, 65536], [65536, 65536]]
    traces = {("allreduce", "", 4): default, ("allreduce", "ring", 4): reordered, ("allreduce", "rd", 4): other}
    verdicts = {p["algorithm"]: p["verdict"] for p in proofs(traces)}
    assert verdicts == {"ring": INDISTINGUISHABLE, "rd": SWITCHED}


@pytest.mark.process
@needs_lab
@pytest.mark.parametrize("hosts, per_host, tuned_consulted", [(2, 2, False), (4, 1, True)])
def test_the_trace_shows_whether_a_forced_tuned_algorithm_runs(lab, hosts, per_host, tuned_consulted):
    """The observation behind the resolution: a coll/tuned algorithm forced for the whole job changes
    the allreduce's reduction steps only where tuned serves it. On 2 × 2 han serves it (the steps stay
    han's, in any order); on 4 × 1 han passes through (one rank a node) and the forced ring shows."""
    _lab_openmpi()
    from fabricprobe.tuning.measure.mpit_switch import same_steps
    from fabricprobe.tuning.verify.fingerprint import probe

    _up(hosts, per_host)
    ring = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_allreduce_algorithm": "4"}
    default, forced = (json.loads(probe([_wrapper()], 4, "allreduce", 1 << 20, "trace", env)) for env in ({}, ring))
    assert same_steps(default, forced) != tuned_consulted, (default, forced)
    path = json.loads(probe([_wrapper()], 4, "allreduce", 1 << 20, "path", {}))
    assert path["component"] == ("tuned" if tuned_consulted else "han"), path
