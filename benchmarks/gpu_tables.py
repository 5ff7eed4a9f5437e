"""The tables of docs/gpu.md ("Measured on a lent H100"), read from the study files in docs/data/gpu/
(benchmarks/gpu_study.sh wrote them on the device machine; docs/gpu.md gives each command).

    python benchmarks/gpu_tables.py            # every table, markdown, to docs/data/gpu/tables.md's content

Medians in µs; `nr` = not runnable. The kernel table gives both bandwidths as the memory moves the bytes
(reduction 3 × S, device copy 2 × S: specs/local.py) and the reduction's bandwidth as a share of the copy's.
"""

from __future__ import annotations

from pathlib import Path

from fabricprobe.sizes import format_size
from fabricprobe.store import load_runs

DATA = Path(__file__).resolve().parents[1] / "docs" / "data" / "gpu"


def _cell(p) -> str:
    return f"{p['median_s'] * 1e6:.1f}" if p["status"] == "ok" else "nr"


def medians(path: Path, title: str, keep=lambda p: True) -> list[str]:
    """One markdown table per run: a row per (collective, algorithm, transfer), a column per size."""
    out = []
    for run in load_runs(str(path)):
        pts = [p for p in run.points if p["collective"] != "empty" and keep(p)]
        if not pts:
            continue
        sizes = sorted({p["bytes"] for p in pts})
        rows: dict[tuple, dict[int, str]] = {}
        for p in pts:
            rows.setdefault((p["collective"], p["algorithm"], p["transfer"] or p["buffer"]), {})[p["bytes"]] = _cell(p)
        out += [f"{title}, run {run.id}: n = {pts[0]['nranks']}", ""]
        out += ["| collective / algorithm / transfer | " + " | ".join(format_size(s) for s in sizes) + " |"]
        out += ["|---" * (len(sizes) + 1) + "|"]
        for key in sorted(rows):
            if all(v == "nr" for v in rows[key].values()):
                continue  # every size not runnable: said once in the text, not as a row of nr
            out.append(f"| {' / '.join(key)} | " + " | ".join(rows[key].get(s, "–") for s in sizes) + " |")
        out.append("")
    return out


def kernels(path: Path) -> list[str]:
    out = []
    for run in load_runs(str(path)):
        ok = [p for p in run.points if p["status"] == "ok"]
        red = {p["bytes"]: p for p in ok if p["collective"] == "reduce_local"}
        cop = {p["bytes"]: p for p in ok if p["collective"] == "copy_local"}
        if not red:
            continue
        buffer = next(iter(red.values()))["buffer"]
        out += [f"{buffer} buffers (run {run.id})", ""]
        out += ["| size | reduction µs | copy µs | reduction GB/s (3 × S) | copy GB/s (2 × S) | reduction / copy |"]
        out += ["|---|---|---|---|---|---|"]
        for size in sorted(set(red) & set(cop)):
            r, c = red[size], cop[size]
            out.append(
                f"| {format_size(size)} | {r['median_s'] * 1e6:.1f} | {c['median_s'] * 1e6:.1f} | "
                f"{r['busbw_gbps']:.0f} | {c['busbw_gbps']:.0f} | {100 * r['busbw_gbps'] / c['busbw_gbps']:.0f}% |"
            )
        out.append("")
    return out


def main() -> None:
    lines = ["## Reduction kernel against the device-to-device copy (n = 1)", ""]
    lines += kernels(DATA / "h100_kernels.h5")
    lines += ["## Collectives on CuPy buffers, ranks time-slicing the one GPU (no MPS)", ""]
    lines += medians(DATA / "h100_study.h5", "no MPS", keep=lambda p: not p["collective"].endswith("_local"))
    lines += ["## The same under MPS", ""]
    lines += medians(DATA / "h100_mps.h5", "MPS")
    lines += ["## Sharing one GPU: host buffers, staged without MPS (twice), staged under MPS (twice)", ""]
    lines += medians(DATA / "h100_sharing.h5", "sharing")
    print("\n".join(lines).rstrip())


if __name__ == "__main__":
    main()
