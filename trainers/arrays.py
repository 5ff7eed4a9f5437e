"""Which array module an array belongs to: the one fact the model code needs about where it runs."""

from __future__ import annotations

from typing import Any

import numpy as np


def module_of(array: Any) -> Any:
    """numpy, or cupy for a CuPy array."""
    if type(array).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np
