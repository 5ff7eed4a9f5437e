"""Page-aligned, touched host buffers (untouched pages and odd alignment skew large-message timings)."""

from __future__ import annotations

import numpy as np

PAGE = 4096


def aligned_empty(length: int, dtype: np.dtype, align: int = PAGE) -> np.ndarray:
    """A 1-D array of `length` elements whose data starts on an `align`-byte boundary."""
    dtype = np.dtype(dtype)
    raw = np.empty(length * dtype.itemsize + align, dtype=np.uint8)
    offset = (-raw.ctypes.data) % align
    return raw[offset:offset + length * dtype.itemsize].view(dtype)
