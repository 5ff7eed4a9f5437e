"""One-sided tests (issue 35): OMB's put/get latency and bandwidth, accumulate, fetch-and-op and
compare-and-swap, with each of OMB's synchronizations, validated in the target's window and the origin's
buffer; planted wrong results caught; OMB's text."""

from __future__ import annotations

import numpy as np
import pytest
from batch import Case as Command
from batch import run_batch
from mpirun import more_ranks_than_cores, run_local

from fabricprobe.mpienv.datatypes import numpy_dtype
from fabricprobe.specs import SPECS
from fabricprobe.specs.base import Case
from fabricprobe.specs.pt2pt import ROLE_INITIATOR, ROLE_RESPONDER
from fabricprobe.specs.rma import SYNCS
from fabricprobe.store import load_runs

RMA = [n for n, s in SPECS.items() if s.rma]
QUIET = ["--iters", "20", "--warmup", "2", "--max-time", "0.1", "--window-size", "8", "--progress", "none", "--quiet"]


def _pair(name: str, count: int) -> tuple:
    """The origin's and the target's cases, the target's window a plain array (no MPI)."""
    spec = SPECS[name]
    cases = []
    for rank, role in ((0, ROLE_INITIATOR), (1, ROLE_RESPONDER)):
        layout = spec.layout(count, 1, 2)
        case = Case(
            name, None, rank, 2, "byte", numpy_dtype("byte"), "none", 0, False, layout, peer=1 - rank, role=role
        )
        if name in ("fop_latency", "cas_latency"):
            case.dtype = np.dtype(np.int64)
        n = case.count * spec.messages(case)
        own = n if role == ROLE_INITIATOR else 0
        case.send, case.recv = np.empty(own, case.dtype), np.empty(own, case.dtype)
        case.keep = (None, None, np.empty(0 if role == ROLE_INITIATOR else n, case.dtype))
        spec.prepare(case)
        cases.append(case)
    return spec, cases


@pytest.mark.parametrize("name", ["put_latency", "put_bw", "acc_latency"])
def test_a_put_that_lands_elsewhere_is_caught(name):
    """Planted: the origin's data written one element further into the target's window."""
    spec, (origin, target) = _pair(name, 100)
    memory = spec.window_memory(target)
    sent = origin.send[: memory.size] if name != "acc_latency" else origin.send
    if name == "acc_latency":
        memory[1:] = memory[1:] + sent[:-1]
    else:
        memory[1:] = sent[:-1]
    assert spec.check(target) > 0
    right_spec, (o2, t2) = _pair(name, 100)
    mem2 = right_spec.window_memory(t2)
    mem2[:] = mem2 + o2.send if name == "acc_latency" else o2.send[: mem2.size]
    assert right_spec.check(t2) == 0 and right_spec.checked_elements(t2) == mem2.size


@pytest.mark.parametrize("name", ["put_bw", "get_bw"])
@pytest.mark.parametrize("moved", ["block 0 every time", "blocks swapped"])
def test_a_window_transfer_that_moves_the_wrong_block_is_caught(name, moved):
    """Every block of a window holds its own data: with one block repeated (np.resize), a get that
    always read block 0, or any permutation of blocks, was right by construction (issue 53)."""
    spec, (origin, target) = _pair(name, 100)
    source = origin.send if name == "put_bw" else spec.window_memory(target)
    dest = spec.window_memory(target) if name == "put_bw" else origin.recv
    blocks = source.reshape(spec.messages(origin), -1)
    assert len({b.tobytes() for b in blocks}) == len(blocks) > 1  # no two blocks alike
    order = [0] * len(blocks) if moved == "block 0 every time" else [1, 0, *range(2, len(blocks))]
    dest[:] = blocks[order].ravel()
    checked = origin if name == "get_bw" else target
    assert spec.check(checked) > 0
    dest[:] = source  # the right transfer
    assert spec.check(checked) == 0


def test_fetch_and_op_and_compare_and_swap_are_checked_on_both_sides():
    for name, after in (("fop_latency", lambda start, operand: start + operand), ("cas_latency", lambda s, o: o)):
        spec, (origin, target) = _pair(name, 8)
        memory = spec.window_memory(target)
        start = int(memory[0])
        origin.recv[:] = start  # the value fetched
        memory[:] = after(start, int(origin.send[0]))
        assert spec.check(origin) == 0 and spec.check(target) == 0
        memory[:] += 1
        origin.recv[:] += 1
        assert spec.check(origin) == 1 and spec.check(target) == 1


def _every_test(n: int) -> Command:
    args = ["sweep", "-o", "{out}", "--collectives", ",".join(RMA), "--rma-sync", ",".join(SYNCS)]
    return Command(args + ["--sizes", "1,8,4K"] + QUIET)


PLANTED = {"put_latency": 1, "get_bw": 0, "acc_latency": 1, "cas_latency": 0}  # the rank where it is checked
# Every sweep of this module, by rank count: one launch each (tests/batch.py).
CASES = {
    2: {
        "every": _every_test(2),
        "omb-text": Command(["sweep", "-o", "{out}", "--collectives", "put_latency,get_bw", "--sizes", "8,4K"] + QUIET),
        **{
            f"planted-{c}": Command(
                ["sweep", "-o", "{out}", "--collectives", c, "--sizes", "8,4K"] + QUIET,
                {"FABRICPROBE_FAULT_WRONG": f"{c}:{rank}"},
            )
            for c, rank in PLANTED.items()
        },
    },
    3: {"every": _every_test(3)},
}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """sweep(n, name): the outcome of case `name` of CASES[n], all of that rank count run at its first use."""
    done = {}

    def outcome(n: int, name: str):
        if n not in done:
            done[n] = run_batch(n, CASES[n], tmp_path_factory.mktemp(f"n{n}"))
        return done[n][name]

    return outcome


@pytest.mark.process
@pytest.mark.parametrize("n", [2, 3])
def test_every_one_sided_test_and_synchronization_against_the_library(n, sweep):
    """Every test with each of OMB's synchronizations (at 3 ranks one sits out: the window is the pair's),
    validated; every test with flush timed natively (its first, validated call is the compiled loop's),
    the rest through mpi4py."""
    if n > 2 and not more_ranks_than_cores():
        pytest.skip("MPICH busy-polls")
    out = sweep(n, "every")
    assert out.returncode == 0, out.stderr[-3000:]
    points = [p for p in load_runs(str(out.results))[-1].points if p["collective"] != "empty"]
    assert {(p["collective"], p["mode"]) for p in points} == {(c, s) for c in RMA for s in SYNCS}
    assert all(p["status"] == "ok" and p["wrong"] == 0 and p["checked"] > 0 for p in points), [
        (p["key"], p["status"], p["note"]) for p in points if p["status"] != "ok" or p["wrong"]
    ]
    native = {(p["collective"], p["mode"]) for p in points if p["timer"] == "native"}
    assert native == {(c, "flush") for c in RMA}
    assert {p["bytes"] for p in points if p["collective"] == "fop_latency"} == {8}  # one 64-bit integer


@pytest.mark.process
@pytest.mark.parametrize("collective", sorted(PLANTED))
def test_a_planted_wrong_result_is_caught(collective, sweep):
    out = sweep(2, f"planted-{collective}")
    assert out.returncode == 1, out.stderr[-2000:]
    points = [p for p in load_runs(str(out.results))[-1].points if p["collective"] == collective]
    assert points and all(p["status"] == "wrong" and p["wrong"] >= 1 for p in points)


@pytest.mark.process
def test_omb_s_text_for_the_one_sided_tests(sweep):
    out = sweep(2, "omb-text")
    assert out.returncode == 0, out.stderr[-2000:]
    results = out.results
    osu = run_local(["report", str(results), "--format", "osu"]).stdout
    blocks = {b.strip().splitlines()[0]: b for b in osu.split("\n\n") if b.strip()}
    put = next(b for t, b in blocks.items() if t.startswith("# OSU MPI_Put Latency Test v7.4"))
    assert "# Window creation: MPI_Win_allocate" in put and "# Synchronization: MPI_Win_flush" in put
    assert "# Size          Latency (us)" in put
    get = next(b for t, b in blocks.items() if t.startswith("# OSU MPI_Get Bandwidth Test v7.4"))
    rows = [line.split() for line in get.splitlines() if not line.startswith("#")]
    assert [r[0] for r in rows] == ["8", "4096"] and all(float(r[1]) > 0 for r in rows)
