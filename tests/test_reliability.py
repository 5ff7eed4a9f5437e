"""What a hostile user found on main at ea32ac9 (issue 32), each kept from coming back: a record naming no
run poisoned every later reader; one flipped bit in the journal dropped every later record and repair
deleted them; repair rewrote files that were not fabricprobe's; exports and plots replaced results
files, symbolic links' targets and device nodes; singletons of a killed launcher recorded bogus runs;
--resume appended another library's points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from mpirun import error_lines, launcher, mpi_env, run_local, run_mpi

from fabricprobe.errors import UsageError
from fabricprobe.store import ResultsWriter, journal, load_runs
from fabricprobe.store.attrs import seal
from fabricprobe.store.fold import damaged_journal_path

SMALL = ["--collectives", "allreduce", "--sizes", "8,1K", "--iters", "10", "--max-time", "0.01", "--quiet"]


def _row(i: int) -> dict:
    t = 1e-6 * (i + 1)
    point = dict(index=i, key=f"k{i}", collective="allreduce", algorithm="library", status="ok", bytes=8 << i)
    return point | dict(nranks=2, dtype="float32", op="sum", mode="barrier", median_s=t, ci_low_s=t, ci_high_s=t)


def _journal_with_points(path: Path, n: int) -> ResultsWriter:
    """A run of n points in the journal only (its writer killed: no fold)."""
    w = ResultsWriter(str(path))
    w.start_run({"nranks": 2})
    for i in range(n):
        w.append_point(_row(i), np.full((5, 2), float(i)))
    return w


def _offsets(path: Path) -> list[int]:
    """Where each journal record starts."""
    data = Path(journal.journal_path(str(path))).read_bytes()
    out, at = [], 0
    while at < len(data):
        out.append(at)
        _, length, _ = journal._HEAD.unpack_from(data, at)
        at += journal._HEAD.size + length
    return out


# ---- the journal: each record on its own checksum ----


@pytest.mark.parametrize("where", ["magic", "length", "payload", "checksum"])
def test_one_flipped_bit_loses_that_record_only(tmp_path, where):
    path = tmp_path / "r.h5"
    w = _journal_with_points(path, 6)
    jpath = Path(journal.journal_path(str(path)))
    starts = _offsets(path)  # records 0 and 1 start the run (two copies), 2..7 are points 0..5
    data = bytearray(jpath.read_bytes())
    at = starts[4] + {"magic": 1, "length": 5, "payload": journal._HEAD.size + 40, "checksum": 13}[where]
    data[at] ^= 0x10
    jpath.write_bytes(bytes(data))
    del w
    found = journal.read(str(path))
    assert len(found.damaged) == 1 and found.damaged[0][0] == starts[4] and found.torn_bytes == 0
    run = load_runs(str(path))[-1]
    assert [p["index"] for p in run.points] == [0, 1, 3, 4, 5]  # point 2 lost, every later one kept
    out = run_local(["repair", str(path)])
    assert out.returncode == 1, out.stdout + out.stderr  # something was lost: said, exit 1
    assert f"damaged journal record at byte {starts[4]}" in out.stdout
    assert Path(str(path) + ".journal.damaged").read_bytes() == bytes(data)  # nothing unfolded deleted
    assert damaged_journal_path(str(path)).endswith(".journal.damaged.2")  # a second one would not replace it
    assert [p["index"] for p in load_runs(str(path))[-1].points] == [0, 1, 3, 4, 5]


@pytest.mark.parametrize("record", ["start", "point 2"])
def test_every_reader_names_a_flipped_bit_in_the_journal(tmp_path, record):
    """A flipped bit in a journal record dropped that point (or, in the record that starts the run, the
    whole run) from report in silence, exit 0 (issue 53: 17 of 17 flips); only repair named it."""
    path = tmp_path / "r.h5"
    first = ResultsWriter(str(path))  # run 0001, folded into the file: the journal then holds run 0002 only
    first.start_run({"nranks": 2})
    first.append_point(_row(0), None)
    first.close()
    w = _journal_with_points(path, 6)
    w.update_run({"status": "complete"})
    jpath = Path(journal.journal_path(str(path)))
    starts = _offsets(path)  # records 0 and 1: the two copies of the start record; 2..7: points 0..5
    flipped = [0, 1] if record == "start" else [4]
    data = bytearray(jpath.read_bytes())
    for k in flipped:
        data[starts[k] + journal._HEAD.size + 2] ^= 0x04  # inside the header's JSON, before "run"
    jpath.write_bytes(bytes(data))
    del w
    at = starts[flipped[0]]
    said = (
        "run 0002's start record (every copy), so its 6 intact point records (points 0-5) cannot be shown"
        if record == "start"
        else f"journal record at byte {at}"
    )
    readers = (["report", str(path)], ["report", str(path), "--format", "json"], ["compare", str(path), str(path)])
    for argv in (*readers, ["plot", str(path), "-o", str(tmp_path / "p.png")]):
        out = run_local(argv)
        warnings = [line for line in out.stderr.splitlines() if "is damaged" in line]
        assert out.returncode == 4 and len(warnings) == 1 and said in warnings[0], (argv, out.returncode, out.stderr)
    for argv in (["tune-eval", str(path)],):  # refused (not a tune-sweep), the damage said first
        out = run_local(argv)
        warnings = [line for line in out.stderr.splitlines() if "is damaged" in line]
        assert out.returncode == 2 and len(warnings) == 1 and said in warnings[0], (argv, out.returncode, out.stderr)
    if record == "point 2":
        assert "of run 0002, not shown (points 2 lost)" in warnings[0], warnings
        doc = json.loads(run_local(["report", str(path), "--format", "json"]).stdout)
        assert doc["damage"] and said in doc["damage"][0]
        assert [p["index"] for p in doc["runs"][1]["points"]] == [0, 1, 3, 4, 5]


def test_the_runs_since_the_kth_read_as_a_full_read_and_nothing_older_is_read(tmp_path, monkeypatch, capsys):
    """tune's before/after reads what each repetition added (load_runs since=) from a tune-sweep file
    that every verification makes longer: the same runs as a full read, folded or in the journal; the
    older ones not read at all, save one a damaged journal record names (its loss says which points it
    lacks, as a full read says)."""
    from fabricprobe.store import count_runs, damage, reader

    path = tmp_path / "r.h5"
    for indices in ([0], [0, 1], [0, 2]):  # runs 0001-0003 folded into the file; 0003 lacks point 1
        w = ResultsWriter(str(path))
        w.start_run({"nranks": 2, "n": len(indices)})
        for i in indices:
            w.append_point(_row(i), None)
        w.update_run({"status": "complete"})
        w.close()
    w = _journal_with_points(path, 4)  # run 0004 in the journal only
    w.update_run({"status": "complete"})
    full = load_runs(str(path))
    assert count_runs(str(path)) == len(full) == 4
    for since in range(6):
        assert [(r.id, r.attrs, r.points) for r in load_runs(str(path), since=since)] == [
            (r.id, r.attrs, r.points) for r in full[since:]
        ]
    read = []
    real = reader.read_attrs
    monkeypatch.setattr(reader, "read_attrs", lambda group: read.append(group.name) or real(group))
    assert [r.id for r in load_runs(str(path), since=2)] == ["0003", "0004"] and read == ["/runs/0003"]
    read.clear()
    assert count_runs(str(path)) == 4 and read == []
    monkeypatch.undo()

    # a damaged record of run 0003 (folded, complete, point 1 missing) at the journal's end
    at = Path(journal.journal_path(str(path))).stat().st_size
    journal.append(str(path), journal.Record(journal.UPDATE, "0003", attrs={"note": "x"}))
    jpath = Path(journal.journal_path(str(path)))
    data = bytearray(jpath.read_bytes())
    data[at + journal._HEAD.size + 2] ^= 0x04  # inside its header's JSON, before "run"
    jpath.write_bytes(bytes(data))
    del w
    said = []
    for since in (0, 4):  # 4: run 0003 is not returned, and is read for what its loss says
        damage.forget()
        load_runs(str(path), since=since)
        said.append([line for line in capsys.readouterr().err.splitlines() if "is damaged" in line])
    assert said[0] == said[1] and len(said[0]) == 1 and "of run 0003, not shown (points 1 lost)" in said[0][0], said


def test_a_record_that_names_no_run_is_skipped_not_a_traceback(tmp_path):
    """What an interrupt in a sweep's first 100 ms left (7 of 8 SIGINT trials): every later sweep,
    --resume and repair ended in TypeError."""
    path = tmp_path / "r.h5"
    w = _journal_with_points(path, 2)
    journal.append(str(path), journal.Record(journal.UPDATE, None, attrs={"status": "interrupted"}))
    w.append_point(_row(2), None)
    del w
    found = journal.read(str(path))
    assert len(found.damaged) == 1 and len(found.records) == 5  # the start record's two copies, 3 points
    assert [p["index"] for p in load_runs(str(path))[-1].points] == [0, 1, 2]
    out = run_local(["report", str(path)])  # shown, and the damage named: exit 4 (EXIT_DAMAGED)
    assert out.returncode == 4 and "is damaged" in out.stderr and "Traceback" not in out.stderr, out.stderr
    out = run_local(["repair", str(path)])
    assert "Traceback" not in out.stderr and out.returncode in (0, 1), out.stderr


def test_a_writer_whose_run_has_not_started_records_nothing(tmp_path):
    path = tmp_path / "r.h5"
    w = ResultsWriter(str(path))
    w.update_run({"status": "interrupted"})  # the interrupt thread, before start_run
    w.close()
    assert not Path(journal.journal_path(str(path))).exists() and not path.exists()


# ---- a journal or a file written by another version of the schema ----


def _older_dtype(without: str) -> np.dtype:
    from fabricprobe.store.schema import POINT_DTYPE

    return np.dtype([(n, POINT_DTYPE[n]) for n in POINT_DTYPE.names if n != without])


def test_a_journal_written_by_another_schema_version_loses_no_point(tmp_path):
    """A raw row of one schema version was unreadable to the next: every point of an interrupted
    run's journal written before `served_by` was added was skipped as damaged (54 of 120 interrupt
    trials whose study read with the older code)."""
    from fabricprobe.store.schema import make_row

    path = tmp_path / "r.h5"
    w = _journal_with_points(path, 2)  # this version: rows name their fields
    del w
    row = make_row(_row(2) | {"served_by": "tuned"})
    legacy = np.zeros(1, _older_dtype("served_by"))  # before served_by, and before rows named fields
    for name in legacy.dtype.names:
        legacy[name] = row[name]
    newer = np.dtype(row.dtype.descr + [("future_field", "<i8")])  # a newer schema, its fields named
    future = np.zeros(1, newer)
    for name in row.dtype.names:
        future[name] = row[name]
    future["index"], future["key"], future["future_field"] = 3, b"k3", 7
    for raw, fields in ((legacy, None), (future, [[n, newer[n].str] for n in newer.names])):
        header = {"kind": journal.POINT, "run": journal.read(str(path)).records[0].run, "row_bytes": raw.nbytes}
        if fields:
            header["row_fields"] = fields
        payload = json.dumps(header).encode() + b"\n" + raw.tobytes()
        import zlib

        with open(journal.journal_path(str(path)), "ab") as f:
            f.write(journal._HEAD.pack(journal.MAGIC, len(payload), zlib.crc32(payload)) + payload)
    found = journal.read(str(path))
    assert not found.damaged and len(found.records) == 6  # the start record's two copies, 4 points
    points = load_runs(str(path))[-1].points
    assert [p["index"] for p in points] == [0, 1, 2, 3]
    assert points[2]["served_by"] == "" and points[3]["served_by"] == "tuned"  # by name, whatever the layout
    assert points[2]["collective"] == points[3]["collective"] == "allreduce"


def test_a_run_resumed_by_a_newer_schema_keeps_its_table(tmp_path):
    """h5py refuses to cast a row with a field the run's table lacks: the fold of a resumed old run
    failed with TypeError."""
    path = tmp_path / "r.h5"
    w = ResultsWriter(str(path))
    run_id = w.start_run({"nranks": 2})
    w.close()
    with h5py.File(path, "r+") as f:  # the run's table as a version before served_by made it
        del f["runs"][run_id]["points"]
        f["runs"][run_id].create_dataset(
            "points", shape=(0,), maxshape=(None,), dtype=_older_dtype("served_by"), chunks=(1,)
        )
    w = ResultsWriter(str(path))
    w.attach(run_id)
    w.append_point(_row(0) | {"served_by": "tuned"}, np.full((5, 2), 1.0))
    w.close()
    points = load_runs(str(path))[-1].points
    assert [p["index"] for p in points] == [0] and points[0]["served_by"] == ""
    assert not Path(journal.journal_path(str(path))).exists()  # folded


# ---- the HDF5 file: a flipped bit is named, and costs the object it hit ----


def _folded(path: Path, points: int = 4) -> str:
    w = ResultsWriter(str(path))
    w.start_run({"nranks": 2})
    for i in range(points):
        w.append_point(_row(i), np.full((5, 2), float(i)))
    w.close()
    with h5py.File(path, "r") as f:
        return next(iter(f["runs"]))


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x04
    path.write_bytes(bytes(data))


def test_a_damaged_sample_header_is_damage_not_missing_samples(tmp_path):
    """h5py's Group.get answers None for an object whose header fails its checksum, as for one that is
    absent: the reader used it and a flipped bit read as "no samples" (bitflip_study, 1 in 20 flips)."""
    path = tmp_path / "r.h5"
    run_id = _folded(path)
    with h5py.File(path, "r") as f:
        at = h5py.h5g.get_objinfo(f["runs"][run_id]["samples"].id, b"000001").objno[0]
    _flip(path, at + 12)
    run = load_runs(str(path))[-1]
    assert run.samples(0) is not None
    with pytest.raises(UsageError, match="is damaged .*fabricprobe repair"):
        run.samples(1)
    out = run_local(["repair", str(path)])
    assert out.returncode == 1 and f"samples could not be read: {run_id}/1" in out.stdout, out.stdout + out.stderr
    after = load_runs(str(path))[-1]
    assert [p["index"] for p in after.points] == [0, 1, 2, 3] and after.samples(1) is None
    assert after.samples(3).tolist() == np.full((5, 2), 3.0).tolist()


def test_a_damaged_point_row_costs_that_row_only(tmp_path):
    """One row a chunk: with 64 rows a chunk one flipped bit cost every row of a run (12 of 12 in the
    bitflip study)."""
    path = tmp_path / "r.h5"
    run_id = _folded(path)
    with h5py.File(path, "r") as f:
        at = f["runs"][run_id]["points"].id.get_chunk_info(2).byte_offset
    _flip(path, at + 100)
    with pytest.raises(UsageError, match="is damaged"):
        load_runs(str(path))
    out = run_local(["repair", str(path)])
    assert out.returncode == 1 and f"unreadable point rows (run/row): {run_id}/2" in out.stdout, out.stdout
    assert [p["index"] for p in load_runs(str(path))[-1].points] == [0, 1, 3]


@pytest.mark.process
def test_a_damaged_root_header_is_one_line_naming_repair(tmp_path):
    path = tmp_path / "r.h5"
    _folded(path)
    with h5py.File(path, "r") as f:
        at = h5py.h5g.get_objinfo(f.id, b"/").objno[0]
    _flip(path, at + 12)
    for argv in (["report", str(path)], ["sweep", "--resume", str(path)], ["doctor", "--show", str(path)]):
        out = run_local(argv)
        damaged = 2 if argv[0] == "doctor" else 4  # EXIT_DAMAGED for a results file (docs/schema.md)
        assert out.returncode == damaged and len(error_lines(out.stderr)) == 1, (argv, out.stderr)
        assert f"{path} is damaged" in out.stderr, (argv, out.stderr)
        assert argv[0] == "doctor" or f"fabricprobe repair {path}" in out.stderr, (argv, out.stderr)


# ---- repair touches only fabricprobe's files ----


@pytest.mark.parametrize("kind", ["text", "json", "other-hdf5", "empty"])
def test_repair_never_rewrites_a_file_that_is_not_a_results_file(tmp_path, kind):
    path = tmp_path / "x.h5"
    if kind == "text":
        path.write_text("a text file\n")
    elif kind == "json":
        path.write_text(json.dumps({"runs": []}))
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        with h5py.File(path, "w") as f:
            f["data"] = np.arange(5)
    before = path.read_bytes()
    out = run_local(["repair", str(path)])
    assert out.returncode == 2 and len(error_lines(out.stderr)) == 1, out.stdout + out.stderr
    assert "not a fabricprobe results file" in out.stderr and "changes nothing" in out.stderr
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["x.h5"]


# ---- one output-path rule ----


@pytest.fixture
def results(tmp_path):
    path = tmp_path / "results.h5"
    w = ResultsWriter(str(path))
    w.start_run({"nranks": 2, "mpi_vendor": "Open MPI", "mpi_library_version": "x"})
    for i in range(3):
        w.append_point(_row(i), np.full((5, 2), float(i)))
    w.close()
    return path


REFUSALS = ("symbolic link", "not a regular file", "HDF5 file", "names a results file")


@pytest.mark.parametrize("target", ["symlink", "device", "results file", "h5 name"])
@pytest.mark.parametrize(
    "command",
    [
        ["report", "{results}", "--format", "json", "-o", "{out}"],
        ["report", "{results}", "--format", "nccl-tests", "-o", "{out}"],
        ["plot", "{results}", "-o", "{out}"],
        ["tune-eval", "{results}", "--json", "{out}"],
    ],
)
def test_no_command_writes_over_a_link_a_device_or_a_results_file(tmp_path, results, target, command):
    ext = ".png" if command[0] == "plot" else ".json"
    if command[0] == "plot" and target in ("device", "h5 name"):
        pytest.skip("no image suffix: refused for that first")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    out_path = {
        "symlink": tmp_path / f"link{ext}",
        "device": Path("/dev/null"),
        "results file": tmp_path / f"other{ext}",  # a results file named like an export
        "h5 name": tmp_path / "new.h5",
    }[target]
    if target == "symlink":
        out_path.symlink_to(victim)
    if target == "results file":
        out_path.write_bytes(results.read_bytes())
    before = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and not p.is_symlink()}
    argv = [a.format(results=results, out=out_path) for a in command]
    out = run_local(argv)
    assert out.returncode == 2, (argv, out.stdout, out.stderr)
    lines = error_lines(out.stderr)
    assert len(lines) == 1 and "Traceback" not in out.stderr and any(r in lines[0] for r in REFUSALS), lines
    after = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and not p.is_symlink()}
    assert after == before and (target != "symlink" or out_path.is_symlink())


@pytest.mark.process
def test_a_sweep_never_writes_results_through_a_symbolic_link(tmp_path, results):
    link = tmp_path / "link.h5"
    link.symlink_to(results)
    out = run_local(["sweep", "-o", str(link), *SMALL])
    assert out.returncode == 2 and "symbolic link" in error_lines(out.stderr)[0]
    assert link.is_symlink()


# ---- runs that lie ----


@pytest.mark.process
def test_a_rank_whose_launcher_is_gone_records_nothing(tmp_path):
    """A rank the launcher said was one of 2, started by MPI as a singleton (its mpiexec killed in its
    first 0.3 s, or a launcher of the other MPI family): refused, and the file gains no run. The
    variable planted is the other family's (this library would hang looking for its own launcher), so
    the line names the library loaded and what to set (issue 69)."""
    found = launcher()
    if found is None:
        pytest.skip("no MPI here")
    # the other library's size variable: this library ignores it and starts a singleton
    env = {"PMI_SIZE": "2"} if found.vendor == "Open MPI" else {"OMPI_COMM_WORLD_SIZE": "2"}
    path = tmp_path / "r.h5"
    out = subprocess.run(
        [sys.executable, "-m", "fabricprobe", "sweep", "-o", str(path), *SMALL],
        capture_output=True,
        text=True,
        env={**mpi_env(), **env},  # not run_local: it drops the launcher's variables
        timeout=120,
    )
    (line,) = error_lines(out.stderr)
    assert out.returncode == 2 and "launched 2 ranks but mpi4py loaded" in line and "world of 1" in line, line
    assert "MPI4PY_LIBMPI" in line and line.endswith("nothing is measured or recorded")
    assert not path.exists() and not Path(journal.journal_path(str(path))).exists()


@pytest.mark.mpi
def test_resume_refuses_a_run_of_another_library(tmp_path):
    path = tmp_path / "r.h5"
    out = run_mpi(2, ["sweep", "-o", str(path), *SMALL])
    assert out.returncode == 0, out.stderr
    with h5py.File(path, "r+") as f:  # as if measured with the other library and interrupted
        run = f["runs"]["0001"]
        other = "MPICH" if run.attrs["mpi_vendor"] == "Open MPI" else "Open MPI"
        run.attrs["mpi_vendor"] = other
        run.attrs["mpi_library_version"] = f"{other} v9.9"
        run.attrs["status"] = "interrupted"
        seal(run)  # planted as a writer would have written it
    before = len(load_runs(str(path))[0].points)
    out = run_mpi(2, ["sweep", "--resume", str(path)])
    assert out.returncode == 2 and f"measured with {other}" in error_lines(out.stderr)[0], out.stderr
    assert len(load_runs(str(path))[0].points) == before and len(load_runs(str(path))) == 1
    assert os.path.getsize(path) > 0 and not Path(journal.journal_path(str(path))).exists()


# ---- writers of one file ----


def test_a_reader_probing_the_lock_never_makes_a_writer_refuse(tmp_path):
    """being_written() takes the lock for a moment to see whether anyone holds it: a writer arriving in
    that moment was refused (3 of 20 repairs and resumes). A lock held that briefly is waited out."""
    import threading

    from fabricprobe.store.fold import WriterLock, being_written

    path = str(tmp_path / "r.h5")
    stop = threading.Event()

    def probe():
        while not stop.is_set():
            being_written(path)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        for _ in range(300):
            WriterLock(path).release()
    finally:
        stop.set()
        prober.join()


def test_a_record_waits_for_the_writer_and_is_written_beside_a_file_kept_busy(tmp_path, monkeypatch):
    """Two doctors at once lost one record; train could not write while a sweep held the file."""
    import threading

    from fabricprobe.store import fold

    path = str(tmp_path / "d.h5")
    said: list[str] = []
    held = fold.WriterLock(path)
    threading.Timer(0.5, held.release).start()
    written, _ = fold.update(path, lambda f: f.attrs.__setitem__("x", 1), results=False, say=said.append)
    assert written == path and said and "waiting" in said[0]  # waited, said so, wrote it
    monkeypatch.setattr(fold, "RECORD_WAIT_S", 1.5)
    held = fold.WriterLock(path)
    try:
        said.clear()
        written, _ = fold.update(path, lambda f: f.attrs.__setitem__("x", 2), results=False, say=said.append)
    finally:
        held.release()
    assert written == str(tmp_path / f"d-{os.getpid()}.h5") and any(written in s for s in said)
    with h5py.File(written, "r") as f:
        assert f.attrs["x"] == 2
    with h5py.File(path, "r") as f:
        assert f.attrs["x"] == 1


def test_the_watchdog_names_the_main_thread_not_itself():
    """faulthandler lists the thread that dumps first ("Current thread"): the watchdog's own. Where a
    rank is must come from its main thread."""
    from fabricprobe.engine.watchdog import _top

    stack = (
        "Current thread 0x01 (most recent call first):\n"
        '  File "/x/fabricprobe/engine/watchdog.py", line 96 in _report\n'
        '  File "/usr/lib/python3.11/threading.py", line 982 in run\n'
        "\n"
        "Thread 0x02 (most recent call first):\n"
        '  File "/x/fabricprobe/engine/faults.py", line 47 in hang_if_asked\n'
        '  File "/x/fabricprobe/engine/sweep.py", line 120 in measure\n'
        '  File "/x/bin/fabricprobe", line 8 in <module>\n'
    )
    assert _top({"stack": stack}) == '; at "/x/fabricprobe/engine/faults.py", line 47 in hang_if_asked'
    only_current = stack.split("\n\n")[0]  # what a report read half-written held
    assert _top({"stack": only_current}) == ""  # no place rather than the watchdog's own
    assert _top(None) == ""


def test_a_watchdog_report_appears_only_whole(tmp_path, monkeypatch):
    """Rank 0 reads the other ranks' reports as soon as they appear: one read while its rank was still
    writing held only the watchdog's own thread, and rank 1 was said to be in the watchdog (CI). A report
    is seen under its name only once written."""
    import faulthandler

    from fabricprobe.engine import watchdog

    folder = tmp_path / "reports"
    seen_while_writing = []

    def dump(file, all_threads):
        file.write("Current thread 0x01 (most recent call first):\n")
        file.flush()
        seen_while_writing.append(sorted(p.name for p in folder.glob("rank-*.txt")))
        file.write("\nThread 0x02 (most recent call first):\n")

    monkeypatch.setattr(faulthandler, "dump_traceback", dump)
    dog = watchdog.Watchdog(0, 1, reports=str(folder), nranks=2)
    dog._report("point 4 (bcast float32 8 B)")
    assert seen_while_writing == [[]]
    assert sorted(p.name for p in folder.iterdir()) == ["rank-1.txt"]
    text = (folder / "rank-1.txt").read_text()
    assert text.startswith("in point 4 (bcast float32 8 B)\n") and text.endswith(
        "Thread 0x02 (most recent call first):\n"
    )
