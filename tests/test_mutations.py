"""Validation catches wrong implementations: tests/drivers/mutants.py plants twelve realistic bugs in
hand-written collectives (wrong op, a dropped and a duplicated contribution, off-by-one blocks in ring
allgather and reduce-scatter, the wrong root, the non-power-of-two fold skipped, a stale buffer reused,
the wrong datatype width, a switch to a wrong path after three calls, a reduce that accumulates in a
non-root's send buffer, a sparse allreduce that adds onto what its reused result held) and the
unchanged sweep must mark each one wrong at p = 2, 3, 5 and 8, while correct controls pass. The score
is in docs/testing.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mpirun import run_mpi

pytestmark = pytest.mark.mpi

DRIVER = Path(__file__).resolve().parent / "drivers" / "mutants.py"
MUTANTS = [
    "allreduce/m_wrong_op",
    "allreduce/m_dropped",
    "allreduce/m_duplicated",
    "allgather/m_off_by_one",
    "reduce_scatter/m_off_by_one",
    "bcast/m_wrong_root",
    "allreduce/m_fold_skipped",
    "allreduce/m_stale_buffer",
    "allreduce/m_wrong_width",
    "allreduce/m_late_switch",
    "reduce/m_nonroot_input",
    "sparse_allreduce/m_adds_onto_result",
]
# Equivalent mutants: with p a power of two there are no extra ranks to fold, so skipping the fold
# changes nothing; the score counts the (mutant, p) pairs where the bug can show.
# Likewise on 2 and 3 ranks every non-root of a binomial tree is a leaf: it accumulates nothing.
EQUIVALENT = {
    ("allreduce/m_fold_skipped", 2),
    ("allreduce/m_fold_skipped", 8),
    ("reduce/m_nonroot_input", 2),
    ("reduce/m_nonroot_input", 3),
}


@pytest.mark.parametrize("nranks", [2, 3, 5, 8])
def test_every_planted_bug_is_caught(nranks, tmp_path):
    out = run_mpi(nranks, [], python_args=[str(DRIVER), str(tmp_path / "m.h5")], timeout=600)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    verdicts = doc["verdicts"]
    assert doc["exit_code"] == 1  # wrong points make the sweep's exit status 1
    for control in ("allreduce/control", "allgather/control", "reduce/control", "sparse_allreduce/control"):
        assert verdicts[control]["wrong"] == 0 and verdicts[control]["ok"] > 0, control
    for mutant in MUTANTS:
        tally = verdicts[mutant]
        if (mutant, nranks) in EQUIVALENT:
            assert tally["wrong"] == 0, mutant  # nothing to catch: the code path is never taken
        else:
            assert tally["wrong"] > 0, (mutant, nranks, tally)
    # right in the call validated before the warm-up, wrong in the timed calls: only the steady-state
    # check sees it, and the point's note says so
    late = verdicts["allreduce/m_late_switch"]
    assert late["wrong"] == late["steady_only"] > 0
    # the send buffer compared before and after the validated call: the note names it on every point
    nonroot = verdicts["reduce/m_nonroot_input"]
    assert nonroot["input"] == nonroot["wrong"]
    assert all(t["input"] == 0 for name, t in verdicts.items() if name != "reduce/m_nonroot_input")
