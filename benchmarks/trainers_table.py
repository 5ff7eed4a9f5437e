"""The table of docs/trainers.md from a trainers study's results file, one row per training run:

    python benchmarks/trainers_table.py /tmp/trstudy/trainers.h5

The options column names the gradient collective as the record does: the algorithm that ran per
bucket size (algorithms_used), so a run asked for "tuned" shows what the selection chose, and one
without a selection file shows the library."""

from __future__ import annotations

import sys

from fabricprobe.sizes import format_size
from trainers import record

HEAD = (
    "| run | trainer | data | options | n | test acc | wall s | compute s | comm s | wait s | comm+wait % "
    "| KiB sent / rank·step |"
)


def ran(run: dict) -> str:
    used = run.get("algorithms_used") or {}
    if not used:
        return ""
    return "allreduce " + ", ".join(
        f"{alg}" + (f" at {'/'.join(format_size(b) for b in sizes)}" if len(used) > 1 else "")
        for alg, sizes in used.items()
    )


def options(run: dict) -> str:
    t = run["trainer"]
    parts = []
    if t == "dp_sgd":
        parts.append(ran(run) or "one rank: no allreduce")
        if run["opt_allreduce"] == "tuned":
            parts.append("asked: tuned")
        if run.get("opt_bucket_bytes"):
            parts.append(f"buckets {format_size(int(run['opt_bucket_bytes']))}")
    elif t == "sparse_dp":
        parts.append(f"{ran(run).replace('allreduce ', '')}, density {run['opt_density']:g}")
        if not run["opt_error_feedback"]:
            parts.append("no error feedback")
    elif t == "easgd":
        parts.append(f"{run['opt_mode']}, τ={run['opt_tau']}")
    elif t == "hybrid":
        parts.append(ran(run) or "one replica: no gradient allreduce")
        parts.append(f"{run['stages']} stages × {run['replicas']} replicas")
    parts.append(f"hidden {run['opt_hidden']}, batch {run['opt_batch']}, {run['opt_epochs']} epochs")
    return "; ".join(p for p in parts if p)


def main(path: str) -> None:
    print(HEAD)
    print("|" + "---|" * 12)
    for run in record.read(path):
        steps = run["steps"]
        kib = steps["bytes_sent"].mean() / 1024 if steps.size else 0.0
        print(
            f"| {run['id']} | {run['trainer']} | {run['opt_dataset']} | {options(run)} | {run['nranks']} "
            f"| {run['final_test_accuracy']:.4f} | {run['wall_s']:.1f} | {run['compute_s']:.2f} | {run['comm_s']:.2f} "
            f"| {run['wait_s']:.2f} | {100 * run['comm_fraction']:.0f} | {kib:.1f} |"
        )


if __name__ == "__main__":
    main(sys.argv[1])
