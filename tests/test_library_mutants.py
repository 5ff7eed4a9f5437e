"""Wrong library calls planted, each class of issue 53's escapes at p = 2, 3 and 4: a rooted collective
that ignores its root, a transfer that moves the wrong block (one-sided windows and multi-block
collectives), a receive count one too large, and a write into a buffer the standard leaves untouched
(named by what it is, #wrong never above checked). Simulated as tests/test_specs.py simulates a right
library (no MPI), then spoilt as the wrong call would spoil it; validation must count it every time,
and the right call must count nothing. The fifth class, an internal error that exited 1 (the status of
wrong results), is planted under mpiexec at p = 2, 3 and 4 at the end of this file. Part of the mutation
score (benchmarks/mutation_score.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mpirun import error_lines, need_ranks, run_mpi
from test_rma import _pair
from test_specs import make_cases, simulate

from fabricprobe.engine import validation
from fabricprobe.errors import EXIT_INTERNAL
from fabricprobe.oracle import patterns
from fabricprobe.specs import uneven

RANKS = [2, 3, 4]
# the blocking forms: their non-blocking and persistent twins share their checks (specs/nonblocking.py)
ROOTED = ["bcast", "reduce", "gather", "scatter", "gatherv", "scatterv"]
BLOCK = 100  # elements of a rank's block


def _cases(name: str, p: int, root: int = 0, dtype: str = "float32"):
    spec, cases = make_cases(name, p, BLOCK * p * np.dtype(dtype).itemsize, dtype, root=root)
    kept = [validation.snapshot(spec, case, None) for case in cases]
    return spec, cases, kept


def _caught(spec, cases, kept) -> int:
    """What validation counts: wrong result elements plus changed untouched ones, over every rank."""
    return sum(spec.check(c) for c in cases) + sum(validation.changed(k) for k in kept)


@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("name", ROOTED)
def test_a_call_that_ignores_its_root_is_caught(name, p):
    """The call run at root 0 whatever root it was given; validated at root p - 1."""
    spec, cases, kept = _cases(name, p, root=p - 1)
    own_send = cases[0].send
    if name in ("scatter", "scatterv"):  # rank 0 holds no send buffer of a root's size: it sends its own data
        cases[0].send = patterns.data_at(0, 1, cases[-1].send.size).astype(cases[0].dtype)
    for case in cases:
        case.root = 0
    simulate(name, cases)
    for case in cases:
        case.root = p - 1
    cases[0].send = own_send
    assert _caught(spec, cases, kept) > 0
    spec, cases, kept = _cases(name, p, root=p - 1)  # the right call
    simulate(name, cases)
    assert _caught(spec, cases, kept) == 0


def _blocks_of(name: str, case) -> list[tuple[int, int]]:
    """(start, length) of each block of a rank's receive buffer, as the spec lays it out."""
    p, c = case.nranks, case.count
    if name in ("allgatherv", "gatherv"):
        counts = uneven.block_counts(c, p)
        return list(zip(uneven.gapped_displacements(counts), counts))
    if name == "alltoallv":
        from fabricprobe.specs.alltoallv import pair_counts

        counts = pair_counts(c, p, case.rank)
        return list(zip(uneven.gapped_displacements(counts), counts))
    return [(r * c, c) for r in range(p)]


MULTI_BLOCK = ["allgather", "alltoall", "gather", "allgatherv", "gatherv", "alltoallv"]


@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("moved", ["block 0 every time", "blocks 0 and 1 swapped"])
@pytest.mark.parametrize("name", MULTI_BLOCK)
def test_a_collective_that_moves_the_wrong_block_is_caught(name, moved, p):
    spec, cases, kept = _cases(name, p)
    simulate(name, cases)
    assert _caught(spec, cases, kept) == 0
    for case in cases:
        if not spec.checked_elements(case):
            continue  # a non-root of a rooted collective receives nothing
        blocks = _blocks_of(name, case)
        (a, ka), (b, kb) = blocks[0], blocks[1]
        k = min(ka, kb)
        first, second = case.recv[a : a + k].copy(), case.recv[b : b + k].copy()
        case.recv[b : b + k] = first
        if moved == "blocks 0 and 1 swapped":
            case.recv[a : a + k] = second
    assert _caught(spec, cases, kept) > 0


@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("moved", ["block 0 every time", "blocks 0 and 1 swapped"])
@pytest.mark.parametrize("name", ["put_bw", "get_bw"])
def test_a_window_transfer_that_moves_the_wrong_block_is_caught(name, moved, p):
    """A one-sided bandwidth test's pair, with as many messages in its window as p (2, 3, 4 blocks):
    the window's blocks each hold their own data, so any block moved to another's place is seen."""
    spec, (origin, target) = _pair(name, BLOCK)
    source = origin.send if name == "put_bw" else spec.window_memory(target)
    dest = spec.window_memory(target) if name == "put_bw" else origin.recv
    blocks = source.reshape(spec.messages(origin), -1)[:p]
    n = blocks.size
    dest[:] = source  # the right transfer
    checked = origin if name == "get_bw" else target
    assert spec.check(checked) == 0
    order = [0] * p if moved == "block 0 every time" else [1, 0, *range(2, p)]
    dest[:n] = blocks[order].ravel()
    assert spec.check(checked) > 0


@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("name", ["gatherv", "allgatherv"])
def test_a_receive_count_one_too_large_is_caught(name, dtype, p):
    """Each block received one element longer: the extra element is the sender's unsent tail, which
    held the same sentinel as the receiver's gap bit for bit until sentinels differed by rank and role."""
    spec, cases, kept = _cases(name, p, dtype=dtype)
    simulate(name, cases)
    assert _caught(spec, cases, kept) == 0
    counts = uneven.block_counts(cases[0].count, p)
    spilled = 0
    for dest in cases if name == "allgatherv" else [cases[0]]:
        for r, (start, k) in enumerate(zip(uneven.gapped_displacements(counts), counts)):
            if cases[r].send.size > k:  # the sender's buffer has an unsent tail
                dest.recv[start : start + k + 1] = cases[r].send[: k + 1]
                spilled += 1
    assert spilled and _caught(spec, cases, kept) == spilled


@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize(
    "name,rank,kind",
    [
        ("allgatherv", 0, "receive-buffer gaps"),
        ("gatherv", -1, "non-root receive buffers"),
        ("gather", -1, "non-root receive buffers"),
        ("reduce", -1, "send buffers"),
    ],
)
def test_a_write_into_an_untouched_buffer_is_named_and_never_counts_above_checked(name, rank, kind, p, monkeypatch):
    """The write named by the buffer it spoilt (it was "send buffers" for a gap), and #wrong ≤ checked."""
    spec, cases, kept = _cases(name, p)
    simulate(name, cases)
    victim = cases[rank]
    spoilt = next(buf for buf, _ in kept[rank] if buf.size and (kind == "send buffers") == (buf is victim.send))
    spoilt[:] = 5
    monkeypatch.setattr(validation, "check_output", lambda spec, case, dev, device: (0, spec.checked_elements(case)))
    tallies = [validation.Tally() for _ in cases]
    for tally, case, k in zip(tallies, cases, kept):
        tally.first_call(spec, case, None, None, k)
    totals = sum(t.totals() for t in tallies)
    assert 0 < validation.wrong_of(totals) <= totals[1]
    note = validation.note_of(totals, False)
    assert f"elements of {kind} the standard leaves untouched" in note, note


DRIVER = Path(__file__).resolve().parent / "drivers" / "internal_error.py"


@pytest.mark.process
@pytest.mark.parametrize("p", RANKS)
def test_an_internal_error_is_not_the_status_of_wrong_results(p, tmp_path):
    """A bug planted in the engine mid-sweep: every rank ends, the status is 70 (not 1, wrong results;
    not 2, bad input) and one line names it. The other ranks, ended by the launcher's SIGTERM, may say
    "interrupted": they cannot tell a rank's abort from a user's signal."""
    need_ranks(p)
    out = run_mpi(p, [], python_args=[str(DRIVER), str(tmp_path / "e.h5"), str(p)], timeout=300)
    assert out.returncode == EXIT_INTERNAL, (out.returncode, out.stderr[-2000:])
    said = [line for line in out.stderr.splitlines() if line.startswith("fabricprobe: internal error:")]
    assert len(said) == 1 and "planted" in said[0], out.stderr[-2000:]
    others = {f"fabricprobe: error: interrupted by {sig}" for sig in ("SIGTERM", "SIGINT")}
    assert set(error_lines(out.stderr)) <= others, out.stderr[-2000:]
