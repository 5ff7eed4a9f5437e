"""Tuning against the real libraries: the quirks the emitters rely on, proof that emitted files
apply (and that a file which is not applied is caught), and the commands end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mpirun import error_lines, launcher, mpi_env, run_launched, run_local, run_mpi

from fabricprobe.store import ResultsWriter, load_runs
from fabricprobe.tuning.choose.rules import Decision, Range, Table
from fabricprobe.tuning.emit import mpich as emit_mpich
from fabricprobe.tuning.emit import openmpi as emit_openmpi
from fabricprobe.tuning.emit import registry as emitters
from fabricprobe.tuning.plan import mpich_tree
from fabricprobe.tuning.verify.checks import INDISTINGUISHABLE, MISMATCH, VERIFIED, verify
from fabricprobe.tuning.verify.fingerprint import method_for, probe

pytestmark = pytest.mark.mpi


def _needs(vendor: str):
    found = launcher()
    if found is None or found.vendor != vendor:
        pytest.skip(f"needs {vendor}")
    return found


def _base(found) -> list[str]:
    return found.argv(1)[:-2]


def _ring_above_64k(vendor: str, n: int) -> Table:
    d = lambda size: Decision(size, "x", 1.0, 1.0, 0.0)  # noqa: E731
    ranges = [Range(0, 65536, "default", [d(8)]), Range(65536, None, "ring", [d(65536), d(1 << 20)])]
    # what served the default, as choose() records it: the files name their case in comment lines
    # (digits in them too), which the libraries must skip when they load the files below
    return Table(
        vendor,
        "",
        n,
        "float32",
        {"allreduce": {n: ranges}},
        served={"allreduce": {n: "tuned"}},
        shape=f"{n} ranks of 1 node",
    )


# ---- Open MPI: the quirks behind the classic rules file ----


def _ompi_probe(found, tmp_path, rules: str, nbytes: int, n: int = 4) -> str:
    path = tmp_path / "rules.conf"
    path.write_text(rules)
    return probe(_base(found), n, "allreduce", nbytes, "monitor", emit_openmpi.load_env(path))


def _forced(found, alg: int, nbytes: int, n: int = 4) -> str:
    return probe(
        _base(found),
        n,
        "allreduce",
        nbytes,
        "monitor",
        {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_allreduce_algorithm": str(alg)},
    )


def test_open_mpi_reads_zero_padded_sizes_as_octal(tmp_path):
    found = _needs("Open MPI")
    # "010000" is octal 4096: at 4096 B ring (4) already applies; read as decimal it would still be basic_linear (1)
    got = _ompi_probe(found, tmp_path, "1\n2\n1\n0 2\n0 1 0 0\n010000 4 0 0\n", 4096)
    assert got == _forced(found, 4, 4096) != _forced(found, 1, 4096)


def test_open_mpi_silently_drops_a_file_whose_first_rule_is_not_zero(tmp_path):
    found = _needs("Open MPI")
    got = _ompi_probe(found, tmp_path, "1\n2\n1\n0 1\n64 4 0 0\n", 1 << 20)
    assert got == probe(_base(found), 4, "allreduce", 1 << 20, "monitor", {}) != _forced(found, 4, 1 << 20)


def test_open_mpi_first_section_serves_smaller_communicators(tmp_path):
    found = _needs("Open MPI")
    got = _ompi_probe(found, tmp_path, "1\n2\n1\n64 1\n0 4 0 0\n", 1 << 20)  # only a "64 ranks" section
    assert got == _forced(found, 4, 1 << 20)


# ---- MPICH: the strictness behind the spliced trees ----


def _mpich_probe(found, tree: dict, tmp_path, nbytes: int = 64) -> str:
    path = tmp_path / "tree.json"
    path.write_text(json.dumps(tree))
    return probe(
        _base(found), 2, "allreduce", nbytes, "trace", {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(path)}
    )


def test_open_mpi_rules_build_the_tree_the_forced_algorithm_measured(tmp_path):
    """A rule's fan-in/out of 0 turned bcast "chain" into a plain pipeline on 4 ranks, unlike the forced
    algorithm that was measured (MCA chain fan-out 4): rules carry the MCA default now."""
    found = _needs("Open MPI")
    from fabricprobe.tuning.plan.openmpi import OpenMPI

    lib = OpenMPI()
    d = lambda size: Decision(size, "x", 1.0, 1.0, 0.0)  # noqa: E731
    table = Table("Open MPI", "", 4, "float32", {"bcast": {4: [Range(0, None, "chain", [d(65536)])]}})
    path = tmp_path / "rules.conf"
    path.write_text(emit_openmpi.classic_rules(table, lib))
    forced = next(v for v in lib.variants("bcast") if v.name == "chain")
    with_file = probe(_base(found), 4, "bcast", 65536, "monitor", emit_openmpi.load_env(path))
    assert with_file == probe(_base(found), 4, "bcast", 65536, "monitor", forced.env)
    zero = tmp_path / "zero.conf"  # the old rules, fan-in/out 0: a different tree
    zero.write_text(path.read_text().replace(" 4 0  #", " 0 0  #"))
    assert zero.read_text() != path.read_text()
    assert probe(_base(found), 4, "bcast", 65536, "monitor", emit_openmpi.load_env(zero)) != with_file


def test_mpich_aborts_without_catch_all_or_with_a_partial_tree(tmp_path):
    found = _needs("MPICH")
    trees = mpich_tree.default_trees(mpich_tree.loaded_libmpi())
    assert not _mpich_probe(found, trees["mpir"], tmp_path).startswith("error")  # the default itself loads
    no_catch_all = json.loads(json.dumps(trees["mpir"]))
    no_catch_all["collective=allreduce"]["comm_type=intra"] = {
        "avg_msg_size<=8": {"algorithm=MPIR_Allreduce_intra_ring": {}}
    }
    assert _mpich_probe(found, no_catch_all, tmp_path).startswith("error")
    partial = {"collective=allreduce": trees["mpir"]["collective=allreduce"]}
    assert _mpich_probe(found, partial, tmp_path).startswith("error")


def test_mpich_guards_an_algorithm_that_needs_a_built_in_op(tmp_path):
    """A JSON leaf has no fallback: reduce_scatter_allgather reached with a user-defined op (the
    trace's) aborts MPICH, so the emitter guards it and the user op takes the original subtree."""
    found = _needs("MPICH")
    trees = mpich_tree.default_trees(mpich_tree.loaded_libmpi())
    original = trees["mpir"]["collective=allreduce"]["comm_type=intra"]
    leaf = {"algorithm=MPIR_Allreduce_intra_reduce_scatter_allgather": {}}
    bare = json.loads(json.dumps(trees["mpir"]))
    bare["collective=allreduce"]["comm_type=intra"] = {"avg_msg_size=any": leaf}
    assert _mpich_probe(found, bare, tmp_path, nbytes=1 << 20).startswith("error")
    guarded = json.loads(json.dumps(trees["mpir"]))
    guarded["collective=allreduce"]["comm_type=intra"] = {
        "avg_msg_size=any": emit_mpich.guarded("allreduce", "reduce_scatter_allgather", leaf, original)
    }
    default = _mpich_probe(found, trees["mpir"], tmp_path, nbytes=1 << 20)
    assert not default.startswith("error") and _mpich_probe(found, guarded, tmp_path, nbytes=1 << 20) == default


def test_mpich_parameterised_leaf_needs_its_parameters(tmp_path):
    """k_reduce_scatter_allgather as a bare leaf gets k = 0 and aborts on a built-in op; with the
    parameters the emitter writes, it runs."""
    found = _needs("MPICH")
    trees = mpich_tree.default_trees(mpich_tree.loaded_libmpi())
    from fabricprobe.tuning.plan.mpich import MPICH

    cvars = MPICH().cvars
    results = {}
    for label, params in (
        ("bare", {}),
        ("emitted", emit_mpich.leaf_params("allreduce", "k_reduce_scatter_allgather", cvars)),
    ):
        tree = json.loads(json.dumps(trees["mpir"]))
        tree["collective=allreduce"]["comm_type=intra"] = {
            "avg_msg_size=any": {"algorithm=MPIR_Allreduce_intra_k_reduce_scatter_allgather": params}
        }
        path = tmp_path / f"{label}.json"
        path.write_text(json.dumps(tree))
        env = {
            "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(path),
            "MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM": "mpir",
        }
        # the bare leaf aborted in every run here but one (a CI run under load, 2026-11-28): up to 3 tries
        for _ in range(3 if label == "bare" else 1):
            results[label] = probe(_base(found), 2, "allreduce", 1 << 20, "smoke", env)
            if results[label].startswith("error"):
                break
    assert results["bare"].startswith("error") and results["emitted"] == "ok", results


USER_OP_ALLREDUCE = """
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
op = MPI.Op.Create(lambda a, b, t: np.add(np.frombuffer(a, np.float32), np.frombuffer(b, np.float32),
                   out=np.frombuffer(b, np.float32)), commute=True)
x = (np.arange(1 << 18, dtype=np.float32) % 97) * (comm.rank + 1)
for _ in range(13):  # past MPICH's switch to its shared-memory path
    y = np.empty_like(x)
    comm.Allreduce(x, y, op=op)
expected = (np.arange(1 << 18, dtype=np.float32) % 97) * sum(range(1, comm.size + 1))
assert np.array_equal(y, expected), "wrong sum"
print("correct", flush=True)
"""


def test_mpich_k_reduce_scatter_allgather_runs_user_ops_so_it_is_not_guarded_from_them(tmp_path):
    """The leaf once carried a built-in-op guard (by analogy with its sibling): user ops in its ranges ran
    another algorithm than the one measured, and the range stayed unverifiable. It sums correctly with a
    user-defined op, and the trace of the emitted file matches the forced algorithm's."""
    from mpirun import run_mpi

    found = _needs("MPICH")
    from fabricprobe.tuning.plan.mpich import MPICH

    assert not emit_mpich.needs_builtin_op("allreduce", "k_reduce_scatter_allgather")
    d = lambda size: Decision(size, "x", 1.0, 1.0, 0.0)  # noqa: E731
    table = Table(
        "MPICH", "", 2, "float32", {"allreduce": {2: [Range(0, None, "k_reduce_scatter_allgather", [d(1 << 20)])]}}
    )
    env = _emit("MPICH", table, tmp_path)
    out = run_mpi(2, [], env=env, python_args=["-c", USER_OP_ALLREDUCE], timeout=120)
    assert out.returncode == 0 and "correct" in out.stdout, out.stderr[-2000:]
    forced = next(v for v in MPICH().variants("allreduce") if v.name == "k_reduce_scatter_allgather")
    with_file = probe(_base(found), 2, "allreduce", 1 << 20, "trace", env)
    assert not with_file.startswith("error") and with_file == probe(
        _base(found), 2, "allreduce", 1 << 20, "trace", forced.env
    )


# ---- proof: emitted files apply, and a file that is not applied is caught ----


def _emit(vendor: str, table: Table, tmp_path) -> dict[str, str]:
    if vendor == "Open MPI":
        from fabricprobe.tuning.plan.openmpi import OpenMPI

        path = tmp_path / "ompi_rules.conf"
        path.write_text(emit_openmpi.classic_rules(table, OpenMPI()))
        return emit_openmpi.load_env(path)
    return emit_mpich.load_env(mpich_files(table, tmp_path))


def mpich_files(table: Table, folder) -> dict:
    """MPICH's trees for `table` written into `folder` (level -> path), as tune writes them."""
    out = emitters.folder_for(folder, ["mpich"])
    trees = mpich_tree.default_trees(mpich_tree.loaded_libmpi())
    return {k: out.write(name, text) for k, (name, text) in emit_mpich.files(table, trees).items()}


@pytest.mark.parametrize("applied", [True, False])
def test_verification(tmp_path, applied):
    found = launcher()
    if found is None:
        pytest.skip("no mpiexec")
    from fabricprobe.tuning.plan.libraries import for_vendor

    n = 4 if found.vendor == "Open MPI" else 2
    table = _ring_above_64k(found.vendor, n)
    env = _emit(found.vendor, table, tmp_path) if applied else {}
    checks = verify(table, for_vendor(found.vendor), env, _base(found))
    statuses = {(c.size, c.status) for c in checks}
    assert len(checks) == 3  # 8 B (default), 64 KiB and 1 MiB (ring): both sides of the boundary
    if applied:
        assert {s for _, s in statuses} <= {VERIFIED, INDISTINGUISHABLE}
        assert (1 << 20, VERIFIED) in statuses  # ring at 1 MiB is told apart from the default on both libraries
    else:
        assert (1 << 20, MISMATCH) in statuses


def test_paired_before_after_measures_the_default_beside_the_files_in_one_launch(tmp_path):
    """Issue 54: on an Open MPI whose coll_tuned_use_dynamic_rules MPI_T lets be written, each repetition
    of tune --verify's before/after is one launch with the files, the default measured beside them at
    each point on a communicator made after writing 0 (its side first in the second repetition). Proven
    in the launch itself by the traces the switch takes: the files' rule (allreduce's basic linear at 4
    ranks: rank 0 reduces, the others never) against the default's (every rank reduces)."""
    found = _needs("Open MPI")
    from mpirun import need_ranks

    from fabricprobe.tuning.measure.before_after import before_after, pairing, speedups
    from fabricprobe.tuning.plan.libraries import for_vendor
    from fabricprobe.tuning.plan.switch import describe_variables

    need_ranks(4)
    library = for_vendor(found.vendor)
    rules = tmp_path / "rules.conf"
    rules.write_text("1\n2\n1\n4\n1\n0 1 0 0\n")  # allreduce, 4 ranks: basic linear from 0 B
    env = emit_openmpi.load_env(rules)
    off, why = pairing(library, env, describe_variables(sorted(library.files_off(env))))
    if not off:
        pytest.skip(why)  # Open MPI before 5.0.6 and 4.1.7: read-only, a launch per side
    d = lambda size: Decision(size, "x", 1.0, 1.0, 0.0)  # noqa: E731
    table = Table("Open MPI", "", 4, "float32", {"allreduce": {4: [Range(0, None, "basic_linear", [d(8), d(65536)])]}})
    output = tmp_path / "ba.h5"
    done = before_after(found.argv(4), str(output), table, env, reps=2, files_off=off)
    assert done.paired and [la.returncode for la in done.launches] == [0, 0], done.launches
    runs = load_runs(str(output))
    assert len(runs) == 2
    for rep, run in enumerate(runs):
        points = sorted(run.points, key=lambda p: p["index"])
        sides = [(p["algorithm"], p["forced_by"], p["bytes"]) for p in points if p["collective"] == "allreduce"]
        tuned, baseline = ("library:tuned", "launch"), ("library:baseline", "mpit")
        first, second = (tuned, baseline) if rep == 0 else (baseline, tuned)
        assert sides == [(*first, 8), (*second, 8), (*first, 65536), (*second, 65536)]
        (proof,) = run.attrs["runtime_switch"]["proofs"]
        assert (proof["algorithm"], proof["nranks"], proof["verdict"]) == ("baseline", 4, "switched")
        assert all(proof["trace"]), proof["trace"]  # the default: every rank reduces (the files: rank 0 only)
    rows = speedups(runs, table)
    assert [(r["size"], r["reps"]) for r in rows] == [(8, 2), (65536, 2)]


def _malform(env: dict[str, str], vendor: str) -> None:
    """Spoil the emitted rules file that `env` loads, as each library mishandles: Open MPI drops the whole
    file silently when its first rule is not at 0; MPICH refuses a JSON tree whose allreduce chain has
    no catch-all at its end."""
    path = Path(next(v for v in env.values() if v.endswith((".conf", ".json"))))
    if vendor == "Open MPI":
        path.write_text(path.read_text().replace("\n0 0 ", "\n1 0 "))
    else:
        tree = json.loads(path.read_text())
        del tree["collective=allreduce"]["comm_type=intra"]["comm_size=any"]
        path.write_text(json.dumps(tree))


def _two_collectives(vendor: str, n: int) -> Table:
    """allreduce: recursive doubling below 64 KiB (the library's own choice at 8 B on 4 ranks: the
    same fingerprint), ring above; bcast: one algorithm at every size. Six checked sizes."""
    d = lambda size: Decision(size, "x", 1.0, 1.0, 0.0)  # noqa: E731
    ranges = [
        Range(0, 65536, "recursive_doubling", [d(8), d(1024)]),
        Range(65536, None, "ring", [d(65536), d(1 << 20)]),
    ]
    bcast = [Range(0, None, "binomial" if vendor == "MPICH" else "pipeline", [d(8), d(1 << 20)])]
    return Table(
        vendor,
        "",
        n,
        "float32",
        {"allreduce": {n: ranges}, "bcast": {n: bcast}},
        served={"allreduce": {n: "tuned"}, "bcast": {n: "tuned"}},
        shape=f"{n} ranks of 1 node",
    )


@pytest.mark.parametrize("planted", ["applies", "served by another component", "malformed"])
def test_probes_grouped_by_environment_give_the_verdicts_of_one_probe_per_launch(tmp_path, planted):
    """Issue 54: the fingerprints taken in one launch per environment (probe.py --group, the monitoring
    read through MPI_T inside the job) give every check exactly the status and detail of one probe per
    launch, in fewer launches; a file the library refuses (MPICH, malformed) fails the grouped launch,
    and its probes are taken one per launch as before."""
    from fabricprobe.tuning.plan.libraries import for_vendor
    from fabricprobe.tuning.verify.checks import ERROR, NOT_CONSULTED
    from fabricprobe.tuning.verify.probes import Fingerprints

    found = launcher()
    if found is None:
        pytest.skip("no mpiexec")
    if planted == "served by another component" and found.vendor != "Open MPI":
        pytest.skip("a component that takes a collective from the rules on one node: Open MPI's coll/sm")
    n = 4 if found.vendor == "Open MPI" else 2
    table = _two_collectives(found.vendor, n)
    env = _emit(found.vendor, table, tmp_path)
    if planted == "served by another component":
        env["OMPI_MCA_coll_sm_priority"] = "40"  # sm serves allreduce and bcast on one node
    elif planted == "malformed":
        _malform(env, found.vendor)
    library = for_vendor(found.vendor)
    tallies = {grouped: Fingerprints(_base(found), None) for grouped in (True, False)}
    verdicts = {
        grouped: [c.as_dict() for c in verify(table, library, env, _base(found), grouped=grouped, fingerprints=t)]
        for grouped, t in tallies.items()
    }
    # an error's detail is the library's stderr, whose ranks' lines come in any order from run to run
    same = lambda c: {**c, "detail": "(the library's message)"} if c["status"] == ERROR else c  # noqa: E731
    assert [same(c) for c in verdicts[True]] == [same(c) for c in verdicts[False]]
    statuses = {c["status"] for c in verdicts[True]}
    assert len(verdicts[True]) == 6
    if planted == "applies":
        assert VERIFIED in statuses
        if found.vendor == "Open MPI":
            assert INDISTINGUISHABLE in statuses  # recursive doubling at 8 B is the default's choice
    elif planted == "served by another component":
        assert statuses == {NOT_CONSULTED}
    else:
        assert statuses & {MISMATCH, ERROR}, verdicts[True]
    refused = planted == "malformed" and found.vendor == "MPICH"
    if not refused:  # a file the library refuses fails each group once, then one probe per launch as before
        assert tallies[True].launches < tallies[False].launches


def _sourced(path) -> dict[str, str]:
    """The environment a shell has after sourcing path (what a module or job script does with env.sh)."""
    import subprocess

    out = subprocess.run(["sh", "-c", f'. "{path}" && env'], capture_output=True, text=True, check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _prolog(path) -> dict[str, str]:
    """What a Slurm TaskProlog's `export NAME=VALUE` lines on stdout put in a task's environment."""
    import shlex
    import subprocess

    out = subprocess.run(["sh", str(path)], capture_output=True, text=True, check=True).stdout
    return dict(shlex.split(line)[1].split("=", 1) for line in out.splitlines() if line.startswith("export "))


def test_the_loading_files_tune_writes_load_the_rules(tmp_path):
    """README, path (c): the files `tune` writes in DIR/load/ for a site (env.sh for a module or job
    script, a Slurm TaskProlog, Open MPI's MCA parameter file) each make a job run the tuned algorithm:
    its fingerprint is the one of the environment verification proved, not the default's."""
    from fabricprobe.tuning.emit import site as emit_site

    found = launcher()
    if found is None:
        pytest.skip("no mpiexec")
    n = 4 if found.vendor == "Open MPI" else 2
    env = _emit(found.vendor, _ring_above_64k(found.vendor, n), tmp_path)
    files = emit_site.write(env, "verified", emitters.folder_for(tmp_path, [], extra=emit_site.PATHS))
    method = method_for(found.vendor, "allreduce")
    ring = probe(_base(found), n, "allreduce", 1 << 20, method, env)
    assert not ring.startswith("error") and ring != probe(_base(found), n, "allreduce", 1 << 20, method, {})
    assert os.access(files["load-prolog"], os.X_OK)  # Slurm runs it: `srun --task-prolog`, TaskProlog=
    ways = {"env.sh": _sourced(files["load-env"]), "prolog": _prolog(files["load-prolog"])}
    if found.vendor == "Open MPI":
        ways["mca-params"] = {"OMPI_MCA_mca_param_files": str(files["load-mca-params"])}
        assert emit_site.read_mca_params(files["load-mca-params"].read_text()) == env
    else:
        assert "load-mca-params" not in files
    for way, loaded in ways.items():
        loaded = {k: v for k, v in loaded.items() if k in env or k.startswith("OMPI_MCA_mca_param")}
        assert probe(_base(found), n, "allreduce", 1 << 20, method, loaded) == ring, way


# ---- the commands ----


def test_tune_sweep_and_tune_end_to_end(tmp_path):
    found = launcher()
    if found is None:
        pytest.skip("no mpiexec")
    n = 4 if found.vendor == "Open MPI" else 2
    only = "ring,recursive_doubling" if found.vendor == "Open MPI" else "ring"
    data = tmp_path / "t.h5"
    out = run_local(
        [
            "tune-sweep",
            "-n",
            str(n),
            "-o",
            str(data),
            "--collectives",
            "allreduce",
            "--only",
            only,
            "--algorithms",
            "ring",
            "--sizes",
            "8,1M",
            "--iters",
            "30",
            "--max-time",
            "0.2",
        ],
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert re.search(r": 1 launch, 0 fallbacks in \d+ s; \d+ points measured into", " ".join(out.stderr.split()))
    out = run_local(["tune", str(data), "-o", str(tmp_path / "tuning"), "--verify", "--reps", "1"], timeout=600)
    assert out.returncode == 0, out.stderr + out.stdout
    assert "message-size ranges have an algorithm faster than the library's default" in " ".join(out.stdout.split())
    manifest = json.loads((tmp_path / "tuning" / "tuning.json").read_text())
    if manifest.get("verification"):  # time to verified files: the phases' launches add up
        took = manifest["time_to_verified_files"]
        assert took["launches"] == took["probes"]["launches"] + took["before_after"]["launches"]
        # --reps 1: one launch where the default is switched beside the files in it, else one per side
        paired = manifest["before_after_pairing"]["paired"]
        assert took["probes"]["launches"] >= 1 and took["before_after"]["launches"] == (1 if paired else 2)
        assert took["tune_sweep_s"] > 0 and took["total_s"] >= took["probes"]["seconds"]
        assert f"{took['launches']} launches (probes" in " ".join(out.stdout.split())
    assert (tmp_path / "tuning" / "fabricprobe_selection.json").exists()
    tuned = any(r["winner"] != "default" for s in manifest["rules"]["rules"].values() for rs in s.values() for r in rs)
    for path in manifest["files"].values():
        assert Path(path).exists()
    if tuned:
        assert manifest["verification"]["passed"] and manifest["before_after"]
    else:  # nothing chosen (so nothing verified), or nothing shown faster: no file offered for the library
        assert set(manifest["files"]) == {"fabricprobe"} and "# verified" not in out.stdout
        if "verification" in manifest:
            assert manifest["proof"].startswith("nothing shown") and manifest["left_to_default"]
        else:
            assert manifest["proof"].startswith("unverified")


def _planted_sweep(path: Path, vendor: str, n: int) -> None:
    """A tune-sweep file where the library's ring is twice as fast as its default from 64 KiB: the
    rules are certain, so what tune does with them (names, proof, before/after) can be asserted."""
    w = ResultsWriter(str(path))
    w.start_run({"mpi_vendor": vendor, "mpi_library_version": vendor, "nranks": n})
    i = 0
    for alg in ("library", "library:ring"):
        for size in (8, 65536, 1 << 20):
            t = 1e-4 if alg == "library" or size == 8 else 5e-5
            point = dict(index=i, key=str(i), collective="allreduce", algorithm=alg, dtype="float32", op="sum")
            point.update(mode="barrier", nranks=n, bytes=size, median_s=t, ci_low_s=t, ci_high_s=t, status="ok")
            w.append_point(point, None)
            i += 1


def _planted_here(tmp_path: Path) -> Path:
    """_planted_sweep for the library here (4 ranks with Open MPI, 2 with MPICH); skips without one."""
    found = launcher()
    if found is None:
        pytest.skip("no mpiexec")
    data = tmp_path / "planted.h5"
    _planted_sweep(data, found.vendor, 4 if found.vendor == "Open MPI" else 2)
    return data


def test_tune_says_what_it_has_not_proven(tmp_path):
    """Without --verify the files are named *.unverified.* and their load lines say so. With it and
    one repetition nothing can be shown faster (no 95% interval), so every rule is left to the
    default, each with its reason, and no file is offered for the library; the before/after rows
    give every repetition's ratio, never one ratio standing for disagreeing ones."""
    data = _planted_here(tmp_path)
    out = run_local(["tune", str(data), "-o", str(tmp_path / "plain")], timeout=300)
    assert out.returncode == 0, out.stderr
    manifest = json.loads((tmp_path / "plain" / "tuning.json").read_text())
    library_files = [Path(p) for k, p in manifest["files"].items() if k != "fabricprobe" and not k.startswith("load-")]
    assert library_files and all(".unverified." in p.name and p.exists() for p in library_files)
    loading = [Path(p) for k, p in manifest["files"].items() if k.startswith("load-")]
    assert loading and all("fabricprobe tune: unverified" in p.read_text() for p in loading)  # headed by their proof
    assert manifest["proof"].startswith("unverified") and "# unverified: written without --verify" in out.stdout

    out = run_local(["tune", str(data), "-o", str(tmp_path / "proved"), "--verify", "--reps", "1"], timeout=600)
    assert out.returncode == 0, out.stderr + out.stdout
    manifest = json.loads((tmp_path / "proved" / "tuning.json").read_text())
    assert manifest["verification"]["passed"]
    assert "fewer than 6 repetitions give no 95% interval" in " ".join(out.stdout.split())
    left = manifest["left_to_default"]
    assert [(g["collective"], g["winner"], g["sizes"]) for g in left] == [("allreduce", "ring", [65536, 1 << 20])]
    assert all("95% interval" in r or r.startswith("indistinguishable") for r in left[0]["reasons"]), left
    assert manifest["proof"].startswith("nothing shown") and set(manifest["files"]) == {"fabricprobe"}
    assert not manifest["load_env"] and "export OMPI_MCA" not in out.stdout
    left_there = sorted(
        str(p.relative_to(tmp_path / "proved")) for p in (tmp_path / "proved").rglob("*") if p.is_file()
    )
    assert left_there == [".fabricprobe-files.json", "fabricprobe_selection.json", "tuning.json"]
    # a rule is certain in the file, so the before/after ran: --reps 1 is one launch where the default is
    # switched beside the files in it (the Open MPI wheel), else one per side (MPICH reads its files at
    # MPI_Init; Debian's Open MPI 4.1 cannot write coll_tuned_use_dynamic_rules at run time)
    pairing, took = manifest["before_after_pairing"], manifest["time_to_verified_files"]
    assert took["before_after"]["launches"] == (1 if pairing["paired"] else 2)
    assert pairing["paired"] or pairing["why_not"]
    if launcher().vendor == "MPICH":
        assert not pairing["paired"] and "no run-time switch" in pairing["why_not"]
    rows = manifest["before_after"]
    assert {r["size"] for r in rows} == {8, 65536, 1 << 20}
    for r in rows:  # one repetition: no interval, a verdict only as "in all 1", the ratio itself kept
        assert r["reps"] == 1 and r["ci_low"] is None and len(r["ratios"]) == 1
        assert r["verdict"] in ("faster in all 1", "slower in all 1", "repetitions disagree")


def test_tune_verify_keeps_only_rules_verified_and_shown_faster(tmp_path):
    """prune() gives back what a check covers (unit); a whole tune --verify with six repetitions on
    the real library keeps a rule at a size only where it was verified and its before/after interval
    lies above 1, and says why of every size it gave back (what is kept depends on this machine)."""
    from fabricprobe.tuning.verify.checks import INDISTINGUISHABLE, NO_PROOF, VERIFIED, Check
    from fabricprobe.tuning.workflow import prune

    table = _ring_above_64k("MPICH", 2)
    table.rules["allreduce"][2][0].winner = "recursive_doubling"
    checks = [
        Check("allreduce", 2, 8, "recursive_doubling", INDISTINGUISHABLE),
        Check("allreduce", 2, 65536, "ring", VERIFIED),
        Check("allreduce", 2, 1 << 20, "ring", VERIFIED),
    ]
    assert prune(table, checks, NO_PROOF) == ["allreduce on 2 ranks [0 B, 64 KiB): recursive_doubling"]
    assert [r.winner for r in table.rules["allreduce"][2]] == ["default", "ring"]
    assert prune(table, checks, NO_PROOF) == []  # the verified rule stays

    data = _planted_here(tmp_path)
    out = run_local(["tune", str(data), "-o", str(tmp_path / "t"), "--verify"], timeout=900)
    assert out.returncode == 0, out.stderr + out.stdout
    manifest = json.loads((tmp_path / "t" / "tuning.json").read_text())
    checks = manifest["verification"]["checks"]
    faster = {
        (r["collective"], r["comm_size"], r["size"]) for r in manifest["before_after"] if r["verdict"] == "faster"
    }
    kept = 0
    for coll, sections in manifest["rules"]["rules"].items():
        for n, ranges in sections.items():
            for r in ranges:
                if r["winner"] == "default":
                    continue
                kept += 1
                for d in r["decisions"]:
                    assert (coll, int(n), d["size"]) in faster, (r, manifest["before_after"])
                ends = [c for c in checks if c["collective"] == coll and c["comm_size"] == int(n)]
                assert ends and all(c["status"] == VERIFIED for c in ends if c["expected"] == r["winner"])
    given_back = {(g["collective"], s) for g in manifest["left_to_default"] for s in g["sizes"]}
    assert given_back | {(c, s) for c, _, s in faster} >= {("allreduce", 65536), ("allreduce", 1 << 20)}
    assert all(g["reasons"] for g in manifest["left_to_default"])
    if kept:
        assert manifest["proof"].startswith("verified") and "# verified" in out.stdout
    else:
        assert manifest["proof"].startswith("nothing shown") and not manifest["load_env"]


@pytest.mark.parametrize("fault", ["malformed", "another communicator size"])
def test_a_file_the_library_ignores_is_never_verified(tmp_path, fault):
    """The issue's bar: a file the library does not apply, because it is malformed or written for
    another communicator size than the one run, never comes out verified (real Open MPI and MPICH)."""
    found = launcher()
    if found is None:
        pytest.skip("no mpiexec")
    from fabricprobe.tuning.plan.libraries import for_vendor
    from fabricprobe.tuning.verify.checks import passed

    n = 4 if found.vendor == "Open MPI" else 2
    table = _ring_above_64k(found.vendor, n)
    if fault == "malformed":
        env = _emit(found.vendor, table, tmp_path)
        _malform(env, found.vendor)
    else:
        env = _emit(found.vendor, _ring_above_64k(found.vendor, n + 1), tmp_path)
    checks = verify(table, for_vendor(found.vendor), env, _base(found))
    assert not passed(checks), [c.as_dict() for c in checks]


def test_tune_bad_inputs(tmp_path):
    found = launcher()
    if found is None:
        pytest.skip("no mpiexec")
    plain = tmp_path / "plain.h5"
    w = ResultsWriter(str(plain))
    w.start_run({"mpi_vendor": found.vendor, "mpi_library_version": "x", "nranks": 2})
    w.close()
    out = run_local(["tune", str(plain)])
    assert out.returncode == 2 and "tune-sweep" in error_lines(out.stderr)[0]
    # a tune-sweep is never appended to a plain sweep's file, resumed or not (it was, exit 0)
    for resume, said in (([], "holds sweeps, not a tune-sweep"), (["--resume"], "holds no tune-sweep to finish")):
        out = run_local(["tune-sweep", "-n", "2", "--collectives", "allreduce", "-o", str(plain), *resume])
        assert out.returncode == 2 and said in error_lines(out.stderr)[0], out.stderr
    assert len(load_runs(str(plain))) == 1
    other = tmp_path / "other.h5"
    ours = tmp_path / "ours.h5"
    for path, vendor in ((other, "MPICH" if found.vendor == "Open MPI" else "Open MPI"), (ours, found.vendor)):
        _two_algorithms(path, vendor)
    out = run_local(["tune", str(other), "-o", str(tmp_path / "x")])
    assert out.returncode == 2 and "this environment's MPI" in error_lines(out.stderr)[0]
    # a launcher that is not there is refused before any file is written (it wrote *.unverified first)
    for option, value in (("--mpiexec", "/nonexistent/mpiexec"), ("--mpiexec-args", "'")):
        out = run_local(["tune", str(ours), "--verify", "-o", str(tmp_path / "v"), option, value])
        assert out.returncode == 2 and len(error_lines(out.stderr)) == 1, out.stderr
        assert not (tmp_path / "v").exists() or not list((tmp_path / "v").iterdir())
    text = tmp_path / "junk.h5"
    text.write_text("junk")
    assert run_local(["tune", str(text)]).returncode == 2
    nested = run_launched(
        found.argv(1) + [sys.executable, "-m", "fabricprobe", "tune-sweep", "-n", "2"], env=mpi_env(), timeout=120
    )
    assert nested.returncode == 2 and "not under mpiexec" in nested.stderr


def _two_algorithms(path, vendor: str) -> None:
    """A results file of `vendor` with the library's allreduce and a forced ring at 8 B."""
    w = ResultsWriter(str(path))
    w.start_run({"mpi_vendor": vendor, "mpi_library_version": vendor, "nranks": 2})
    for i, alg in enumerate(("library", "library:ring")):
        w.append_point(
            {
                "index": i,
                "key": str(i),
                "collective": "allreduce",
                "algorithm": alg,
                "dtype": "float32",
                "op": "sum",
                "mode": "barrier",
                "nranks": 2,
                "bytes": 8,
                "median_s": 1e-6 * (2 - i),
                "ci_low_s": 1e-6 * (2 - i),
                "ci_high_s": 1e-6 * (2 - i),
                "status": "ok",
            },
            None,
        )
    w.close()


def test_tune_sweep_whose_every_job_fails_says_so_and_exits_1(tmp_path):
    if launcher() is None:
        pytest.skip("no mpiexec in this environment")
    out = run_local(
        ["tune-sweep", "-n", "2", "--collectives", "allreduce", "--only", "default", "--sizes", "8"]
        + ["--comm-sizes", "2", "-o", str(tmp_path / "t.h5")],
        env={"FABRICPROBE_FAULT_WRONG": "allreduce:0"},  # every job's validation fails
        timeout=300,
    )
    assert out.returncode == 1, out.stderr
    assert "none of 1 jobs measured anything" in error_lines(out.stderr)[0]
    assert "Traceback" not in out.stderr


# ---- the loop closed: tune-sweep -> tune -> a trainer on the selection ----


def _ring_made_faster(measured: Path, planted: Path) -> None:
    """The measured tune-sweep file again, with fabricprobe's ring's times set to half the lower end of
    the library's interval at each point: the tune's choice is then certain (it needs the ring's whole
    interval below the library's: half the library's median was not, once, under load in CI), and
    every other step stays the real one."""
    from fabricprobe.store.reader import load_runs

    w = ResultsWriter(str(planted))
    for run in load_runs(str(measured)):
        w.start_run(dict(run.attrs))
        libs = [p for p in run.points if p["algorithm"] == "library"]
        library = {(p["nranks"], p["bytes"]): min(p["median_s"], p["ci_low_s"]) for p in libs}
        for p in run.points:
            t = library.get((p["nranks"], p["bytes"]))
            if p["algorithm"] == "ring" and t is not None:
                p = {**p, **{k: t / 2 for k in ("median_s", "ci_low_s", "ci_high_s", "min_s", "max_s", "mean_s")}}
            w.append_point(p, None)
        w.update_run({"status": run.status})
    w.close()


def test_trainer_runs_the_hand_written_algorithm_the_tune_chose(tmp_path):
    """Open MPI, 4 ranks on 2 virtual nodes. The library's allreduce is made its linear algorithm
    for the sweep (a site whose default is poor), and the ring's times are then set to half the library's in a
    copy of the file (_ring_made_faster), so that the tune names fabricprobe's ring: what is tested is
    the loop — measured, chosen, loaded, run and recorded per bucket — not which algorithm is faster.
    Measured, linear lost to the ring by 1.41× at 4 MiB here, but in one CI run (this 2-core machine's
    launch modes) they were within noise, the tune kept the library, and the test failed."""
    from trainers import record

    _needs("Open MPI")
    measured, data, out_dir = tmp_path / "measured.h5", tmp_path / "t.h5", tmp_path / "tuning"
    out = run_local(
        ["tune-sweep", "-n", "4", "--ranks-per-node", "2", "--comm-sizes", "4", "-o", str(measured)]
        + ["--collectives", "allreduce", "--only", "default", "--algorithms", "ring", "--sizes", "4M"]
        + ["--iters", "10", "--max-time", "0.3"]
        + ["--mpiexec-args", "--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 1"],
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    _ring_made_faster(measured, data)
    out = run_local(["tune", str(data), "-o", str(out_dir)], timeout=300)
    assert out.returncode == 0, out.stderr + out.stdout
    selection = out_dir / "fabricprobe_selection.json"
    doc = json.loads(selection.read_text())
    assert doc["world"] == {"size": 4, "ranks_per_node": [2, 2], "virtual": True}
    [section] = doc["sections"]
    assert (section["comm_size"], section["ranks_per_node"]) == (4, [2, 2])
    assert [r["algorithm"] for r in section["rules"]] == ["ring"], section  # measured at 4 MiB, so for every size
    results = tmp_path / "train.h5"
    train = ["train", "dp_sgd", "--epochs", "2", "--bucket-bytes", "16384", "--progress", "none", "-o", str(results)]
    out = run_mpi(4, [*train, "--allreduce", "tuned", "--selection", str(selection), "--ranks-per-node", "2"])
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ring at 3.29 KiB, 16 KiB" in out.stdout
    tuned_run = record.read(str(results))[-1]
    buckets = tuned_run["buckets"]
    steps = tuned_run["steps"].size
    assert buckets.size == 5 * steps and set(buckets["algorithm"]) == {b"ring"}  # 68.9 KB = 4 × 16 KiB + 3.4 KB
    assert sorted(set(buckets["bytes"])) == [3368, 16384] and (buckets["seconds"] > 0).all()
    assert tuned_run["algorithms_used"] == {"ring": [3368, 16384]}
    assert tuned_run["selection_file"] == str(selection)
    # the same training with the ring named directly: the same model, to the bit
    out = run_mpi(4, [*train, "--allreduce", "ring", "--ranks-per-node", "2"])
    assert out.returncode == 0, out.stderr[-3000:]
    direct = record.read(str(results))[-1]
    assert direct["final_test_accuracy"] == tuned_run["final_test_accuracy"]
    assert np.array_equal(direct["steps"]["loss"], tuned_run["steps"]["loss"])
    # refused, one line: another job shape (2 ranks; 4 ranks on one node) and another library
    for n, extra, message in (
        (2, ["--ranks-per-node", "2"], "tuned for 4 ranks as 2 × 2 (virtual nodes), but this job has 2 ranks"),
        (4, [], "but this job has 4 ranks as 1 × 4"),
    ):
        out = run_mpi(n, [*train, "--allreduce", "tuned", "--selection", str(selection), *extra])
        lines = error_lines(out.stderr)
        assert out.returncode == 2 and len(lines) == 1 and message in lines[0], out.stderr[-2000:]
    doc["library"]["version"] = "MPICH Version: 4.0"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    out = run_mpi(4, [*train, "--allreduce", "tuned", "--selection", str(other), "--ranks-per-node", "2"])
    lines = error_lines(out.stderr)
    assert out.returncode == 2 and len(lines) == 1 and "tuned with 'MPICH Version: 4.0'" in lines[0]
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "phase, sig, to", [("probes", "SIGINT", "group"), ("before/after", "SIGINT", "group"), ("probes", "SIGHUP", "pid"),
                       ("before/after", "SIGTERM", "pid")]
)  # fmt: skip
def test_an_interrupted_tune_verify_leaves_no_half_written_file(tmp_path, phase, sig, to):
    """Ctrl-C (the terminal's whole group), or SIGTERM / SIGHUP to tune's own PID alone (a scheduler's,
    a lost terminal's) while tune --verify probes or re-measures: it stops (128 + the signal), nothing
    in the output folder is half-written (every file is whole: tuning.json, if there, parses; no
    temporary file is left), nothing is named verified, and no rank of its jobs runs on."""
    import signal
    import subprocess
    import time

    from mpirun import fabricprobe_argv

    data = _planted_here(tmp_path)
    out = tmp_path / "tuning"
    job = subprocess.Popen(
        fabricprobe_argv() + ["tune", str(data), "-o", str(out), "--verify"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=mpi_env(),
        start_new_session=True,
    )
    wanted = "verifying" if phase == "probes" else "re-measured with the library's default"
    seen = []
    for line in job.stdout:
        seen.append(line)
        if wanted in line:
            time.sleep(0.5)
            if to == "group":
                os.killpg(job.pid, signal.SIGINT)  # what Ctrl-C sends: the terminal's whole process group
            else:
                os.kill(job.pid, getattr(signal, sig))
            break
    rest, _ = job.communicate(timeout=120)
    text = "".join(seen) + rest
    assert job.returncode in ((1, 130) if to == "group" else (128 + getattr(signal, sig),)), text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    names = [p.name for p in out.rglob("*") if p.is_file()]
    assert not [n for n in names if ".tmp" in n], names
    ours = ("tuning.json", "fabricprobe_selection.json", ".fabricprobe-files.json")  # no library loads them
    assert not [n for n in names if n.endswith((".conf", ".json")) and ".unverified" not in n
                and "REJECTED" not in n and n not in ours], names  # fmt: skip
    if (out / "tuning.json").exists():
        json.loads((out / "tuning.json").read_text())
    # tune ends what its killed launcher left before it returns (orphans.ended_if_interrupted); under the
    # CI's load 3 such processes were still seen 1.5 s after it returned (open: docs/testing.md), so the
    # check is that none runs on, within a deadline that no load decides
    deadline = time.monotonic() + 20
    while _in_session(job.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _in_session(job.pid)
    assert not left, [open(f"/proc/{pid}/cmdline").read().replace("\0", " ")[:200] for pid in left]


def _in_session(sid: int) -> list[int]:
    """Live processes of session `sid` (a command started with start_new_session, and all it started)."""
    out = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # fields: state, ppid, pgrp, session, ...
            out.append(int(entry))
    return out


@pytest.mark.process
def test_tune_fits_one_screen_and_its_load_lines_paste(tmp_path):
    """At 80 columns, replayed as a terminal shows it: `tune` and `tune --verify` take at most 60 rows,
    no number is cut (`…` beside a digit), and every printed `export` line is one line that bash reads
    back as the value the files load (the folder's path made long, so the lines pass the terminal's
    edge). `fabricprobe report tuning.json` shows the tables, numbers whole at 80 columns too."""
    from terminal import run_in_terminal

    data = _planted_here(tmp_path)
    for name, extra in (("plain", []), ("proved", ["--verify"])):
        out = tmp_path / ("a-long-folder-name-" * 4) / name
        shown = run_in_terminal(["tune", str(data), "-o", str(out), *extra], timeout=900)
        screen = "\n".join(shown.rows)
        assert shown.returncode == 0, screen
        assert len(shown.rows) <= 60, screen
        assert not any(re.search(r"\d…|…\d", row) for row in shown.rows), screen
        manifest = json.loads((out / "tuning.json").read_text())
        exports = [line for line in shown.lines if line.startswith("export ")]
        assert len(exports) == len(manifest["load_env"]), screen
        for line in exports:
            variable = line.split("=", 1)[0].split()[1]
            read = subprocess.run(["bash", "-c", f'{line}\nprintf %s "${variable}"'], capture_output=True, text=True)
            assert read.returncode == 0 and read.stdout == manifest["load_env"][variable], (line, read)
        verdict = next(
            i for i, row in enumerate(shown.rows) if re.match(r"load the|nothing to load|\d+ rules?, unv", row)
        )
        assert all(verdict < i for i, row in enumerate(shown.rows) if row.startswith(("export ", "mpirun "))), screen
        report = run_in_terminal(["report", str(out / "tuning.json")], timeout=120)
        assert report.returncode == 0 and any("before / after" in r for r in report.rows) == (name == "proved")
        assert not any(re.search(r"\d…|…\d", row) for row in report.rows), "\n".join(report.rows)
    assert manifest["load_env"] or "nothing to load for the library" in screen


# ---- The library's own choice: no rule for what it runs anyway ----

# Sizes at which Open MPI's fixed decision switches algorithm on 4 ranks (and one on each side), for
# the collectives fabricprobe tunes (plan/openmpi_fixed_tree.py)
_FIXED_SIZES = {
    "allreduce": (8, 4096, 65536, 1 << 20),
    "bcast": (64, 4096, 262144),
    "reduce": (8, 65536, 1 << 20),
    "allgather": (64, 65536, 1 << 20),
    "alltoall": (64, 16384, 1 << 20),
    "reduce_scatter": (64, 65536, 1 << 20),
}


def test_open_mpis_default_runs_the_algorithm_its_fixed_decision_model_names(tmp_path):
    """Through the library itself: at each size, the default's message pattern (pml monitoring, the
    algorithm forced through MPI_T on a new communicator, all in one job) equals that of the algorithm
    plan/openmpi_fixed.py says the fixed decision picks. The check can fail: at most sizes some other
    algorithm's pattern differs from the default's, and a model off by one id is caught at most sizes."""
    found = _needs("Open MPI")
    from fabricprobe.tuning.plan.library import names
    from fabricprobe.tuning.plan.openmpi import OpenMPI
    from fabricprobe.tuning.plan.openmpi_fixed import fixed_algorithm
    from fabricprobe.tuning.verify.fingerprint import probe_group

    lib, n = OpenMPI(), 4
    items, cases = [], []
    for coll, sizes in _FIXED_SIZES.items():
        api = names(coll).openmpi
        ids = [i for i, name in lib.enumerators[api] if i and name != "two_proc"]
        for size in sizes:
            items.append((coll, size, "monitor"))
            for i in ids:
                items.append((coll, size, "monitor", ((f"coll_tuned_{api}_algorithm", str(i)),)))
            cases.append((coll, api, size, ids))
    got = probe_group(_base(found), n, items, {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}, timeout=300)
    assert len(got) == len(items), f"{len(items) - len(got)} probes printed nothing"
    told_apart = off_by_one_caught = 0
    for coll, api, size, ids in cases:
        default = got[(coll, size, "monitor")]
        by_id = {i: got[(coll, size, "monitor", ((f"coll_tuned_{api}_algorithm", str(i)),))] for i in ids}
        chosen = fixed_algorithm(api, n, size)
        assert by_id[chosen] == default, f"{coll} at {size} B: the default is not algorithm {chosen}"
        told_apart += any(f != default for f in by_id.values())
        wrong = chosen % max(ids) + 1
        off_by_one_caught += by_id[wrong] != default
    assert told_apart >= len(cases) - 2, f"only {told_apart} of {len(cases)} sizes tell any algorithm apart"
    assert off_by_one_caught >= len(cases) // 2, f"a model off by one id caught at {off_by_one_caught} sizes"


def test_mpichs_default_runs_the_algorithm_its_tree_walk_names():
    """Through MPICH itself: reduce_scatter_block's default (its reduction steps per rank, the trace)
    equals the MPIR algorithm plan/mpich_tree.py reads off MPICH's compiled-in tree, on either side of
    the tree's size switch and on a power of two and not; another algorithm's trace differs (the
    check can fail). bcast, allreduce and reduce are MPICH's POSIX path's on one node: no MPIR choice."""
    found = _needs("MPICH")
    from fabricprobe.tuning.plan.mpich import MPICH

    lib = MPICH()
    assert lib.default_choice("allreduce", 2, 64, "float32", "") is None
    told_apart = 0
    for n, size in ((2, 64), (4, 65536), (3, 1 << 20), (4, 1 << 20)):
        chosen = lib.default_choice("reduce_scatter", n, size, "float32", "")
        assert chosen in ("recursive_halving", "pairwise")
        default = probe(_base(found), n, "reduce_scatter", size, "trace", {})
        traces = {
            alg: probe(
                _base(found),
                n,
                "reduce_scatter",
                size,
                "trace",
                {"MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM": alg},
            )
            for alg in ("recursive_halving", "pairwise")
        }
        assert traces[chosen] == default, f"{n} ranks, {size} B: the default is not {chosen}"
        told_apart += traces["recursive_halving"] != traces["pairwise"]
    assert told_apart >= 2


def test_tune_writes_no_rule_for_what_open_mpis_fixed_decision_runs_anyway(tmp_path):
    """A tune-sweep where two_proc allgather on 2 ranks (the fixed decision's choice there) was timed
    2× faster than the default at 8 B and 1 MiB, and ring 2× faster at 64 KiB: the file keeps ring
    only, two_proc is listed as left to the default with the reason, on screen and in tuning.json."""
    _needs("Open MPI")
    path = tmp_path / "t.h5"
    w = ResultsWriter(str(path))
    w.start_run({"mpi_vendor": "Open MPI", "mpi_library_version": "Open MPI v5.0.11", "nranks": 2})
    i = 0
    for alg in ("library", "library:two_proc", "library:ring"):
        for size in (8, 65536, 1 << 20):
            fast = (alg == "library:two_proc" and size != 65536) or (alg == "library:ring" and size == 65536)
            t = 5e-5 if fast else 1e-4
            point = dict(index=i, key=str(i), collective="allgather", algorithm=alg, dtype="float32", op="none")
            point.update(mode="barrier", nranks=2, bytes=size, median_s=t, ci_low_s=t, ci_high_s=t, status="ok")
            w.append_point(point, None)
            i += 1
    w.close()
    out = run_local(["tune", str(path), "-o", str(tmp_path / "t")], timeout=300)
    assert out.returncode == 0, out.stderr
    manifest = json.loads((tmp_path / "t" / "tuning.json").read_text())
    left = [g for g in manifest["left_to_default"] if g["winner"] == "two_proc"]
    assert [g["sizes"] for g in left] == [[8], [1 << 20]]
    assert all(g["reasons"] == ["Open MPI's fixed decision runs two_proc there anyway"] for g in left)
    assert "left to the default: allgather on 2 ranks [0 B, 64 KiB) two_proc" in " ".join(out.stdout.split())
    rules = emit_openmpi.parse_classic_rules(Path(manifest["files"]["openmpi"]).read_text())
    algorithms = {alg for sections in rules.values() for _, rs in sections for _, alg, _, _ in rs}
    assert algorithms == {0, 4}  # the default and ring, no two_proc (6)
