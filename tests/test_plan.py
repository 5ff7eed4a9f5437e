"""The sweep plan: what is measured, in which order, and what is left out (no MPI needed)."""

from fabricprobe.engine.config import SweepConfig
from fabricprobe.engine.plan import make_plan, pair_ranks
from fabricprobe.mpienv.topology import Topology, virtual


def _topo(nodes: list[int]) -> Topology:
    node_of = tuple(i for i, size in enumerate(nodes) for _ in range(size))
    return Topology(hosts=tuple(f"h{n}" for n in node_of), node_of=node_of, cores_per_node=tuple(nodes))


def test_algorithms_run_back_to_back_at_each_size():
    config = SweepConfig(collectives=["allreduce"], algorithms=["library", "ring", "rabenseifner"], sizes=[8, 1024])
    points, notes = make_plan(config, _topo([4]), ["native"])
    measured = [(p.layout.nbytes, p.algorithm) for p in points if p.collective == "allreduce"]
    assert measured == [
        (8, "library"),
        (8, "ring"),
        (8, "rabenseifner"),
        (1024, "library"),
        (1024, "ring"),
        (1024, "rabenseifner"),
    ]
    assert [p.index for p in points] == list(range(len(points)))
    assert len({p.key for p in points}) == len(points)


def test_algorithms_apply_only_where_they_exist():
    config = SweepConfig(collectives=["bcast", "alltoall"], algorithms=["library", "ring", "binomial"], sizes=[64])
    points, notes = make_plan(config, _topo([2]), [])
    assert {(p.collective, p.algorithm) for p in points} == {
        ("bcast", "library"),
        ("bcast", "binomial"),
        ("alltoall", "library"),
    }
    assert any("'ring' implements none" in n for n in notes)


def test_pairs_follow_the_topology():
    config = SweepConfig(collectives=["latency"], sizes=[8], pairs=["intra", "inter"])
    points, notes = make_plan(config, _topo([2]), [])
    assert {p.pair for p in points} == {"intra"}
    assert any("inter-node pairs skipped" in n for n in notes)
    two_nodes = virtual(_topo([4]), [2, 2])
    points, _ = make_plan(config, two_nodes, [])
    assert {p.pair for p in points} == {"intra", "inter"}
    assert pair_ranks("inter", two_nodes) == [(0, 2)]
    assert pair_ranks("intra", virtual(_topo([3]), [1, 2])) == [(1, 2)]
    assert pair_ranks("all", _topo([5])) == [(0, 2), (1, 3)]


def test_single_rank_skips_point_to_point():
    points, notes = make_plan(SweepConfig(collectives=["latency", "allreduce"], sizes=[8]), _topo([1]), [])
    assert {p.collective for p in points} == {"allreduce"}
    assert any("at least 2 ranks" in n for n in notes)


def test_local_kernels_use_their_own_implementation():
    config = SweepConfig(
        collectives=["reduce_local", "copy_local"], algorithms=["library"], sizes=[4096], ops=["sum", "max"]
    )
    points, _ = make_plan(config, _topo([2]), [])
    assert {(p.collective, p.algorithm, p.op) for p in points} == {
        ("reduce_local", "numba", "sum"),
        ("reduce_local", "numba", "max"),
        ("copy_local", "numpy", "none"),
    }


def test_virtual_topology_keeps_the_hardware_verdict():
    hw = Topology(hosts=("a",) * 4, node_of=(0,) * 4, cores_per_node=(2,))
    v = virtual(hw, [2, 2])
    assert v.oversubscribed and v.nnodes == 2 and v.hardware is hw
    assert v.local_rank == (0, 1, 0, 1)


def test_sizes_that_hold_no_element_per_rank_are_skipped_with_a_note():
    """8 B of float32 over 64 ranks is 0 elements per rank for the block collectives: a no-op call,
    never a "0 B" row. Size 0 asked for on purpose is still measured."""
    config = SweepConfig(
        collectives=["allgather", "reduce_scatter", "alltoall", "allreduce"], sizes=[0, 8, 64, 1024], dtypes=["float32"]
    )
    points, notes = make_plan(config, _topo([64]), [])
    sized = {(p.collective, p.requested_bytes) for p in points}
    for coll in ("allgather", "reduce_scatter", "alltoall"):
        assert {b for c, b in sized if c == coll} == {0, 1024}, coll
        assert (
            f"{coll} float32 at 64 ranks: 8 B, 64 B round to 0 elements per rank; skipped (not a measurement)" in notes
        )
    assert {b for c, b in sized if c == "allreduce"} == {0, 8, 64, 1024}
    assert all(p.layout.count > 0 for p in points if p.requested_bytes > 0)


def test_the_copy_is_measured_right_after_the_kernel_at_every_size():
    """The kernel/copy ratio comes from adjacent measurements, not from two passes minutes apart."""
    config = SweepConfig(
        collectives=["allreduce", "reduce_local", "copy_local"], sizes=[4096, 1 << 20], ops=["sum", "max"]
    )
    points, _ = make_plan(config, _topo([2]), [])
    local = [(p.collective, p.op, p.requested_bytes) for p in points if p.collective.endswith("_local")]
    assert local == [
        ("reduce_local", "sum", 4096),
        ("reduce_local", "max", 4096),
        ("copy_local", "none", 4096),
        ("reduce_local", "sum", 1 << 20),
        ("reduce_local", "max", 1 << 20),
        ("copy_local", "none", 1 << 20),
    ]
    assert [p.index for p in points] == list(range(len(points)))
    assert [p.collective for p in points[:4]] == ["allreduce"] * 4  # the rest keeps its order


def test_a_budgeted_job_measures_only_its_points():
    """tune-sweep --budget hands each job [algorithm, communicator size, bytes] triples."""
    config = SweepConfig(
        collectives=["allreduce"],
        algorithms=["library", "ring"],
        sizes=[8, 1024, 65536],
        comm_sizes=[2, 4],
        points=[["library", 4, 8], ["ring", 2, 1024], ["library", 2, 65536]],
    ).check()
    points, _ = make_plan(config, _topo([4]), ["native"])
    measured = {(p.algorithm, p.nranks or 4, p.requested_bytes) for p in points if p.collective == "allreduce"}
    assert measured == {("library", 4, 8), ("ring", 2, 1024), ("library", 2, 65536)}
    assert [p.index for p in points] == list(range(len(points)))
    assert any(p.collective == "empty" for p in points)  # the harness floor is still measured


def test_malformed_points_are_refused():
    import pytest

    from fabricprobe.errors import UsageError

    for bad in ([["library", 2]], [[2, 2, 8]], [["library", -1, 8]]):
        with pytest.raises(UsageError, match="points"):
            SweepConfig(points=bad).check()
