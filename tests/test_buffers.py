import numpy as np
import pytest

from fabricprobe.memory.host import HUGE_PAGE, PAGE, aligned_empty
from fabricprobe.mpienv.provenance import transparent_hugepages


def _anon_huge_kb() -> int:
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1])
    return 0


@pytest.mark.parametrize("length", [0, 1, 1000, 300_000, 1 << 20])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_page_aligned_and_sized(length, dtype):
    a = aligned_empty(length, dtype)
    assert a.shape == (length,) and a.dtype == dtype
    assert length == 0 or a.ctypes.data % PAGE == 0  # an empty array's address is never dereferenced
    a[:] = 3
    assert (a == 3).all()


def test_large_default_buffers_get_no_huge_pages():
    """Only meaningful where the measure can see huge pages: the control, a plain numpy array of the
    same size (numpy madvises large arrays), must get them, or the test skips rather than pass idly."""
    before = _anon_huge_kb()
    control = np.ones(4 << 20, np.float32)  # 16 MiB
    if _anon_huge_kb() <= before:
        pytest.skip(f"no transparent huge pages for numpy here (THP {transparent_hugepages()}): nothing to tell apart")
    before = _anon_huge_kb()
    a = aligned_empty(4 << 20, np.float32)
    a.fill(1)
    assert _anon_huge_kb() == before
    del control


@pytest.mark.skipif(transparent_hugepages() not in ("madvise", "always"), reason="THP disabled on this kernel")
def test_hugepages_are_2mib_aligned_and_backed():
    before = _anon_huge_kb()
    a = aligned_empty(4 << 20, np.float32, hugepages=True)
    assert a.ctypes.data % HUGE_PAGE == 0
    a.fill(1)
    assert _anon_huge_kb() > before
