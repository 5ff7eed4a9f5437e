"""Hostile files and environment (issue 67): what a reader is given that fabricprobe did not write as
it is, each case one line and the documented status, never a traceback, a hang or a silent success —
files that are not regular files (a named pipe, a directory), a results file whose layout or numbers no
writer makes (exit 4, EXIT_DAMAGED, the loss named), a journal of random bytes, malformed planted
faults in the environment, a dataset that is not one, and options that would be ignored in silence."""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np
import pytest
from mpirun import error_lines, run_local

from fabricprobe.errors import UsageError
from fabricprobe.store import ResultsWriter, load_runs
from fabricprobe.store.attrs import seal


def _row(i: int) -> dict:
    t = 1e-6 * (i + 1)
    point = dict(index=i, key=f"k{i}", collective="allreduce", algorithm="library", status="ok", bytes=8 << i)
    return point | dict(nranks=2, dtype="float32", op="sum", mode="barrier", median_s=t, ci_low_s=t, ci_high_s=t)


def _folded(path: Path, points: int = 4) -> str:
    w = ResultsWriter(str(path))
    w.start_run({"nranks": 2, "mpi_vendor": "Open MPI", "mpi_library_version": "Open MPI v5.0.11"})
    for i in range(points):
        w.append_point(_row(i), np.full((5, 2), float(i)))
    w.close()
    with h5py.File(path, "r") as f:
        return next(iter(f["runs"]))


def _one_line(out, status: int, *said: str) -> None:
    lines = error_lines(out.stderr)
    assert out.returncode == status and len(lines) == 1 and "Traceback" not in out.stderr, (out.returncode, out.stderr)
    assert all(s in lines[0] for s in said), lines[0]


# ---- files that are not regular files: refused in one line, never read (a pipe would hang) ----


def test_a_named_pipe_given_as_results_file_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "r.h5"
    os.mkfifo(fifo)
    _one_line(run_local(["report", str(fifo)]), 2, "is a named pipe, not a regular file")


def test_a_named_pipe_or_directory_as_config_is_refused(tmp_path):
    from fabricprobe.engine.config import SweepConfig

    fifo = tmp_path / "c.json"
    os.mkfifo(fifo)
    for path, said in ((fifo, "is a named pipe"), (tmp_path, "is a directory")):
        with pytest.raises(UsageError, match=said):
            SweepConfig.from_file(str(path))


def test_a_directory_where_the_journal_goes_is_one_line(tmp_path):
    path = tmp_path / "r.h5"
    _folded(path)
    Path(f"{path}.journal").mkdir()
    _one_line(run_local(["report", str(path)]), 2, "journal", "is a directory")


# ---- a results file no writer makes: damage, exit 4, one line or the loss named ----


def _rewrite(path: Path, change) -> None:
    with h5py.File(path, "r+") as f:
        change(f)


@pytest.mark.parametrize(
    "case, change",
    [
        ("runs is a dataset", lambda f: (f.__delitem__("runs"), f.create_dataset("runs", data=[1, 2]))),
        ("points are integers", lambda f: _replace_points(f, np.arange(4))),
        ("no points table", lambda f: f["runs"][next(iter(f["runs"]))].__delitem__("points")),
        ("schema version -5", lambda f: f.attrs.__setitem__("schema_version", -5)),
    ],
)
def test_a_layout_no_writer_makes_is_damage_in_one_line(tmp_path, case, change):
    path = tmp_path / "r.h5"
    _folded(path)
    _rewrite(path, change)
    _one_line(run_local(["report", str(path)]), 4, str(path), "damaged")


@pytest.mark.parametrize(
    "name, value, said",
    [
        ("status", 7, 'status "7", which no run has'),
        ("config", "{algorithms", "config is not a JSON object"),
        ("hosts", "5", "hosts is not a list"),
        ("nranks", -2, "nranks -2 is not a whole number of at least 1"),
        ("planned_points", "many", "planned_points 'many' is not a whole number"),
    ],
)
def test_run_attributes_no_writer_gives_are_named_and_the_run_left_out(tmp_path, name, value, said):
    """Attributes of the wrong type or value, sealed as a writer would (their checksum holds): the run
    was shown as "status 7", or its config read as text by code that expects an object."""
    path = tmp_path / "r.h5"
    run_id = _folded(path)

    def plant(f):
        f["runs"][run_id].attrs[name] = value
        seal(f["runs"][run_id])

    _rewrite(path, plant)
    for fmt in ("table", "json"):
        out = run_local(["report", str(path), "--format", fmt])
        assert out.returncode == 4 and "Traceback" not in out.stderr, out.stderr
        assert f"run {run_id}: {said}" in out.stderr, out.stderr


def test_samples_that_are_not_a_matrix_of_times_are_damage_where_read(tmp_path):
    """A sample array a writer never makes (one dimension, text, negative times) read as if it were
    one by tune-eval's replay; readers that show nothing from samples do not read them."""
    from fabricprobe.errors import DamagedError

    path = tmp_path / "r.h5"
    run_id = _folded(path)
    for bad in (np.arange(5.0), -np.ones((5, 2)), np.array([b"abc"] * 3)):

        def plant(f, bad=bad):
            g = f["runs"][run_id]["samples"]
            del g["000001"]
            g["000001"] = bad

        _rewrite(path, plant)
        run = load_runs(str(path))[-1]
        assert run.samples(0) is not None
        with pytest.raises(DamagedError, match="samples are not a matrix of times"):
            run.samples(1)


def test_repair_says_what_readers_leave_out_and_never_calls_it_intact(tmp_path):
    path = tmp_path / "r.h5"
    run_id = _folded(path)

    def plant(f):
        f["runs"][run_id].attrs["status"] = 7
        seal(f["runs"][run_id])

    _rewrite(path, plant)
    out = run_local(["repair", str(path)])
    last = out.stdout.splitlines()[-1]
    assert out.returncode == 1 and "is intact" not in out.stdout, out.stdout
    assert f'readers leave out: run {run_id} (status "7", which no run has)' in last, last


def _replace_points(f, data) -> None:
    run = f["runs"][next(iter(f["runs"]))]
    del run["points"]
    run.create_dataset("points", data=data)


@pytest.mark.parametrize(
    "field, value, said",
    [
        ("median_s", -1.0, "negative median_s"),
        ("bytes", -8, "bytes -8"),
        ("ci_high_s", np.inf, "infinite ci_high_s"),
        ("collective", b"allreduce_v9", 'collective "allreduce_v9", which no point has'),
        ("algorithm", b"\xff\xfe", "algorithm"),
        ("dtype", b"float128", 'dtype "float128"'),
        ("mode", b"sideways", 'mode "sideways"'),
        ("median_s", np.nan, "an ok point without a median"),
        ("bytes", 2**62, "bytes 4611686018427387904 above the"),
        ("nranks", 0, "a measured point on 0 ranks"),
        ("index", 1, "its index repeated"),
    ],
)
def test_a_point_whose_numbers_no_measurement_gives_is_named_and_left_out(tmp_path, field, value, said):
    path = tmp_path / "r.h5"
    run_id = _folded(path)

    def plant(f):
        table = f["runs"][run_id]["points"]
        row = table[2]
        row[field] = value
        table[2] = row

    _rewrite(path, plant)
    out = run_local(["report", str(path), "--format", "json"])
    assert out.returncode == 4 and "Traceback" not in out.stderr, out.stderr
    named = value if field == "index" else 2  # a repeated index is named by the index it repeats
    assert f"run {run_id} point {named}: {said}" in out.stderr, out.stderr
    assert [p["index"] for p in load_runs(str(path))[-1].points] == [0, 1, 3]


def test_a_journal_of_random_bytes_is_damage_not_a_write_cut_short(tmp_path):
    """5,000 random bytes beside a good file read as one long torn record, in silence (exit 0)."""
    path = tmp_path / "r.h5"
    _folded(path)
    Path(f"{path}.journal").write_bytes(np.random.default_rng(7).bytes(5000))
    out = run_local(["report", str(path)])
    assert out.returncode == 4 and "journal record at byte 0 (5000 bytes)" in out.stderr, out.stderr


def test_a_write_cut_short_is_still_a_torn_record_not_damage(tmp_path):
    """The start of a record (its magic and part of the rest) is what a kill mid-write leaves."""
    from fabricprobe.store import journal

    path = tmp_path / "r.h5"
    w = ResultsWriter(str(path))
    w.start_run({"nranks": 2})
    w.append_point(_row(0), None)
    data = Path(journal.journal_path(str(path))).read_bytes()
    Path(journal.journal_path(str(path))).write_bytes(data + data[:30])
    found = journal.read(str(path))
    assert found.torn_bytes == 30 and not found.damaged


def test_a_journal_cut_short_says_so_with_what_the_plan_expected(tmp_path):
    """7 of 7 journals cut at random lengths read with exit 0 and 4-34 of 37 points gone, in silence:
    a journal ending inside a record is said in one line, with the points the run's plan expected."""
    from fabricprobe.store import journal

    path = tmp_path / "r.h5"
    w = ResultsWriter(str(path))
    w.start_run({"nranks": 2})
    w.update_run({"planned_points": 9})
    for i in range(5):
        w.append_point(_row(i), np.full((5, 2), float(i)))
    jpath = Path(journal.journal_path(str(path)))
    data = jpath.read_bytes()
    jpath.write_bytes(data[: len(data) - 17])  # inside point 4's record
    del w
    out = run_local(["report", str(path)])
    lines = [line for line in out.stderr.splitlines() if "ends inside a record" in line]
    assert out.returncode == 0 and len(lines) == 1, out.stderr
    assert "run 0001 holds 4 of the 9 points its plan expected" in lines[0], lines[0]
    shown = " ".join(out.stdout.replace("│", " ").split())  # the run's panel, its lines joined
    assert "holds 4 of the 9 points its plan expected" in shown  # and on the killed run's status line


def _start_copies_flipped(path: Path, copies: list[int]) -> list[int]:
    """A killed run of 6 points in the journal, a bit flipped in the given copies of its start record
    (records 0 and 1); returns where each record starts."""
    from fabricprobe.store import journal

    w = ResultsWriter(str(path))
    w.start_run({"nranks": 2})
    for i in range(6):
        w.append_point(_row(i), np.full((5, 2), float(i)))
    jpath = Path(journal.journal_path(str(path)))
    data = bytearray(jpath.read_bytes())
    starts, at = [], 0
    while at < len(data):
        starts.append(at)
        at += journal._HEAD.size + journal._HEAD.unpack_from(data, at)[1]
    for k in copies:
        data[starts[k] + journal._HEAD.size + 30] ^= 0x08
    jpath.write_bytes(bytes(data))
    del w
    return starts


def test_a_flipped_bit_in_a_start_record_loses_nothing_its_copy_holds(tmp_path):
    """A flip in a run's start record hid the whole run ("holds no runs", exit 2; 37 intact points never
    shown): the record is written twice, and one damaged copy costs nothing, said as such (exit 4)."""
    path = tmp_path / "r.h5"
    starts = _start_copies_flipped(path, [0])
    assert len(load_runs(str(path))[-1].points) == 6
    out = run_local(["report", str(path), "--format", "csv"])
    assert out.returncode == 4 and out.stdout.count("\n") == 7, out.stdout  # a header and the 6 points
    assert f"journal record at byte {starts[0]}" in out.stderr
    assert "a copy of run 0001's start record, the other copy intact (nothing lost)" in out.stderr, out.stderr
    out = run_local(["repair", str(path)])
    assert out.returncode == 1, out.stdout
    last = out.stdout.splitlines()[-1]
    assert last.startswith(f"{path} kept 1 runs, 6 points") and "1 damaged journal records" in last, last
    assert "intact:" not in out.stdout


@pytest.mark.process
def test_a_run_whose_every_start_copy_is_damaged_is_named_to_the_point(tmp_path):
    """Both copies damaged: the loss named with the point indices, damage's exit 4 (it was "holds no
    runs", exit 2), and repair's last line says what it could not keep (it said "intact: 0 runs")."""
    path = tmp_path / "r.h5"
    _start_copies_flipped(path, [0, 1])
    for argv in (["report", str(path)], ["sweep", "--resume", str(path)]):
        out = run_local(argv)
        assert out.returncode == 4, (argv, out.stderr)
        assert "run 0001's start record (every copy), so its 6 intact point records (points 0-5)" in out.stderr
        assert "holds no run that could be read" in out.stderr
        if argv[0] == "sweep":
            break
    saved = Path(f"{path}.journal.damaged")
    if saved.exists():  # the resume's writer kept the damaged journal whole: give it back to repair
        os.replace(saved, f"{path}.journal")
    out = run_local(["repair", str(path)])
    assert out.returncode == 1 and "is intact" not in out.stdout, out.stdout
    last = out.stdout.splitlines()[-1]
    assert "could not keep run 0001's 6 point records (its start record is damaged: points 0-5)" in last, last


def _flip_attribute_value(path: Path, needle: bytes) -> None:
    """Flip a bit inside the last copy of `needle` in the file (attributes rewritten by each fold leave
    dead copies earlier in the file)."""
    data = bytearray(path.read_bytes())
    at = data.rfind(needle)
    assert at > 0
    data[at + 2] ^= 0x04
    path.write_bytes(bytes(data))


def test_a_flipped_bit_in_a_runs_attributes_is_damage_named_and_repair_keeps_them_flagged(tmp_path):
    """HDF5's checksums cover datasets, not attributes: a flip changed `Open MPI v5.0.11` to another
    version with exit 0. Each run's attributes carry a checksum every reader verifies; a mismatch leaves
    that run out, named (exit 4); repair keeps it with a note that its attributes are unchecked; a
    writer never puts a new checksum over damaged attributes."""
    from fabricprobe.errors import DamagedError
    from fabricprobe.store import fold

    path = tmp_path / "r.h5"
    run_id = _folded(path)
    good = tmp_path / "good.h5"
    _folded(good)
    _flip_attribute_value(path, b"Open MPI v5.0.11")
    out = run_local(["report", str(path)])
    assert out.returncode == 4, out.stderr
    assert f"run {run_id}'s attributes fail their checksum, so its 4 points are not shown" in out.stderr
    assert run_local(["report", str(good)]).returncode == 0
    from fabricprobe.store import journal  # a writer's fold over the damaged run: refused, not blessed

    journal.append(str(path), journal.Record(journal.UPDATE, run_id, attrs={"status": "complete"}))
    with pytest.raises(DamagedError, match="attributes fail their checksum"):
        fold.fold(str(path))
    os.remove(f"{path}.journal")
    out = run_local(["repair", str(path)])
    assert out.returncode == 1 and f"failed their checksum (kept as read): {run_id}" in out.stdout, out.stdout
    assert "the checked attributes of 1 runs" in out.stdout.splitlines()[-1]
    run = load_runs(str(path))[-1]
    assert len(run.points) == 4 and any("failed their checksum" in n for n in run.attrs["notes"])


# ---- the environment: planted faults checked like options ----


@pytest.mark.parametrize(
    "name, value",
    [
        ("FABRICPROBE_FAULT_TIME", "abc"),
        ("FABRICPROBE_FAULT_TIME", "-1"),
        ("FABRICPROBE_FAULT_TIME", "nan"),
        ("FABRICPROBE_FAULT_TIME", "1e308"),
        ("FABRICPROBE_FAULT_WRONG", "allreduce"),
        ("FABRICPROBE_FAULT_HANG", "bcast:x"),
        ("FABRICPROBE_FAULT_LATE", "1:0"),
        ("FABRICPROBE_FAULT_ERROR", "allreduce"),
        ("FABRICPROBE_FAULT_TYPO", "1"),
    ],
)
def test_a_malformed_planted_fault_is_one_line_and_exit_2(tmp_path, monkeypatch, name, value):
    path = tmp_path / "r.h5"
    _folded(path)
    monkeypatch.setenv(name, value)
    _one_line(run_local(["report", str(path)]), 2, name)


def test_well_formed_planted_faults_pass():
    from fabricprobe.engine.faults import check_environment

    check_environment(
        {
            "FABRICPROBE_FAULT_TIME": "0.0001",
            "FABRICPROBE_FAULT_HANG": "allreduce/library:ring:1",
            "FABRICPROBE_FAULT_ERROR": "allreduce/library:ring",
            "FABRICPROBE_FAULT_READONLY": "coll_tuned_use_dynamic_rules,coll_tuned_allreduce_algorithm",
            "FABRICPROBE_FAULT_LATE_FIRST": "1:0",
        }
    )


# ---- a dataset that is not one ----


@pytest.mark.parametrize("kind", ["random", "empty", "truncated", "text", "labels"])
def test_a_dataset_file_that_is_not_one_is_one_line(tmp_path, monkeypatch, kind):
    import gzip

    from trainers import data

    good = (data.DATA_DIR / "digits.csv.gz").read_bytes()
    made = {
        "random": lambda: np.random.default_rng(1).bytes(5000),
        "empty": lambda: b"",
        "truncated": lambda: good[: len(good) // 2],
        "text": lambda: gzip.compress(b"a,b,c\n"),
        "labels": lambda: gzip.compress(b"".join(b"1,2,-3\n" for _ in range(20))),
    }[kind]()
    (tmp_path / "digits.csv.gz").write_bytes(made)
    monkeypatch.setattr(data, "DATA_DIR", tmp_path)
    with pytest.raises(UsageError, match="dataset file"):
        data.load("digits")


# ---- options that would be ignored in silence ----


@pytest.mark.process
def test_tunes_verify_options_without_verify_and_a_collective_not_measured_are_refused(tmp_path):
    path = tmp_path / "t.h5"
    _folded(path)
    for extra in (["--reps", "3"], ["--mpiexec", "/bin/true"], ["--mpiexec-args", "--oversubscribe"]):
        _one_line(run_local(["tune", str(path), *extra]), 2, extra[0], "--verify")
    _one_line(run_local(["tune", str(path), "--collectives", "bcast"]), 2, "bcast", "not measured")


def test_compare_with_an_empty_algorithm_is_refused(tmp_path):
    path = tmp_path / "r.h5"
    _folded(path)
    _one_line(run_local(["compare", f"{path}@", str(path)]), 2, "names no algorithm")


def test_text_from_a_file_reaches_no_terminal_raw(tmp_path):
    """A collective named with an escape sequence (it set the terminal's title and cleared the screen)
    and a library version with one pass through report's tables and exports escaped; a status no point
    has is damage (exit 4), named escaped."""
    path = tmp_path / "r.h5"
    run_id = _folded(path)

    def plant(f):
        table = f["runs"][run_id]["points"]
        row = table[1]
        row["algorithm"] = b"ring\x1b]0;pwn\x07\x1b[2J"
        table[1] = row
        f["runs"][run_id].attrs["mpi_library_version"] = "Open MPI \x1b[2J v5"
        seal(f["runs"][run_id])  # planted as a writer would have written it

    _rewrite(path, plant)
    for fmt in ("table", "osu", "json", "csv"):
        out = run_local(["report", str(path), "--format", fmt])
        assert out.returncode == 0, out.stderr
        assert "\x1b" not in out.stdout and "\x07" not in out.stdout and "\\x1b" in out.stdout, fmt

    def status(f):
        table = f["runs"][run_id]["points"]
        row = table[2]
        row["status"] = b"bogus\x1b[31mRED"
        table[2] = row

    _rewrite(path, status)
    out = run_local(["report", str(path)])
    assert out.returncode == 4 and "\x1b" not in out.stderr and 'status "bogus\\x1b[31mRED"' in out.stderr, out.stderr


def test_density_given_where_nothing_reads_it_is_refused():
    """sweep and tune-sweep without a sparse test, and a trainer other than sparse_dp, ignored --density."""
    import argparse

    from fabricprobe.cli.sweep_cmd import DENSITIES, density_for
    from fabricprobe.cli.train_cmd import SPARSE_DP_DENSITY, sparse_density

    with pytest.raises(UsageError, match="none is measured"):
        density_for("0.5", ["allreduce", "bcast"])
    assert density_for("0.5", ["allreduce", "sparse_allreduce"]) == "0.5"
    assert density_for(None, ["allreduce"]) == DENSITIES
    with pytest.raises(UsageError, match="only sparse_dp reads it"):
        sparse_density(argparse.Namespace(density=0.5, trainer="dp_sgd"))
    assert sparse_density(argparse.Namespace(density=None, trainer="sparse_dp")) == SPARSE_DP_DENSITY
    from trainers.core import Options

    assert Options.__dataclass_fields__["density"].default == SPARSE_DP_DENSITY  # the CLI says the trainers default


def test_tune_eval_refuses_an_exhaustive_file_as_the_economical_one(tmp_path):
    """`tune-eval t.h5 t.h5` scored the exhaustive sweep as if it were a budgeted one (regret 0, exit 0)."""
    exhaustive = str(Path(__file__).parent / "fixtures" / "tuning" / "mpich-n2.h5")
    _one_line(run_local(["tune-eval", exhaustive, exhaustive]), 2, "without --budget", "budgeted")
