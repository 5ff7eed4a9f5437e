"""Tuning Open MPI 5's han on several nodes (tuning/plan/openmpi_han.py, tuning/emit/openmpi_han.py):
its variants and how each is switched, the choice among them where han served the default, its
dynamic rules file in the format v5.0.10 reads, and in the fabric lab (2 hosts × 2 ranks) a planted
rules file whose inter-node rule shows in the trace, and tune-sweep → tune --verify end to end."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from mpirun import launcher, mpi_env, run_local
from test_coll_path import _lab_openmpi, lab  # noqa: F401 - the lab fixture (brings the lab down)
from test_lab import _up, _wrapper, needs_lab
from test_tuning import OMPI_INFO

from fabricprobe.store import Run, load_runs
from fabricprobe.tuning.choose.rules import DEFAULT, Range, Table, choose
from fabricprobe.tuning.emit import openmpi_han as emit_han
from fabricprobe.tuning.emit import registry
from fabricprobe.tuning.plan.openmpi import OpenMPI
from fabricprobe.tuning.plan.switch import plan_switch

HAN_INFO = "\n".join(
    f"mca:coll:han:param:coll_han_{name}:value:{value}"
    for name, value in [
        ("priority", 35),
        ("allreduce_segsize", 65536),
        ("allreduce_up_module", "self"),
        ("allreduce_low_module", "self"),
        ("allreduce_dynamic_global_communicator_module", 6),
        ("allgather_up_module", "self"),
        ("allgather_low_module", "self"),
        ("allgather_dynamic_global_communicator_module", 6),
    ]
)
HAN = "han (inter-node: libnbc, node-local: tuned)"


def _library() -> OpenMPI:
    lib = OpenMPI(text=OMPI_INFO, han_text=HAN_INFO)
    lib.hierarchy = True
    return lib


def test_hans_variants_and_what_each_sets():
    lib = _library()
    by_name = {v.name: v.env for v in lib.variants("allreduce")}
    assert by_name["flat"] == {"OMPI_MCA_coll_han_allreduce_dynamic_global_communicator_module": "3"}
    assert by_name["flat_ring"] == {
        "OMPI_MCA_coll_han_allreduce_dynamic_global_communicator_module": "3",
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
        "OMPI_MCA_coll_tuned_allreduce_algorithm": "4",
    }
    assert by_name["han_up_adapt"] == {"OMPI_MCA_coll_han_allreduce_up_module": "1"}
    assert by_name["han_low_sm"] == {"OMPI_MCA_coll_han_allreduce_low_module": "1"}
    assert by_name["han_seg_16k"] == {"OMPI_MCA_coll_han_allreduce_segsize": "16384"}
    assert "ring" in by_name and DEFAULT in by_name  # coll/tuned's own stay
    assert not any(n.startswith("han_seg") for n in (v.name for v in lib.variants("allgather")))  # not segmented
    lib.hierarchy = False  # one node: none measured, yet a rule's winner is still found by name
    assert not any(v.name.startswith(("flat", "han_")) for v in lib.variants("allreduce"))
    assert any(v.name == "flat_ring" for v in lib.known_variants("allreduce"))
    assert OpenMPI(text=OMPI_INFO, han_text="").hierarchy_variants("allreduce") == []  # Open MPI 4.1: no han


def test_the_module_settings_go_to_launches_of_their_own():
    """han turns its module strings into ids only at MPI_Init: MPI_T would accept a write that does nothing."""
    lib = _library()
    variants = lib.variants("allreduce")
    described = {
        lib.control_variable(k): {"writable": True, "scope": "all", "values": [], "value": 0}
        for v in variants
        for k in v.env
    }
    plan = plan_switch(lib, variants, described)
    launched = {v.name: why for v, why in plan.by_launch}
    assert set(launched) == {"han_up_adapt", "han_low_sm"}
    assert "only at MPI_Init" in launched["han_low_sm"]
    assert {"flat", "flat_ring", "han_seg_16k", "han_seg_512k"} <= set(plan.writes["allreduce"])
    assert plan.served_by["allreduce"]["flat_ring"] == "han" and "ring" not in plan.served_by["allreduce"]


def _point(n, algorithm, t, served, size=1 << 20):
    return dict(
        collective="allreduce", status="ok", mode="barrier", in_place=False, dtype="float32", op="sum",
        algorithm=algorithm, nranks=n, bytes=size, median_s=t, ci_low_s=t * 0.99, ci_high_s=t * 1.01,
        served_by=served,
    )  # fmt: skip


def _run(points):
    return Run("x.h5", "0001", {"mpi_vendor": "Open MPI", "mpi_library_version": "v", "nranks": 4}, points)


def test_where_han_served_its_variants_are_the_candidates_and_tuned_ones_are_not():
    points = []
    for size, flat, up in ((8, 2.0, 0.5), (1 << 20, 0.3, 0.8)):
        points += [
            _point(4, "library", 1.0, HAN, size),
            _point(4, "library:ring", 0.1, HAN, size),  # ran inside han's sub-communicators: never a rule
            _point(4, "library:flat_ring", flat, HAN, size),
            _point(4, "library:han_up_adapt", up, HAN, size),
        ]
    points += [_point(2, "library", 1.0, "tuned"), _point(2, "library:flat_ring", 0.1, "tuned")]
    table = choose([_run(points)])
    assert [(r.lo, r.winner) for r in table.rules["allreduce"][4]] == [(0, "han_up_adapt"), (1 << 20, "flat_ring")]
    assert [r.winner for r in table.rules["allreduce"][2]] == [DEFAULT]  # idle there: the default measured again
    assert table.served_elsewhere == {"allreduce": {4: HAN}}


def test_one_han_setting_a_section_and_only_where_it_is_nowhere_slower():
    """Module and segment settings hold for every size: the han_* winner of most sizes labels every size
    han keeps, unless it is clearly slower than the default at one of them."""
    points = []
    for size, seg, up in ((8, 0.5, 0.9), (64, 0.5, 0.9), (1024, 0.9, 0.5)):
        points += [
            _point(4, "library", 1.0, HAN, size),
            _point(4, "library:han_seg_16k", seg, HAN, size),
            _point(4, "library:han_up_adapt", up, HAN, size),
        ]
    table = choose([_run(points)])
    assert [r.winner for r in table.rules["allreduce"][4]] == ["han_seg_16k"]
    points += [
        _point(4, "library", 1.0, HAN, 4096),
        _point(4, "library:han_seg_16k", 2.0, HAN, 4096),
        _point(4, "library:han_up_adapt", 1.0, HAN, 4096),
    ]
    table = choose([_run(points)])
    assert {r.winner for r in table.rules["allreduce"][4]} == {DEFAULT}  # clearly slower at 4 KiB: none kept


def _table() -> Table:
    ranges = [Range(0, 65536, "flat_ring"), Range(65536, 1 << 20, DEFAULT), Range(1 << 20, None, "flat")]
    return Table(
        "Open MPI",
        "Open MPI v5.0.11",
        4,
        "float32",
        {"allreduce": {4: ranges}, "allgather": {4: [Range(0, None, DEFAULT)]}},
        {"allreduce": {4: HAN}, "allgather": {4: HAN}},
    )


def test_hans_rules_file_in_the_format_it_reads():
    text = emit_han.rules_file(_table())
    parsed = emit_han.parse_rules_file(text)
    assert list(parsed) == ["allreduce"]  # allgather kept han everywhere: not in the file
    (level, configs) = parsed["allreduce"][0]
    assert level == "global_communicator"
    assert configs == [(1, [(0, "han")]), (4, [(0, "tuned"), (65536, "han"), (1 << 20, "tuned")]), (5, [(0, "han")])]
    assert emit_han.han_message_size("allgather", 1 << 20, 4, "float32") == 1 << 18  # one rank's block
    assert emit_han.han_message_size("allreduce", 1 << 20, 4, "float32") == 1 << 20
    for bad in (text.replace("4  # communicator size >= 4", "4 4"), text.replace("1  # communicator size >= 1", "2")):
        with pytest.raises(ValueError):
            emit_han.parse_rules_file(bad)
    with pytest.raises(ValueError, match="unknown component"):
        emit_han.parse_rules_file(text.replace("0 tuned", "0 fast"))


def test_the_files_and_the_lines_that_load_them(tmp_path):
    table = _table()
    table.rules["allreduce"][4][1].winner = "han_seg_16k"
    emitted = registry.write_library_files(
        table, ["openmpi"], _library(), [], registry.folder_for(tmp_path, ["openmpi"])
    )
    assert emitted.files["openmpi-han"].name == "ompi_han_rules.unverified.conf"
    env = emitted.load_env
    assert env["OMPI_MCA_coll_han_use_dynamic_file_rules"] == "1"
    assert env["OMPI_MCA_coll_han_dynamic_rules_filename"] == str(emitted.files["openmpi-han"].resolve())
    assert env["OMPI_MCA_coll_han_allreduce_segsize"] == "16384"  # the one han setting the section keeps
    assert "--mca coll_han_allreduce_segsize 16384" in "".join(emitted.load_lines)
    tuned = (tmp_path / "ompi_rules.unverified.conf").read_text()
    assert "0 4 " in tuned and "-> flat_ring" in tuned  # tuned's ring where han hands allreduce to it


# ---- in the fabric lab ----


def _trace(env: dict[str, str], nbytes: int = 65536) -> list[list[int]]:
    from fabricprobe.tuning.verify.fingerprint import probe

    return json.loads(probe([_wrapper()], 4, "allreduce", nbytes, "trace", env))


@pytest.mark.process
@needs_lab
@pytest.mark.usefixtures("lab")
def test_a_planted_han_rules_file_changes_the_inter_node_step(tmp_path):
    """han's simple allreduce runs a node-local reduce, an allreduce of the node leaders and a node-local
    bcast, each on a sub-communicator whose component the rules file names per level. A file naming
    basic for the inter-node level, against one naming tuned (han's own default there): the leaders'
    inter-node step changes from tuned's halves to basic's whole vector, the node-local step stays sm's."""
    _lab_openmpi()
    _up(2, 2)
    files = {}
    for inter in ("tuned", "basic"):
        files[inter] = tmp_path / f"{inter}.conf"
        files[inter].write_text(
            f"1\nallreduce\n2\nintra_node\n1\n1\n1\n0 sm\ninter_node\n1\n1\n1\n0 {inter}  # the leaders' step\n"
        )
        emit_han.parse_rules_file(files[inter].read_text())
    base = {"OMPI_MCA_coll_han_use_allreduce_algorithm": "simple", "OMPI_MCA_coll_han_use_dynamic_file_rules": "1"}
    traces = {k: _trace({**base, "OMPI_MCA_coll_han_dynamic_rules_filename": str(p)}) for k, p in files.items()}
    n = 65536 // 4
    # ranks 0 and 2 lead their nodes: first the node-local reduce of n elements (sm, unchanged) ...
    assert traces["tuned"][0][0] == traces["basic"][0][0] == n and traces["tuned"][2][0] == traces["basic"][2][0] == n
    # ... then the inter-node step: tuned splits the vector (n/2 each), basic reduces it whole at the root
    assert traces["tuned"][0][1:] == [n // 2] and traces["tuned"][2][1:] == [n // 2], traces
    assert traces["basic"][0][1:] == [n] and traces["basic"][2][1:] == [], traces
    assert traces["tuned"][1] == traces["tuned"][3] == []  # the other ranks reduce nothing
    without = _trace({**base, "OMPI_MCA_coll_han_use_dynamic_file_rules": "0"})
    assert without == traces["tuned"]  # han's default for the level is tuned: the file is what changed it


@pytest.mark.process
@needs_lab
@pytest.mark.usefixtures("lab")
def test_tune_sweep_then_tune_verify_on_two_hosts(tmp_path):
    """tune-sweep -n 4 across 2 × 2 measures han's variants (flat_* in the one launch, the module settings
    in launches of their own, none on the 2 ranks of one node); tune --verify writes han's rules file
    and proves every rule it keeps, naming the level."""
    _lab_openmpi()
    _up(2, 2)
    out, files = tmp_path / "t.h5", tmp_path / "tuning"
    sweep = run_local(
        ["tune-sweep", "-n", "4", "--mpiexec", _wrapper(), "-o", str(out), "--collectives", "allreduce"]
        + [
            "--sizes",
            "8,1M",
            "--comm-sizes",
            "2,4",
            "--algorithms",
            "none",
            "--only",
            "ring,flat,flat_ring,han_up_adapt",
        ],
        timeout=600,
    )
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    assert "han (inter-node: libnbc, node-local: tuned) serves 4 ranks of 2 nodes" in " ".join(sweep.stderr.split())
    points = [p for r in load_runs(str(out)) for p in r.points if p["collective"] == "allreduce"]
    status = {(p["nranks"], p["algorithm"], p["bytes"]): p["status"] for p in points}
    assert status[(2, "library:flat_ring", 8)] == "not_runnable"  # one node: han does not run
    assert status[(4, "library:flat_ring", 8)] == "ok" and status[(4, "library:han_up_adapt", 8)] == "ok"
    served = {(p["nranks"], p["algorithm"]): p["served_by"] for p in points if p["status"] == "ok"}
    assert served[(4, "library:flat_ring")].startswith("tuned")  # han handed it over: read after the switch
    assert served[(4, "library:han_up_adapt")] == "han (inter-node: adapt, node-local: tuned)"
    tune = run_local(
        ["tune", str(out), "-o", str(files), "--verify", "--reps", "2", "--mpiexec", _wrapper()], timeout=600
    )
    assert tune.returncode in (0, 1), tune.stderr[-3000:]
    doc = json.loads((files / "tuning.json").read_text())
    if "verification" not in doc:
        # No algorithm beat the default beyond the noise at any size (CI at 4076267): no file to load,
        # nothing to verify. Anything else without a verification is a failure.
        winners = [r["winner"] for rules in doc["rules"]["rules"].get("allreduce", {}).values() for r in rules]
        assert not doc["load_env"] and all(w == DEFAULT for w in winners), (winners, tune.stderr[-3000:])
        pytest.skip("the tune-sweep chose no rule for the library (measured noise): nothing to verify")
    checks = [c for c in doc["verification"]["checks"] if c["comm_size"] == 4]
    said = [(c["size"], c["expected"], c["status"], c["detail"][:120]) for c in checks], tune.stdout[-3000:]
    assert checks and all(c["status"] in ("verified", "indistinguishable") for c in checks), said
    if any(r["winner"].startswith("flat") for r in doc["rules"]["rules"]["allreduce"]["4"]):
        assert any(f.startswith("ompi_han_rules") for f in (p.name for p in files.iterdir()))
        assert any(c["level"] == "global" and c["status"] == "verified" for c in checks), checks


@pytest.mark.process
def test_hans_rules_file_is_read_by_the_library_we_have():
    """The emitted file, loaded by this Open MPI: han reads it at start (even on one node, where it does
    not run) and dumps the rules it kept (coll_han_dump_dynamic_rules): each as written."""
    found = launcher()
    if found is None or found.vendor != "Open MPI":
        pytest.skip("han is Open MPI's")
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "han.conf"
        path.write_text(emit_han.rules_file(_table()))
        env = mpi_env(
            {
                "OMPI_MCA_coll_han_use_dynamic_file_rules": "1",
                "OMPI_MCA_coll_han_dynamic_rules_filename": str(path),
                "OMPI_MCA_coll_han_dump_dynamic_rules": "1",
                "OMPI_MCA_coll_han_verbose": "5",
            }
        )
        out = subprocess.run(
            found.argv(2) + [sys.executable, "-c", "from mpi4py import MPI; MPI.COMM_WORLD.Barrier()"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-2000:]
    assert "read 5 rules" in text and "error" not in text.lower(), text[-3000:]
    dumped = set(re.findall(r"configuration size (\d+) message size (\d+) -> collective component \d+ \((\w+)\)", text))
    assert dumped == {
        ("1", "0", "han"),
        ("4", "0", "tuned"),
        ("4", "65536", "han"),
        ("4", "1048576", "tuned"),
        ("5", "0", "han"),
    }


def test_the_second_calls_messages_are_a_two_call_job_less_a_one_call_job():
    """On several nodes han's set-up messages (tuned's, at a communicator's first call) are taken out."""
    from fabricprobe.tuning.verify.fingerprint import second_call

    one = json.dumps([[0, 1, 516, 2], [1, 0, 516, 2], [2, 3, 4, 1]])  # the call and han's 4-byte set-up
    two = json.dumps([[0, 1, 1028, 3], [1, 0, 1028, 3], [2, 3, 4, 1]])
    assert json.loads(second_call(two, one)) == [[0, 1, 512, 1], [1, 0, 512, 1]]
    assert second_call(two, json.dumps([[5, 6, 1, 1]])).startswith("error")  # a pair only in the one-call job
    assert second_call(one, one).startswith("error")  # no messages left: no fingerprint


def test_a_range_whose_default_crashes_the_monitoring():
    """Under han Open MPI's pml monitoring crashes the job (lab 2 × 2, bcast at 64 KiB): a range the files
    hand to tuned is still proven by its own fingerprint; a range where han runs only has to run."""
    from fabricprobe.tuning.verify.checks import ERROR, MISMATCH, UNVERIFIABLE, VERIFIED, _under_failed_monitoring

    crash = "error: Signal: Segmentation fault (11)"
    check = _under_failed_monitoring
    assert check("bcast", 4, 65536, "flat_knomial", "[[0, 1, 9, 1]]", "[[0, 1, 9, 1]]", crash, "").status == VERIFIED
    assert check("bcast", 4, 65536, "flat_knomial", "[[0, 1, 9, 1]]", "[[0, 2, 9, 1]]", crash, "").status == MISMATCH
    assert check("bcast", 4, 65536, "flat_knomial", crash, "[[0, 2, 9, 1]]", crash, "").status == ERROR
    assert check("bcast", 4, 65536, DEFAULT, crash, crash, crash, "ok").status == UNVERIFIABLE
    assert check("bcast", 4, 65536, "han_seg_16k", crash, crash, crash, "error: died").status == ERROR
