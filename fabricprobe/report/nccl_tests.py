"""`report --format nccl-tests`: the JSON document nccl-tests' `-J FILE` writes (its JSON_FILE_VERSION 3,
src/util.cu), so dashboards built for nccl-tests read fabricprobe's runs.

One document per case that an nccl-tests program would measure in one run: a collective nccl-tests has
(all_reduce_perf, reduce_perf, broadcast_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf),
one algorithm, datatype, op, mode, buffers and rank count; its results list one row per size with the
out-of-place and in-place measurements side by side (null where one was not measured), as nccl-tests
prints them. The field names, nesting, types and units are nccl-tests': time in µs, bandwidths in GB/s
(10⁹), booleans written as the strings "true"/"false", `nwrong` as a number (null when not checked),
root as nccl-tests' six-wide string. The `time` is nccl-tests' statistic, the mean time per call
averaged over ranks (`osu_avg_s`: each rank's mean iteration time, averaged over ranks), not
fabricprobe's median of per-iteration maxima; nccl-tests times back-to-back calls, which is
fabricprobe's loop mode (barrier-mode cases say `"blocking_collectives": "true"`). fabricprobe adds one
key of its own, "fabricprobe", with what nccl-tests has no field for (library, algorithm, timer, mode,
run). The layout is checked against a document written by nccl-tests' own writer
(tests/fixtures/nccl-tests)."""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

from fabricprobe.mpienv.datatypes import NO_OP
from fabricprobe.report.export import filtered
from fabricprobe.report.labels import describe, run_window
from fabricprobe.specs import SPECS
from fabricprobe.store import Run
from fabricprobe.store.schema import identity
from fabricprobe.version import __version__

JSON_FILE_VERSION = 3
TYPE_NAMES = {"float32": "float", "float64": "double", "int32": "int32", "int64": "int64", "byte": "int8"}


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _time_string(iso: str | None) -> str:
    """nccl-tests' "%Y-%m-%d %H:%M:%S" (local time there; the run's recorded UTC time here)."""
    try:
        return _dt.datetime.fromisoformat(iso or "").strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return ""


def _step(sizes: list[int]) -> tuple[str, int]:
    """nccl-tests' step: a factor (-f) when the sizes are geometric, else bytes (-i)."""
    if len(sizes) > 1 and all(b % a == 0 for a, b in zip(sizes, sizes[1:])):
        factors = {b // a for a, b in zip(sizes, sizes[1:])}
        if len(factors) == 1:
            return "step_factor", factors.pop()
    steps = {b - a for a, b in zip(sizes, sizes[1:])}
    return ("step_bytes", steps.pop()) if len(steps) == 1 else ("step_factor", 1)


def _measurement(point: dict[str, Any] | None) -> dict[str, Any] | None:
    if point is None or point["status"] != "ok" or not point["osu_avg_s"] > 0:
        return None
    seconds = point["osu_avg_s"]
    alg_bw = point["bytes"] / 1e9 / seconds
    return {
        "time": seconds * 1e6,
        "alg_bw": alg_bw,
        "bus_bw": alg_bw * point["busbw_factor"],
        "nwrong": float(point["wrong"]) if point["wrong"] >= 0 else None,
    }


def _devices(run: Run) -> list[dict[str, Any]]:
    a = run.attrs
    hosts = list(a.get("hosts") or [])
    gpus = list(a.get("rank_gpus") or [])
    model = (a.get("gpu") or {}).get("gpu_model", "") if isinstance(a.get("gpu"), dict) else ""
    return [
        {
            "rank": r,
            "group": 0,
            "pid": 0,  # not recorded
            "hostname": host,
            "device": int(gpus[r]) if r < len(gpus) else -1,
            "device_hex": "",
            "device_info": model or a.get("cpu_model", ""),
        }
        for r, host in enumerate(hosts)
    ]


def _document(run: Run, case: dict[str, Any], rows: dict[int, dict[bool, dict]]) -> dict[str, Any]:
    config, attrs = run.config, run.attrs
    spec = SPECS[case["collective"]]
    sizes = sorted(rows)
    step_key, step = _step(sizes)
    root = int(config.get("root", 0)) if spec.rooted else -1
    results, bus, wrong = [], [], 0
    for size in sizes:
        by_place = rows[size]
        any_point = next(iter(by_place.values()))
        out_of_place, in_place = _measurement(by_place.get(False)), _measurement(by_place.get(True))
        for m in (out_of_place, in_place):
            if m is not None:
                bus.append(m["bus_bw"])
                wrong += int(m["nwrong"] or 0)
        results.append(
            {
                "size": any_point["bytes"],
                "count": any_point["count"],
                "type": TYPE_NAMES.get(case["dtype"], case["dtype"]),
                "redop": case["op"] if case["op"] != NO_OP else "none",
                "root": f"{root:6d}",
                "out_of_place": out_of_place,
                "in_place": in_place,
                "actual_iterations": max(p["iterations"] for p in by_place.values()),
                "experiment_name": "",
            }
        )
    errors = sorted({p["note"] for by in rows.values() for p in by.values() if p["status"] == "error"})
    device = case["buffer"] != "host"
    return {
        "version": JSON_FILE_VERSION,
        "start_time": _time_string(attrs.get("started")),
        "args": (attrs.get("command_line") or "fabricprobe sweep").split(),
        "env": [f"{k}={v}" for k, v in (attrs.get("environment") or {}).items()],
        "nccl_version": 0,  # no NCCL: the library's own collective (see "fabricprobe")
        "config": {
            "nthreads": 1,
            "ngpus": 1 if device else 0,
            "minimum_bytes": sizes[0],
            "maximum_bytes": sizes[-1],
            step_key: step,
            # fabricprobe's first batch (it measures on to its CI target; each row says how many ran)
            "warmup_iters": int(config.get("warmup_small", 0)),
            "iterations": int(config.get("iterations_small", 0)),
            "aggregated_iterations": 1,
            "validation": int(bool(config.get("validate", True))),
            "graph": 0,
            "blocking_collectives": _flag(case["mode"] == "barrier"),
            "per_iter_timing": "false",
            "per_iter_skip": 0,
            "parallel_init": "false",
            "devices": _devices(run),
        },
        "results": results,
        "out_of_bounds": {"count": wrong, "okay": _flag(wrong == 0)},
        "average_bus_bandwidth": {"bandwidth": sum(bus) / len(bus) if bus else 0.0, "okay": "unchecked"},
        "errors": errors or [""],  # nccl-tests writes NCCL's last error, "" when there was none
        "end_time": _time_string(attrs.get("ended")),
        "fabricprobe": {
            "exported_by": f"fabricprobe {__version__}",
            "program": spec.nccl_tests_binary,
            "run": run.id,
            "file": run.path,
            "mpi": f"{attrs.get('mpi_vendor', '')} {attrs.get('mpi_version', '')}".strip(),
            "measured": " · ".join([case["collective"], *describe(case, case["timers"], run_window(config))]),
            "time_statistic": "mean over ranks of each rank's mean iteration time (nccl-tests'); "
            "fabricprobe's median of per-iteration maxima is in its own exports",
        },
    }


def to_nccl_tests(runs: list[Run], collectives: list[str] | None = None) -> list[dict[str, Any]]:
    """One nccl-tests document per case (see the module's docstring); cases nccl-tests has no program for
    (barrier, point-to-point, local kernels, sparse) are left out."""
    docs = []
    for run in runs:
        points = [p for p in filtered(run, collectives) if getattr(SPECS.get(p["collective"]), "nccl_tests_binary", "")]
        cases: dict[tuple, dict[int, dict[bool, dict]]] = {}
        timers: dict[tuple, set[str]] = {}
        for p in points:
            case = identity(p, without=("in_place", "bytes"))
            cases.setdefault(case, {}).setdefault(p["bytes"], {})[bool(p["in_place"])] = p
            timers.setdefault(case, set()).add(p["timer"])
        for case, rows in cases.items():
            docs.append(_document(run, {**case._asdict(), "timers": sorted(timers[case])}, rows))
    return docs


def nan_free(value: Any) -> Any:
    """nccl-tests writes NaN as the string "nan"; JSON has no NaN."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {k: nan_free(v) for k, v in value.items()}
    if isinstance(value, list):
        return [nan_free(v) for v in value]
    return value
