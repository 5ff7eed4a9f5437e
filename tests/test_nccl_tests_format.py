"""`report --format nccl-tests` writes what nccl-tests' `-J` writes: the same keys in the same order and
nesting, the same JSON types (booleans as "true"/"false" strings, root as a string, nwrong a number),
checked against a document written by nccl-tests' own writer (tests/fixtures/nccl-tests), and numbers
that are nccl-tests' statistics in its units."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mpirun import error_lines, run_local, run_mpi

from fabricprobe.store import load_runs

REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "nccl-tests" / "all_reduce_perf.json").read_text())
OURS_ONLY = {"fabricprobe"}  # the one key fabricprobe adds


def shape(value):
    """The document's skeleton: keys in order with their JSON types, lists by their first element."""
    if isinstance(value, dict):
        return [(k, shape(v)) for k, v in value.items() if k not in OURS_ONLY]
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def conforms(ours, reference) -> bool:
    """Same keys in the same order, same JSON types; an empty list fits any list (an MPI environment
    with no recorded variables writes "env": [], as nccl-tests would with an empty environment)."""
    if isinstance(reference, list) and isinstance(ours, list):
        if ours and reference and isinstance(ours[0], tuple):
            return [k for k, _ in ours] == [k for k, _ in reference] and all(
                conforms(a, b) for (_, a), (_, b) in zip(ours, reference)
            )
        return not ours or not reference or conforms(ours[0], reference[0])
    return ours == reference


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("nccl") / "r.h5"
    out = run_mpi(
        2,
        ["sweep", "-o", str(path), "--sizes", "8,16,32", "--iters", "20", "--max-time", "0.2", "--in-place", "both"]
        + ["--collectives", "allreduce,bcast,allgather,latency,reduce_local", "--mode", "loop"]
        + ["--progress", "none", "--quiet"],
    )
    assert out.returncode == 0, out.stderr
    return path


@pytest.fixture(scope="module")
def documents(sweep_file):
    out = run_local(["report", str(sweep_file), "--format", "nccl-tests"])
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_one_document_per_case_nccl_tests_has_a_program_for(documents):
    assert sorted(d["fabricprobe"]["program"] for d in documents) == [
        "all_gather_perf",
        "all_reduce_perf",
        "broadcast_perf",
    ]  # latency and reduce_local have no nccl-tests program


def test_same_keys_order_and_types_as_nccl_tests_own_writer(documents):
    allreduce = next(d for d in documents if d["fabricprobe"]["program"] == "all_reduce_perf")
    assert conforms(shape(allreduce), shape(REFERENCE))
    assert not conforms(shape({**allreduce, "version": "3"}), shape(REFERENCE))  # the check can fail
    assert [list(r) for r in allreduce["results"]] == [list(r) for r in REFERENCE["results"]]


def test_numbers_are_nccl_tests_statistics_in_its_units(sweep_file, documents):
    points = {
        (p["collective"], p["bytes"], bool(p["in_place"])): p
        for p in load_runs(str(sweep_file))[0].points
        if p["collective"] in ("allreduce", "allgather", "bcast")
    }
    for doc in documents:
        coll = {"all_reduce_perf": "allreduce", "all_gather_perf": "allgather", "broadcast_perf": "bcast"}
        collective = coll[doc["fabricprobe"]["program"]]
        assert doc["config"]["blocking_collectives"] == "false"  # loop mode: back-to-back calls
        for row in doc["results"]:
            assert row["type"] == "float" and row["root"] == ("     0" if collective == "bcast" else "    -1")
            assert row["redop"] == ("sum" if collective == "allreduce" else "none")
            for place, key in ((False, "out_of_place"), (True, "in_place")):
                p = points.get((collective, row["size"], place))
                m = row[key]
                if p is None:  # bcast has no in-place form: null, as nccl-tests writes a missing side
                    assert collective == "bcast" and place and m is None
                    continue
                assert m["time"] == pytest.approx(p["osu_avg_s"] * 1e6)  # µs, mean over ranks
                assert m["alg_bw"] == pytest.approx(row["size"] / 1e9 / p["osu_avg_s"])  # GB/s
                assert m["bus_bw"] == pytest.approx(m["alg_bw"] * p["busbw_factor"])
                assert m["nwrong"] == 0
            assert row["count"] == points[(collective, row["size"], False)]["count"]
        assert doc["out_of_bounds"] == {"count": 0, "okay": "true"}
        gather = next(d for d in documents if d["fabricprobe"]["program"] == "all_gather_perf")
        assert [r["count"] for r in gather["results"]] == [1, 2, 4]  # per rank, as nccl-tests counts


def test_files_and_refusals(sweep_file, tmp_path):
    target = tmp_path / "nccl.json"
    out = run_local(["report", str(sweep_file), "--format", "nccl-tests", "-o", str(target)])
    assert out.returncode == 0, out.stderr
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["nccl.0.json", "nccl.1.json", "nccl.2.json"]
    assert all(json.loads((tmp_path / n).read_text())["version"] == 3 for n in written)
    one = tmp_path / "one.json"
    out = run_local(["report", str(sweep_file), "--format", "nccl-tests", "--collectives", "bcast", "-o", str(one)])
    assert out.returncode == 0 and json.loads(one.read_text())["fabricprobe"]["program"] == "broadcast_perf"
    nothing = run_local(["report", str(sweep_file), "--format", "nccl-tests", "--collectives", "latency"])
    assert nothing.returncode == 2 and len(error_lines(nothing.stderr)) == 1
    # an export never writes over a results file
    before = Path(sweep_file).read_bytes()
    for fmt in ("json", "csv", "osu", "nccl-tests"):
        out = run_local(["report", str(sweep_file), "--format", fmt, "--collectives", "bcast", "-o", str(sweep_file)])
        assert out.returncode == 2 and "never writes over" in out.stderr, fmt
    assert Path(sweep_file).read_bytes() == before
