"""Nothing measured is lost: the journaled store under kills, a full disk, readers, a second writer,
damage, and `fabricprobe repair` (docs/schema.md, "Crash consistency")."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import h5py
import numpy as np
import pytest
from kill_harness import kill_cycle
from mpirun import error_lines, run_local, run_mpi

from fabricprobe.errors import UsageError
from fabricprobe.store import ResultsWriter, journal, load_runs
from fabricprobe.store.fold import WriterLock

SMALL = ["--collectives", "allreduce", "--sizes", "8,1K", "--iters", "10", "--max-time", "0.01", "--quiet"]


def _row(i: int) -> dict:
    t = 1e-6 * (i + 1)
    point = dict(index=i, key=f"k{i}", collective="allreduce", algorithm="library", status="ok", bytes=8 << i)
    return point | dict(nranks=2, dtype="float32", op="sum", mode="barrier", median_s=t, ci_low_s=t, ci_high_s=t)


def _run_with_points(path: Path, n: int, close: bool = True) -> ResultsWriter:
    w = ResultsWriter(str(path))
    w.start_run({"nranks": 2})
    for i in range(n):
        w.append_point(_row(i), np.full((5, 2), float(i)))
    if close:
        w.close()
    return w


def test_a_record_cut_short_is_dropped_and_every_complete_one_kept(tmp_path):
    """What a SIGKILL inside an append leaves: the complete records read, the torn tail does not count."""
    path = tmp_path / "r.h5"
    w = _run_with_points(path, 3, close=False)
    with open(journal.journal_path(str(path)), "ab") as f:  # a fourth record, cut short
        f.write(journal.Record(journal.POINT, w.run_id, row=np.zeros(1, journal.POINT_DTYPE)).encode()[:-7])
    del w  # killed: no close, no fold
    assert not path.exists()  # a first run is never folded until its writer ends: no half-made file
    run = load_runs(str(path))[-1]
    assert [p["index"] for p in run.points] == [0, 1, 2] and run.samples(2)[0, 0] == 2.0
    out = run_local(["repair", str(path)])
    assert out.returncode == 0 and "incomplete last journal record" in out.stdout and "3 points" in out.stdout
    assert not Path(journal.journal_path(str(path))).exists()
    with h5py.File(path, "r") as f:  # plain h5py sees everything once folded
        assert f["runs"][run.id]["points"].shape == (3,)


def test_a_copy_left_by_a_writer_killed_while_folding_is_removed(tmp_path):
    path = tmp_path / "r.h5"
    _run_with_points(path, 1)
    stale = tmp_path / "r.h5.tmp-999999"  # a fold's copy, its writer SIGKILLed (seen: 14 MB each, piling up)
    stale.write_bytes(b"x" * 1000)
    ResultsWriter(str(path)).close()
    assert not stale.exists() and len(load_runs(str(path))[-1].points) == 1


def test_fold_is_idempotent(tmp_path):
    """A kill after the folded copy is renamed but before the journal is removed folds nothing twice."""
    path = tmp_path / "r.h5"
    _run_with_points(path, 2)
    w = ResultsWriter(str(path))
    w.attach("0001")
    w.append_point(_row(2), None)
    saved = Path(journal.journal_path(str(path))).read_bytes()
    w.close()
    Path(journal.journal_path(str(path))).write_bytes(saved)  # the journal came back: folded again
    assert [p["index"] for p in load_runs(str(path))[-1].points] == [0, 1, 2]
    ResultsWriter(str(path)).close()
    assert [p["index"] for p in load_runs(str(path))[-1].points] == [0, 1, 2]


@pytest.mark.mpi
def test_hundreds_of_kills_lose_nothing_short_form(tmp_path):
    """The kill harness, short (benchmarks/kill_study.py runs hundreds: docs/studies/2026-11-26-kills.md)."""
    tally = kill_cycle(tmp_path / "k.h5", kills=25, seed=7)
    assert tally.clean, (tally.corrupted, tally.lost, tally.duplicated)
    assert tally.kills == 25


@pytest.mark.mpi
def test_a_second_writer_is_refused(tmp_path):
    path = tmp_path / "r.h5"
    _run_with_points(path, 1)  # a run left "running": something to resume
    lock = WriterLock(str(path))  # a sweep or resume holding the file
    try:
        for how in (["-o", str(path), *SMALL], ["--resume", str(path)]):
            out = run_mpi(2, ["sweep", *how])
            assert out.returncode == 2, out.stderr
            assert "being written by another fabricprobe process" in error_lines(out.stderr)[0]
            assert "Traceback" not in out.stderr
    finally:
        lock.release()
    assert run_mpi(2, ["sweep", "-o", str(path), *SMALL]).returncode == 0


@pytest.mark.mpi
def test_a_reader_holding_the_file_never_stops_a_sweep(tmp_path):
    """A plain h5py reader (HDF5's file locking on) kept the old writer waiting, then failing after 30 s;
    the writer now only ever replaces the file, so the reader keeps its view and the sweep goes on."""
    path = tmp_path / "r.h5"
    assert run_mpi(2, ["sweep", "-o", str(path), *SMALL]).returncode == 0
    with h5py.File(path, "r") as held:
        out = run_mpi(2, ["sweep", "-o", str(path), *SMALL], timeout=120)
        assert out.returncode == 0, out.stderr
        assert list(held["runs"]) == ["0001"]  # the reader's view stays whole
    assert [r.id for r in load_runs(str(path))] == ["0001", "0002"]


@pytest.mark.process
def test_unwritable_places_get_one_line(tmp_path):
    for target in ("/proc/fp.h5", str(tmp_path / "no" / "such" / "dir.h5")):
        out = run_local(["sweep", "-o", target, *SMALL])
        assert out.returncode == 2 and "cannot write results" in error_lines(out.stderr)[0], out.stderr
        assert "Traceback" not in out.stderr


def _truncate(path: Path) -> None:
    """A copy cut short (the HDF5 signature is there, the rest of the file is not)."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.process
def test_every_reader_names_a_damaged_file_and_repair_salvages(tmp_path):
    path = tmp_path / "r.h5"
    _run_with_points(path, 4)
    good = load_runs(str(path))[-1]
    # Damage one sample array's compressed chunk: the structure reads, that point's samples do not.
    with h5py.File(path, "r") as f:
        offset = f["runs"]["0001"]["samples"]["000002"].id.get_chunk_info(0).byte_offset
    data = bytearray(path.read_bytes())
    data[offset : offset + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    with pytest.raises(UsageError, match="damaged.*fabricprobe repair"):
        load_runs(str(path))[-1].samples(2)
    out = run_local(["repair", str(path)])
    assert out.returncode == 1, out.stdout + out.stderr  # something could not be kept: say so
    assert "0001/2" in out.stdout and "damaged file is" in out.stdout
    run = load_runs(str(path))[-1]
    assert [p["index"] for p in run.points] == [p["index"] for p in good.points]
    assert run.samples(1)[0, 0] == 1.0 and run.samples(2) is None
    assert Path(str(path) + ".damaged").exists()

    _truncate(path)
    for argv in (["report", str(path)], ["compare", str(path), str(path)], ["tune", str(path)]):
        out = run_local(argv)
        assert out.returncode == 4 and "fabricprobe repair" in error_lines(out.stderr)[0], (argv, out.stderr)
        assert "Traceback" not in out.stderr
    out = run_local(["sweep", "-o", str(path), *SMALL])  # damage: exit 4 (EXIT_DAMAGED) for every reader
    assert out.returncode == 4 and "fabricprobe repair" in error_lines(out.stderr)[0]


def _small_tmpfs(tmp_path: Path, size: str) -> Path:
    mount = tmp_path / f"tmpfs-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    return mount


@pytest.mark.mpi
def test_a_full_disk_stops_the_sweep_with_one_line_and_keeps_every_point(tmp_path):
    mount = _small_tmpfs(tmp_path, "600k")
    try:
        path = mount / "r.h5"
        sweep = ["--collectives", "allreduce", "-b", "8", "-e", "64K", "-f", "2", "--iters", "5000"]
        out = run_mpi(2, ["sweep", "-o", str(path), *sweep, "--ci-target", "0", "--progress", "plain", "--quiet"])
        reported = sum(line.startswith("[") for line in out.stderr.splitlines())
        assert out.returncode == 1, out.stderr[-2000:]
        lines = error_lines(out.stderr)
        assert lines and "No space left on device" in lines[0] and "Traceback" not in out.stderr
        run = load_runs(str(path))[-1]
        assert len(run.points) >= reported > 0  # every point reported complete is there
        for p in run.points:
            assert run.samples(p["index"]) is not None
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.process
def test_a_read_only_file_system_is_named_as_such(tmp_path):
    """It was reported as "permission denied", which sends a user to chmod."""
    from fabricprobe.store.writer import check_output_path

    mount = _small_tmpfs(tmp_path, "1m")
    try:
        ResultsWriter(str(mount / "old.h5")).close()
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        for name in ("old.h5", "new.h5"):
            with pytest.raises(UsageError, match="read-only file system"):
                check_output_path(str(mount / name))
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.mpi
@pytest.mark.parametrize(
    "launched, sig", [("mpiexec", "SIGINT"), ("alone", "SIGINT"), ("alone", "SIGTERM"), ("alone", "SIGHUP")]
)
def test_interrupting_a_sweep_marks_the_run_interrupted(tmp_path, launched, sig):
    """Ctrl-C (of mpiexec, or of one process), or a scheduler's SIGTERM or a SIGHUP, lands inside a
    long compiled timed batch: the run is marked "interrupted" within Open MPI's 0.2 s between SIGTERM
    and SIGKILL, and every rank exits 128 + the signal's number. Open MPI's launcher returns 1 after
    Ctrl-C whatever its ranks return (measured); MPICH's returns 130."""
    import signal
    import time

    from mpirun import Launched, fabricprobe_argv, kill_session, need_ranks, no_crowded_job_beside, wait_for_points

    path = tmp_path / "r.h5"
    # a fixed batch (--ci-target 0) of 10**6 calls: at least 10 s at 1 MiB on any machine (a 1 MiB copy
    # at 100 GB/s); CI at 517e839 ran 100,000 of them alone within the 2 s below and found "complete"
    args = ["sweep", "-o", str(path), "--collectives", "allreduce", "--sizes", "8,1M", "--iters", "1000000"]
    args += ["--ci-target", "0", "--progress", "plain", "--quiet"]
    found = need_ranks(2)
    argv = (found.argv(2) if launched == "mpiexec" else []) + fabricprobe_argv() + args
    # the mark must land within Open MPI's 0.2 s grace, so not beside the suite's 9-rank checkers on 2
    # cores: two CI runs at 7ff6921 failed early in the suite, when those probably ran on the other
    # worker; here it passed alone and 5 of 5 times beside 3 busy loops (docs/testing.md)
    with no_crowded_job_beside():
        proc = Launched(argv)
        try:
            # the harness floor's two points and allreduce at 8 B done: the 1 MiB point's batch starts
            # once its buffers and expected results are made. Two CI runs (7ff6921) left the run
            # "running" when the interrupt came 1 s after the first point: perhaps in a later point's
            # set-up, which holds the interpreter, so that the marking thread could not run before
            # Open MPI's SIGKILL (open: docs/testing.md). The batch releases it.
            wait_for_points(proc, 3)
            time.sleep(2.0)
            os.kill(proc.pid, getattr(signal, sig))
            rest = proc.communicate(timeout=60)[1]
        finally:
            kill_session(proc.pid)
    run = load_runs(str(path))[-1]
    # under mpiexec the ranks get what the launcher forwards (Open MPI's: SIGTERM)
    by = {sig} if launched == "alone" else {sig, "SIGTERM"}
    assert run.status == "interrupted" and run.attrs["status_reason"] in {f"interrupted by {s}" for s in by}
    assert len(run.points) >= 1 and "Traceback" not in rest
    assert launched == "mpiexec" or f"fabricprobe: error: interrupted by {sig}" in rest, rest[-2000:]
    status = 128 + getattr(signal, sig)
    expected = {status} if launched == "alone" or found.vendor == "MPICH" else {1, status}
    assert proc.returncode in expected, (proc.returncode, rest[-2000:])


@pytest.mark.process
def test_a_size_too_large_for_memory_is_recorded_and_skipped(tmp_path):
    """--sizes 8,2G under a memory limit ended in a traceback with the run left "running"."""
    import shlex
    import sys

    path = tmp_path / "r.h5"
    sweep = [sys.executable, "-m", "fabricprobe", "sweep", "-o", str(path), "--collectives", "allreduce"]
    sweep += ["--sizes", "8,2G,16", "--iters", "10", "--max-time", "0.01", "--quiet"]
    out = subprocess.run(
        ["bash", "-c", f"ulimit -v 3000000 && exec {shlex.join(sweep)}"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    run = load_runs(str(path))[-1]
    assert run.status == "complete"
    big = next(p for p in run.points if p["bytes"] == 2 << 30)
    assert big["status"] == "not_runnable" and "cannot allocate the buffers of 2 GiB" in big["note"]
    assert sum(p["status"] == "ok" for p in run.points if p["collective"] == "allreduce") == 2


def test_a_running_run_that_nobody_writes_is_called_killed(tmp_path):
    path = tmp_path / "r.h5"
    w = _run_with_points(path, 2, close=False)
    out = run_local(["report", str(path)])
    assert out.returncode == 0 and "no process is writing it" not in out.stdout  # its writer is alive
    del w  # killed
    out = run_local(["report", str(path)])
    assert "status running (no process is writing it: it was killed" in " ".join(out.stdout.split())
