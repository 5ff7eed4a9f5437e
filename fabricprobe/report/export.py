"""Machine-readable exports: JSON (runs → provenance + points), CSV (one row per point) and
OMB-style text (the numbers OMB would print, computed from the raw samples)."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from fabricprobe.mpienv.datatypes import numpy_dtype
from fabricprobe.report.groups import group_series
from fabricprobe.report.labels import buffer_label
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


def _filtered(run: Run, collectives: list[str] | None) -> list[dict[str, Any]]:
    return [p for p in run.points if collectives is None or p["collective"] in collectives]


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
                "points": _filtered(run, collectives),
            }
            for run in runs
        ],
    }
    return json.dumps(json_safe(doc), indent=1, sort_keys=False) + "\n"


def to_csv(runs: list[Run], collectives: list[str] | None = None) -> str:
    out = io.StringIO()
    fields = ["run"] + list(POINT_DTYPE.names)
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for run in runs:
        for point in _filtered(run, collectives):
            writer.writerow({"run": run.id, **point})
    return out.getvalue()


_OSU_TYPES = {
    "float32": "MPI_FLOAT",
    "float64": "MPI_DOUBLE",
    "int32": "MPI_INT32_T",
    "int64": "MPI_INT64_T",
    "byte": "MPI_BYTE",
}


def _osu_size(point: dict[str, Any], itemsize: int) -> int:
    """OMB's "Size" column: per-rank send bytes for allgather, per-peer bytes for alltoall."""
    if SPECS[point["collective"]].osu_size_is_block:
        return point["count"] * itemsize
    return point["bytes"]


def to_osu(runs: list[Run], collectives: list[str] | None = None) -> str:
    """Text in OMB's layout. Latencies are OMB's statistics (per-rank means; avg/min/max over
    ranks); bandwidths are MB/s (1e6 bytes) from the mean time per message, as OMB computes them."""
    lines: list[str] = []
    for run in runs:
        points = [p for p in _filtered(run, collectives) if p["collective"] != EMPTY and p["status"] != "error"]
        for key, rows in group_series(points).items():
            coll, alg, dtype, op, in_place, mode, pair, density, buffer, transfer, nranks = key
            title = SPECS[coll].osu_title if coll in SPECS else coll
            extras = "".join(
                f", {x}"
                for x in (
                    "in-place" if in_place else "",
                    f"{pair} pair" if pair else "",
                    buffer_label(buffer, transfer),
                )
                if x
            )
            lines.append(
                f"# OSU MPI {title} (fabricprobe {__version__} export, run {run.id}, "
                f"algorithm {alg}, {nranks} ranks, {mode} mode{extras})"
            )
            lines.append(f"# Datatype: {_OSU_TYPES.get(dtype, dtype)}." + (f" Op: {op}." if op != "none" else ""))
            itemsize = numpy_dtype(dtype).itemsize
            if coll in ("bw", "bibw"):
                lines.append(f"# {'Size':<10}{'Bandwidth (MB/s)':>20}")
                mult = 2 if coll == "bibw" else 1
                for p in rows:
                    mbs = mult * p["bytes"] / p["osu_avg_s"] / 1e6 if p["osu_avg_s"] > 0 else 0.0
                    lines.append(f"{p['bytes']:<12}{mbs:>20.2f}")
            elif coll == "latency":
                lines.append(f"# {'Size':<10}{'Latency (us)':>20}")
                for p in rows:
                    lines.append(f"{p['bytes']:<12}{p['osu_avg_s'] * 1e6:>20.2f}")
            else:
                head = "" if coll == "barrier" else f"{'Size':<10}"
                lines.append(
                    f"# {head}{'Avg Latency(us)':>18}{'Min Latency(us)':>18}{'Max Latency(us)':>18}{'Iterations':>12}"
                )
                for p in rows:
                    size = "" if coll == "barrier" else f"{_osu_size(p, itemsize):<12}"
                    lines.append(
                        f"{size}{p['osu_avg_s'] * 1e6:>18.2f}{p['osu_min_s'] * 1e6:>18.2f}"
                        f"{p['osu_max_s'] * 1e6:>18.2f}{p['iterations']:>12}"
                    )
            lines.append("")
    return "\n".join(lines) + ("\n" if lines else "")
