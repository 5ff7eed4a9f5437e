"""`fabricprobe report`: tables, JSON / CSV / OMB exports from a real sweep."""

from __future__ import annotations

import csv
import io
import json

import pytest
from mpirun import error_lines, run_local, run_mpi

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "r.h5"
    out = run_mpi(
        2,
        [
            "sweep",
            "-o",
            str(path),
            "--sizes",
            "8,64K",
            "--iters",
            "30",
            "--warmup",
            "2",
            "--max-time",
            "0.2",
            "--progress",
            "none",
            "--quiet",
        ],
    )
    assert out.returncode == 0, out.stderr
    return path


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
