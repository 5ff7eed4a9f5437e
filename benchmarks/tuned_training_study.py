"""Does the tuned collective pay in training? In the fabric lab (root; Open MPI environment), per link
rate: 2 emulated hosts × 2 ranks, `tune-sweep` (the library's algorithms forced one at a time and
fabricprobe's own beside its default, the sparse family at the trainer's density) and `tune`; then
dp_sgd with `--allreduce library` against `--allreduce tuned`, and sparse_dp with TopkA against
`--sparse-algorithm tuned`, same seed, the two arms alternating (which runs first alternates too).

    python benchmarks/tuned_training_study.py --rates 1gbit,unlimited --reps 3 --out tuned-study

dp_sgd runs with --bucket buckets and, where the tune named a hand-written allreduce on 4 ranks, again
with buckets of the largest size it won at. Per arm and repetition: the mean communication time per
step (t_comm, the gradient collective only; waiting at the barrier before it is not counted), the
final test accuracy, and the algorithm that ran per bucket size (from the training record). Per
rate: each repetition's ratio tuned / reference, their range, and the tune's own winners at the
bucket sizes. Everything goes to OUT/study.json."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from trainers import record

NAME = "fptt"
SUBNET = "10.217.0.0/24"
MODEL = ["--dataset", "mnist5k", "--hidden", "512,512", "--seed", "0", "--progress", "none"]


def fp(*args: str) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "fabricprobe", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"fabricprobe {' '.join(args)} failed: {(out.stderr + out.stdout).strip()[-600:]}")
    return out


def lab(*args: str) -> subprocess.CompletedProcess:
    return fp("lab", "run", "--name", NAME, "--", *args)


def train(path: Path, trainer: str, arm: list[str], epochs: int, bucket: int) -> dict:
    lab("train", trainer, *MODEL, "--epochs", str(epochs), "--bucket-bytes", str(bucket), "-o", str(path), *arm)
    run = record.read(str(path))[-1]
    steps = run["steps"]
    return {
        "run": run["id"],
        "comm_ms_per_step": float(steps["t_comm"].mean() * 1e3),
        "wait_ms_per_step": float(steps["t_wait"].mean() * 1e3),
        "compute_ms_per_step": float(steps["t_compute"].mean() * 1e3),
        "final_test_accuracy": float(run["final_test_accuracy"]),
        "algorithms_used": run["algorithms_used"],
        "loss_last": float(steps["loss"][-1]),
    }


def ratios(rows: list[dict], key: str = "comm_ms_per_step") -> dict:
    r = [t[key] / ref[key] for ref, t in rows]
    return {"each": [round(x, 3) for x in r], "min": round(min(r), 3), "max": round(max(r), 3)}


def own_winner_bucket(selection: dict, comm_size: int) -> int:
    """The largest measured size of an allreduce range on comm_size ranks where the tune named one of
    fabricprobe's algorithms (0: none): dp_sgd runs again with buckets of that size, so the tuned arm
    meets the hand-written winner whatever --bucket is."""
    sizes = [
        size
        for section in selection["sections"]
        if section["collective"] == "allreduce" and section["comm_size"] == comm_size
        for rule in section["rules"]
        if rule["algorithm"] != "library"
        for size in rule["measured_bytes"]
    ]
    return max(sizes, default=0)


def study_rate(args, rate: str, out: Path) -> dict:
    fp("lab", "up", "--name", NAME, "--subnet", SUBNET, "--hosts", "2", "--ranks-per-host", "2", "--rate", rate)
    tune_file, tuning = out / f"{rate}-tune.h5", out / f"{rate}-tuning"
    t0 = time.time()
    lab(
        "tune-sweep", "-n", "4", "--collectives", "allreduce,sparse_allreduce", "--sizes", args.sizes,
        "--density", str(args.density), "--iters", "30", "--max-time", "0.3", "-o", str(tune_file),
    )  # fmt: skip
    sweep_s = time.time() - t0
    told = lab("tune", str(tune_file), "-o", str(tuning))
    (out / f"{rate}-tune.txt").write_text(told.stdout)
    selection = tuning / "fabricprobe_selection.json"
    sel = json.loads(selection.read_text())
    results = out / f"{rate}-train.h5"
    own_bucket = own_winner_bucket(sel, 4)
    dense, dense_own, sparse = [], [], []
    for rep in range(args.reps):
        arms = [
            ("library", ["--allreduce", "library"]),
            ("tuned", ["--allreduce", "tuned", "--selection", str(selection)]),
        ]
        sparse_arms = [
            ("topk_allgather", ["--sparse-algorithm", "topk_allgather", "--density", str(args.density)]),
            ("tuned", ["--sparse-algorithm", "tuned", "--selection", str(selection), "--density", str(args.density)]),
        ]
        order = 1 if rep % 2 else -1
        got = {n: train(results, "dp_sgd", a, args.epochs, args.bucket) for n, a in arms[::order]}
        dense.append((got["library"], got["tuned"]))
        if own_bucket:
            got = {n: train(results, "dp_sgd", a, args.epochs, own_bucket) for n, a in arms[::order]}
            dense_own.append((got["library"], got["tuned"]))
        got = {n: train(results, "sparse_dp", a, args.epochs, args.bucket) for n, a in sparse_arms[::order]}
        sparse.append((got["topk_allgather"], got["tuned"]))
        d = dense[-1][1]["comm_ms_per_step"] / dense[-1][0]["comm_ms_per_step"]
        sp = sparse[-1][1]["comm_ms_per_step"] / sparse[-1][0]["comm_ms_per_step"]
        print(f"{rate} rep {rep + 1}: tuned / reference communication per step: dp_sgd {d:.2f}, sparse_dp {sp:.2f}")
    return {
        "rate": rate,
        "tune_sweep_s": round(sweep_s, 1),
        "selection": sel["sections"],
        "dp_sgd": {"bucket_bytes": args.bucket, "runs": dense, "tuned_over_library": ratios(dense)},
        "dp_sgd_own_bucket": None
        if not own_bucket
        else {"bucket_bytes": own_bucket, "runs": dense_own, "tuned_over_library": ratios(dense_own)},
        "sparse_dp": {"runs": sparse, "tuned_over_topk_allgather": ratios(sparse)},
        "accuracy_equal": {
            "dp_sgd": [a["final_test_accuracy"] == b["final_test_accuracy"] for a, b in dense],
            "sparse_dp": [a["final_test_accuracy"] == b["final_test_accuracy"] for a, b in sparse],
        },
    }


def summarize(paths: list[str]) -> None:
    """Per file, rate and arm: each repetition's ratio tuned / reference, the median and its
    distribution-free 95% interval (from 6 repetitions on; fewer: the range only) and the verdict;
    then, pooled over the files, how many dense repetitions where the tune had named a hand-written
    allreduce for the buckets used were at most 0.8× and how many slower than the library."""
    import numpy as np

    from fabricprobe.stats import median_ci_exact

    pooled = []
    for path in paths:
        for r in json.loads(Path(path).read_text())["rates"]:
            for arm in ("dp_sgd", "dp_sgd_own_bucket", "sparse_dp"):
                part = r.get(arm)
                if not part:
                    continue
                ratios = np.sort([t["comm_ms_per_step"] / ref["comm_ms_per_step"] for ref, t in part["runs"]])
                own = arm != "sparse_dp" and any(
                    alg != "library" for _, t in part["runs"] for alg in t["algorithms_used"]
                )
                if own:
                    pooled += list(ratios)
                ci = median_ci_exact(ratios)
                verdict = (
                    "range only (fewer than 6 repetitions)"
                    if ci is None
                    else "faster"
                    if ci[1] < 1
                    else "slower"
                    if ci[0] > 1
                    else "no difference shown"
                )
                interval = "" if ci is None else f", 95% interval [{ci[0]:.2f}, {ci[1]:.2f}]"
                print(
                    f"{path} {r['rate']} {arm}: {', '.join(f'{x:.2f}' for x in ratios)}; "
                    f"median {np.median(ratios):.2f}{interval}: {verdict}"
                )
    if pooled:
        print(
            f"pooled, dense with a hand-written winner for the buckets used: {len(pooled)} repetitions, "
            f"{sum(x <= 0.8 for x in pooled)} at <= 0.8x, {sum(x > 1 for x in pooled)} slower"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="1gbit,unlimited")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--bucket", type=int, default=1 << 20, help="dp_sgd fusion bucket bytes")
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--sizes", default="64K,256K,512K,1M,4M", help="tune-sweep message sizes")
    ap.add_argument("--out", default="tuned-study")
    ap.add_argument("--summarize", nargs="+", metavar="STUDY_JSON", help="only summarize these study.json files")
    args = ap.parse_args()
    if args.summarize:
        summarize(args.summarize)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for rate in args.rates.split(","):
            rows.append(study_rate(args, rate, out))
            (out / "study.json").write_text(json.dumps({"args": vars(args), "rates": rows}, indent=1) + "\n")
    finally:
        subprocess.run([sys.executable, "-m", "fabricprobe", "lab", "down", "--name", NAME], capture_output=True)
    print(
        json.dumps(
            {r["rate"]: [r["dp_sgd"]["tuned_over_library"], r["sparse_dp"]["tuned_over_topk_allgather"]] for r in rows},
            indent=1,
        )
    )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
