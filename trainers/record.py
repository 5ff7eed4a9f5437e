"""Training runs in the results file: /training/NNNN beside the sweeps' /runs, written by rank 0
once the ranks' logs are gathered (a run is one group, added to a copy of the file that replaces it
whole, so a file never holds half a training run). See docs/trainers.md for the layout."""

from __future__ import annotations

import json
from typing import Any

import h5py
import numpy as np

from fabricprobe.store.attrs import write_attrs
from fabricprobe.store.fold import update
from trainers.core import Log

STEP_DTYPE = np.dtype(
    [
        ("step", "i8"),
        ("epoch", "i4"),
        ("loss", "f8"),
        ("t_compute", "f8"),
        ("t_comm", "f8"),
        ("t_wait", "f8"),
        ("bytes_sent", "i8"),
    ]
)
EVAL_DTYPE = np.dtype([("step", "i8"), ("test_accuracy", "f8")])
BUCKET_DTYPE = np.dtype([("step", "i8"), ("bucket", "i4"), ("bytes", "i8"), ("algorithm", "S48"), ("seconds", "f8")])


def bucket_table(logs: list[Log]) -> np.ndarray:
    """Every gradient collective call of the run: (step, bucket, bytes, algorithm, seconds), the
    seconds the mean over the ranks that called it, the algorithm as the first of them names it (a
    collective runs one algorithm on every rank, or it would not have completed)."""
    calls = [log.buckets for log in logs if log.buckets]
    if not calls:
        return np.zeros(0, BUCKET_DTYPE)
    n = min(len(c) for c in calls)
    out = np.zeros(n, BUCKET_DTYPE)
    first = calls[0][:n]
    out["step"] = [b[0] for b in first]
    out["bucket"] = [b[1] for b in first]
    out["bytes"] = [b[2] for b in first]
    out["algorithm"] = [b[3].encode() for b in first]
    out["seconds"] = np.mean([[b[4] for b in c[:n]] for c in calls], axis=0)
    return out


def algorithms_used(buckets: np.ndarray) -> dict[str, list[int]]:
    """algorithm -> the bucket sizes (bytes) it ran at: the record's one-line answer to "what ran"."""
    out: dict[str, set[int]] = {}
    for row in buckets:
        out.setdefault(row["algorithm"].decode(), set()).add(int(row["bytes"]))
    return {k: sorted(v) for k, v in sorted(out.items())}


def combine(logs: list[Log], batch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """(per-step table over the working ranks, evals, per-rank times [rank, step, compute/comm/wait],
    working ranks). Step loss is the global batch's mean (ranks hold sums of their shards); times
    are the mean over working ranks; bytes the mean a rank sent."""
    working = [r for r, log in enumerate(logs) if log.steps]
    arrays = [logs[r].step_array() for r in working]
    n = min(a.size for a in arrays) if arrays else 0
    steps = np.zeros(n, STEP_DTYPE)
    per_rank = np.zeros((len(working), n, 3), np.float64)
    if n:
        steps["step"], steps["epoch"] = arrays[0]["step"][:n], arrays[0]["epoch"][:n]
        steps["loss"] = sum(a["loss"][:n] for a in arrays) / batch
        for i, a in enumerate(arrays):
            per_rank[i] = np.stack([a["t_compute"][:n], a["t_comm"][:n], a["t_wait"][:n]], axis=1)
        steps["t_compute"], steps["t_comm"], steps["t_wait"] = per_rank.mean(axis=0).T
        steps["bytes_sent"] = np.mean([a["bytes_sent"][:n] for a in arrays], axis=0).astype(np.int64)
    reporter = next((log.evals for log in logs if any(np.isfinite(a) for _, a in log.evals)), [])
    evals = np.array(reporter, dtype=EVAL_DTYPE) if reporter else np.zeros(0, EVAL_DTYPE)
    return steps, evals, per_rank, working


def summary(steps: np.ndarray) -> dict[str, float]:
    total = float(steps["t_compute"].sum() + steps["t_comm"].sum() + steps["t_wait"].sum())
    return {
        "compute_s": float(steps["t_compute"].sum()),
        "comm_s": float(steps["t_comm"].sum()),
        "wait_s": float(steps["t_wait"].sum()),
        "comm_fraction": float((steps["t_comm"].sum() + steps["t_wait"].sum()) / total) if total else 0.0,
        "bytes_sent_per_step": float(steps["bytes_sent"].mean()) if steps.size else 0.0,
    }


def write(
    path: str,
    attrs: dict[str, Any],
    steps: np.ndarray,
    evals: np.ndarray,
    per_rank: np.ndarray,
    buckets: np.ndarray | None = None,
    say=None,
) -> tuple[str, str]:
    """Add one training run to path (a copy written and renamed over it: never damaged, as for sweeps),
    waiting for a sweep that writes it (store.fold.update: said through say; written beside it if the
    sweep keeps it); returns (the file written, the run's id)."""
    buckets = np.zeros(0, BUCKET_DTYPE) if buckets is None else buckets
    return update(path, lambda f: _add(f, attrs, steps, evals, per_rank, buckets), say=say)


def _add(
    f: h5py.File, attrs: dict[str, Any], steps: np.ndarray, evals: np.ndarray, per_rank: np.ndarray, buckets: np.ndarray
) -> str:
    root = f.require_group("training")
    number = max((int(k) for k in root.keys() if k.isdigit()), default=0) + 1
    run_id = f"{number:04d}"
    group = root.create_group(run_id)
    group.create_dataset("steps", data=steps, compression="gzip")
    group.create_dataset("evals", data=evals)
    group.create_dataset("rank_times", data=per_rank.astype(np.float32), compression="gzip")
    group.create_dataset("buckets", data=buckets, compression="gzip")
    write_attrs(group, attrs)
    return run_id


def _decoded(value: Any) -> Any:
    """Lists and dicts were stored as JSON text (write_attrs); give them back as such."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def read(path: str) -> list[dict[str, Any]]:
    """Every training run in a file: attrs plus the steps and evals tables."""
    from fabricprobe.errors import DamagedError
    from fabricprobe.store.attrs import AttrsDamaged, read_attrs

    out = []
    with h5py.File(path, "r") as f:
        for run_id, group in sorted(f.get("training", {}).items()):
            try:
                attrs = {k: _decoded(v) for k, v in read_attrs(group).items()}
            except AttrsDamaged as exc:
                raise DamagedError(f"{path} is damaged (training {exc}); its records cannot be trusted") from None
            buckets = group["buckets"][()] if "buckets" in group else np.zeros(0, BUCKET_DTYPE)
            out.append(
                {"id": run_id, **attrs, "steps": group["steps"][()], "evals": group["evals"][()], "buckets": buckets}
            )
    return out
