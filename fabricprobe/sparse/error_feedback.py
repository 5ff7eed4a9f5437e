"""Error feedback for top-k sparsified gradients (residual accumulation, as in gTop-k S-SGD and
Deep Gradient Compression): what a step does not send is added to the next step's gradient, so no
part of any gradient is ever dropped, only delayed."""

from __future__ import annotations

import numpy as np

from fabricprobe.sparse.vector import SparseVector, k_for


class ErrorFeedback:
    """Keeps one residual per parameter vector. compress(g) returns the k largest-magnitude entries
    of g + residual and keeps the rest as the new residual."""

    def __init__(self, n: int, dtype: np.dtype, density: float | None = None, k: int | None = None) -> None:
        if (density is None) == (k is None):
            raise ValueError("give exactly one of density and k")
        self.k = k if k is not None else k_for(n, density)
        self.residual = np.zeros(n, dtype)
        self.enabled = True

    def compress(self, gradient: np.ndarray) -> SparseVector:
        acc = self.residual
        if self.enabled:
            acc += gradient
        else:
            acc[:] = gradient
        sent = SparseVector.top_k(acc, self.k)  # its values are a copy, so clearing acc keeps them
        acc[sent.idx] = 0  # what was sent leaves the residual; the rest waits for the next step
        return sent
