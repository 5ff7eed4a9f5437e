"""OMB's buffer setting end to end: `sweep --early-buffers MIB` under mpiexec validates every point on
buffers carved from memory written at each rank's start, records the setting beside the default's, and
the report, compare and --launches carry it; options that cannot have it are refused in one line."""

from __future__ import annotations

import json
import math

import pytest
from mpirun import error_lines, launcher, run_local, run_mpi

from fabricprobe.store import load_runs

pytestmark = pytest.mark.mpi

ARGS = ["--collectives", "latency,allreduce,allgather", "--sizes", "0,8,1M", "--iters", "20", "--warmup", "2"]
ARGS += ["--max-time", "0.1", "--progress", "none", "--quiet"]


def _sweep(out, *extra):
    done = run_mpi(2, ["sweep", "-o", str(out), *ARGS, *extra])
    assert done.returncode == 0, done.stderr[-3000:]
    return load_runs(str(out))[-1]


def _report(out, run_id: str = "") -> str:
    """The report's text with the header's wrapped lines joined (its panel's borders taken off)."""
    done = run_local(["report", str(out), *(["--run", run_id] if run_id else [])])
    assert done.returncode == 0, done.stderr
    return " ".join(line.strip("│ ") for line in done.stdout.splitlines())


def test_early_buffers_are_validated_recorded_and_reported_beside_late_ones(tmp_path):
    out = tmp_path / "b.h5"
    early, late = _sweep(out, "--early-buffers", "32"), _sweep(out)
    for run in (early, late):
        measured = [p for p in run.points if p["collective"] != "empty"]
        assert measured and all(p["status"] == "ok" for p in measured)  # validated, dirty buffers included
    got, default = early.attrs["buffer_memory"], late.attrs["buffer_memory"]
    assert got["early_mib"] == [32, 32] and got["missed"] == [0, 0] and 0 < max(got["peak_used_mib"]) <= 32
    assert default["early_mib"] == [0, 0]
    assert early.config["early_buffers"] == 32 and late.config["early_buffers"] == 0
    # the early memory is written before numpy and the rest are imported, the late buffers after
    assert max(got["written_before_mib"]) < min(default["written_before_mib"])
    shown = _report(out, early.id)
    assert "message buffers: from 32 MiB each rank wrote at its start" in shown
    assert "--early-buffers MIB` measures in OMB's setting" not in shown
    shown = _report(out, late.id)
    assert "message buffers: made when first needed" in shown
    note = "--early-buffers MIB` measures in OMB's setting" in shown
    assert note == (late.attrs["mpi_vendor"] == "Open MPI")  # the setting was seen to matter on Open MPI
    compared = run_local(["compare", f"{out}:{early.id}", f"{out}:{late.id}", "--format", "json"])
    assert compared.returncode == 0, compared.stderr
    (differ,) = [m for m in json.loads(compared.stdout)["mismatches"] if m.startswith("message buffers differ")]
    assert "OMB's setting" in differ and "made when first needed" in differ


def test_buffers_that_do_not_fit_are_made_late_and_the_report_says_how_much_was_needed(tmp_path):
    out = tmp_path / "small.h5"
    run = _sweep(out, "--early-buffers", "1")  # 1 MiB messages need a send and a receive buffer of 1 MiB
    got = run.attrs["buffer_memory"]
    assert min(got["missed"]) >= 1 and min(got["peak_used_mib"]) >= 2
    assert all(p["status"] == "ok" for p in run.points)
    shown = _report(out)
    assert "did not fit in --early-buffers 1 and were made late" in shown
    assert f"give at least --early-buffers {math.ceil(max(got['peak_used_mib']))}" in shown


def test_each_launch_of_a_series_gets_the_setting(tmp_path):
    out = tmp_path / "l.h5"
    args = ["sweep", "--launches", "2", "-n", "2", "-o", str(out), "--mpiexec", launcher().mpiexec]
    done = run_local([*args, "--collectives", "latency", "--sizes", "1M", "--iters", "20", "--early-buffers", "8"])
    assert done.returncode == 0, done.stderr[-3000:]
    runs = load_runs(str(out))
    assert [r.attrs["buffer_memory"]["early_mib"] for r in runs] == [[8, 8], [8, 8]]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--early-buffers", "8", "--hugepages"], "leave out --hugepages"),
        (["--early-buffers", "-1"], "--early-buffers"),
        (["--early-buffers", "²"], "--early-buffers"),
        (["--early-buffers", "8", "--buffer", "numba"], "leave out --buffer numba"),
    ],
)
def test_options_that_cannot_have_early_buffers_are_refused(tmp_path, extra, says):
    done = run_local(["sweep", "-o", str(tmp_path / "x.h5"), "--sizes", "8", *extra])
    assert done.returncode == 2 and len(error_lines(done.stderr)) == 1 and says in done.stderr
    assert not (tmp_path / "x.h5").exists()


def test_a_configuration_that_asks_for_early_buffers_needs_the_option_at_start(tmp_path):
    """The setting acts before any file is read: a --config (or a stored run) asking for it without the
    option would record a setting the process did not have."""
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"collectives": ["allreduce"], "sizes": [8], "early_buffers": 8}))
    done = run_local(["sweep", "--config", str(config), "-o", str(tmp_path / "x.h5")])
    assert done.returncode == 2 and "give --early-buffers 8 on the fabricprobe command line" in done.stderr
    done = run_local(["sweep", "--config", str(config), "-o", str(tmp_path / "y.h5"), "--early-buffers", "8"])
    assert done.returncode == 0, done.stderr[-2000:]
    assert load_runs(str(tmp_path / "y.h5"))[-1].attrs["buffer_memory"]["early_mib"] == [8]
