"""Each spec's patterns and checks, against a numpy simulation of the collective (no MPI):
a correct result passes with zero wrong elements, and any single corrupted element is caught."""

import numpy as np
import pytest

from fabricprobe.memory.host import BufferPool
from fabricprobe.mpienv.datatypes import DTYPES, OPS, numpy_dtype
from fabricprobe.specs import SPECS
from fabricprobe.specs.base import Case
from fabricprobe.specs.pt2pt import ROLE_INITIATOR, ROLE_RESPONDER

REDUCE = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


def make_cases(name, nranks, nbytes, dtype="float32", op="sum", in_place=False, root=0):
    spec = SPECS[name]
    dt = numpy_dtype("byte" if spec.pt2pt else dtype)
    layout = spec.layout(nbytes, dt.itemsize, nranks)
    cases = []
    for rank in range(nranks):
        case = Case(
            collective=name,
            comm=None,
            rank=rank,
            nranks=nranks,
            dtype_name=dtype,
            dtype=dt,
            op=op,
            root=root,
            in_place=in_place,
            layout=layout,
        )
        if spec.pt2pt and nranks >= 2 and rank < 2:
            case.peer = 1 - rank
            case.role = spec.roles(rank == 0)
        spec.allocate(case, BufferPool())  # one pool per simulated rank, as one per process
        spec.prepare(case)
        cases.append(case)
    return spec, cases


def inputs(cases):
    return [c.recv.copy() if c.send is None else c.send.copy() for c in cases]


def simulate(name, cases):
    """What a correct MPI would leave in every rank's receive buffer."""
    p, c = len(cases), cases[0].count
    if name in ("allreduce", "reduce"):
        total = REDUCE[cases[0].op](np.stack(inputs(cases)), axis=0).astype(cases[0].dtype)
        for case in cases:
            if name == "allreduce" or case.rank == case.root:
                case.recv[:] = total
    elif name == "bcast":
        for case in cases:
            case.recv[:] = cases[cases[0].root].recv
    elif name == "allgather":
        blocks = [
            case.recv[r * c : (r + 1) * c].copy() if case.send is None else case.send.copy()
            for r, case in enumerate(cases)
        ]
        for case in cases:
            case.recv[:] = np.concatenate(blocks)
    elif name == "reduce_scatter":
        total = REDUCE[cases[0].op](np.stack(inputs(cases)), axis=0).astype(cases[0].dtype)
        for r, case in enumerate(cases):
            case.recv[:c] = total[r * c : (r + 1) * c]
    elif name == "alltoall":
        data = inputs(cases)
        for r, case in enumerate(cases):
            case.recv[:] = np.concatenate([data[src][r * c : (r + 1) * c] for src in range(p)])
    elif name in ROOTED_AND_VECTOR:
        simulate_rooted_and_vector(name, cases)
    elif name in ("latency", "bw", "bibw"):
        for case in cases:
            receives = case.role in SPECS[name].receives_on
            if receives:
                case.recv[:] = cases[case.peer].send


VECTOR_EVEN = ("gatherv_even", "scatterv_even", "allgatherv_even", "alltoallv_even")
ROOTED_AND_VECTOR = ("gather", "scatter", "gatherv", "scatterv", "allgatherv", "alltoallv", *VECTOR_EVEN)


def _rank_order(counts):
    """OMB's placement, written out here: each block right after the one of the rank before."""
    return [sum(int(k) for k in counts[:r]) for r in range(len(counts))]


def simulate_rooted_and_vector(name, cases, displacements=None):
    """gather, scatter and the vector forms, block by block from the counts and displacements MPI is
    given (uneven's; equal blocks in rank order for the _even forms; or `displacements(counts)`: a
    planted library that places blocks elsewhere)."""
    from fabricprobe.specs import uneven
    from fabricprobe.specs.alltoallv import pair_counts

    p, c, root = len(cases), cases[0].count, cases[0].root
    even = name.endswith("_even")
    name = name.removesuffix("_even")
    place = displacements or (_rank_order if even else uneven.gapped_displacements)
    block_counts = (lambda c, p: np.full(p, c)) if even else uneven.block_counts
    peer_counts = (lambda c, p, j: np.full(p, c)) if even else pair_counts
    if name == "gather":
        cases[root].recv[:] = np.concatenate([case.send for case in cases])
    elif name == "scatter":
        for r, case in enumerate(cases):
            case.recv[:] = cases[root].send[r * c : (r + 1) * c]
    elif name in ("gatherv", "allgatherv"):
        counts = block_counts(c, p)
        for dest in cases if name == "allgatherv" else [cases[root]]:
            for r, (start, k) in enumerate(zip(place(counts), counts)):
                dest.recv[start : start + k] = cases[r].send[:k]
    elif name == "scatterv":
        counts = block_counts(c, p)
        starts = (_rank_order if even else uneven.gapped_displacements)(counts)
        for r, case in enumerate(cases):
            case.recv[: counts[r]] = cases[root].send[starts[r] : starts[r] + counts[r]]
    elif name == "alltoallv":
        for j, dest in enumerate(cases):
            counts = peer_counts(c, p, j)
            for i, (start, k) in enumerate(zip(place(counts), counts)):
                offset = _rank_order(peer_counts(c, p, i))[j]
                dest.recv[start : start + k] = cases[i].send[offset : offset + k]


@pytest.mark.parametrize("name", ROOTED_AND_VECTOR)
@pytest.mark.parametrize("nranks", [1, 2, 3, 4, 5, 9])
def test_gather_scatter_and_the_vector_forms(name, nranks):
    """A correct library passes; one wrong element of any rank's result counts once; a write into a
    gap between blocks, or into a non-root's receive buffer, is a changed untouched element."""
    from fabricprobe.engine.validation import changed as _changed
    from fabricprobe.engine.validation import snapshot as _snapshot

    for count in (0, 1, nranks - 1, nranks, nranks + 1, 1000):
        spec, cases = make_cases(name, nranks, count * nranks * 4, root=nranks // 2)
        kept = [_snapshot(spec, case, None) for case in cases]
        simulate(name, cases)
        assert sum(spec.check(c) for c in cases) == 0, count
        assert sum(_changed(k) for k in kept) == 0, count
        if count == 1000:
            assert sum(spec.checked_elements(c) for c in cases) > 0
            victim = next(c for c in cases if spec.checked_elements(c))
            actual = next(a for a, _ in spec.results(victim) if a.size)
            actual[-1] += 1
            assert spec.check(victim) == 1
            untouched = [(c, buf) for c, k in zip(cases, kept) for buf, _ in k if buf is not c.send and buf.size]
            if untouched:  # a gap, a block's tail, or a non-root's receive buffer
                case, buf = untouched[-1]
                buf[-1] = 5.0
                assert sum(_changed(k) for k in kept) == 1


@pytest.mark.parametrize("name,kind", [("allgatherv", "receive-buffer gaps"), ("gatherv", "non-root receive buffers")])
def test_a_changed_untouched_buffer_is_named_and_wrong_never_exceeds_checked(name, kind, monkeypatch):
    """A write into the receive gaps was reported as "changed N elements of send buffers", and #wrong
    could exceed checked (511 of 508): every element compared now counts as checked (issue 53)."""
    from fabricprobe.engine import validation

    spec, cases = make_cases(name, 3, 3 * 1000 * 4, root=0)
    victim = cases[1]  # a non-root: its whole receive buffer (gatherv), or its gaps (allgatherv)
    kept = [validation.snapshot(spec, case, None) for case in cases]
    simulate(name, cases)
    (buf, _) = next((b, c) for b, c in kept[1] if b is not victim.send and b.size)
    buf[:] = 5.0  # every untouched element spoilt
    monkeypatch.setattr(validation, "check_output", lambda spec, case, dev, device: (0, spec.checked_elements(case)))
    tallies = [validation.Tally() for _ in cases]
    for tally, case, k in zip(tallies, cases, kept):
        tally.first_call(spec, case, None, None, k)
    totals = sum(t.totals() for t in tallies)
    assert validation.wrong_of(totals) == buf.size <= totals[1]
    note = validation.note_of(totals, False)
    assert note.startswith(f"changed {buf.size} elements of {kind} the standard leaves untouched"), note


@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("name", ["gatherv", "allgatherv"])
def test_a_receive_count_one_too_large_is_caught(name, dtype):
    """Each block received one element longer: the extra element is the sender's unsent tail, which
    held the same sentinel as the receiver's gap, bit for bit, so the write was invisible (issue 53;
    gatherv's +1 was caught only because its 0-byte point hung). Sentinels differ by rank and role now."""
    from fabricprobe.engine import validation
    from fabricprobe.specs import uneven

    spec, cases = make_cases(name, 3, 3 * 100 * 8, dtype, root=0)
    kept = [validation.snapshot(spec, case, None) for case in cases]
    simulate(name, cases)
    assert sum(validation.changed(k) for k in kept) == 0
    counts = uneven.block_counts(cases[0].count, 3)
    spilled = 0
    for dest in cases if name == "allgatherv" else [cases[0]]:
        for r, (start, k) in enumerate(zip(uneven.gapped_displacements(counts), counts)):
            if cases[r].send.size > k:  # the sender's buffer has an unsent tail: its first element lands in the gap
                dest.recv[start : start + k + 1] = cases[r].send[: k + 1]
                spilled += 1
    assert spilled and sum(validation.changed(k) for k in kept) == spilled


@pytest.mark.parametrize("name", ["gatherv", "allgatherv", "alltoallv"])
def test_a_library_that_ignores_the_displacements_is_caught(name):
    """Planted: blocks packed in rank order, as if the displacements were not read."""
    from fabricprobe.specs import uneven

    spec, cases = make_cases(name, 5, 5 * 100 * 4, root=2)
    simulate_rooted_and_vector(name, cases, displacements=uneven.packed_displacements)
    assert sum(spec.check(c) for c in cases) > 0


def test_the_vector_blocks_are_uneven_and_add_up():
    from fabricprobe.specs import uneven

    counts = uneven.block_counts(100, 4)
    assert counts.tolist() == [40, 80, 120, 160] and uneven.total(100, 4) == 400
    assert uneven.block_counts(1, 3).tolist() == [0, 1, 1]  # some ranks send nothing
    assert uneven.gapped_displacements(counts).tolist() == [363, 282, 161, 0]  # reverse order, a gap each
    assert uneven.gapped_length(counts) == 404
    assert SPECS["gatherv"].layout(1600, 4, 4).nbytes == 1600


@pytest.mark.parametrize("name", ["allreduce", "reduce", "reduce_scatter"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("nranks", [1, 2, 3, 5])
@pytest.mark.parametrize("in_place", [False, True])
def test_reductions(name, op, dtype, nranks, in_place):
    for nbytes in (0, 8, 100, 4096):
        spec, cases = make_cases(name, nranks, nbytes * nranks, dtype, op, in_place, root=nranks - 1)
        simulate(name, cases)
        assert sum(spec.check(c) for c in cases) == 0
        checked = [c for c in cases if spec.checked_elements(c)]
        if checked:
            victim = checked[-1]
            victim.recv.flat[0] += 1
            assert spec.check(victim) == 1


@pytest.mark.parametrize("name", ["bcast", "allgather", "alltoall"])
@pytest.mark.parametrize("nranks", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("in_place", [False, True])
def test_data_movement(name, nranks, in_place):
    spec = SPECS[name]
    if in_place and not spec.in_place_supported:
        pytest.skip("no in-place form")
    for nbytes in (0, 4, 64, 1000):
        spec, cases = make_cases(name, nranks, nbytes * nranks, in_place=in_place, root=nranks // 2)
        simulate(name, cases)
        assert sum(spec.check(c) for c in cases) == 0, nbytes
        if cases[-1].recv.size:
            cases[-1].recv.flat[-1] = 0
            assert spec.check(cases[-1]) == 1


def test_unwritten_output_is_wrong():
    """A collective that did nothing must fail: outputs start as sentinels, not as results."""
    for name in ("allreduce", "reduce", "bcast", "allgather", "reduce_scatter", "alltoall", *ROOTED_AND_VECTOR):
        spec, cases = make_cases(name, 3, 3 * 64, root=0)
        assert sum(spec.check(c) for c in cases) > 0, name


@pytest.mark.parametrize("name", ["allreduce", "reduce", "allgather", "reduce_scatter", "alltoall", "bcast"])
@pytest.mark.parametrize("in_place", [False, True])
def test_the_send_buffer_is_kept_as_the_standard_says(name, in_place):
    """Every rank's send buffer, the root's and the non-roots', is compared before and after the
    validated call (engine.point); a NaN kept is equal, one changed element counts once."""
    from fabricprobe.engine.validation import changed as _changed
    from fabricprobe.engine.validation import snapshot as _snapshot

    spec = SPECS[name]
    if in_place and not spec.in_place_supported:
        pytest.skip("no in-place form")
    spec, cases = make_cases(name, 3, 3 * 64, "float64", in_place=in_place, root=1)
    for case in cases:
        kept = _snapshot(spec, case, None)
        has_send = spec.has_send and not (in_place and (name != "reduce" or case.rank == case.root))
        assert [buf is case.send for buf, _ in kept] == ([True] if has_send else []), case.rank
        simulate(name, cases)
        assert _changed(kept) == 0
        if kept:
            case.send[0] = np.nan
            kept[0][1][0] = np.nan
            assert _changed(kept) == 0  # NaN against NaN: compared bit for bit, unchanged
            case.send[-1] += 1
            case.send[:2] = -case.send[:2] - 1
            assert _changed(kept) == 3


@pytest.mark.parametrize("name", ["latency", "bw", "bibw"])
def test_pt2pt(name):
    spec, cases = make_cases(name, 2, 512)
    simulate(name, cases)
    assert sum(spec.check(c) for c in cases) == 0
    receivers = [c for c in cases if c.role in spec.receives_on]
    assert receivers
    receivers[0].recv[3] = 0
    assert spec.check(receivers[0]) == 1
    if name == "bw":
        assert [c.role for c in cases] == [ROLE_INITIATOR, ROLE_RESPONDER]


@pytest.mark.parametrize(
    "name,n,factor",
    [
        ("allreduce", 4, 1.5),
        ("allgather", 4, 0.75),
        ("reduce_scatter", 2, 0.5),
        ("alltoall", 8, 0.875),
        ("bcast", 4, 1.0),
        ("reduce", 4, 1.0),
        ("bibw", 2, 2.0),
        ("barrier", 4, 0.0),
    ],
)
def test_busbw_factors_are_nccl_tests(name, n, factor):
    assert SPECS[name].busbw_factor(n) == pytest.approx(factor)


def test_layouts_follow_nccl_tests_sizes():
    assert SPECS["allreduce"].layout(4096, 4, 3).count == 1024
    lay = SPECS["allgather"].layout(4096, 4, 3)  # whole gathered buffer, rounded to whole blocks
    assert (lay.count, lay.recv_len, lay.nbytes) == (341, 1023, 4092)
    lay = SPECS["alltoall"].layout(64, 8, 4)
    assert (lay.count, lay.send_len, lay.nbytes) == (2, 8, 64)


@pytest.mark.parametrize("name", ["gatherv_even", "allgatherv_even", "alltoallv_even"])
def test_an_even_form_whose_blocks_land_out_of_rank_order_is_caught(name):
    """Planted: OMB's layout read backwards (the blocks in reverse rank order)."""

    def reverse(counts):
        return [sum(int(k) for k in counts[r + 1 :]) for r in range(len(counts))]

    spec, cases = make_cases(name, 5, 5 * 100 * 4, root=2)
    simulate_rooted_and_vector(name, cases, displacements=reverse)
    assert sum(spec.check(c) for c in cases) > 0


@pytest.mark.parametrize("name", ["gatherv", "scatterv", "allgatherv", "alltoallv"])
def test_the_even_forms_are_ombs_layout_and_untuned(name):
    """OMB's v-tests: every block the Size column's count, packed in rank order, no gap; the same
    reported size rule as the uneven form, and no tuning names (the uneven form's collective has them)."""
    from fabricprobe.specs import SPECS

    even, uneven_form = SPECS[name + "_even"], SPECS[name]
    lay = even.layout(3 * 100 * 4, 4, 3)
    assert lay.count == 100 and lay.nbytes == 3 * 100 * 4
    assert max(lay.send_len, lay.recv_len) == 300  # every block, no gap
    assert even.block_counts(100, 3).tolist() == [100, 100, 100]
    assert even.displacements(even.block_counts(100, 3)).tolist() == [0, 100, 200]
    assert uneven_form.displacements(uneven_form.block_counts(100, 3)).tolist() != [0, 100, 200]
    assert even.vendor is None and not even.default_sweep and even.osu_title == uneven_form.osu_title
    assert f"{name}_even" in uneven_form.blocks_note and "OMB's layout" in even.blocks_note
