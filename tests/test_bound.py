"""Each collective row against the fabric's lower bound (issue 36, point 1): the bound computed from
planted latencies, bandwidths and reduction speed matches a hand calculation, on one node and across
nodes, with the lab's link rate; rows without a bound have none; the report, the exports, the summary
and compare carry it; a sweep without point-to-point tests makes its short probe."""

from __future__ import annotations

import csv
import io
import json

import pytest
from mpirun import launcher, run_local, run_mpi
from test_compare_plot import point as make_point

from fabricprobe.collectives.cost import lg
from fabricprobe.report.bound import (
    FASTER_MARK,
    Fabric,
    Link,
    beyond,
    bound_of,
    describe,
    doubts,
    fabric_of,
    furthest,
    percents,
    trust_line,
)
from fabricprobe.store import ResultsWriter, load_runs

S = 1 << 20
US = 1e-6


def pt2pt(collective: str, pair: str, size: int, median: float, bw_gbps: float = 0.0, index: int = 100) -> dict:
    p = make_point(index, size, median, collective=collective)
    return {**p, "pair": pair, "algbw_gbps": bw_gbps or size / median / 1e9, "busbw_gbps": bw_gbps, "op": "none"}


# intra: α 1 µs, best bandwidth 10 GB/s; inter: α 5 µs, 1 GB/s; the reduction kernel 20 GB/s
PLANTED = [
    pt2pt("latency", "intra", 8, 1 * US, index=100),
    pt2pt("latency", "intra", S, 200 * US, index=101),
    pt2pt("bw", "intra", 8, 8 * US, bw_gbps=0.5, index=102),
    pt2pt("bw", "intra", S, 100 * US, bw_gbps=10.0, index=103),
    pt2pt("latency", "inter", 8, 5 * US, index=104),
    pt2pt("bw", "inter", S, 1000 * US, bw_gbps=1.0, index=105),
    {**make_point(106, S, S / 20e9, collective="reduce_local"), "op": "sum"},
]


def _run(tmp_path, points: list[dict], attrs: dict | None = None):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "r.h5"
    w = ResultsWriter(str(path))
    w.start_run({"nranks": 4, "mpi_vendor": "Open MPI", "topology": "2 × 2", "topology_ranks_per_node": [2, 2]})
    for p in points:
        w.append_point(p, None)
    w.update_run({"status": "complete", **(attrs or {})})
    w.close()
    (run,) = load_runs(str(path))
    return run


def row(collective: str, nranks: int, size: int = S, median: float = 2000 * US) -> dict:
    p = make_point(0, size, median, collective=collective, nranks=nranks)
    return {**p, "op": "sum" if collective in ("allreduce", "reduce", "reduce_scatter") else "none"}


def test_lg_is_the_ceiling_of_log2():
    assert [lg(p) for p in (1, 2, 3, 4, 5, 8, 9)] == [0, 1, 2, 2, 3, 3, 4]


def test_the_bound_matches_a_hand_calculation_on_one_node_and_across_two(tmp_path):
    fabric = fabric_of(_run(tmp_path, PLANTED))
    assert fabric.intra.latency_s == 1 * US and fabric.intra.seconds_per_byte == pytest.approx(1e-10)  # best bw
    assert fabric.inter.latency_s == 5 * US and fabric.inter.seconds_per_byte == pytest.approx(1e-9)
    assert fabric.reduce_s_per_byte == pytest.approx(1 / 20e9)
    gamma = 1 / 20e9
    # allreduce on 4 ranks of 2 nodes: 1 inter round, 1 intra round; the node link carries F(2)·S =
    # S at 1 GB/s, more than each rank's 2·3/4·S at 10 GB/s; 3/4·S reduced
    by_hand = 5 * US + 1 * US + max(1.5 * S * 1e-10, 1.0 * S * 1e-9) + 0.75 * S * gamma
    found = bound_of(row("allreduce", 4), fabric)
    assert found.seconds == pytest.approx(by_hand)
    assert found.formula == "1·α_inter + 1·α_intra + F(N)·S·β_inter + (p−1)/p·S·γ"
    assert found.percent_of(2000 * US) == pytest.approx(100 * by_hand / (2000 * US))
    # the same on the first node's 2 ranks (a sub-communicator): intra only
    two = bound_of(row("allreduce", 2), fabric)
    assert two.seconds == pytest.approx(1 * US + 1.0 * S * 1e-10 + 0.5 * S * gamma)
    assert bound_of(row("bcast", 4), fabric).seconds == pytest.approx(6 * US + S * 1e-9)
    assert bound_of(row("allgather", 4), fabric).seconds == pytest.approx(6 * US + 0.5 * S * 1e-9)
    assert bound_of(row("alltoall", 2), fabric).seconds == pytest.approx(1 * US + 0.5 * S * 1e-10)
    barrier = bound_of({**row("barrier", 4, size=0), "bytes": 0}, fabric)
    assert barrier.seconds == pytest.approx(6 * US) and barrier.formula == "1·α_inter + 1·α_intra"
    # a call with no data need not communicate (Open MPI returned from a 0 B allgatherv in 0.03 µs,
    # which read 9850% of a latency bound): no bound; gather's is allgather's on the root's link
    assert bound_of({**row("allreduce", 4), "bytes": 0}, fabric) is None
    assert bound_of(row("gather", 4), fabric).seconds == pytest.approx(6 * US + 0.5 * S * 1e-9)


def test_in_the_lab_the_link_rate_less_its_token_bucket_is_the_bound(tmp_path):
    """The lab's links are tc token buckets: β_inter is the rate, and the bucket's burst (2 ms at the
    rate, at least 32 KiB) passes at memory speed, so it is taken off the bytes that cross."""
    run = _run(tmp_path, PLANTED, {"lab_spec": json.dumps({"rate_bits": 1e9})})
    fabric = fabric_of(run)
    assert fabric.inter.seconds_per_byte == pytest.approx(8e-9) and "token bucket" in fabric.inter.source
    assert fabric.inter_burst_bytes == 250_000
    by_hand = 6 * US + max(S * 1e-10, (S - 250_000) * 8e-9)
    assert bound_of(row("bcast", 4), fabric).seconds == pytest.approx(by_hand)
    small = bound_of(row("bcast", 4, size=65536), fabric)  # all of it inside the bucket: intra only
    assert small.seconds == pytest.approx(6 * US + 65536 * 1e-10) and "β_intra" in small.formula
    fast = fabric_of(_run(tmp_path / "f", PLANTED, {"lab_spec": json.dumps({"rate_bits": 0})}))  # unlimited
    assert fast.inter.seconds_per_byte == pytest.approx(1e-9) and fast.inter_burst_bytes == 0


def test_rows_without_a_bound(tmp_path):
    fabric = fabric_of(_run(tmp_path, PLANTED))
    for p in (pt2pt("latency", "intra", 8, US), row("allreduce", 1), {**row("sparse_allreduce", 4)}):
        assert bound_of(p, fabric) is None
    one_node = Fabric(Link(US, 1e-10, "x"), None, 0.0, (2, 2))
    assert bound_of(row("allreduce", 4), one_node) is None  # across nodes with no inter-node measure
    assert bound_of(row("allreduce", 2), one_node).seconds == pytest.approx(US + S * 1e-10)  # no γ: left out
    nothing = fabric_of(_run(tmp_path / "n", [row("allreduce", 4)]))
    assert nothing.intra is None and bound_of(row("allreduce", 4), nothing) is None


def test_the_probe_stands_in_for_missing_point_to_point_points(tmp_path):
    probe = {"points": [p for p in PLANTED if p["collective"] != "reduce_local"], "reduce_s_per_byte": 1 / 20e9}
    with_probe = fabric_of(_run(tmp_path, [row("allreduce", 4, median=3000 * US)], {"bound_probe": probe}))
    planted = fabric_of(_run(tmp_path / "p", PLANTED))
    assert with_probe == Fabric(
        Link(planted.intra.latency_s, planted.intra.seconds_per_byte, with_probe.intra.source),
        Link(planted.inter.latency_s, planted.inter.seconds_per_byte, with_probe.inter.source),
        planted.reduce_s_per_byte,
        (2, 2),
    )
    assert "bound probe" in with_probe.intra.source


def test_a_probe_of_latency_alone_bounds_by_alpha_and_says_beta_is_left_out(tmp_path):
    """A sweep of rows of 64 B or less probes latency alone (no bw window, no γ): the bound is the
    latency term, a lower bound still, and every place that shows it says β was not measured."""
    probe = {"points": [pt2pt("latency", "intra", 8, 2 * US), pt2pt("latency", "inter", 8, 7 * US)]}
    small = row("allreduce", 4, size=64, median=50 * US)
    run = _run(tmp_path, [small], {"bound_probe": {**probe, "reduce_s_per_byte": 0.0}})
    fabric = fabric_of(run)
    assert fabric.intra.seconds_per_byte == 0 and fabric.inter.seconds_per_byte == 0
    assert "no bandwidth measure" in fabric.intra.source and fabric.reduce_s_per_byte == 0
    found = bound_of(small, fabric)
    assert found.seconds == pytest.approx(7 * US + 2 * US) and found.formula == "1·α_inter + 1·α_intra"
    assert describe(fabric) == "intra-node α 2 µs, no β; inter-node α 7 µs, no β"
    line = trust_line(run, fabric, percents(run, fabric))
    assert "trusted" in line and "no β measured" in line and "α and β" not in line


def test_report_exports_summary_and_compare_carry_the_bound(tmp_path):
    slow = row("allreduce", 4, median=4000 * US)
    fast = {**row("allreduce", 4, size=S // 2, median=700 * US), "index": 1, "key": "half"}
    run = _run(tmp_path / "d", [slow, fast] + PLANTED)
    (far, pct), _ = furthest(run, ["allreduce"], count=2)
    assert far["bytes"] == S and pct == pytest.approx(100 * bound_of(slow, fabric_of(run)).seconds / (4000 * US))
    path = run.path
    table = run_local(["report", path])
    assert table.returncode == 0 and "% bound" in table.stdout and "furthest from their bound" in table.stdout
    doc = json.loads(run_local(["report", path, "--format", "json"]).stdout)
    got = {p["bytes"]: p["percent_of_bound"] for p in doc["runs"][0]["points"] if p["collective"] == "allreduce"}
    assert got[S] == pytest.approx(pct)
    assert all(p["percent_of_bound"] is None for p in doc["runs"][0]["points"] if p["collective"] == "latency")
    rows = list(csv.DictReader(io.StringIO(run_local(["report", path, "--format", "csv"]).stdout)))
    assert float(
        next(r for r in rows if r["collective"] == "allreduce" and r["bytes"] == str(S))["percent_of_bound"]
    ) == (pytest.approx(pct))
    summary = json.loads(run_local(["report", path, "--summary", "--format", "json"]).stdout)
    assert summary["runs"][0]["furthest_from_bound"][0]["bytes"] == S
    compared = json.loads(run_local(["compare", path, path, "--format", "json"]).stdout)
    assert next(r for r in compared["rows"] if r["bytes"] == S)["a_percent_of_bound"] == pytest.approx(pct)


def _bound_cells(stdout: str) -> list[str]:
    """The report's % bound cells: the column headed "% bound", in every table that has one."""
    cells, column = [], None
    for line in stdout.splitlines():
        fields = [f.strip() for f in line.replace("┃", "│").split("│")]
        if "% bound" in fields:
            column = fields.index("% bound")
        elif not line.strip():
            column = None
        elif column is not None and len(fields) > column:
            cells.append(fields[column])
    return cells


def _text(stdout: str) -> str:
    """The report as prose: the panel's borders and line breaks gone."""
    return " ".join(stdout.replace("│", " ").split())


def _above_100(stdout: str) -> list[str]:
    import re

    return [m for m in re.findall(r"(?<![±.\d])(\d+)%", stdout) if int(m) > 100]


def test_a_row_faster_than_its_bound_is_marked_with_the_failed_premise(tmp_path):
    """A lower bound cannot be beaten: a row far past it (the lab's MPICH once read 1456% of its link's
    bound, its traffic through shared memory) says the data took another path. The report printed
    966%; it now prints the mark, says why in the header, and no % of bound above 100."""
    fabric = fabric_of(_run(tmp_path / "f", PLANTED))
    bound = bound_of(row("allreduce", 4), fabric).seconds
    noise = {**row("allreduce", 4, median=bound / 1.2), "key": "noise"}  # 120%: within the parameters' noise
    shared = {**row("allreduce", 4, size=S // 2, median=bound / 30), "index": 1, "key": "shm"}
    slow = {**row("allreduce", 4, size=S // 4, median=bound * 4), "index": 2, "key": "slow"}
    run = _run(tmp_path / "r", [noise, shared, slow] + PLANTED)
    assert [p["bytes"] for p, _ in beyond(run)] == [S // 2, S]
    [why] = doubts(run, fabric_of(run), percents(run))
    assert "another path" in why
    table = run_local(["report", run.path], env={"COLUMNS": "200"})
    assert table.returncode == 0 and "faster than their bound" in table.stdout, table.stdout[-2000:]
    assert "doubtful" in _text(table.stdout) and "another path" in _text(table.stdout)
    efficiency = percents(run)[2]  # the slow row: its bound a quarter of its time, or less
    assert efficiency < 100 and _bound_cells(table.stdout) == [f"{efficiency:.0f}%", FASTER_MARK, FASTER_MARK]
    assert not _above_100(table.stdout)
    alone = _run(tmp_path / "n", [noise] + PLANTED)  # past it only within the noise: said as such
    [why] = doubts(alone, fabric_of(alone), percents(alone))
    assert "within the noise" in why
    summary = json.loads(run_local(["report", run.path, "--summary", "--format", "json"]).stdout)
    assert [p["bytes"] for p in summary["runs"][0]["faster_than_bound"]] == [S // 2, S]
    shown = run_local(["report", run.path, "--summary"], env={"COLUMNS": "200"}).stdout
    assert "faster than their bound" in shown and not _above_100(shown)


def test_an_oversubscribed_run_says_its_bounds_cannot_hold(tmp_path):
    """Ranks that share cores measure α and β with a rank waiting for a core: the header says so and
    the rows past their bound carry the mark, not 310%."""
    fabric = fabric_of(_run(tmp_path / "f", PLANTED))
    bound = bound_of(row("allreduce", 4), fabric).seconds
    fast = {**row("allreduce", 4, median=bound / 3.1), "key": "fast"}
    attrs = {"oversubscribed": True, "ranks_per_node": [4], "cores_per_node": [2]}
    run = _run(tmp_path / "r", [fast] + PLANTED, attrs)
    why = doubts(run, fabric_of(run), percents(run))
    assert "ranks share cores (4 ranks on a node of 2 cores)" in why[0]
    table = run_local(["report", run.path], env={"COLUMNS": "200"}).stdout
    assert "ranks share cores" in _text(table) and _bound_cells(table) == [FASTER_MARK] and not _above_100(table)
    capped = [{**p, "stop_reason": "time_cap"} if p["collective"] == "latency" else p for p in PLANTED]
    unsettled = _run(tmp_path / "c", [row("allreduce", 4)] + capped)
    assert any("time cap" in w for w in doubts(unsettled, fabric_of(unsettled), percents(unsettled)))


def test_a_lab_run_whose_bound_is_the_link_is_trusted(tmp_path):
    """In the lab the bound is the link's rate: a row slower than it reads its efficiency, and the
    header says the bounds can be trusted."""
    lab = {"lab_spec": json.dumps({"rate_bits": 1e9})}
    fabric = fabric_of(_run(tmp_path / "f", PLANTED, lab))
    bound = bound_of(row("bcast", 4), fabric)
    assert "β_inter" in bound.formula
    at = {**row("bcast", 4, median=bound.seconds / 0.8), "key": "at80"}
    run = _run(tmp_path / "r", [at] + PLANTED, lab)
    assert doubts(run, fabric_of(run), percents(run)) == []
    table = run_local(["report", run.path], env={"COLUMNS": "200"}).stdout
    assert "% of bound: trusted" in _text(table) and _bound_cells(table) == ["80%"], table


LAUNCHER = launcher()


@pytest.mark.process
@pytest.mark.skipif(LAUNCHER is None, reason="needs an MPI wheel's mpiexec")
def test_a_sweep_without_point_to_point_tests_probes_for_the_bound(tmp_path):
    base = ["sweep", "--collectives", "allreduce", "--sizes", "8,64K", "--iters", "20", "--max-time", "0.05"]
    done = run_mpi(2, [*base, "-o", str(tmp_path / "a.h5"), "--quiet"])
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = load_runs(str(tmp_path / "a.h5"))
    probe = run.attrs["bound_probe"]
    # only the two points the bound reads: α from latency at 8 B, β from bw at 1 MiB
    assert sorted((p["collective"], p["pair"], p["bytes"]) for p in probe["points"]) == [
        ("bw", "intra", 1 << 20),
        ("latency", "intra", 8),
    ]
    assert probe["reduce_s_per_byte"] > 0 and all(p["status"] == "ok" for p in probe["points"])
    assert {p["collective"] for p in run.points} == {"empty", "allreduce"}  # the run's points stay the ones asked
    fabric = fabric_of(run)
    assert all(bound_of(p, fabric) is not None for p in run.points if p["collective"] == "allreduce")
    off = run_mpi(2, [*base, "-o", str(tmp_path / "b.h5"), "--quiet", "--no-bound-probe"])
    assert off.returncode == 0 and "bound_probe" not in load_runs(str(tmp_path / "b.h5"))[0].attrs
    own = run_mpi(
        2,
        ["sweep", "--collectives", "allreduce,latency", "--sizes", "8", "--iters", "20", "--quiet"]
        + ["--max-time", "0.05", "-o", str(tmp_path / "c.h5")],
    )
    assert own.returncode == 0 and "bound_probe" not in load_runs(str(tmp_path / "c.h5"))[0].attrs
    # rows of 64 B or less: the latency alone (no 1 MiB window, no γ), and the rows still bounded
    small = run_mpi(
        2,
        ["sweep", "--collectives", "allreduce", "--sizes", "8,64", "--iters", "20", "--quiet"]
        + ["--max-time", "0.05", "-o", str(tmp_path / "d.h5")],
    )
    assert small.returncode == 0, small.stderr[-2000:]
    (run,) = load_runs(str(tmp_path / "d.h5"))
    probe = run.attrs["bound_probe"]
    assert [(p["collective"], p["bytes"]) for p in probe["points"]] == [("latency", 8)]
    assert probe["reduce_s_per_byte"] == 0
    fabric = fabric_of(run)
    assert all(bound_of(p, fabric) is not None for p in run.points if p["collective"] == "allreduce")


def test_a_row_faster_than_its_bound_has_no_percent_in_any_export(tmp_path):
    """Issue 67: the screen withheld such rows (‡) while the JSON carried them, up to 663,388%. Every
    export withholds the bound and the % of a row that beats it and says why on the point."""
    beaten = row("allreduce", 4, median=10 * US)  # far below what the planted links allow for 1 MiB
    run = _run(tmp_path, [beaten] + PLANTED)
    assert bound_of(beaten, fabric_of(run)).percent_of(10 * US) > 100
    doc = json.loads(run_local(["report", run.path, "--format", "json"]).stdout)
    point = next(p for p in doc["runs"][0]["points"] if p["collective"] == "allreduce")
    assert point["percent_of_bound"] is None and point["bound_s"] is None
    assert point["bound_withheld"].startswith("faster than its bound (")
    assert all(p["percent_of_bound"] is None or p["percent_of_bound"] <= 100 for p in doc["runs"][0]["points"])
    rows = list(csv.DictReader(io.StringIO(run_local(["report", run.path, "--format", "csv"]).stdout)))
    cell = next(r for r in rows if r["collective"] == "allreduce")
    assert cell["percent_of_bound"] == "nan" and cell["bound_withheld"].startswith("faster than its bound")
    compared = json.loads(run_local(["compare", run.path, run.path, "--format", "json"]).stdout)
    mine = next(r for r in compared["rows"] if r["bytes"] == S and r["collective"] == "allreduce")
    assert mine["a_percent_of_bound"] is None and mine["a_bound_withheld"].startswith("faster than its bound")
