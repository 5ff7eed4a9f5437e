"""tune-sweep in one launch against the real library (both wheels in CI): every algorithm switched at run
time through MPI_T and measured beside the default, each switch proven by its fingerprint against the
algorithm forced through the environment; an algorithm that errors, hangs or cannot be switched (all
planted) falls back to a launch of its own; an interrupted tune-sweep resumes; --switch launch still
launches per algorithm."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from mpirun import fabricprobe_argv, kill_session, launcher, mpi_env, need_ranks, processes_mentioning, run_local

from fabricprobe.mpienv import orphans
from fabricprobe.mpienv.launcher import launcher as launch_line
from fabricprobe.store import load_runs
from fabricprobe.tuning.measure.mpit_switch import PROOF_BYTES, SWITCHED
from fabricprobe.tuning.plan.libraries import for_vendor
from fabricprobe.tuning.plan.variants import variant_label
from fabricprobe.tuning.verify.fingerprint import probe

pytestmark = pytest.mark.mpi

GRID = ["--sizes", "8,64K", "--iters", "20", "--max-time", "0.05", "--algorithms", "none"]


def _n() -> int:
    found = need_ranks(2)
    return 3 if found.max_ranks >= 3 else 2  # MPICH busy-polls: 2 ranks on 2 cores


def _sweep(path, *args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    out = run_local(["tune-sweep", "-n", str(_n()), *GRID, "-o", str(path), *args], env=env, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def _labels(points, collective: str) -> dict[str, set[tuple[int, int]]]:
    """algorithm -> {(communicator size, bytes)} of the collective's points that were measured fine."""
    out: dict[str, set[tuple[int, int]]] = {}
    for p in points:
        if p["collective"] == collective and p["status"] == "ok":
            out.setdefault(p["algorithm"], set()).add((p["nranks"], p["bytes"]))
    return out


def _expected(collective: str) -> set[str]:
    library = for_vendor(launcher().vendor)
    return {"library"} | {
        f"library:{variant_label(v.name)}" for v in library.variants(collective) if v.name != "default"
    }


@pytest.fixture(scope="module")
def one(tmp_path_factory):
    path = tmp_path_factory.mktemp("onelaunch") / "one.h5"
    out = _sweep(path, "--collectives", "allreduce,reduce,bcast")
    return path, out.stderr


def test_one_launch_measures_every_algorithm_of_every_collective(one):
    path, stderr = one
    assert "1 launch, 0 fallbacks" in stderr
    runs = load_runs(str(path))
    assert [r.config["collectives"] for r in runs] == [["allreduce"], ["reduce"], ["bcast"]]
    n = _n()
    for run in runs:
        (coll,) = run.config["collectives"]
        assert run.status == "complete" and run.attrs["tune_sweep"]["summary"] == "1 launch, 0 fallbacks"
        measured = _labels(run.points, coll)
        assert set(measured) == _expected(coll), coll
        everywhere = {(c, b) for c in sorted({2, n}) for b in (8, 65536)}
        assert all(found == everywhere for found in measured.values()), measured
        forced = {p["forced_by"] for p in run.points if p["algorithm"].startswith("library:")}
        assert forced == {"mpit"} and all(not p["forced_by"] for p in run.points if p["algorithm"] == "library")


def test_every_switched_reduction_leaves_the_trace_of_its_algorithm_forced_at_launch(one):
    """The proof stored with the run (the in-process trace right after the switch) equals the trace of
    the same algorithm forced through the environment in a launch of its own, on the whole job, for
    every allreduce and reduce algorithm; most differ from the default's."""
    path, _ = one
    found = launcher()
    library = for_vendor(found.vendor)
    base = launch_line(None, "", _n(), found.vendor)[:-2]
    n = _n()
    switched = 0
    for run in load_runs(str(path)):
        (coll,) = run.config["collectives"]
        if coll == "bcast":
            assert {p["verdict"] for p in run.attrs["runtime_switch"]["proofs"]} == {"no fingerprint"}
            continue
        env_of = {variant_label(v.name): v.env for v in library.variants(coll)}
        for proof in run.attrs["runtime_switch"]["proofs"]:
            if proof["nranks"] != n or not isinstance(proof["trace"], list):
                continue
            forced = probe(base, n, coll, PROOF_BYTES, "trace", env_of[proof["algorithm"]])
            assert forced == json.dumps(proof["trace"]), (coll, proof["algorithm"], forced, proof["trace"])
            switched += proof["verdict"] == SWITCHED
    assert switched >= 3


def test_tune_chooses_from_a_one_launch_file(one, tmp_path):
    path, _ = one
    out = run_local(["tune", str(path), "-o", str(tmp_path / "t")])
    assert out.returncode == 0, out.stderr[-2000:]
    assert (tmp_path / "t" / "tuning.json").exists()


def _variant(collective: str) -> str:
    """A forced algorithm of the collective that runs on any communicator size."""
    names = [variant_label(v.name) for v in for_vendor(launcher().vendor).variants(collective)]
    return "recursive_doubling" if "recursive_doubling" in names else names[-1]


def test_an_algorithm_that_errors_when_switched_gets_a_launch_of_its_own(tmp_path):
    alg = _variant("allreduce")
    out = _sweep(
        tmp_path / "e.h5", "--collectives", "allreduce", env={"FABRICPROBE_FAULT_ERROR": f"allreduce/library:{alg}"}
    )
    assert "1 launch, 1 fallback" in out.stderr and f"allreduce/{alg} measured in a launch of its own" in out.stderr
    points = [p for r in load_runs(str(tmp_path / "e.h5")) for p in r.points if p["algorithm"] == f"library:{alg}"]
    assert {p["status"] for p in points if p["forced_by"] == "mpit"} == {"error"}
    assert {p["status"] for p in points if p["forced_by"] == "launch"} == {"ok"}


def test_a_read_only_variable_sends_its_algorithms_to_launches_of_their_own(tmp_path):
    vendor = launcher().vendor if launcher() else ""
    variable = {"Open MPI": "coll_tuned_allreduce_algorithm", "MPICH": "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"}[vendor]
    out = _sweep(tmp_path / "r.h5", "--collectives", "allreduce", env={"FABRICPROBE_FAULT_READONLY": variable})
    assert "cannot be written at run time" in out.stderr
    runs = load_runs(str(tmp_path / "r.h5"))
    forced = {p["algorithm"]: p["forced_by"] for r in runs for p in r.points if p["algorithm"].startswith("library:")}
    assert set(forced) == _expected("allreduce") - {"library"}
    # MPICH's "mpir" writes only the POSIX variable: still switched
    assert {a for a, how in forced.items() if how == "mpit"} <= {"library:mpir"}


def test_open_mpis_read_only_dynamic_rules_are_set_for_the_whole_launch(tmp_path):
    """Open MPI before 5.0.6 (and Debian's 4.1.4) cannot write coll_tuned_use_dynamic_rules at run time:
    it is set once in the launch's environment and only the algorithm variables are switched."""
    if launcher() is None or launcher().vendor != "Open MPI":
        pytest.skip("an Open MPI variable")
    out = _sweep(
        tmp_path / "d.h5",
        "--collectives",
        "allreduce",
        env={"FABRICPROBE_FAULT_READONLY": "coll_tuned_use_dynamic_rules"},
    )
    assert "1 launch, 0 fallbacks" in out.stderr
    (run,) = load_runs(str(tmp_path / "d.h5"))
    assert run.attrs["environment"].get("OMPI_MCA_coll_tuned_use_dynamic_rules") == "1"
    switch = run.attrs["runtime_switch"]
    assert all(set(w) == {"coll_tuned_allreduce_algorithm"} for w in switch["writes"]["allreduce"].values())
    assert sum(p["verdict"] == SWITCHED for p in switch["proofs"]) >= 2


def test_an_algorithm_that_hangs_the_launch_is_measured_in_a_launch_of_its_own(tmp_path):
    alg = _variant("allreduce")
    out = _sweep(
        tmp_path / "h.h5",
        "--collectives",
        "allreduce",
        "--point-timeout",
        "5",
        env={"FABRICPROBE_FAULT_HANG": f"allreduce/library:{alg}:1"},
    )
    assert "2 launches, 1 fallback" in out.stderr and "did not finish" in out.stderr
    runs = load_runs(str(tmp_path / "h.h5"))
    measured = _labels([p for r in runs for p in r.points], "allreduce")
    assert set(measured) == _expected("allreduce")
    keys = [p["key"] for r in runs for p in r.points if p["forced_by"] == "mpit" or p["algorithm"] == "library"]
    assert len(keys) == len(set(keys))  # the relaunch measured only what the first launch had not


def test_an_interrupted_tune_sweep_resumes(tmp_path):
    """Killed (the tune-sweep, its launcher and every rank) while the second collective's sweep is in a
    switched algorithm; --resume keeps the first collective's complete run, measures the rest of the
    second's only, and leaves every algorithm measured at every point."""
    n = _n()
    path = tmp_path / "i.h5"
    alg = _variant("reduce")
    argv = [
        *fabricprobe_argv(),
        "tune-sweep",
        "-n",
        str(n),
        *GRID,
        "--collectives",
        "allreduce,reduce",
        "-o",
        str(path),
    ]
    env = mpi_env({"FABRICPROBE_FAULT_HANG": f"reduce/library:{alg}:1"})
    proc = subprocess.Popen(argv, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    state = f"{path}.switching"
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            try:
                # the collective too: allreduce's sweep, before reduce's, switches to a variant of the
                # same name (recursive_doubling), and the file still names it when allreduce is done
                found = json.loads(open(state).read())
                if (found["collective"], found["variant"]) == ("reduce", alg):
                    break
            except (OSError, ValueError, KeyError):
                pass
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.2)
        else:
            pytest.fail("the sweep never reached the planted hang")
        time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        kill_session(proc.pid)
        proc.wait()
    before = load_runs(str(path))
    assert [(r.config["collectives"], r.status) for r in before][0] == (["allreduce"], "complete")
    assert before[-1].config["collectives"] == ["reduce"] and before[-1].status != "complete"
    _sweep(path, "--collectives", "allreduce,reduce", "--resume")
    after = load_runs(str(path))
    added = after[len(before) :]
    assert [r.config["collectives"] for r in added] == [["reduce"]] and added[0].status == "complete"
    reduce_points = [p for r in after for p in r.points if p["collective"] == "reduce"]
    keys = [p["key"] for p in reduce_points]
    assert len(keys) == len(set(keys))
    measured = _labels(reduce_points, "reduce")
    assert set(measured) == _expected("reduce")
    assert all(found == {(c, b) for c in sorted({2, n}) for b in (8, 65536)} for found in measured.values())
    again = run_local(
        ["tune-sweep", "-n", str(n), *GRID, "-o", str(path), "--collectives", "allreduce,reduce", "--resume"]
    )
    assert again.returncode == 2 and "nothing to resume" in again.stderr, again.stderr[-1000:]
    assert len(load_runs(str(path))) == len(after)


def _wait_for_state(proc, state: str, wanted: tuple[str, str]) -> None:
    """Until tune-sweep's state file names the (collective, variant) being measured."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            found = json.loads(open(state).read())
            if (found["collective"], found["variant"]) == wanted:
                return
        except (OSError, ValueError, KeyError):
            pass
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.2)
    pytest.fail(f"the sweep never reached {wanted}")


def test_a_killed_launcher_is_named_and_its_ranks_ended(tmp_path):
    """SIGKILL to the launcher tune-sweep started: tune-sweep exited 2 (the bad-input status) with an
    empty cause and advice that did not apply, and its ranks ran on 2-5 s after it returned (issue 53)."""
    path = tmp_path / "k.h5"
    alg = _variant("reduce")
    argv = [*fabricprobe_argv(), "tune-sweep", "-n", str(_n()), *GRID, "--collectives", "reduce", "-o", str(path)]
    env = mpi_env({"FABRICPROBE_FAULT_HANG": f"reduce/library:{alg}:1"})  # the job stays busy in it
    proc = subprocess.Popen(argv, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for_state(proc, f"{path}.switching", ("reduce", alg))
        (launcher_pid,) = orphans.children(proc.pid)
        os.kill(launcher_pid, signal.SIGKILL)
        code = proc.wait(timeout=60)
        err = proc.stderr.read().decode()
        left = processes_mentioning(str(tmp_path))  # the ranks' command lines name the job file beside k.h5
    finally:
        kill_session(proc.pid)
        proc.wait()
    lines = [line for line in err.splitlines() if line.startswith("fabricprobe: error:")]
    assert code == 5 and len(lines) == 1 and "was ended by SIGKILL" in lines[0], (code, err[-2000:])
    assert not left, left


def test_switch_launch_still_launches_one_job_per_algorithm(tmp_path):
    out = _sweep(tmp_path / "l.h5", "--collectives", "reduce", "--switch", "launch")
    expected = _expected("reduce")
    assert f"{len(expected)} launches" in out.stderr
    runs = load_runs(str(tmp_path / "l.h5"))
    assert len(runs) == len(expected)
    forced = {p["forced_by"] for r in runs for p in r.points if p["algorithm"].startswith("library:")}
    assert forced == {"launch"} and set(_labels([p for r in runs for p in r.points], "reduce")) == expected


def test_an_algorithm_the_library_refuses_on_a_communicator_gets_no_futile_launch(tmp_path):
    """Open MPI's two_proc on 3 ranks returns MPI_ERR_UNSUPPORTED_OPERATION when switched, as it does in
    a launch of its own: recorded as refused there, measured where it runs (2 ranks), no launch made."""
    found = launcher()
    if found is None or found.vendor != "Open MPI" or found.max_ranks < 3:
        pytest.skip("Open MPI's two_proc, on 3 ranks")
    out = _sweep(tmp_path / "t.h5", "--collectives", "allgather", "--only", "two_proc")
    assert "1 launch, 0 fallbacks" in out.stderr and "allgather/two_proc not run on 3 ranks" in out.stderr
    (run,) = load_runs(str(tmp_path / "t.h5"))
    assert run.attrs["tune_sweep"]["refused"][0]["comm_sizes"] == [3]
    ok = {(p["nranks"], p["bytes"]) for p in run.points if p["algorithm"] == "library:two_proc" and p["status"] == "ok"}
    assert ok == {(2, 8), (2, 65536)}
