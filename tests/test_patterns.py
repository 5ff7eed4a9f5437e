"""The closed-form results the validation relies on must equal a brute-force reduction."""

import numpy as np
import pytest

from fabricprobe.mpienv.datatypes import DTYPES, OPS
from fabricprobe.oracle import patterns

REDUCE = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("nranks", [1, 2, 3, 4, 5, 7, 8, 9, 16, 63, 64])
def test_closed_form_matches_brute_force(op, nranks):
    index = np.arange(5000) + 123_456
    stacked = np.stack([patterns.reduction_input(r, nranks, index, op) for r in range(nranks)])
    np.testing.assert_array_equal(REDUCE[op](stacked, axis=0), patterns.reduction_result(nranks, index, op))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", OPS)
def test_exact_in_every_dtype_at_scale(dtype, op):
    """Reducing in the target dtype in any order gives the exact result (65,536 ranks worst case)."""
    nranks = 65536
    index = np.arange(300)
    exact = patterns.reduction_result(nranks, index, op)
    assert np.all(np.abs(exact) < 2**24)
    acc = patterns.reduction_input(0, nranks, index, op).astype(dtype)
    for r in range(nranks - 1, 0, -1):  # reverse order on purpose
        x = patterns.reduction_input(r, nranks, index, op).astype(dtype)
        acc = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}[op](acc, x)
    np.testing.assert_array_equal(acc, exact.astype(dtype))


def test_missing_or_doubled_rank_is_visible():
    index = np.arange(1000)
    for op in OPS:
        full = patterns.reduction_result(5, index, op)
        parts = [patterns.reduction_input(r, 5, index, op) for r in range(5)]
        reduce = REDUCE[op]
        assert np.any(reduce(np.stack(parts[:2] + parts[3:]), axis=0) != full), op
        assert np.any(reduce(np.stack(parts + [parts[2]]), axis=0) != full) or op in ("max", "min"), op


def test_data_identifies_source_and_block():
    index = np.arange(1000)
    assert not np.array_equal(patterns.data(0, index), patterns.data(1, index))
    assert not np.array_equal(patterns.data(0, index, salt=1), patterns.data(0, index, salt=2))
    assert patterns.data(3, index).min() >= 1 and patterns.data(3, index).max() <= 251


def test_sentinel_never_matches_a_result():
    buf = np.empty(4, np.float32)
    patterns.sentinel_fill(buf)
    assert np.isnan(buf).all()
    ibuf = np.empty(4, np.int32)
    patterns.sentinel_fill(ibuf)
    assert (ibuf < -1).all()


INDEX = np.arange(4 * 64 * 3)  # every multiplier, every rank's factor 2, every sign phase


@pytest.mark.parametrize("op", ["sum", "prod"])
def test_every_rank_is_distinguishable_up_to_64(op):
    """Rank b's data in rank a's place, a dropped rank or a doubled one changes the result, p ≤ 64."""
    for nranks in (2, 3, 5, 8, 9, 16, 33, 64):
        parts = np.stack([patterns.reduction_input(r, nranks, INDEX, op) for r in range(nranks)])
        full = patterns.reduction_result(nranks, INDEX, op)
        for a in range(nranks):
            others = np.delete(parts, a, axis=0)
            assert np.any(REDUCE[op](others, axis=0) != full), (op, nranks, "drop", a)
            assert np.any(REDUCE[op](np.vstack([parts, parts[a : a + 1]]), axis=0) != full), (op, nranks, "dup", a)
            for b in range(nranks):
                if b != a:
                    swapped = parts.copy()
                    swapped[a] = parts[b]
                    assert np.any(REDUCE[op](swapped, axis=0) != full), (op, nranks, a, b)


def test_rank_r_plus_4_no_longer_passes_for_rank_r():
    """The hole the old `rank % 4` term left: at p ≥ 8 rank r+4's data passed for rank r's."""
    parts = [patterns.reduction_input(r, 8, INDEX, "sum") for r in range(8)]
    parts[1] = patterns.reduction_input(5, 8, INDEX, "sum")
    assert np.any(np.sum(parts, axis=0) != patterns.reduction_result(8, INDEX, "sum"))


@pytest.mark.parametrize("nranks", list(range(2, 65)))
def test_every_op_is_told_from_every_other(nranks):
    """A kernel computing the wrong op is caught: for each op's inputs, every other reduction differs
    from the expected result at some index (the old ±1 prod inputs made prod and min agree at p ≤ 3)."""
    for op in OPS:
        parts = np.stack([patterns.reduction_input(r, nranks, INDEX, op) for r in range(nranks)])
        expected = patterns.reduction_result(nranks, INDEX, op)
        for wrong in OPS:
            if wrong != op:
                assert np.any(REDUCE[wrong](parts, axis=0) != expected), (op, wrong, nranks)


def test_ranges_are_the_patterns_computed_once_and_read_only():
    """The *_at forms (every spec's inputs and expected results) are the same values as the functions
    over np.arange, returned read-only, and the same array the second time (kept, not recomputed)."""
    index = np.arange(7, 7 + 1000, dtype=np.int64)
    pairs = [
        (patterns.data_at(3, 7, 1000, salt=2), patterns.data(3, index, salt=2)),
        (patterns.reduction_input_at(2, 5, 7, 1000, "prod"), patterns.reduction_input(2, 5, index, "prod")),
        (patterns.reduction_result_at(5, 7, 1000, "max"), patterns.reduction_result(5, index, "max")),
    ]
    for kept, fresh in pairs:
        assert np.array_equal(kept, fresh) and not kept.flags.writeable
        with pytest.raises(ValueError):
            kept[0] = 0
    assert patterns.data_at(3, 7, 1000, salt=2) is pairs[0][0]
    assert patterns.data_at(3, 7, 1000, salt=1) is not pairs[0][0]


@pytest.mark.parametrize("start", [0, 5, patterns.CHUNK - 3])
@pytest.mark.parametrize(
    "count", [0, 1, patterns.CHUNK - 1, patterns.CHUNK, patterns.CHUNK + 1, 3 * patterns.CHUNK + 7]
)
def test_ranges_are_computed_in_chunks_into_their_narrowest_type(start, count):
    """Across chunk boundaries the same values as in one piece, kept in uint8 (data) and int32
    (reductions, up to 65,536 ranks' sums): an eighth and a half of int64's memory."""
    patterns.forget()
    index = np.arange(start, start + count, dtype=np.int64)
    for kept, fresh, narrow in (
        (patterns.data_at(9, start, count, salt=4), patterns.data(9, index, salt=4), np.uint8),
        (
            patterns.reduction_input_at(63, 65536, start, count, "sum"),
            patterns.reduction_input(63, 65536, index, "sum"),
            np.int32,
        ),
        (
            patterns.reduction_result_at(65536, start, count, "sum"),
            patterns.reduction_result(65536, index, "sum"),
            np.int32,
        ),
        (patterns.reduction_result_at(7, start, count, "prod"), patterns.reduction_result(7, index, "prod"), np.int32),
    ):
        assert kept.dtype == narrow and kept.shape == (count,) and np.array_equal(kept, fresh)
    patterns.forget()


def test_the_kept_arrays_stay_within_their_bound():
    memo = patterns._Memo(limit=3 * 8000, largest=8000)
    for k in range(10):
        memo.get(("x", k), lambda: np.zeros(1000, np.int64))  # 8,000 bytes each
    assert memo.bytes <= 3 * 8000 and len(memo.arrays) == 3 and ("x", 9) in memo.arrays
    big = memo.get(("big",), lambda: np.zeros(2000, np.int64))
    assert ("big",) not in memo.arrays and not big.flags.writeable


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_exact_result_and_each_kind_of_wrong_element_are_counted_as_before(dtype):
    """count_wrong compares in the result's own type first; the elements that differ are judged with
    the tolerance as before: off by one, NaN, and within the float tolerance (not wrong)."""
    from fabricprobe.specs.base import count_wrong, tolerance

    expected = patterns.reduction_result(7, np.arange(5000, dtype=np.int64), "sum")
    actual = expected.astype(dtype)
    assert count_wrong(actual, expected) == 0
    actual[3] += 1
    actual[10] = np.nan
    actual[20] = actual[20] * (1 + tolerance(np.dtype(dtype)) / 2)  # inside the tolerance: right
    assert count_wrong(actual, expected) == 2


def test_the_memo_is_forgotten_when_the_sweep_moves_on():
    """Kept past its (collective, size), the memo held up to 256 MiB a rank for nothing: the 128-rank
    quick sweep ran the 24 GiB machine out of memory (docs/performance.md, Many ranks on one node)."""
    patterns.forget()
    kept = patterns.data_at(0, 0, 1000)
    assert patterns.data_at(0, 0, 1000) is kept and patterns._MEMO.bytes == kept.nbytes
    patterns.forget()
    assert patterns._MEMO.bytes == 0 and not patterns._MEMO.arrays
    assert patterns.data_at(0, 0, 1000) is not kept and np.array_equal(patterns.data_at(0, 0, 1000), kept)


def _sentinels_whole(dtype: np.dtype, count: int, owner: int, role: int) -> np.ndarray:
    """The sentinels' definition over the whole buffer at once (what patterns computed before it went
    CHUNK positions at a time)."""
    dtype = np.dtype(dtype)
    key = np.arange(count, dtype=np.uint64) + np.uint64(((owner * 2 + role) * 0x9E3779B1) % (1 << 40))
    if dtype.kind == "f":
        utype, quiet, mask = {2: (np.uint16, 0x7E00, 0x1FF), 4: (np.uint32, 0x7FC00000, 0x3FFFFF)}.get(
            dtype.itemsize, (np.uint64, 0x7FF8 << 48, (1 << 51) - 1)
        )
        return ((key & np.uint64(mask)) | np.uint64(quiet)).astype(utype).view(dtype)
    bits = 8 * dtype.itemsize
    if dtype.kind == "u":
        span = min((1 << bits) - 251, 1 << 30)
        return ((np.uint64(252) + key % np.uint64(span)) % np.uint64(1 << bits)).astype(dtype)
    return (-(1 << 24) - 2 - (key % np.uint64(1 << 30)).astype(np.int64)).astype(dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "uint8", "uint16", "int8", "int32", "int64"])
def test_sentinels_computed_a_chunk_at_a_time_are_bit_for_bit_the_whole_buffers(dtype):
    count = 2 * patterns.CHUNK + 3
    for owner, role in ((0, patterns.RECV), (5, 0), (130, 1)):
        got = patterns._sentinels(np.dtype(dtype), count, owner, role)
        want = _sentinels_whole(dtype, count, owner, role)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (dtype, owner, role)
