"""Machine-readable exports: JSON (runs → provenance + points), CSV (one row per point) and
OMB-style text (the numbers OMB would print, computed from the raw samples)."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from fabricprobe.mpienv.datatypes import numpy_dtype
from fabricprobe.report.bound import bound_of, fabric_of, withheld
from fabricprobe.report.groups import group_series
from fabricprobe.report.labels import OUTLIER_RATIO, run_window, title
from fabricprobe.report.launches import group_json, groups
from fabricprobe.sizes import format_size
from fabricprobe.specs import SPECS
from fabricprobe.store import Run
from fabricprobe.store.schema import EMPTY, FORMAT, POINT_DTYPE, SCHEMA_VERSION
from fabricprobe.version import __version__

_CONFIG_KEY = "config"


def json_safe(value: Any) -> Any:
    """JSON has no NaN or infinity: they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def filtered(run: Run, collectives: list[str] | None) -> list[dict[str, Any]]:
    """The run's points of these collectives (all for None): what every export writes."""
    return [p for p in run.points if collectives is None or p["collective"] in collectives]


BOUND_FIELDS = ("bound_s", "percent_of_bound", "bound_withheld")


def with_bounds(run: Run, points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The points with the lower bound of each collective row and its % (report/bound.py; NaN where
    the row has none): computed from the run's own measures, not stored. A row faster than its bound
    gets neither, and says why in `bound_withheld` (a % above 100 is no efficiency)."""
    fabric = fabric_of(run)
    out = []
    for p in points:
        found = bound_of(p, fabric) if p["status"] == "ok" else None
        percent = found.percent_of(p["median_s"]) if found else math.nan
        why = withheld(percent)
        out.append(
            {
                **p,
                "bound_s": found.seconds if found and not why else math.nan,
                "percent_of_bound": math.nan if why else percent,
                "bound_withheld": why,
            }
        )
    return out


def to_json(runs: list[Run], collectives: list[str] | None = None) -> str:
    doc = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "exported_by": f"fabricprobe {__version__}",
        "runs": [
            {
                "id": run.id,
                "file": run.path,
                "status": run.status,
                "config": run.config,
                "provenance": {k: v for k, v in run.attrs.items() if k != _CONFIG_KEY},
                "points": with_bounds(run, filtered(run, collectives)),
            }
            for run in runs
        ],
    }
    found = groups(runs)
    if found:
        doc["launch_groups"] = [group_json(g, collectives) for g in found]
    lost = sorted({loss for run in runs for loss in run.damage})
    if lost:  # what the file lost (store.damage), also said on stderr
        doc["damage"] = lost
    return json.dumps(json_safe(doc), indent=1, sort_keys=False) + "\n"


def to_csv(runs: list[Run], collectives: list[str] | None = None) -> str:
    out = io.StringIO()
    fields = ["run"] + list(POINT_DTYPE.names) + list(BOUND_FIELDS)
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for run in runs:
        for point in with_bounds(run, filtered(run, collectives)):
            writer.writerow({"run": run.id, **point})
    return out.getvalue()


_OSU_TYPES = {
    "float32": "MPI_FLOAT",
    "float64": "MPI_DOUBLE",
    "int32": "MPI_INT32_T",
    "int64": "MPI_INT64_T",
    "byte": "MPI_BYTE",
}

# OMB's words for the one-sided synchronizations (osu_util_mpi.c's sync_info)
_RMA_SYNC_NAMES = {
    "flush": "MPI_Win_flush",
    "flush_local": "MPI_Win_flush_local",
    "lock": "MPI_Win_lock/unlock",
    "lock_all": "MPI_Win_lock_all/unlock_all",
    "fence": "MPI_Win_fence",
    "pscw": "MPI_Win_post/start/complete/wait",
}

# OMB 7.4's columns, from its printf formats (c/util/osu_util.c, osu_latency.c, osu_bw.c; the MPI
# build's FIELD_WIDTH is 18): checked line by line against real OMB output in tests/fixtures/omb.
OSU_LAYOUT = "7.4"
_SIZE_W, _FIELD_W, _ITER_W = 10, 18, 12


def osu_header(collective: str) -> str:
    """The column header line OMB prints for this test (-f full form for blocking collectives; the
    short form of its non-blocking tests: Overall, Compute, Pure Comm., Overlap)."""
    spec = SPECS.get(collective)
    if spec is not None and spec.nonblocking:
        head = f"{'# Size':<{_SIZE_W}}{'Overall(us)':>{_FIELD_W}}" if spec.sized else "# Overall(us)"
        return head + "".join(f"{c:>{_FIELD_W}}" for c in ("Compute(us)", "Pure Comm.(us)", "Overlap(%)"))
    if spec is not None and spec.rma and not _bandwidth_test(spec):
        return f"{'# Size':<{_SIZE_W}}{'Latency (us)':>{_FIELD_W}}"
    if spec is not None and spec.pt2pt:
        if spec.pingpong:
            return f"{'# Size':<{_SIZE_W}}{'Avg Latency(us)':>{_FIELD_W}}"
        if getattr(spec, "osu_rate", False):
            return f"{'# Size':<{_SIZE_W}}{'MB/s':>{_FIELD_W}}{'Messages/s':>{_FIELD_W}}"
        return f"{'# Size':<{_SIZE_W}}{'Bandwidth (MB/s)':>{_FIELD_W}}"
    sized = spec is None or spec.sized
    head = f"{'# Size':<{_SIZE_W}}{'Avg Latency(us)':>{_FIELD_W}}" if sized else "# Avg Latency(us)"
    return head + f"{'Min Latency(us)':>{_FIELD_W}}{'Max Latency(us)':>{_FIELD_W}}{'Iterations':>{_ITER_W}}"


def osu_row(collective: str, size: int, avg_us: float, min_us: float = 0.0, max_us: float = 0.0, iters: int = 0) -> str:
    """One data line as OMB prints it (bandwidths in MB/s go in avg_us's place; mbw_mr adds its message
    rate, MB/s · 1e6 / size)."""
    spec = SPECS.get(collective)
    if spec is not None and spec.pt2pt:
        line = f"{size:<{_SIZE_W}d}{avg_us:>{_FIELD_W}.2f}"
        if getattr(spec, "osu_rate", False):
            line += f"{(avg_us * 1e6 / size if size else 0.0):>{_FIELD_W}.2f}"
        return line
    sized = spec is None or spec.sized
    head = f"{size:<{_SIZE_W}d}{avg_us:>{_FIELD_W}.2f}" if sized else f"{avg_us:>17.2f}"
    return head + f"{min_us:>{_FIELD_W}.2f}{max_us:>{_FIELD_W}.2f}{iters:>{_ITER_W}d}"


def _bandwidth_test(spec: Any) -> bool:
    """Whether OMB reports this test in MB/s: bw, bibw, mbw_mr, put_bw, get_bw."""
    return spec.pt2pt and not spec.pingpong and (not spec.rma or spec.windowed)


def osu_nbc_row(sized: bool, size: int, overall_us: float, compute_us: float, pure_us: float) -> str:
    """One data line of OMB's non-blocking tests; the overlap from the three times, as OMB computes it."""
    head = f"{size:<{_SIZE_W}d}{overall_us:>{_FIELD_W}.2f}" if sized else f"{overall_us:>13.2f}"
    overlap = max(0.0, 100.0 - (overall_us - compute_us) / pure_us * 100.0) if pure_us > 0 else 0.0
    return head + "".join(f"{v:>{_FIELD_W}.2f}" for v in (compute_us, pure_us, overlap))


def _osu_size(point: dict[str, Any], itemsize: int) -> int:
    """OMB's "Size" column: per-rank send bytes for allgather, per-peer bytes for alltoall."""
    if SPECS[point["collective"]].osu_size_is_block:
        return point["count"] * itemsize
    return point["bytes"]


def _osu_value(point: dict[str, Any]) -> float:
    """OMB's number: MB/s (1e6 bytes) from the mean time per message for the bandwidth tests (both
    directions for bibw, every pair for mbw_mr: the spec's busbw factor), else the mean in µs."""
    spec = SPECS[point["collective"]]
    if _bandwidth_test(spec):
        mult = spec.busbw_factor(point["nranks"])
        return mult * point["bytes"] / point["osu_avg_s"] / 1e6 if point["osu_avg_s"] > 0 else 0.0
    return point["osu_avg_s"] * 1e6


def osu_init_block(init_ms: list[float]) -> str:
    """osu_init's two lines from every rank's MPI_Init time (OMB prints whole milliseconds, %ld)."""
    low, high, mean = int(min(init_ms)), int(max(init_ms)), int(sum(int(x) for x in init_ms) / len(init_ms))
    return (
        f"\n# OSU MPI Init Test v{OSU_LAYOUT} (fabricprobe {__version__} export, OMB's layout)\n"
        f"nprocs: {len(init_ms)}, min: {low} ms, max: {high} ms, avg: {mean} ms\n"
    )


def to_osu(runs: list[Run], collectives: list[str] | None = None) -> str:
    """OMB's text, line for line (OSU_LAYOUT; `-f` full form for collectives): its title, datatype,
    column header and data lines, with OMB's statistics (Avg: mean over ranks of per-rank means;
    Min/Max over ranks; bandwidths in MB/s from the mean time per message). A parser of OMB output
    reads it unchanged. fabricprobe adds only '#' lines: what was measured (algorithm, ranks, timed
    region, timer, buffers), and where Avg, a mean, is dominated by outliers (the mean iteration time
    above 1.25 × the median). Tests without an OMB counterpart are listed in one '#' line and left out."""
    blocks: list[str] = []
    for run in runs:
        startup = run.attrs.get("startup") or {}
        if startup and collectives is None:
            blocks.append(osu_init_block(startup["init_ms"]))
        points = [p for p in filtered(run, collectives) if p["collective"] != EMPTY and p["status"] == "ok"]
        left_out = sorted({p["collective"] for p in points if not getattr(SPECS.get(p["collective"]), "osu_title", "")})
        if left_out:
            blocks.append(f"# fabricprobe run {run.id}: no OMB counterpart, not exported: {', '.join(left_out)}\n")
        window = run_window(run.config)
        for key, rows in group_series([p for p in points if p["collective"] not in left_out]).items():
            spec = SPECS[key.collective]
            name = f"MPI_{spec.osu_title}" if spec.rma else f"MPI {spec.osu_title}"  # OMB: "OSU MPI_Put Latency Test"
            lines = ["", f"# OSU {name} v{OSU_LAYOUT} (fabricprobe {__version__} export, OMB's layout)"]
            what = title("# fabricprobe: run " + run.id, key._asdict(), (p["timer"] for p in rows), window)
            lines.append(what)
            if spec.nonblocking:
                lines.append("# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait")
                lines.append(
                    "# fabricprobe: Overall and Compute are medians of the slowest rank, Pure Comm. OMB's mean "
                    "over ranks; the overlap is computed from these three as OMB computes it"
                )
            if getattr(spec, "blocks_note", ""):
                lines.append(f"# fabricprobe: {spec.blocks_note}")
            if spec.rma:
                lines.append("# Window creation: MPI_Win_allocate")
                lines.append(f"# Synchronization: {_RMA_SYNC_NAMES.get(key.mode, key.mode)}")
            if spec.sized:
                dtype = _OSU_TYPES.get(key.dtype, key.dtype)
                lines.append(f"# Datatype: {dtype}.")
            lines.append(osu_header(key.collective))
            itemsize = numpy_dtype(key.dtype).itemsize
            skewed = []
            for p in rows:
                if spec.nonblocking:
                    if p["overall_s"] > 0:
                        us = (p["overall_s"] * 1e6, p["compute_s"] * 1e6, p["osu_avg_s"] * 1e6)
                        lines.append(osu_nbc_row(spec.sized, _osu_size(p, itemsize), *us))
                    continue
                lines.append(
                    osu_row(
                        key.collective,
                        _osu_size(p, itemsize),
                        _osu_value(p),
                        p["osu_min_s"] * 1e6,
                        p["osu_max_s"] * 1e6,
                        p["iterations"],
                    )
                )
                if p["median_s"] > 0 and p["mean_s"] > OUTLIER_RATIO * p["median_s"]:
                    skewed.append(f"{format_size(p['bytes'])} {p['mean_s'] / p['median_s']:.2f}×")
            if skewed:
                lines.append(
                    "# fabricprobe: Avg is a mean and outliers dominate it (mean / median of the iteration "
                    f"times): {', '.join(skewed)}; the report's median is the robust figure"
                )
            blocks.append("\n".join(lines) + "\n")
    return "".join(blocks)
