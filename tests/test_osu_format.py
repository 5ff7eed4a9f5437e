"""`report --format osu` speaks OMB's text exactly: every title, datatype, column header and data line of
real OMB 7.4 output (tests/fixtures/omb, `-f` full form for collectives) is re-printed byte for byte by
fabricprobe's formatter, and a real sweep's export has the same line shapes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mpirun import run_local

from fabricprobe.report.export import OSU_LAYOUT, osu_header, osu_row
from fabricprobe.specs import SPECS

FIXTURES = Path(__file__).parent / "fixtures" / "omb"
FILES = {
    "allreduce": "osu_allreduce_f_float.txt",
    "reduce": "osu_reduce_f_float.txt",
    "bcast": "osu_bcast_f.txt",
    "allgather": "osu_allgather_f.txt",
    "alltoall": "osu_alltoall_f.txt",
    "reduce_scatter": "osu_reduce_scatter_f.txt",
    "barrier": "osu_barrier_f.txt",
    "latency": "osu_latency.txt",
    "bw": "osu_bw.txt",
    "bibw": "osu_bibw.txt",
}


def _rows(lines: list[str]) -> list[str]:
    return [line for line in lines if line and not line.startswith("#")]


@pytest.mark.parametrize("collective", sorted(FILES))
def test_every_line_of_real_omb_output_is_reprinted_exactly(collective):
    lines = (FIXTURES / FILES[collective]).read_text().splitlines()
    assert lines[0] == ""  # OMB starts each test with an empty line
    assert lines[1] == f"# OSU MPI {SPECS[collective].osu_title} v{OSU_LAYOUT}"
    header = lines[2] if collective == "barrier" else lines[3]
    assert header == osu_header(collective)
    rows = _rows(lines)
    assert rows
    for line in rows:
        fields = line.split()
        if collective in ("latency", "bw", "bibw"):
            again = osu_row(collective, int(fields[0]), float(fields[1]))
        elif collective == "barrier":
            again = osu_row(collective, 0, float(fields[0]), float(fields[1]), float(fields[2]), int(fields[3]))
        else:
            size, avg, low, high, iters = fields
            again = osu_row(collective, int(size), float(avg), float(low), float(high), int(iters))
        assert again == line


def _blocks(text: str) -> dict[str, list[str]]:
    """title line -> the block's lines (title first)."""
    blocks, current = {}, None
    for line in text.splitlines():
        if line.startswith("# OSU MPI "):
            current = blocks.setdefault(line, [line])
        elif current is not None and line:
            current.append(line)
    return blocks


def test_a_sweeps_export_has_omb_lines(sweep_file):
    out = run_local(["report", str(sweep_file), "--format", "osu"])
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "no OMB counterpart, not exported: copy_local, reduce_local" in text
    blocks = _blocks(text)
    for collective, name in FILES.items():
        omb = (FIXTURES / name).read_text().splitlines()
        title = next(b for t, b in blocks.items() if t.startswith(omb[1] + " ("))
        assert osu_header(collective) in title, collective
        ours = _rows(title)
        assert len(ours) == (1 if collective == "barrier" else 2), (collective, title)
        shape = re.compile(r"[^ ]+")
        for line in ours:  # same columns, right-aligned at the same offsets as OMB's first data line
            assert [m.end() for m in shape.finditer(line)][1:] == [m.end() for m in shape.finditer(_rows(omb)[0])][1:]
        datatype = [line for line in omb if line.startswith("# Datatype:")]
        if datatype:
            assert any(line.startswith("# Datatype: MPI_") and line.endswith(".") for line in title)
    allgather = next(b for t, b in blocks.items() if "Allgather" in t)
    assert [row.split()[0] for row in _rows(allgather)] == ["4", "32768"]  # OMB's Size: one rank's block
