"""fabricprobe's runtime selection: which of its own algorithms `tune` names over the library's best
(tuning.selection), the file that carries the choice (emit_selection), and fabricprobe.tuned's
refusal of a file made for another library or job shape, its lookup by communicator size, nodes and
density, and its fallback with a warning (tuning.runtime). No MPI: runs are planted in a results
file, and the communicator is a stand-in whose topology is set."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from fabricprobe.errors import UsageError
from fabricprobe.mpienv import topology
from fabricprobe.store import ResultsWriter, load_runs
from fabricprobe.tuning import runtime
from fabricprobe.tuning.choose.rules import choose, winner_at
from fabricprobe.tuning.choose.selection import choose_selection
from fabricprobe.tuning.emit import selection as emit_selection

VERSION = "Open MPI v5.0.11, package: Open MPI test"
WORLD = {"nranks": 4, "topology_ranks_per_node": [2, 2], "virtual_topology": True}


def _point(i: int, collective: str, alg: str, n: int, size: int, us: float, density: float = 0.0) -> dict:
    t = us * 1e-6
    return dict(
        index=i,
        key=f"{i}",
        collective=collective,
        algorithm=alg,
        dtype="float32",
        op="sum",
        mode="barrier",
        nranks=n,
        bytes=size,
        density=density,
        median_s=t,
        ci_low_s=t * 0.99,
        ci_high_s=t * 1.01,
        status="ok",
    )


def _run(w: ResultsWriter, collective: str, times: dict, extra: dict | None = None) -> None:
    """One tune-sweep job: times[(algorithm, comm size, bytes[, density])] = µs."""
    w.start_run(
        {"mpi_vendor": "Open MPI", "mpi_library_version": VERSION, **WORLD, "config": {"collectives": [collective]}}
        | (extra or {})
    )
    for i, (key, us) in enumerate(times.items()):
        alg, n, size, *density = key
        coll = "allreduce" if alg == "library" and collective == "sparse_allreduce" else collective
        w.append_point(_point(i, coll, alg, n, size, us, *(density or [0.0])), None)


M = 1 << 20


@pytest.fixture
def measured(tmp_path):
    path = str(tmp_path / "t.h5")
    w = ResultsWriter(path)
    # the default's job: the library as launched beside fabricprobe's own
    _run(
        w,
        "allreduce",
        {
            ("library", 4, 65536): 100,
            ("hierarchical", 4, 65536): 300,
            ("ring", 4, 65536): 250,
            ("library", 4, M): 1000,
            ("hierarchical", 4, M): 600,
            ("ring", 4, M): 900,
            ("library", 4, 4 * M): 4000,
            ("hierarchical", 4, 4 * M): 2000,
            ("ring", 4, 4 * M): 2500,
            ("library", 2, M): 500,
            ("hierarchical", 2, M): 480,
            ("ring", 2, M): 300,
        },
    )
    # the library's ring, forced in a launch of its own: its best from 1 MiB on 4 ranks
    _run(
        w,
        "allreduce",
        {("library:ring", 4, 65536): 120, ("library:ring", 4, M): 700, ("library:ring", 4, 4 * M): 1500},
    )
    # the sparse job, whose dense reference (a library allreduce, 50 µs at 1 MiB: a planted trap)
    # must not stand in for the default's job's
    _run(
        w,
        "sparse_allreduce",
        {
            ("topk_allgather", 4, M, 0.01): 400,
            ("sparcml", 4, M, 0.01): 200,
            ("sparse_hier_leader", 4, M, 0.01): 390,
            ("topk_allgather", 4, M, 0.1): 800,
            ("sparcml", 4, M, 0.1): 900,
            ("library", 4, M): 50,
        },
    )
    return path


def _rules(section) -> list[tuple]:
    return [(r.lo, r.hi, r.winner) for r in section.ranges]


def test_own_algorithm_is_named_only_where_it_beats_the_librarys_best(measured):
    runs = load_runs(measured)
    table = choose(runs)
    assert _rules_of(table, 4) == [(0, M, "default"), (M, None, "ring")]  # the library's files: its best
    sel = choose_selection(runs, table)
    four = _section(sel, "allreduce", 4)
    # 1 MiB: hierarchical 600 µs beats the library's ring 700; 4 MiB: it beats the default (4000) but
    # not the library's ring (1500), so the library (with its file) is called there
    assert _rules(four) == [(0, M, "library"), (M, 4 * M, "hierarchical"), (4 * M, None, "library")]
    assert four.ranges[1].speedup == pytest.approx(700 / 600)  # against the library's best, not its default
    assert four.ranks_per_node == (2, 2) and _section(sel, "allreduce", 2).ranks_per_node == (2,)
    assert _rules(_section(sel, "allreduce", 2)) == [(0, None, "ring")]  # 300 vs 500, the default's best
    assert (sel.world_size, sel.world_ranks_per_node, sel.virtual) == (4, (2, 2), True)


def test_a_file_of_two_job_shapes_is_refused(measured):
    w = ResultsWriter(measured)
    _run(
        w,
        "allreduce",
        {("library", 4, M): 1000, ("single_leader", 4, M): 10},
        {"topology_ranks_per_node": [4], "virtual_topology": False},
    )
    runs = load_runs(measured)
    with pytest.raises(
        UsageError, match=r"different job shapes \(4 ranks as 2 × 2 \(virtual nodes\), 4 ranks as 1 × 4\)"
    ):
        choose_selection(runs, choose(runs))


def test_sparse_is_chosen_per_density_against_topka(measured):
    sel = choose_selection(load_runs(measured), choose(load_runs(measured)))
    assert _rules(_section(sel, "sparse_allreduce", 4, 0.01)) == [(0, None, "sparcml")]
    assert _rules(_section(sel, "sparse_allreduce", 4, 0.1)) == [(0, None, "topk_allgather")]
    assert [(s.collective, r.winner) for s, r in sel.own_winners()] == [
        ("allreduce", "ring"),
        ("allreduce", "hierarchical"),
        ("sparse_allreduce", "sparcml"),
    ]


def test_the_file_round_trips_and_refuses_other_formats(measured, tmp_path):
    sel = choose_selection(load_runs(measured), choose(load_runs(measured)))
    path = tmp_path / "sel.json"
    path.write_text(emit_selection.selection_json(sel))
    again = runtime.read(str(path))
    assert [(s.collective, s.comm_size, s.density, _rules(s)) for s in again.sections] == [
        (s.collective, s.comm_size, s.density, _rules(s)) for s in sel.sections
    ]
    doc = json.loads(path.read_text())
    for change, message in (
        (lambda d: d.update(version=1), "version 1"),
        (lambda d: d.update(format="x"), "not a fabricprobe selection"),
        (lambda d: d.pop("world"), "malformed"),
        (lambda d: d["sections"][0]["rules"][0].update(algorithm="nosuch"), "allreduce/nosuch"),
    ):
        bad = json.loads(json.dumps(doc))
        change(bad)
        path.write_text(json.dumps(bad))
        with pytest.raises(UsageError, match=message):
            runtime.read(str(path))
    with pytest.raises(UsageError, match="cannot read"):
        runtime.read(str(tmp_path / "missing.json"))


def test_a_file_for_another_library_or_job_shape_is_refused(measured):
    sel = choose_selection(load_runs(measured), choose(load_runs(measured)))
    runtime.check(sel, "s.json", VERSION + "\x00\n", 4, [2, 2])  # the same: accepted
    for version, size, nodes, message in (
        ("MPICH Version: 4.0", 4, [2, 2], "tuned with 'Open MPI v5.0.11"),
        ("Open MPI v4.1.4, package: Debian", 4, [2, 2], "this job runs 'Open MPI v4.1.4"),
        (VERSION, 8, [2, 2, 2, 2], "tuned for 4 ranks as 2 × 2 \\(virtual nodes\\), but this job has 8 ranks"),
        (VERSION, 4, [4], "but this job has 4 ranks as 1 × 4"),
    ):
        with pytest.raises(UsageError, match=message) as info:
            runtime.check(sel, "s.json", version, size, nodes)
        assert "\n" not in str(info.value)


@dataclass
class FakeComm:
    size: int


def test_calls_find_their_section_and_fall_back_with_one_warning(measured, tmp_path, capsys, monkeypatch):
    sel = choose_selection(load_runs(measured), choose(load_runs(measured)))
    monkeypatch.setattr(runtime, "_selection", sel)
    monkeypatch.setattr(runtime, "_loaded_from", "s.json")
    runtime._warned.clear()
    world, one_node, half = FakeComm(4), FakeComm(4), FakeComm(2)
    topology.set_active(world, topology.virtual(_physical(4), [2, 2]))
    topology.set_active(one_node, _physical(4))
    topology.set_active(half, topology.virtual(_physical(2), [2]))
    assert runtime.algorithm_for("allreduce", world, 1000) == "library"
    assert runtime.algorithm_for("allreduce", world, 2 * M) == "hierarchical"
    assert runtime.algorithm_for("allreduce", world, 64 * M) == "library"
    assert runtime.algorithm_for("allreduce", half, 8) == "ring"
    assert runtime.algorithm_for("sparse_allreduce", world, M, 0.012) == "sparcml"  # nearest density, ×1.2
    assert runtime.algorithm_for("sparse_allreduce", world, M, 0.08) == "topk_allgather"
    assert capsys.readouterr().err == ""
    # no answer: the same 4 ranks on one node, a density 10× off, a collective not tuned
    assert runtime.algorithm_for("allreduce", one_node, 2 * M) == "library"
    assert runtime.algorithm_for("allreduce", one_node, 4 * M) == "library"
    assert runtime.algorithm_for("sparse_allreduce", world, M, 0.001) == "topk_allgather"
    assert runtime.algorithm_for("bcast", world, 8) == "library"
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warned) == 3, warned  # once per case, not per call
    assert "allreduce on 4 ranks as 1 × 4" in warned[0] and "density 0.001" in warned[1]
    monkeypatch.setattr(runtime, "_selection", None)
    assert runtime.algorithm_for("allreduce", world, 2 * M) == "library"  # no file: the library


def _physical(n: int) -> topology.Topology:
    return topology.Topology(hosts=("h",) * n, node_of=(0,) * n, cores_per_node=(n,))


def _section(sel, collective: str, n: int, density: float = 0.0):
    return next(s for s in sel.sections if s.collective == collective and s.comm_size == n and s.density == density)


def _rules_of(table, n: int) -> list[tuple]:
    return [(r.lo, r.hi, r.winner) for r in table.rules["allreduce"][n]]


def test_winner_at_covers_every_size(measured):
    ranges = choose(load_runs(measured)).rules["allreduce"][4]
    assert [winner_at(ranges, s) for s in (0, M - 1, M, 1 << 40)] == ["default", "default", "ring", "ring"]
