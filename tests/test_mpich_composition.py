"""MPICH on several nodes: its CH4 compositions as tune-sweep's candidates where the communicator has a
hierarchy, the CH4 selection tree they are written into, and (in the fabric lab, MPICH only) the proof
that the written tree makes the composition run, by the reduction trace."""

from __future__ import annotations

import json

import pytest
from mpirun import launcher
from test_coll_path import lab  # noqa: F401 - the lab fixture (brings the lab down)
from test_han_tuning import _point
from test_lab import _up, _wrapper, needs_lab
from test_tuning import MPIVARS
from test_tuning_mpi import mpich_files

from fabricprobe.mpienv.coll_path import MPICH_HIERARCHY, CommShape, Settings, mpich_hierarchical, mpich_path
from fabricprobe.store import Run
from fabricprobe.tuning.choose.rules import DEFAULT, Decision, Range, Table, choose
from fabricprobe.tuning.emit import mpich as emit_mpich
from fabricprobe.tuning.plan.mpich import MPICH

COMPOSITION_LINE = (
    "\tMPIR_CVAR_ALLREDUCE_COMPOSITION =0\tSCOPE_ALL_EQ\tNo-object\tMPI_INT\tVERBOSITY_USER_BASIC\tSelect composition\n"
)
TWO_BY_TWO, TWO_BY_ONE, ONE_NODE = CommShape.of([0, 0, 1, 1]), CommShape.of([0, 1]), CommShape.of([0, 0, 0, 0])
SERVED = f"{MPICH_HIERARCHY} (composition: auto); chosen per call from CH4's built-in selection tree"


def test_compositions_are_candidates_only_where_the_hierarchy_serves():
    lib = MPICH(text=MPIVARS + COMPOSITION_LINE)
    assert "composition_alpha" not in {v.name for v in lib.variants("allreduce")}  # not unless the job has one
    lib.hierarchy = True
    found = {v.name: v.env for v in lib.variants("allreduce")}
    assert found["composition_alpha"] == {"MPIR_CVAR_ALLREDUCE_COMPOSITION": "1"}
    assert found["composition_beta"] == {"MPIR_CVAR_ALLREDUCE_COMPOSITION": "2"}
    assert found["composition_delta"] == {"MPIR_CVAR_ALLREDUCE_COMPOSITION": "4"}
    assert "composition_gamma" not in found  # SHM only: a one-node composition
    assert lib.hierarchy_variants("bcast") == []  # this mpivars lists no bcast composition variable


def test_the_hierarchy_is_several_nodes_with_more_than_one_rank_on_some():
    assert mpich_hierarchical(TWO_BY_TWO)
    assert not mpich_hierarchical(TWO_BY_ONE) and not mpich_hierarchical(ONE_NODE)
    settings = Settings("MPICH", {"MPIR_CVAR_ALLREDUCE_COMPOSITION": 0, "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"})
    assert mpich_path(settings, "ALLREDUCE", TWO_BY_TWO).component == MPICH_HIERARCHY
    one_a_node = mpich_path(settings, "ALLREDUCE", TWO_BY_ONE)
    assert one_a_node.component == "CH4" and "one rank a node" in one_a_node.note
    assert mpich_path(settings, "ALLREDUCE", ONE_NODE).component == "CH4"


def test_where_a_composition_served_the_mpir_algorithms_are_not_candidates():
    """On a hierarchical communicator a forced MPIR algorithm ran on the node leaders' sub-communicator
    only: a rule keyed on the whole size would not be what runs, so the compositions compete."""
    points = [
        _point(4, "library", 1.0, SERVED),
        _point(4, "library:ring", 0.1, SERVED),
        _point(4, "library:composition_beta", 0.5, SERVED),
        _point(2, "library", 1.0, "CH4 (composition: auto)"),
        _point(2, "library:ring", 0.5, "CH4 (composition: auto)"),
    ]
    table = choose([Run("x.h5", "0001", {"mpi_vendor": "MPICH", "nranks": 4}, points)])
    assert [r.winner for r in table.rules["allreduce"][4]] == ["composition_beta"]
    assert [r.winner for r in table.rules["allreduce"][2]] == ["ring"]  # a flat communicator: MPIR's rule
    assert table.served_elsewhere == {"allreduce": {4: SERVED}}


def _table() -> Table:
    d = lambda size: Decision(size, "x", 1.0, 1.0, 0.0)  # noqa: E731
    return Table(
        "MPICH",
        "",
        4,
        "float32",
        {
            "allreduce": {
                4: [Range(0, 65536, DEFAULT, [d(8)]), Range(65536, None, "composition_beta", [d(65536), d(1 << 20)])],
                2: [Range(0, None, "ring", [d(8)])],
            }
        },
    )


ORIGINAL = {"comm_size=any": {"composition=MPIDI_Allreduce_intra_composition_alpha": {}}}
TREES = {
    "mpir": {"collective=allreduce": {"comm_type=intra": {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}}}},
    "ch4": {"collective=allreduce": {"comm_type=intra": ORIGINAL}},
}


def test_the_ch4_tree_names_the_composition_under_comm_hierarchy_parent():
    tree = emit_mpich.ch4_tree(_table(), json.loads(json.dumps(TREES)))
    node = tree["collective=allreduce"]["comm_type=intra"]
    assert list(node) == ["comm_hierarchy=parent", "comm_hierarchy=any"] and node["comm_hierarchy=any"] == ORIGINAL
    sections = node["comm_hierarchy=parent"]
    assert list(sections) == ["comm_size<=3", "comm_size<=4", "comm_size=any"]  # only the size measured on
    assert sections["comm_size<=3"] == sections["comm_size=any"] == ORIGINAL
    chain = sections["comm_size<=4"]
    assert chain["avg_msg_size<=65535"] == ORIGINAL  # the default's range keeps MPICH's own subtree
    beta = {"composition=MPIDI_Allreduce_intra_composition_beta": {}}
    assert chain["avg_msg_size=any"] == beta  # beta has no precondition to guard
    assert emit_mpich.guarded("allreduce", "composition_alpha", {"leaf": {}}, ORIGINAL) == {
        "is_commutative=yes": {"leaf": {}},
        "is_commutative=no": ORIGINAL,
    }  # alpha reached through a tree runs without CH4's check for a commutative op


def test_the_mpir_tree_keeps_the_flat_rules_and_leaves_the_compositions_ranges_alone():
    tree = emit_mpich.mpir_tree(_table(), json.loads(json.dumps(TREES)))
    sections = tree["collective=allreduce"]["comm_type=intra"]
    original = TREES["mpir"]["collective=allreduce"]["comm_type=intra"]
    assert sections["comm_size<=2"]["avg_msg_size=any"]["is_commutative=yes"] == {
        "algorithm=MPIR_Allreduce_intra_ring": {}
    }
    assert sections["comm_size<=4"] == {"avg_msg_size<=65535": original, "avg_msg_size=any": original}
    assert (
        emit_mpich.ch4_tree(Table("MPICH", "", 2, "float32", {"allreduce": {2: _table().rules["allreduce"][2]}}), TREES)
        is None
    )


# ---- in the fabric lab, MPICH only ----


def _lab_mpich() -> None:
    found = launcher()
    if found is None or found.vendor != "MPICH":
        pytest.skip("CH4 compositions are MPICH's")


def _trace(n: int, env: dict[str, str]) -> str:
    from fabricprobe.tuning.verify.fingerprint import probe

    out = probe([_wrapper()], n, "allreduce", 1 << 20, "trace", env)
    assert not out.startswith("error"), out
    return out


@pytest.mark.process
@needs_lab
@pytest.mark.usefixtures("lab")
def test_the_written_ch4_tree_makes_the_composition_run_on_two_hosts(tmp_path):
    """2 hosts x 2 ranks: the default (NM + SHM: a node-local reduce, then the leaders) and NM only (every
    rank in one recursive doubling) leave different traces; with the written CH4 tree the call leaves NM
    only's, and tune --verify's checks say verified."""
    _lab_mpich()
    from fabricprobe.tuning.plan.libraries import for_vendor
    from fabricprobe.tuning.verify.checks import VERIFIED, verify

    _up(2, 2)
    table = Table("MPICH", "", 4, "float32", {"allreduce": {4: _table().rules["allreduce"][4]}})
    files = mpich_files(table, tmp_path)
    assert set(files) == {"mpir", "ch4"}
    env = emit_mpich.load_env(files)
    beta = {"MPIR_CVAR_ALLREDUCE_COMPOSITION": "2"}
    assert _trace(4, env) == _trace(4, beta) != _trace(4, {})
    checks = verify(table, for_vendor("MPICH"), env, [_wrapper()])
    at = {c.size: c for c in checks}
    assert at[1 << 20].status == VERIFIED and at[65536].status == VERIFIED, [c.as_dict() for c in checks]


@pytest.mark.process
@needs_lab
@pytest.mark.usefixtures("lab")
def test_with_one_rank_a_node_every_composition_leaves_the_same_trace():
    """2 hosts x 1 rank: the node communicators hold one rank each, so the compositions are the same
    messages (why they are not measured there: coll_path.mpich_hierarchical); an MPIR algorithm still
    shows (ring's halves)."""
    _lab_mpich()
    _up(2, 1)
    traces = {k: _trace(2, {"MPIR_CVAR_ALLREDUCE_COMPOSITION": str(k)}) for k in (0, 1, 2, 4)}
    assert len(set(traces.values())) == 1, traces
    assert _trace(2, {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}) != traces[0]
