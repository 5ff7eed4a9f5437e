"""Tuning without MPI: reading the libraries' tools, choosing rules, and every output format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricprobe.engine.config import SweepConfig
from fabricprobe.errors import UsageError
from fabricprobe.store import ResultsWriter, load_runs
from fabricprobe.tuning.choose.rules import Decision, Range, Table, choose
from fabricprobe.tuning.emit import intel as emit_intel
from fabricprobe.tuning.emit import mpich as emit_mpich
from fabricprobe.tuning.emit import openmpi as emit_openmpi
from fabricprobe.tuning.plan.library import names
from fabricprobe.tuning.plan.mpich import MPICH, parse_mpivars
from fabricprobe.tuning.plan.openmpi import OpenMPI, parse_ompi_info

OMPI_INFO = """mca:coll:tuned:param:coll_tuned_allreduce_algorithm:enumerator:value:0:ignore
mca:coll:tuned:param:coll_tuned_allreduce_algorithm:enumerator:value:1:basic_linear
mca:coll:tuned:param:coll_tuned_allreduce_algorithm:enumerator:value:3:recursive_doubling
mca:coll:tuned:param:coll_tuned_allreduce_algorithm:enumerator:value:4:ring
mca:coll:tuned:param:coll_tuned_reduce_algorithm:enumerator:value:6:in-order_binary
mca:coll:tuned:param:coll_tuned_allreduce_algorithm_count:value:7
"""
MPIVARS = """\tMPIR_CVAR_BCAST_INTRA_ALGORITHM =0\tSCOPE_ALL_EQ\tNo-object\tMPI_INT\tVERBOSITY_USER_BASIC\tselect
auto - Internal algorithm selection
binomial                                - Force Binomial Tree
scatter_ring_allgather                  - Force Scatter Ring
\tMPIR_CVAR_BCAST_TREE_KVAL       =2\tSCOPE_ALL_EQ
\tMPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=0\tSCOPE_ALL_EQ
auto - Internal
nb                       - Force nonblocking algorithm
ring                     - Force ring algorithm
"""


def test_read_open_mpi_algorithms():
    lib = OpenMPI(text=OMPI_INFO)
    assert parse_ompi_info(OMPI_INFO)["allreduce"][1] == (1, "basic_linear")
    variants = {v.name: v for v in lib.variants("allreduce")}
    assert set(variants) == {"default", "basic_linear", "recursive_doubling", "ring"}  # 0 "ignore" is the default
    assert variants["ring"].env == {
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
        "OMPI_MCA_coll_tuned_allreduce_algorithm": "4",
    }
    assert variants["default"].env == {}


def test_read_mpich_4_0_algorithms_printed_inline():
    """MPICH 4.0's mpivars glues each value to the description before it (Debian's 4.0.2, verbatim):
    "algorithmsmp" is smp, "algorithmssched_ring" sched_ring, "Force Binomial Treenb" nb."""
    text = (Path(__file__).parent / "data" / "mpivars-mpich-4.0.2.txt").read_text()
    found = parse_mpivars(text)
    assert found["ALLREDUCE"] == ["auto", "nb", "smp", "recursive_doubling", "reduce_scatter_allgather"]
    assert found["BCAST"] == [
        "auto",
        "binomial",
        "nb",
        "smp",
        "scatter_recursive_doubling_allgather",
        "scatter_ring_allgather",
    ]
    assert found["ALLGATHER"] == ["auto", "brucks", "nb", "recursive_doubling", "ring"]
    assert found["IALLGATHER"][2:5] == ["sched_ring", "sched_brucks", "sched_recursive_doubling"]
    assert found["IALLGATHER"][-2:] == ["tsp_recexch_doubling", "tsp_recexch_halving"]
    assert found["IALLREDUCE"][-1] == "tsp_recexch_reduce_scatter_recexch_allgatherv"
    variants = {v.name for v in MPICH(text=text).variants("allreduce")}
    assert variants == {"default", "mpir", "smp", "recursive_doubling", "reduce_scatter_allgather"}


def test_read_mpich_algorithms():
    assert parse_mpivars(MPIVARS) == {
        "BCAST": ["auto", "binomial", "scatter_ring_allgather"],
        "ALLREDUCE": ["auto", "nb", "ring"],
    }
    variants = {v.name: v for v in MPICH(text=MPIVARS).variants("allreduce")}
    assert set(variants) == {"default", "mpir", "ring"}  # auto is the default; nb is left out
    assert variants["ring"].env == {
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring",
        "MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM": "mpir",
    }
    assert variants["mpir"].env == {"MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM": "mpir"}


def _point(alg, n, size, median, ci=0.01, coll="allreduce"):
    return {
        "index": 0,
        "key": f"{alg}{n}{size}",
        "collective": coll,
        "algorithm": alg,
        "dtype": "float32",
        "op": "sum",
        "mode": "barrier",
        "nranks": n,
        "bytes": size,
        "median_s": median,
        "ci_low_s": median * (1 - ci),
        "ci_high_s": median * (1 + ci),
        "status": "ok",
    }


@pytest.fixture
def measured(tmp_path):
    """A tune-sweep file: ring wins at 1 MiB on 4 ranks, basic_linear is only noise-faster at 8 B."""
    path = str(tmp_path / "t.h5")
    w = ResultsWriter(path)
    w.start_run({"mpi_vendor": "Open MPI", "mpi_library_version": "Open MPI v5.0.11", "nranks": 4})
    i = 0
    for alg, timing in {
        "library": {8: 1.0, 1024: 2.0, 1 << 20: 100.0, 4 << 20: 400.0},
        "library:basic_linear": {8: 0.99, 1024: 2.5, 1 << 20: 150.0, 4 << 20: 600.0},
        "library:ring": {8: 3.0, 1024: 4.0, 1 << 20: 60.0, 4 << 20: 250.0},
        "library:baseline": {8: 0.1, 1024: 0.1, 1 << 20: 0.1, 4 << 20: 0.1},
        "ring": {8: 9.0, 1024: 1.0, 1 << 20: 50.0, 4 << 20: 200.0},
    }.items():
        for n in (2, 4):
            for size, t in timing.items():
                p = _point(alg, n, size, t * 1e-6 * (n / 4 if alg == "library:ring" and n == 2 else 1))
                p.update(index=i, key=f"{alg}|{n}|{size}")
                w.append_point(p, None)
                i += 1
    return path


def test_choose_keeps_the_default_inside_the_noise(measured):
    table = choose(load_runs(measured))
    four = table.rules["allreduce"][4]
    assert [(r.lo, r.hi, r.winner) for r in four] == [(0, 1 << 20, "default"), (1 << 20, None, "ring")]
    assert four[1].speedup == pytest.approx(100 / 60 if 100 / 60 < 400 / 250 else 400 / 250)
    # baseline is a before/after label, never a candidate; fabricprobe's own ring is the selection's
    assert all(r.winner in ("default", "ring") for rs in table.rules["allreduce"].values() for r in rs)
    assert [d.winner_s for r in four for d in r.decisions if d.size == 1024] == [2e-6]  # not own ring's 1 µs


def test_choose_needs_measurements(tmp_path):
    path = str(tmp_path / "e.h5")
    ResultsWriter(path).start_run({"nranks": 2})
    with pytest.raises(UsageError, match="tune-sweep"):
        choose(load_runs(path))


def test_open_mpi_classic_rules_avoid_every_silent_failure(measured):
    table = choose(load_runs(measured))
    text = emit_openmpi.classic_rules(table, OpenMPI(text=OMPI_INFO))
    parsed = emit_openmpi.parse_classic_rules(text)
    sections = parsed[2]  # allreduce's collective id
    assert [c for c, _ in sections] == [0, 2, 3, 4, 5]  # first keyed 0: it also serves smaller communicators
    assert all(rules[0][0] == 0 for _, rules in sections)  # every section starts at message size 0
    assert sections[3][1] == [(0, 0, 0, 0), (1 << 20, 4, 0, 0)]  # default = 0 (fixed decision), ring = 4
    assert not any(
        tok.startswith("0") and len(tok) > 1 for line in text.splitlines() for tok in line.split("#")[0].split()
    )
    assert text.isascii()


def _open_mpi_section(sections, comm_size):
    """Open MPI's lookup: the last section whose key is <= the size (the first one below its key too)."""
    return [rules for key, rules in sections if key <= comm_size][-1] if comm_size >= sections[0][0] else sections[0][1]


def test_rules_serve_only_the_communicator_sizes_they_were_measured_on(measured):
    """Rules measured on 4 ranks once served 5 and 1000 ranks ("comm size >= 4"), and MPICH's last
    section was "comm_size=any": every unmeasured size now gets the library's own decision."""
    table = choose(load_runs(measured))
    table.rules["allreduce"][2] = [Range(0, None, "ring", [Decision(8, "x", 1.0, 1.0, 0.0)])]
    sections = emit_openmpi.parse_classic_rules(emit_openmpi.classic_rules(table, OpenMPI(text=OMPI_INFO)))[2]
    own = [(0, 0, 0, 0)]
    for n, expected in {1: own, 2: [(0, 4, 0, 0)], 3: own, 5: own, 1000: own}.items():
        assert _open_mpi_section(sections, n) == expected, n
    assert _open_mpi_section(sections, 4) == [(0, 0, 0, 0), (1 << 20, 4, 0, 0)]

    original = {"algorithm=MPIR_Allreduce_intra_original": {}}
    trees = {"mpir": {"collective=allreduce": {"comm_type=intra": original}}}
    mpich_table = Table("MPICH", "", 4, "float32", {"allreduce": table.rules["allreduce"]})
    chain = emit_mpich.mpir_tree(mpich_table, trees)["collective=allreduce"]["comm_type=intra"]

    def mpich_section(n):  # MPICH: the first condition that holds, in order
        for cond, node in chain.items():
            if cond == "comm_size=any" or n <= int(cond.split("<=")[1]):
                return node

    for n in (1, 3, 5, 1000):
        assert mpich_section(n) == original, n
    assert "MPIR_Allreduce_intra_ring" in json.dumps(mpich_section(2))
    assert "MPIR_Allreduce_intra_ring" in json.dumps(mpich_section(4))


@pytest.mark.parametrize(
    "bad,why",
    [
        ("1\n2\n1\n0 1\n64 4 0 0\n", "first rule"),
        ("1\n2\n1\n0 2\n0 4 0 0\n", "ends early"),
        ("1\n2\n1\n0 1\n0 4 0 0\n7\n", "trailing"),
        ("1\n2\n1\n0 1\n010000 4 0 0\n", "octal"),
    ],
)
def test_our_reader_rejects_what_open_mpi_drops_silently(bad, why):
    with pytest.raises(ValueError, match=why):
        emit_openmpi.parse_classic_rules(bad)


def test_open_mpi_json(measured):
    doc = json.loads(emit_openmpi.json_rules(choose(load_runs(measured))))
    assert doc["rule_file_version"] == 3 and doc["module"] == "tuned"
    entry = doc["collectives"]["allreduce"][-1]
    assert entry["comm_size_min"] == 4 and entry["comm_size_max"] == "inf"
    assert entry["rules"] == [{"msg_size_min": 1 << 20, "msg_size_max": "inf", "alg": "ring"}]


TREE = {
    "collective=allreduce": {
        "comm_type=intra": {
            "avg_msg_size<=8": {"algorithm=MPIR_Allreduce_intra_x": {}},
            "avg_msg_size=any": {"algorithm=MPIR_Allreduce_intra_y": {}},
        },
        "comm_type=inter": {"algorithm=MPIR_Allreduce_inter_z": {}},
    },
    "collective=allgather": {"comm_type=intra": {"algorithm=MPIR_Allgather_intra_brucks": {}}},
}
POSIX = {
    "collective=allreduce": {
        "comm_type=intra": {
            "is_multi_threaded=no": {"is_commutative=yes": {"algorithm=MPIDI_POSIX_mpi_allreduce_release_gather": {}}}
        }
    }
}


def _catch_alls(node: dict) -> bool:
    """Every level of conditions ends in a catch-all, as MPICH requires (algorithm leaves excepted)."""
    keys = list(node)
    if not keys or keys[0].startswith("algorithm="):
        return True
    if keys[0].startswith(("avg_msg_size", "total_msg_size", "comm_size")) and "=any" not in keys[-1]:
        return False
    return all(_catch_alls(child) for child in node.values())


def test_mpich_trees_are_spliced_into_the_default(measured):
    table = choose(load_runs(measured))
    trees = {"mpir": TREE, "posix": POSIX, "_symbols": b"MPIR_Allreduce_intra_ring"}
    mpir = emit_mpich.mpir_tree(table, trees)
    intra = mpir["collective=allreduce"]["comm_type=intra"]
    # MPICH reads "<" as "<=": write what is meant; sizes 2 and 4 measured, every other keeps MPICH's own
    original = TREE["collective=allreduce"]["comm_type=intra"]
    assert list(intra) == ["comm_size<=1", "comm_size<=2", "comm_size<=3", "comm_size<=4", "comm_size=any"]
    assert intra["comm_size<=1"] == intra["comm_size<=3"] == intra["comm_size=any"] == original
    assert list(intra["comm_size<=4"]) == ["avg_msg_size<=1048575", "avg_msg_size=any"]
    assert intra["comm_size<=4"]["avg_msg_size<=1048575"] == original
    # ring needs a commutative op (a JSON leaf has no fallback): other calls keep MPICH's subtree
    assert intra["comm_size<=4"]["avg_msg_size=any"] == {
        "is_commutative=yes": {"algorithm=MPIR_Allreduce_intra_ring": {}},
        "is_commutative=no": original,
    }
    assert mpir["collective=allgather"] == TREE["collective=allgather"]  # the rest of the tree is kept
    assert mpir["collective=allreduce"]["comm_type=inter"] == TREE["collective=allreduce"]["comm_type=inter"]
    assert _catch_alls(mpir)
    posix = emit_mpich.posix_tree(table, trees)
    chain = posix["collective=allreduce"]["comm_type=intra"]["is_multi_threaded=no"]["is_commutative=yes"]
    own = {"algorithm=MPIDI_POSIX_mpi_allreduce_release_gather": {}}
    assert chain["comm_size<=4"]["avg_msg_size=any"] == {"is_multi_threaded=yes": own}
    assert chain["comm_size<=4"]["avg_msg_size<=1048575"] == own
    assert chain["comm_size=any"] == chain["comm_size<=3"] == own


def test_mpich_guards_follow_the_restrictions():
    leaf, fallback = {"algorithm=A": {}}, {"algorithm=D": {}}
    node = emit_mpich.guarded("allreduce", "reduce_scatter_allgather", leaf, fallback)
    assert node == {"count<pow2": fallback, "count=any": {"is_op_built_in=yes": leaf, "is_op_built_in=no": fallback}}
    assert emit_mpich.guarded("alltoall", "pairwise_sendrecv_replace", leaf, fallback) == {
        "is_sendbuf_inplace=yes": leaf,
        "is_sendbuf_inplace=no": fallback,
    }
    # MPICH 4.0 knows no is_*=any key: every guard's other side is its complement
    assert emit_mpich.guarded("alltoall", "pairwise", leaf, fallback) == {
        "is_sendbuf_inplace=no": leaf,
        "is_sendbuf_inplace=yes": fallback,
    }
    assert emit_mpich.guarded("bcast", "binomial", leaf, fallback) == leaf  # no restriction, no guard
    # smp calls the collective again on its node communicators, which have no hierarchy of their own
    assert emit_mpich.guarded("bcast", "smp", leaf, fallback) == {
        "comm_hierarchy=parent": leaf,
        "comm_hierarchy=any": fallback,
    }
    assert emit_mpich.guarded("allreduce", "smp", leaf, fallback) == {
        "is_commutative=yes": {"comm_hierarchy=parent": leaf, "comm_hierarchy=any": fallback},
        "is_commutative=no": fallback,
    }
    assert emit_mpich.needs_builtin_op("reduce", "reduce_scatter_gather")
    assert not emit_mpich.needs_builtin_op("allreduce", "ring")


def test_mpich_refuses_an_algorithm_the_library_lacks(measured):
    with pytest.raises(UsageError, match="MPIR_Allreduce_intra_ring"):
        emit_mpich.mpir_tree(choose(load_runs(measured)), {"mpir": TREE, "_symbols": b"nothing"})


def test_vendor_names_follow_the_libraries():
    """The names each library gives a collective come from its spec (one place), spelled as the libraries do."""
    assert names("allreduce").mpich_size_key == "avg_msg_size" and names("allgather").mpich_size_key == "total_msg_size"
    rs = names("reduce_scatter")
    assert (rs.openmpi, rs.openmpi_id, rs.openmpi_json) == ("reduce_scatter_block", 13, "reducescatterblock")
    assert (rs.mpich, rs.mpich_json, rs.mpich_function) == (
        "REDUCE_SCATTER_BLOCK",
        "reduce_scatter_block",
        "Reduce_scatter_block",
    )
    assert (rs.intel, rs.intel_json, rs.nccl) == ("REDUCE_SCATTER_BLOCK", "Reduce_scatter_block", "reducescatter")
    assert [c for c in ("allreduce", "reduce", "bcast", "allgather") if names(c).mpich_posix] == [
        "allreduce",
        "reduce",
        "bcast",
    ]


def test_intel_adjust_covers_everything_without_gaps(measured):
    table = choose(load_runs(measured))
    for sections in table.rules.values():
        for ranges in sections.values():
            for r in ranges:
                if r.winner != "default":
                    r.winner = "preset8"
    with pytest.raises(ValueError):
        emit_intel.adjust_strings(table, {})  # a default range without a measured preset
    fallbacks = {(c, n, r.lo): 1 for c, s in table.rules.items() for n, rs in s.items() for r in rs}
    # Rules that differ by communicator size stay out of ADJUST strings (Intel MPI 2021.18 ignores message
    # sizes under "@p-q" conditions); with one section the string selects by message size alone.
    table.rules["allreduce"][2][-1].winner = "preset3"  # rules that differ between 2 and 4 ranks
    strings, left = emit_intel.adjust_strings(table, fallbacks)
    assert "allreduce" in left and "I_MPI_ADJUST_ALLREDUCE" not in strings
    for coll in table.rules:
        table.rules[coll] = {4: table.rules[coll][4]} if 4 in table.rules[coll] else table.rules[coll]
    strings, left = emit_intel.adjust_strings(table, fallbacks)
    value = strings["I_MPI_ADJUST_ALLREDUCE"]
    assert "@" not in value
    rules = emit_intel.parse_adjust(value)  # raises on a gap
    assert (8, 1 << 20, 2147483647, 1, 2147483647) in rules and (1, 0, (1 << 20) - 1, 1, 2147483647) in rules
    doc = json.loads(emit_intel.tuning_json(table, fallbacks, ppn=4))
    assert doc["coll=Allreduce"]["ppn=4"]["comm_size=4"]["comm_id=-1"]["msg_size=-1"] == {"ALLREDUCE=8": {}}
    with pytest.raises(ValueError, match="gap"):
        emit_intel.parse_adjust("1:0-100@1-2147483647")


@pytest.mark.process
def test_no_nccl_tuner_file_is_offered(measured):
    """NCCL's tuner CSV could only come from NCCL measurements on GPUs (none here): not an output."""
    from mpirun import error_lines, run_local

    out = run_local(["tune", str(measured), "--emit", "nccl"])
    assert out.returncode == 2 and "nccl" in error_lines(out.stderr)[0]


def test_a_job_failing_on_some_communicator_sizes_is_measured_size_by_size(monkeypatch):
    """Open MPI's two_proc algorithms abort on more than 2 ranks: one failing size must not cost the
    sizes the algorithm can run on."""
    from fabricprobe.tuning.measure import launch as m
    from fabricprobe.tuning.measure import sweep
    from fabricprobe.tuning.plan.library import Variant

    class Lib:
        vendor = "Open MPI"
        switches_at_run_time = True

        def variants(self, collective):
            return [Variant(collective, "default", "", {}), Variant(collective, "two_proc", "8", {})]

    calls = []

    def fake_run(base, output, variant, config, timeout):
        comm_sizes, label = tuple(config.comm_sizes), config.library_variant
        assert config.collectives == ["allgather"] and label == ("" if variant.name == "default" else variant.name)
        calls.append((variant.name, comm_sizes))
        code = 1 if variant.name == "two_proc" and max(comm_sizes) > 2 else 0
        return m.Launch(config.collectives[0], variant, code, "", comm_sizes)

    monkeypatch.setattr(sweep, "library_in_use", lambda: "Open MPI")
    monkeypatch.setattr(sweep, "for_vendor", lambda vendor: Lib())
    monkeypatch.setattr(m, "run_variant", fake_run)
    result = sweep.tune_sweep(
        8, "out.h5", ["allgather"], [2, 4, 8], SweepConfig(), switch="launch", mpiexec="/bin/true"
    )
    launches = result.launches
    assert calls == [
        ("default", (2, 4, 8)),
        ("two_proc", (2, 4, 8)),
        ("two_proc", (2,)),
        ("two_proc", (4,)),
        ("two_proc", (8,)),
    ]
    assert [(x.variant.name, x.comm_sizes, x.returncode) for x in launches] == [
        ("default", (2, 4, 8), 0),
        ("two_proc", (2,), 0),
        ("two_proc", (4,), 1),
        ("two_proc", (8,), 1),
    ]


def test_rules_the_library_did_not_apply_are_given_back_to_the_default():
    from fabricprobe.tuning.choose.rules import Decision, Range, Table
    from fabricprobe.tuning.verify.checks import MISMATCH, VERIFIED, Check
    from fabricprobe.tuning.workflow import prune

    d = lambda size: Decision(size, "x", 1.0, 1.0, 0.0)  # noqa: E731
    table = Table(
        "Open MPI",
        "",
        4,
        "float32",
        {"bcast": {4: [Range(0, 1024, "chain", [d(8)]), Range(1024, None, "binomial", [d(1024), d(4096)])]}},
    )
    dropped = prune(table, [Check("bcast", 4, 8, "chain", MISMATCH), Check("bcast", 4, 4096, "binomial", VERIFIED)])
    assert [r.winner for r in table.rules["bcast"][4]] == ["default", "binomial"]
    assert dropped == ["bcast on 4 ranks [0 B, 1 KiB): chain"]
    assert table.tuned()


def test_mpich_leaves_carry_the_parameters_the_forced_cvar_used():
    cvars = {"MPIR_CVAR_ALLREDUCE_RECEXCH_KVAL": "4"}
    assert emit_mpich.leaf_params("allreduce", "k_reduce_scatter_allgather", cvars) == {
        "k=4": {},
        "single_phase_recv=0": {},
    }
    assert emit_mpich.leaf_params("allreduce", "ring", cvars) == {}


def test_intel_ranges_the_default_won_are_verified_as_the_preset_written(measured):
    from fabricprobe.tuning.emit.registry import intel_defaults_as_presets

    table = choose(load_runs(measured))
    fallbacks = {(c, n, r.lo): 7 for c, s in table.rules.items() for n, rs in s.items() for r in rs}
    lines = intel_defaults_as_presets(table, fallbacks)
    winners = {r.winner for s in table.rules["allreduce"].values() for r in s}
    assert "default" not in winners and "preset7" in winners and lines
    assert all("fastest measured preset, preset7" in line for line in lines)


@pytest.mark.process
def test_a_library_tool_that_fails_is_an_error_not_an_empty_answer(tmp_path):
    from fabricprobe.tuning.plan.intel import IntelMPI

    tool = tmp_path / "bin" / "impi_info"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho 'impi_info: error while loading shared libraries: libmpi.so.12' >&2\nexit 127\n")
    tool.chmod(0o755)
    with pytest.raises(UsageError, match="libmpi.so.12"):
        IntelMPI(impi_info=str(tool))
    tool.write_text("#!/bin/sh\necho 'nothing useful'\n")
    with pytest.raises(UsageError, match="no I_MPI_ADJUST preset"):
        IntelMPI(impi_info=str(tool))


def test_a_failed_jobs_own_error_line_is_shown_not_the_launchers_banner():
    from fabricprobe.tuning.measure.launch import job_error

    banner = (
        "fabricprobe: error: cannot write results to /x/r.h5: directory /x does not exist\n"
        "--------------------------------------------------------------------------\n"
        "prterun detected that one or more processes exited with non-zero status,\n"
        "thus causing the job to be terminated.\n"
    )
    assert job_error(banner) == "fabricprobe: error: cannot write results to /x/r.h5: directory /x does not exist"
    assert job_error("a\nb\nc\nd\n") == "a / b / c"  # the library speaks first; backtraces and banners follow


def test_the_files_say_which_case_they_are_for():
    """A coll/tuned rule is keyed on the communicator's size only: the file names the job it was measured
    in and what served each section's default (tuned on one node or with Open MPI 4.1, han on several
    nodes with Open MPI 5), in comments the strict reader and Open MPI skip."""
    d = lambda size: Decision(size, "x", 1.0, 1.0, 0.0)  # noqa: E731
    ranges = [Range(0, None, "ring", [d(8)])]
    bare = Table("Open MPI", "", 4, "float32", {"allreduce": {4: ranges}})
    table = Table(
        "Open MPI", "", 4, "float32", {"allreduce": {4: ranges}},
        served={"allreduce": {4: "tuned"}}, shape="4 ranks of 2 nodes",
    )  # fmt: skip
    text = emit_openmpi.classic_rules(table, OpenMPI(text=OMPI_INFO))
    assert "# measured in a job of 4 ranks of 2 nodes" in text and "# allreduce on 4 ranks: served by tuned" in text
    assert "# comm size 4 (measured, served by tuned)" in text
    assert emit_openmpi.parse_classic_rules(text) == emit_openmpi.parse_classic_rules(
        emit_openmpi.classic_rules(bare, OpenMPI(text=OMPI_INFO))
    )
    assert "unrecorded shape" in emit_openmpi.classic_rules(bare, OpenMPI(text=OMPI_INFO))


@pytest.mark.process
def test_a_probe_whose_launcher_is_killed_says_so(tmp_path):
    """A SIGKILLed launcher leaves an empty stderr: tune-sweep said "could not ask which component serves
    the job (error: )" (benchmarks/launcher_kill_study.py, 8 of 20 kills landed on a probe). Its ranks,
    still running, are ended too."""
    import subprocess
    import time

    from fabricprobe.tuning.verify.fingerprint import _probe

    pidfile = tmp_path / "rank.pid"
    launcher = tmp_path / "launcher.sh"  # starts a long "rank" (its output elsewhere, as prterun's are), is killed
    launcher.write_text(f"#!/bin/sh\nsleep 300 >/dev/null 2>&1 & echo $! > {pidfile}\nkill -9 $$\n")
    launcher.chmod(0o755)
    found = _probe([str(launcher)], {}, 60, "path", None)
    assert found.startswith("error: the launcher launcher.sh was ended by SIGKILL"), found
    rank = int(pidfile.read_text())

    def alive() -> bool:
        return subprocess.run(["kill", "-0", str(rank)], capture_output=True).returncode == 0

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and alive():
        time.sleep(0.1)
    assert not alive(), "the rank the launcher left runs on"


def test_the_one_launchs_state_file_and_its_temporary_leave_nothing_when_interrupted(tmp_path, monkeypatch):
    """Rank 0 killed between writing the state's temporary file and renaming it (a launcher's SIGKILL
    after its SIGTERM) left `<results>.switching.tmp` beside the results (clean-clone CI, MPICH): the
    driver discards the state and its temporary file whatever ended the job."""
    from fabricprobe.tuning.measure import onelaunch, switch_state

    output = str(tmp_path / "t.h5")
    state = switch_state.state_path(output)
    switch_state.note(state, "allreduce", "ring", 4)
    assert switch_state.culprit(state) == ("allreduce", "ring", 4)

    def killed_mid_note(base, argv, env, timeout, line):
        with open(f"{state}.tmp", "w") as f:
            f.write('{"collective": "allre')  # the rank's half-written note, never renamed
        raise KeyboardInterrupt

    monkeypatch.setattr(onelaunch, "run_fabricprobe", killed_mid_note)
    with pytest.raises(KeyboardInterrupt):
        onelaunch.launch_job(["fabricprobe"], output, {"parts": [], "state": state}, {}, 10.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    switch_state.note(state, "bcast", "binomial", 2)
    open(f"{state}.tmp", "w").close()
    switch_state.discard(state)
    switch_state.discard(state)  # nothing there: no error
    assert sorted(p.name for p in tmp_path.iterdir()) == []
