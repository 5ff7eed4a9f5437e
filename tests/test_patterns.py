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
