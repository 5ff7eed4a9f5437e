"""No timed call allocates: every algorithm of every test, measured by the unchanged sweep, then run
again under tracemalloc (numpy reports its buffers to it). The project's rule (docs/methodology.md):
buffers and scratch are made before the timed region, so no timed iteration pays fresh page faults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mpirun import more_ranks_than_cores, run_mpi

from fabricprobe import collectives

DRIVER = str(Path(__file__).parent / "drivers" / "count_allocations.py")
LIMIT = 64 << 10  # bytes: Python's own objects and O(p) counts arrays; a message-sized buffer is 1 MiB here (16x)
# numpy.argpartition has no out= argument: the "usual Python way" it stands for allocates its answer and a
# |x| copy in every call, and that cost is what the comparison with the Numba kernel shows.
ALLOCATES_BY_DESIGN = {"topk_local/argpartition"}


@pytest.mark.mpi
def test_no_timed_call_allocates(tmp_path):
    n, topology = (3, ["--ranks-per-node", "2,1"]) if more_ranks_than_cores() else (2, [])
    args = ["--collectives", "all,sparse", "--algorithms", "all", "--sizes", "1M", "--density", "0.01,0.5"]
    args += ["--iters", "10", "--max-time", "0.05", *topology]
    out = run_mpi(n, [], python_args=[DRIVER, str(tmp_path / "r.h5"), *args], timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    measured = {label.split()[0] for label in found}
    for coll in ("allreduce", "sparse_allreduce", "allgather", "reduce_scatter", "bcast", "topk_local"):
        for name in collectives.names_for(coll):
            if name != "nccl":
                assert f"{coll}/{name}" in measured or name == "library", f"{coll}/{name} not measured"
    planted = {label: v for label, v in found.items() if "m_fresh_result" in label}
    assert planted and all(v["peak"] >= v["bytes"] for v in planted.values()), planted  # the count can fail
    for label, v in found.items():
        if label in planted:
            continue
        if label.split()[0] in ALLOCATES_BY_DESIGN:
            assert v["peak"] >= v["bytes"], (label, v)  # the exception is real, not stale
        else:
            assert v["peak"] < LIMIT, (label, v)
