"""`fabricprobe report`: tables, JSON / CSV / OMB exports from a real sweep."""

from __future__ import annotations

import csv
import io
import json

import pytest
from mpirun import error_lines, run_local, run_mpi

pytestmark = pytest.mark.mpi


def test_table(sweep_file):
    out = run_local(["report", str(sweep_file)])
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for fragment in (
        "allreduce",
        "alltoall",
        "bibw",
        "busbw GB/s",
        "#wrong",
        "median µs",
        "p99 µs",
        "busbw = algbw × 2(n-1)/n",
        "harness floor",
        "64 KiB",
    ):
        assert fragment in text, fragment


def test_json_export(sweep_file, tmp_path):
    target = tmp_path / "out.json"
    assert run_local(["report", str(sweep_file), "--format", "json", "-o", str(target)]).returncode == 0
    doc = json.loads(target.read_text())
    assert doc["schema_version"] == 1 and len(doc["runs"]) == 1
    run = doc["runs"][0]
    assert run["provenance"]["nranks"] == 2 and run["config"]["sizes"] == [8, 65536]
    point = next(p for p in run["points"] if p["collective"] == "allreduce" and p["bytes"] == 65536)
    for key in ("collective", "algorithm", "bytes", "nranks", "median_s", "busbw_gbps", "wrong"):
        assert key in point
    assert point["algorithm"] == "library" and point["wrong"] == 0
    assert point["busbw_gbps"] == pytest.approx(65536 / point["median_s"] / 1e9 * 1.0)


def test_csv_export_filtered(sweep_file):
    out = run_local(["report", str(sweep_file), "--format", "csv", "--collectives", "bcast,latency"])
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert {r["collective"] for r in rows} == {"bcast", "latency"}
    assert all(r["run"] == "0001" for r in rows)


def test_osu_export_uses_omb_statistics(sweep_file):
    out = run_local(["report", str(sweep_file), "--format", "osu", "--collectives", "allreduce,bw"])
    text = out.stdout
    assert "# OSU MPI Allreduce Latency Test" in text and "# OSU MPI Bandwidth Test" in text
    assert "Avg Latency(us)" in text and "Bandwidth (MB/s)" in text
    rows = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    assert ["8", "65536"] == [r[0] for r in rows[:2]]


def test_unwritable_export(sweep_file, tmp_path):
    out = run_local(["report", str(sweep_file), "--format", "json", "-o", str(tmp_path / "no" / "x.json")])
    assert out.returncode == 2 and len(error_lines(out.stderr)) == 1


def _titles(path) -> list[str]:
    """The titles of the report's series tables (what `report` prints, without rich's wrapping)."""
    from fabricprobe.report.groups import group_series
    from fabricprobe.report.labels import run_window
    from fabricprobe.report.tables import series_table
    from fabricprobe.store import load_runs
    from fabricprobe.store.schema import EMPTY

    run = load_runs(str(path))[0]
    points = [p for p in run.points if p["collective"] != EMPTY]
    return [
        series_table(key, rows, key.nranks, run_window(run.config)).title for key, rows in group_series(points).items()
    ]


def test_every_title_names_the_timed_region_timer_and_buffers(sweep_file):
    titles = _titles(sweep_file)
    assert len(titles) >= 9
    for line in titles:
        assert "host buffers" in line and "2 ranks" in line, line
        # the communication calls are timed natively, the local kernels (no MPI call) in Python
        timer = "python timer" if line.startswith(("[bold]reduce_local", "[bold]copy_local")) else "native timer"
        assert timer in line, line
    pt2pt = [line for line in titles if line.startswith(("[bold]latency", "[bold]bw", "[bold]bibw"))]
    assert len(pt2pt) == 3
    for line in pt2pt:  # OMB's loops have no barrier between iterations: never titled "barrier mode"
        assert "no barrier" in line and "barrier mode" not in line, line
    assert any(line.startswith("[bold]bw") and "window of 64 sends" in line for line in pt2pt)
    assert any(line.startswith("[bold]latency") and "ping-pong" in line for line in pt2pt)
    collective = [line for line in titles if line.startswith("[bold]allreduce")]
    assert collective and all("barrier mode" in line for line in collective)
    shown = run_local(["report", str(sweep_file)]).stdout
    assert "native timer" in shown and "ping-pong" in shown


def test_a_python_timed_series_says_so(sweep_file):
    from fabricprobe.report.groups import group_series
    from fabricprobe.report.tables import series_table
    from fabricprobe.store import load_runs

    points = [p for p in load_runs(str(sweep_file))[0].points if p["collective"] == "allreduce"]
    for timer in ("python", "native"):
        (key, rows), *_ = group_series([{**p, "timer": timer} for p in points]).items()
        assert f"{timer} timer" in series_table(key, rows, 2).title


def test_point_to_point_is_measured_once_whatever_the_modes(tmp_path):
    path = tmp_path / "modes.h5"
    out = run_mpi(
        2,
        ["sweep", "-o", str(path), "--collectives", "latency,allreduce", "--sizes", "8", "--iters", "10"]
        + ["--mode", "barrier,loop", "--progress", "none", "--quiet"],
    )
    assert out.returncode == 0, out.stderr
    from fabricprobe.store import load_runs

    points = load_runs(str(path))[0].points
    assert {p["mode"] for p in points if p["collective"] == "allreduce"} == {"barrier", "loop"}
    assert len([p for p in points if p["collective"] == "latency" and p["pair"] == "intra"]) == 1


def test_a_mean_dominated_by_outliers_is_marked(sweep_file):
    from fabricprobe.report.groups import group_series
    from fabricprobe.report.tables import series_table
    from fabricprobe.store import load_runs

    points = [p for p in load_runs(str(sweep_file))[0].points if p["collective"] == "allreduce"]
    steady = [{**p, "mean_s": p["median_s"] * 1.1} for p in points]
    skewed = [{**p, "mean_s": p["median_s"] * 2.0} if p["bytes"] == 8 else p for p in steady]
    (key, rows), *_ = group_series(steady).items()
    assert "†" not in str(series_table(key, rows, 2).caption)
    (key, rows), *_ = group_series(skewed).items()
    table = series_table(key, rows, 2)
    assert "outliers dominate the mean" in table.caption
    means = list(table.columns[4].cells)
    assert means[0].endswith("†") and not means[1].endswith("†")
    from types import SimpleNamespace

    from fabricprobe.report.export import to_osu

    text = to_osu([SimpleNamespace(id="0001", config={}, attrs={}, points=skewed)])
    assert "Avg is a mean and outliers dominate it (mean / median of the iteration times): 8 B 2.00×" in text
    assert "outliers" not in to_osu([SimpleNamespace(id="0001", config={}, attrs={}, points=steady)])


def test_kernel_against_copy_from_adjacent_points(sweep_file):
    from fabricprobe.report.kernels import kernel_tables
    from fabricprobe.store import load_runs

    run = load_runs(str(sweep_file))[0]
    order = [(p["collective"], p["bytes"]) for p in sorted(run.points, key=lambda p: p["index"])]
    local = [x for x in order if x[0].endswith("_local")]
    assert local == [("reduce_local", 8), ("copy_local", 8), ("reduce_local", 65536), ("copy_local", 65536)]
    copy = next(p for p in run.points if p["collective"] == "copy_local" and p["bytes"] == 65536)
    assert copy["busbw_factor"] == 3.0  # the copy's destination is read before it is written
    (table,) = kernel_tables(run.points)
    kernel = next(p for p in run.points if p["collective"] == "reduce_local" and p["bytes"] == 65536)
    cells = [list(c.cells) for c in table.columns]
    assert cells[0] == ["8 B", "64 KiB"]
    assert float(cells[-1][1]) == pytest.approx(copy["median_s"] / kernel["median_s"], abs=0.006)
    assert "reduction kernel against a copy" in run_local(["report", str(sweep_file)]).stdout
    assert "both move 3 × S" in table.caption
    (device,) = kernel_tables([{**p, "buffer": "cupy"} for p in run.points])
    assert "the copy 2 × S" in device.caption and "both move" not in device.caption


def test_every_ratio_is_a_speedup_above_one_when_faster(sweep_file):
    """One convention (report/labels.py): reference time / this time, in the algorithms, GPUDirect and
    kernel tables alike."""
    from fabricprobe.report.algorithms import comparison_groups, comparison_table
    from fabricprobe.report.gpudirect import gpudirect_groups, gpudirect_table
    from fabricprobe.store import load_runs

    base = next(
        p for p in load_runs(str(sweep_file))[0].points if p["collective"] == "allreduce" and p["bytes"] == 65536
    )
    library = {**base, "median_s": 2e-6}
    ring = {**base, "algorithm": "ring", "median_s": 1e-6}
    ((case, by_algorithm),) = comparison_groups([library, ring]).items()
    table = comparison_table(case, by_algorithm)
    assert "speedup" in table.columns[2].header and "above 1: faster than the library" in table.caption
    assert "2.00[/])" in list(table.columns[2].cells)[0]  # ring: 1 µs against the library's 2 µs
    device = {**base, "buffer": "cupy"}
    staged = {**device, "transfer": "staged", "median_s": 4e-6}
    direct = {**device, "transfer": "direct", "median_s": 1e-6}
    pipelined = {**device, "transfer": "pipelined", "median_s": 2e-6}
    ((case, by_size),) = gpudirect_groups([staged, direct, pipelined]).items()
    cells = [list(c.cells)[0] for c in gpudirect_table(case, by_size).columns]
    assert cells[4:6] == ["4.00×", "2.00×"]  # direct and pipelined: speedups over staging


def _buffer_run(vendor: str, early: int, size: int, written=(72.0, 71.5), missed=(0, 0)):
    from types import SimpleNamespace

    attrs = {
        "mpi_vendor": vendor,
        "buffer_memory": {
            "early_mib": [early] * 2,
            "written_before_mib": list(written),
            "missed": list(missed),
            "peak_used_mib": [8.0, 8.0],
        },
    }
    point = {"collective": "latency", "bytes": size, "buffer": "host", "status": "ok"}
    return SimpleNamespace(attrs=attrs, points=[point])


def test_the_report_says_what_the_message_buffers_were_made_after():
    from fabricprobe.report import buffers

    late = _buffer_run("Open MPI", 0, 4 << 20)
    assert "made when first needed, when each rank had written 72 MiB" in buffers.header_line(late.attrs)
    assert "--early-buffers MIB" in buffers.buffer_note(late)
    assert buffers.buffer_note(_buffer_run("MPICH", 0, 4 << 20)) is None  # seen to matter on Open MPI only
    assert buffers.buffer_note(_buffer_run("Open MPI", 0, 64 << 10)) is None  # below 1 MiB: not seen to matter
    early = _buffer_run("Open MPI", 32, 4 << 20, written=(5.9, 6.4))
    assert buffers.buffer_note(early) is None and buffers.buffer_warning(early.attrs) is None
    assert "from 32 MiB each rank wrote at its start, when it had written 6 MiB" in buffers.header_line(early.attrs)
    short = _buffer_run("Open MPI", 4, 4 << 20, missed=(2, 0))
    assert "give at least --early-buffers 8" in buffers.buffer_warning(short.attrs)
    assert "message buffers differ" in buffers.difference(early.attrs, late.attrs, "A", "B")
    assert buffers.difference(late.attrs, late.attrs, "A", "B") is None
    older = {"mpi_vendor": "Open MPI"}  # a file from before the record: nothing claimed
    assert buffers.header_line(older) is None and buffers.difference(older, late.attrs, "A", "B") is None


def _sweep_of_64_ranks(tmp_path) -> str:
    """A results file as a 64-rank sweep of 8 nodes writes it: the widest numbers a report shows (counts
    of 9 digits, medians of seconds, sizes to 1 GiB, busbw of hundreds of GB/s), every collective row
    with its bound, point-to-point rows of both pair kinds, kernels, and a case with two algorithms."""
    import sys as _sys
    from pathlib import Path

    _sys.path.insert(0, str(Path(__file__).parent))
    from test_bound import PLANTED
    from test_compare_plot import point

    from fabricprobe.store import ResultsWriter

    path = tmp_path / "r64.h5"
    w = ResultsWriter(str(path))
    w.start_run({"nranks": 64, "mpi_vendor": "Open MPI", "topology": "8 × 8", "topology_ranks_per_node": [8] * 8})
    index = 200
    for collective in ("allreduce", "alltoall", "bcast", "allgather", "reduce_scatter"):
        for algorithm in ("library", "ring") if collective == "allreduce" else ("library",):
            for size in (8, 4096, 1 << 20, 1 << 30):
                median = 3e-6 + size * 2e-9 * (1.3 if algorithm == "ring" else 1.0)
                p = point(index, size, median, collective=collective, nranks=64, algorithm=algorithm)
                p["op"] = "sum" if collective in ("allreduce", "reduce_scatter") else "none"
                p["max_s"], p["p99_s"], p["mean_s"] = median * 9.87, median * 3.21, median * 1.6
                w.append_point(p, None)
                index += 1
    for p in PLANTED:
        w.append_point(p, None)
    w.update_run({"status": "complete", "oversubscribed": False})
    w.close()
    return str(path)


@pytest.mark.process
@pytest.mark.parametrize("columns,term", [(80, "xterm-256color"), (132, "dumb")])
def test_a_64_rank_report_cuts_no_number_at_80_or_132_columns(tmp_path, columns, term):
    """At 80 columns rich cut the numbers of a 134-column table ("0.…"): the report now leaves out the
    least important columns whole and names them, and the summary folds its text, never a number.
    TERM=dumb (a CI job's terminal, an emacs shell): rich alone drew 80 columns on a 132-column one."""
    import shlex

    from mpirun import fabricprobe_argv, run_on_screen

    path = _sweep_of_64_ranks(tmp_path)
    for view in ([], ["--summary"]):
        command = shlex.join([*fabricprobe_argv(), "report", path, *view])
        shown = run_on_screen(command, columns, env={"TERM": term})
        assert shown.returncode == 0 and "allreduce" in shown.plain and "1 GiB" in shown.plain, shown.plain[-3000:]
        assert "…" not in shown.plain and max(map(len, shown.plain.splitlines())) <= columns, shown.plain
        if not view:
            assert ("not shown at 80 columns" in shown.plain) == (columns == 80)
            assert "268435456" in shown.plain  # the count of 1 GiB of float32: the widest number, whole


def test_the_omb_export_says_how_a_vector_collectives_blocks_lie(sweep_file):
    """OMB's v-tests send equal blocks; fabricprobe's uneven form does not: the export names the layout
    of each series (issue 53), so an OMB parser's reader knows which rows compare with OMB's."""
    from types import SimpleNamespace

    from fabricprobe.report.export import to_osu
    from fabricprobe.store import load_runs

    points = [p for p in load_runs(str(sweep_file))[0].points if p["collective"] == "allreduce"]
    relabelled = [{**p, "collective": name, "op": "none"} for name in ("gatherv", "gatherv_even") for p in points]
    text = to_osu([SimpleNamespace(id="0001", config={}, attrs={}, points=relabelled)])
    uneven_block, even_block = text.split("# OSU MPI Gatherv Latency Test")[1:]
    assert "# fabricprobe: uneven blocks" in uneven_block and "gatherv_even" in uneven_block
    assert "# fabricprobe: OMB's layout" in even_block and "uneven" not in even_block


def test_the_report_reads_each_vector_collective_against_its_even_form(sweep_file):
    """The uneven layout's cost, read at the same mean block: uneven median / even median, one row per
    size where both were measured, and no table where the even form was not (issue 53)."""
    from fabricprobe.report.layouts import layout_tables
    from fabricprobe.store import load_runs

    points = [p for p in load_runs(str(sweep_file))[0].points if p["collective"] == "allreduce"]
    even = [{**p, "collective": "alltoallv_even", "op": "none", "median_s": 2e-5} for p in points]
    uneven = [{**p, "collective": "alltoallv", "op": "none", "median_s": 5e-5, "bytes": p["bytes"] - 4} for p in points]
    (table,) = layout_tables(even + uneven)
    assert "alltoallv" in str(table.title) and list(table.columns[3].cells) == ["2.50×"] * len(points)
    assert layout_tables(uneven) == [] and layout_tables(even) == []
    failed = [{**p, "status": "wrong"} for p in uneven]
    assert layout_tables(even + failed) == []
