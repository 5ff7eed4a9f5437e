"""No rule for the algorithm the library runs anyway (issue 66): where a rule's winner is what the
library's own decision picks at that size (Open MPI's fixed decision, MPICH's tree), the size goes back
to the default before any file is written. The models are checked against the libraries themselves in
tests/test_tuning_mpi.py; here, the logic around them."""

from __future__ import annotations

import pytest

from fabricprobe.tuning.choose.library_choice import leave_library_choice
from fabricprobe.tuning.choose.rules import Decision, Range, Table
from fabricprobe.tuning.plan import mpich_tree
from fabricprobe.tuning.plan.openmpi import OpenMPI
from fabricprobe.tuning.plan.openmpi_fixed import fixed_algorithm, release

KIB = 1024
BY = "the library's own decision"


def _d(size: int, winner: str) -> Decision:
    return Decision(size, winner, 2.0, 1.0, 0.01)


def _table() -> Table:
    """allgather on 2 ranks: two_proc at 8 B and 1 KiB, ring at 64 KiB and 1 MiB; on 4 ranks (served by
    han): two_proc everywhere."""
    two = [Range(0, 64 * KIB, "two_proc", [_d(8, "two_proc"), _d(KIB, "two_proc")])]
    two.append(Range(64 * KIB, None, "ring", [_d(64 * KIB, "ring"), _d(1 << 20, "ring")]))
    four = [Range(0, None, "two_proc", [_d(8, "two_proc")])]
    table = Table("Open MPI", "Open MPI v5.0.11", 2, "float32", {"allgather": {2: two, 4: four}})
    table.served_elsewhere = {"allgather": {4: "han"}}
    return table


def test_sizes_where_the_rule_names_the_librarys_choice_go_back_and_the_ranges_are_rebuilt():
    table = _table()
    choice = lambda coll, n, size: "two_proc" if size < 1 << 20 else "ring"  # noqa: E731
    left = leave_library_choice(table, choice, BY)
    ranges = [(r.lo, r.hi, r.winner) for r in table.rules["allgather"][2]]
    assert ranges == [(0, 64 * KIB, "default"), (64 * KIB, 1 << 20, "ring"), (1 << 20, None, "default")]
    assert [(g.winner, g.sizes) for g in left] == [("two_proc", [8, KIB]), ("ring", [1 << 20])]
    assert left[0].reasons == [f"{BY} runs two_proc there anyway"]
    assert left[1].reasons == [f"{BY} runs ring at 1 MiB anyway"]
    assert left[0].span == "[0 B, 64 KiB)"  # the rule as the tune-sweep chose it
    # the section another component served keeps its rule: the library's decision there is not this one
    assert [r.winner for r in table.rules["allgather"][4]] == ["two_proc"]
    # the default's ranges keep the default's time: nothing runs faster where nothing changes
    assert all(d.winner_s == d.default_s for d in table.rules["allgather"][2][0].decisions)


def test_where_the_librarys_choice_is_unknown_or_other_every_rule_stays():
    for choice in (lambda c, n, s: None, lambda c, n, s: "bruck"):
        table = _table()
        assert leave_library_choice(table, choice, BY) == []
        assert [r.winner for r in table.rules["allgather"][2]] == ["two_proc", "ring"]


def _ompi(enumerators: str) -> OpenMPI:
    """An Open MPI whose ompi_info lists these coll:id:name enumerators."""
    text = "\n".join(
        f"mca:coll:tuned:param:coll_tuned_{c}_algorithm:enumerator:value:{i}:{name}"
        for c, i, name in (e.split(":") for e in enumerators.split())
    )
    return OpenMPI(text=text, han_text="")


def test_open_mpis_choice_is_named_for_the_releases_the_tree_was_read_from():
    lib = _ompi("allgather:6:two_proc allgather:3:recursive_doubling allreduce:6:rabenseifner reduce:6:in-order_binary")
    assert lib.default_choice("allgather", 2, 8, "float32", "Open MPI v5.0.11, package: Open MPI") == "two_proc"
    assert lib.default_choice("allgather", 3, 8, "float32", "Open MPI v4.1.4") == "recursive_doubling"
    assert lib.default_choice("allreduce", 2, 1 << 20, "float32", "Open MPI v5.0.9") == "rabenseifner"
    for other in ("Open MPI v6.0.0", "Open MPI v4.0.7", "", "MPICH Version: 4.0"):
        assert lib.default_choice("allgather", 2, 8, "float32", other) is None
    # an id ompi_info does not list has no name: not known
    assert lib.default_choice("allgather", 40, 1 << 20, "float32", "Open MPI v5.0.11") is None


def test_the_fixed_decision_reads_per_rank_blocks_where_open_mpi_does():
    """allgather, alltoall and reduce_scatter_block decide on the per-rank block (S / p); allreduce,
    bcast and reduce on the whole buffer (coll_tuned_decision_fixed.c)."""
    # allgather on 64 ranks switches at a 1 KiB block: S = 64 KiB is a 1 KiB block
    assert fixed_algorithm("allgather", 63, 63 * 1023) != fixed_algorithm("allgather", 63, 63 * 1024)
    # allreduce on 2 ranks: ring below 8 B, recursive doubling from 8 B, ring from 4 KiB
    assert [fixed_algorithm("allreduce", 2, s) for s in (4, 8, 4095, 4096)] == [4, 3, 3, 4]
    assert fixed_algorithm("allreduce", 2, 8, commutative=False) == 3
    assert release("Open MPI v5.0.11, package: Open MPI root@x") == (5, 0) and release("MPICH") is None


TREE = {
    "collective=allgather": {
        "comm_type=intra": {
            "comm_hierarchy=parent": {"algorithm=MPIR_Allgather_intra_ring": {}},
            "comm_size<4": {"algorithm=MPIR_Allgather_intra_brucks": {}},
            "comm_size=pow2": {
                "total_msg_size<=1024": {"algorithm=MPIR_Allgather_intra_recursive_doubling": {}},
                "total_msg_size=any": {"algorithm=MPIR_Allgather_intra_ring": {}},
            },
            "comm_size=any": {"algorithm=MPIR_Allgather_intra_ring": {}},
        },
        "comm_type=inter": {"algorithm=MPIR_Allgather_inter_local_gather_remote_bcast": {}},
    }
}


@pytest.mark.parametrize(
    "nranks, nbytes, expected",
    [
        (2, 64, None),  # unknown hierarchy: ring one way, brucks the other
        (8, 1 << 20, "ring"),  # both ways ring
        (8, 64, None),  # ring or recursive doubling
        (4, 1 << 20, None),  # comm_size<4 at 4: MPICH's csel.c reads it as <=, not said
    ],
)
def test_mpichs_tree_is_walked_first_match_and_undecided_where_a_key_is_unknown(nranks, nbytes, expected):
    assert mpich_tree.mpir_choice(TREE, "allgather", "allgather", nranks, nbytes, 4) == expected


def test_mpichs_tree_without_the_unknown_key_decides():
    tree = {"collective=allgather": {"comm_type=intra": dict(TREE["collective=allgather"]["comm_type=intra"])}}
    del tree["collective=allgather"]["comm_type=intra"]["comm_hierarchy=parent"]
    walk = lambda n, s: mpich_tree.mpir_choice(tree, "allgather", "allgather", n, s, 4)  # noqa: E731
    assert [walk(2, 64), walk(8, 1024), walk(8, 1025), walk(6, 64)] == ["brucks", "recursive_doubling", "ring", "ring"]
    assert mpich_tree.mpir_choice(tree, "bcast", "bcast", 8, 64, 4) is None  # not in the tree
