"""`fabricprobe compare`, `plot` and `report --summary` on results files written here with known
numbers, so every verdict, mismatch and crossover has one right answer."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from mpirun import error_lines, mpi_env, run_local

from fabricprobe.report.compare import compare, parse_side, verdicts
from fabricprobe.report.summary import summarize
from fabricprobe.store import ResultsWriter, load_runs

SIZES = [8, 1024, 65536, 1 << 20]


def point(
    index: int,
    size: int,
    median: float,
    *,
    algorithm: str = "library",
    nranks: int = 2,
    collective: str = "allreduce",
    noise: float = 0.01,
) -> dict:
    busbw = size / median / 1e9 * (2 * (nranks - 1) / nranks)
    return {
        "index": index,
        "key": f"{collective}|{algorithm}|{nranks}|{size}",
        "collective": collective,
        "algorithm": algorithm,
        "dtype": "float32",
        "op": "sum",
        "mode": "barrier",
        "nranks": nranks,
        "bytes": size,
        "count": size // 4,
        "median_s": median,
        "min_s": median * 0.9,
        "p90_s": median * 1.2,
        "ci_low_s": median * (1 - noise),
        "ci_high_s": median * (1 + noise),
        "busbw_gbps": busbw,
        "algbw_gbps": size / median / 1e9,
        "busbw_factor": 2 * (nranks - 1) / nranks,
        "iterations": 100,
        "status": "ok",
    }


def write(path, points: list[dict], nranks: int = 2) -> str:
    w = ResultsWriter(str(path))
    w.start_run({"nranks": nranks, "mpi_vendor": "Open MPI", "topology": f"1 × {nranks} ranks"})
    for p in points:
        w.append_point(p, None)
    w.update_run({"status": "complete"})
    return str(path)


def latency(size: int) -> float:
    return 2e-6 + size / 5e9


@pytest.fixture
def files(tmp_path):
    a = write(tmp_path / "a.h5", [point(i, s, latency(s)) for i, s in enumerate(SIZES)])
    faster = write(tmp_path / "fast.h5", [point(i, s, latency(s) / 2) for i, s in enumerate(SIZES)])
    same = write(tmp_path / "same.h5", [point(i, s, latency(s) * 1.005, noise=0.05) for i, s in enumerate(SIZES)])
    other_sizes = write(tmp_path / "sizes.h5", [point(i, s, latency(s)) for i, s in enumerate([8, 4096, 65536])])
    four = write(tmp_path / "four.h5", [point(i, s, latency(s), nranks=4) for i, s in enumerate(SIZES)], nranks=4)
    return {"a": a, "fast": faster, "same": same, "sizes": other_sizes, "four": four}


def test_faster_run_is_named_with_its_ratio(files):
    comp = compare(parse_side(files["a"]), parse_side(files["fast"]))
    assert [r.key["bytes"] for r in comp.rows] == SIZES and not comp.mismatches
    assert all(r.significant and r.speedup == pytest.approx(2.0) for r in comp.rows)
    text = verdicts(comp)["allreduce"]
    assert text.startswith(files["fast"]) and "2.00×" in text and "4 of 4" in text


def test_difference_inside_the_noise_is_not_called(files):
    comp = compare(parse_side(files["a"]), parse_side(files["same"]))
    assert not any(r.significant for r in comp.rows)
    assert verdicts(comp)["allreduce"].startswith("no difference beyond the drift floor")


def test_mismatched_sizes_are_reported_and_common_sizes_compared(files):
    comp = compare(parse_side(files["a"]), parse_side(files["sizes"]))
    assert [r.key["bytes"] for r in comp.rows] == [8, 65536]
    assert comp.mismatches == ["allreduce: sizes differ (3 measured on one side only)"]
    assert len(comp.only_a) == 2 and len(comp.only_b) == 1
    out = run_local(["compare", files["a"], files["sizes"]])
    assert out.returncode == 0, out.stderr
    assert "mismatch: allreduce: sizes differ" in out.stdout and "2 only in A, 1 only in B" in out.stdout


def test_mismatched_rank_counts_are_reported_not_a_crash(files):
    comp = compare(parse_side(files["a"]), parse_side(files["four"]))
    assert comp.rows == [] and comp.mismatches[0].startswith("rank counts differ")
    out = run_local(["compare", files["a"], files["four"]])
    assert out.returncode == 0 and "Traceback" not in out.stderr
    assert "rank counts differ" in out.stdout and "has [2]" in out.stdout and "has [4]" in out.stdout


def test_algorithms_in_one_file_and_json(tmp_path):
    pts = [point(i, s, latency(s)) for i, s in enumerate(SIZES)]
    pts += [point(10 + i, s, latency(s) * (0.5 if s >= 65536 else 1.5), algorithm="ring") for i, s in enumerate(SIZES)]
    path = write(tmp_path / "algs.h5", pts)
    out = run_local(["compare", f"{path}@library", f"{path}@ring", "--format", "json"])
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    speedups = {r["bytes"]: r["b_speedup_over_a"] for r in doc["rows"]}
    assert speedups == pytest.approx({8: 1 / 1.5, 1024: 1 / 1.5, 65536: 2.0, 1 << 20: 2.0})
    assert all(r["significant"] for r in doc["rows"]) and doc["mismatches"] == []
    assert "2 favour" in doc["verdicts"]["allreduce"]


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["compare", "missing.h5", "missing.h5"], "missing.h5"),
        (["compare", "{a}:7", "{a}"], "has no run '7'"),
        (["compare", "{a}", "{a}", "--collectives", "allreduc"], "did you mean 'allreduce'"),
        (["compare", "{a}@ring", "{a}"], "has no measured points (algorithms in run 0001: library)"),
        (["plot", "{a}", "-o", "{tmp}/out.jpg"], "cannot tell the image format"),
        (["plot", "{a}", "-o", "{tmp}/no/such/out.png"], "is missing or not writable"),
        (["plot", "{a}", "-o", "{tmp}/out.png", "--collectives", "bcast"], "nothing to plot"),
        (["report", "{a}", "--summary", "--format", "csv"], "--summary is shown as a table or exported as json"),
    ],
)
def test_bad_input_is_one_line(files, tmp_path, args, fragment):
    out = run_local([a.format(a=files["a"], tmp=tmp_path) for a in args], cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert len(error_lines(out.stderr)) == 1 and fragment in error_lines(out.stderr)[0], out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_plot_writes_a_labelled_figure(files, tmp_path, suffix):
    target = tmp_path / f"out.{suffix}"
    out = run_local(["plot", files["a"], files["fast"], "-o", str(target)])
    assert out.returncode == 0, out.stderr
    data = target.read_bytes()
    assert len(data) > 10_000
    assert not list(tmp_path.glob(".out*"))  # no temporary file left behind
    if suffix == "png":
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        text = data.decode()
        for label in (
            "message size",
            "median time (µs)",
            "busbw (GB/s)",
            "allreduce: time",
            "fast.h5 run 0001: library",
            "a.h5 run 0001: library",
        ):
            assert label in text, label


def test_plot_axes_are_logarithmic_and_labelled(files, tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from fabricprobe.report import plots

    captured = {}
    monkeypatch.setattr(plt, "close", lambda fig: captured.setdefault("fig", fig))
    plots.plot([parse_side(files["a"])], str(tmp_path / "p.png"))
    lat, bw = captured["fig"].axes
    assert lat.get_xscale() == lat.get_yscale() == "log" and bw.get_xscale() == "log"
    assert lat.get_ylabel() == "median time (µs)" and bw.get_ylabel() == "busbw (GB/s)"
    assert [line.get_label() for line in lat.get_lines()] == ["library"]
    assert list(lat.get_lines()[0].get_xdata()) == SIZES


def test_plot_of_two_runs_of_one_file_labels_them_apart(tmp_path, monkeypatch):
    """Issue 69: `plot F:1 F:2` labelled both lines "library". Each input is named by its file and run,
    the figure's title names each run's library and job, a run that loaded tuning files says which,
    and sizes read as sizes (the SVG's text)."""
    import matplotlib.pyplot as plt

    from fabricprobe.report import plots

    path = tmp_path / "two.h5"
    write(path, [point(i, s, latency(s)) for i, s in enumerate(SIZES)])
    w = ResultsWriter(str(path))
    rules = "/shared/tuning/ompi_rules.conf"
    w.start_run(
        {
            "nranks": 2,
            "nnodes": 1,
            "mpi_vendor": "Open MPI",
            "mpi_version": "4.1.4",
            "environment": {"OMPI_MCA_coll_tuned_dynamic_rules_filename": rules},
        }
    )
    for i, s in enumerate(SIZES):
        w.append_point(point(i, s, latency(s) / 2), None)
    w.update_run({"status": "complete"})
    captured = {}
    monkeypatch.setattr(plt, "close", lambda fig: captured.setdefault("fig", fig))
    target = tmp_path / "two.svg"
    plots.plot([parse_side(f"{path}:1"), parse_side(f"{path}:2")], str(target))
    lat = captured["fig"].axes[0]
    labels = [line.get_label() for line in lat.get_lines()]
    assert labels == [
        "two.h5 run 0001, Open MPI: library",
        "two.h5 run 0002, Open MPI 4.1.4, tuned: ompi_rules.conf: library",
    ]
    heading = captured["fig"].get_suptitle().splitlines()
    assert heading[1] == "two.h5 run 0002, tuned: ompi_rules.conf: Open MPI 4.1.4, 2 ranks on 1 node"
    text = target.read_text()
    assert "1 KiB" in text and "1 MiB" in text and "2^" not in text


@pytest.mark.process
def test_plot_without_matplotlib_says_how_to_get_it(files, tmp_path):
    code = (
        "import sys; sys.modules['matplotlib'] = None; from fabricprobe.cli.main import main; "
        f"sys.exit(main(['plot', {files['a']!r}, '-o', {str(tmp_path / 'p.png')!r}]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=mpi_env())
    assert out.returncode == 2
    assert error_lines(out.stderr) == ["fabricprobe: error: plots need matplotlib: pip install 'fabricprobe[plot]'"]


def crossing_run(tmp_path, noise: float) -> str:
    """ring loses to the library below 64 KiB and wins from there on."""
    sizes = [8, 1024, 16384, 65536, 1 << 20, 4 << 20]
    pts = [point(i, s, latency(s), noise=noise) for i, s in enumerate(sizes)]
    pts += [
        point(10 + i, s, latency(s) * (1.3 if s < 65536 else 0.6), algorithm="ring", noise=noise)
        for i, s in enumerate(sizes)
    ]
    return write(tmp_path / f"x{noise}.h5", pts)


def test_summary_finds_the_winner_per_range_and_the_crossover(tmp_path):
    [s] = summarize(load_runs(crossing_run(tmp_path, 0.01))[0].points)
    assert s.baseline == "library" and s.algorithms == ["library", "ring"]
    assert [(r.lo, r.hi, r.winner) for r in s.ranges] == [(8, 16384, "library"), (65536, 4 << 20, "ring")]
    assert s.ranges[1].speedup_min == pytest.approx(1 / 0.6)
    [c] = s.crossovers
    assert c.algorithm == "ring" and c.faster == "above" and c.between == (16384, 65536)
    assert 16384 < c.estimate < 65536
    assert s.latency_bytes == 8 and s.latency_s == pytest.approx(latency(8))
    assert s.peak_bytes == 4 << 20
    busbw = {size: size / latency(size) for size in (8, 1024, 16384, 65536, 1 << 20, 4 << 20)}
    assert s.half_peak_bytes == min(size for size, b in busbw.items() if b >= busbw[4 << 20] / 2)


def test_summary_ignores_differences_inside_the_noise(tmp_path):
    [s] = summarize(load_runs(crossing_run(tmp_path, 0.6))[0].points)
    assert [r.winner for r in s.ranges] == ["library"] and s.crossovers == []


@pytest.mark.process
def test_summary_shows_the_last_run_unless_asked_and_fits_80_columns(tmp_path):
    """Issue 69: `report --summary` is one screen, so it shows the file's last run and says how to see
    the others (--run ID, --all-runs); in an 80-column terminal no line is wider and no word broken."""
    from terminal import run_in_terminal

    path = crossing_run(tmp_path, 0.01)
    write(path, [point(i, s, latency(s), nranks=4) for i, s in enumerate(SIZES)], nranks=4)
    shown = run_in_terminal(["report", path, "--summary"], columns=80)
    assert shown.returncode == 0, shown.lines
    text = "\n".join(shown.lines)
    assert "run 0002" in text and "run 0001" not in text
    assert "1 earlier run in this file: --run ID for one, --all-runs for every one" in text
    assert max(len(line) for line in shown.lines) <= 80, [line for line in shown.lines if len(line) > 80]
    written = [line.rstrip() for line in shown.lines if line.strip()]
    assert written == [row for row in shown.rows if row.strip()]  # nothing folded at the edge: no broken word
    every = run_local(["report", path, "--summary", "--all-runs"]).stdout
    assert "run 0001" in every and "run 0002" in every and "earlier" not in every
    first = run_local(["report", path, "--summary", "--run", "1"]).stdout
    assert "run 0001" in first and "run 0002" not in first and "earlier" not in first
    doc = json.loads(run_local(["report", path, "--summary", "--format", "json"]).stdout)
    assert [r["id"] for r in doc["runs"]] == ["0002"]
    refused = run_local(["report", path, "--all-runs"])
    assert refused.returncode == 2 and "--all-runs is for --summary" in refused.stderr


def test_summary_view(tmp_path):
    path = crossing_run(tmp_path, 0.01)
    out = run_local(["report", path, "--summary"])
    assert out.returncode == 0, out.stderr
    for fragment in ("winner by size", "8 B–16 KiB: library", "64 KiB–4 MiB: ring", "ring faster from ≈", "n½"):
        assert fragment in out.stdout, fragment
    out = run_local(["report", path, "--summary", "--format", "json"])
    [case] = json.loads(out.stdout)["runs"][0]["cases"]
    assert case["crossovers"][0]["between"] == [16384, 65536]
