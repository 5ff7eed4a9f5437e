"""An MLP whose parameters live in one flat buffer (so a gradient allreduce is one call, or a few
fusion buckets), with forward and backward written once against the array module (numpy, or CuPy
on a GPU: trainers.device). Layers can be run in slices, which is how the hybrid trainer splits the
model into pipeline stages. Initialisation draws from numpy's generator whatever the module, so a
model starts from the same parameters on host and device."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainers.arrays import module_of


@dataclass
class Layer:
    w: np.ndarray  # (fan_in, fan_out) view into the flat buffer
    b: np.ndarray
    gw: np.ndarray  # gradient views into the flat gradient buffer
    gb: np.ndarray


class MLP:
    def __init__(self, sizes: list[int], seed: int = 0, dtype: np.dtype = np.float32, xp=np) -> None:
        self.sizes = list(sizes)
        self.dtype = np.dtype(dtype)
        self.xp = xp
        shapes = [(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
        self.offsets = []  # (start, stop) of each layer's parameters in the flat buffer
        total = 0
        for a, b in shapes:
            self.offsets.append((total, total + a * b + b))
            total += a * b + b
        self.params = xp.zeros(total, self.dtype)
        self.grads = xp.zeros(total, self.dtype)
        self.layers = []
        for (a, b), (start, _) in zip(shapes, self.offsets):
            w = self.params[start : start + a * b].reshape(a, b)
            gw = self.grads[start : start + a * b].reshape(a, b)
            self.layers.append(
                Layer(
                    w, self.params[start + a * b : start + a * b + b], gw, self.grads[start + a * b : start + a * b + b]
                )
            )
        rng = np.random.default_rng(seed)
        for layer, (a, _) in zip(self.layers, shapes):
            layer.w[:] = xp.asarray(rng.normal(0, np.sqrt(2.0 / a), layer.w.shape))  # He init for ReLU

    @property
    def nlayers(self) -> int:
        return len(self.layers)

    def forward(self, x: np.ndarray, lo: int = 0, hi: int | None = None) -> tuple[np.ndarray, list]:
        """Layers lo..hi-1 on x: (output, cache for backward). ReLU after every layer but the last."""
        hi = self.nlayers if hi is None else hi
        cache = []
        for i in range(lo, hi):
            layer = self.layers[i]
            z = x @ layer.w + layer.b
            cache.append((x, z))
            x = self.xp.maximum(z, 0) if i < self.nlayers - 1 else z
        return x, cache

    def backward(self, grad_out: np.ndarray, cache: list, lo: int = 0, accumulate: bool = False) -> np.ndarray:
        """Gradients of layers lo.. into self.grads (added when accumulate); returns d loss / d input."""
        g = grad_out
        for j in reversed(range(len(cache))):
            i = lo + j
            x, z = cache[j]
            if i < self.nlayers - 1:
                g = g * (z > 0)
            layer = self.layers[i]
            if accumulate:
                layer.gw += x.T @ g
                layer.gb += g.sum(axis=0)
            else:
                layer.gw[:] = x.T @ g
                layer.gb[:] = g.sum(axis=0)
            g = g @ layer.w.T
        return g

    def param_slice(self, lo: int, hi: int) -> slice:
        """The flat-buffer range holding layers lo..hi-1."""
        return slice(self.offsets[lo][0], self.offsets[hi - 1][1])


def softmax_xent_grad(logits: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
    """(sum of the cross-entropy losses, d sum / d logits): sums, so shards add up to the global batch."""
    xp = module_of(logits)
    z = logits - logits.max(axis=1, keepdims=True)
    e = xp.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    rows = xp.arange(labels.size)
    loss = float(-xp.log(p[rows, labels] + 1e-12).sum())
    p[rows, labels] -= 1
    return loss, p


def gradient_sum(model: MLP, x: np.ndarray, y: np.ndarray) -> float:
    """Fill model.grads with the gradient of the summed loss over (x, y); return the summed loss."""
    if x.shape[0] == 0:
        model.grads[:] = 0
        return 0.0
    logits, cache = model.forward(x)
    loss, g = softmax_xent_grad(logits, y)
    model.backward(g.astype(model.dtype), cache)
    return loss


def accuracy(model: MLP, x: np.ndarray, y: np.ndarray) -> float:
    logits, _ = model.forward(x)
    return float((logits.argmax(axis=1) == y).mean())
