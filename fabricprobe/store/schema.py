"""The results file's layout (schema version 1). docs/schema.md explains every field.

/                         attrs: format = "fabricprobe", schema_version
/runs/<id>                one run; attrs: provenance, config (JSON), status, times
/runs/<id>/points         compound table, one row per measured point
/runs/<id>/samples/<n>    float64 (iterations × ranks) raw times of point n, NaN where a
                          rank does not time the point
"""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any, Mapping

import numpy as np

from fabricprobe.text import as_text

FORMAT = "fabricprobe"
SCHEMA_VERSION = 1

STATUS_RUNNING = "running"
STATUS_COMPLETE = "complete"
STATUS_ABORTED = "aborted"
STATUS_INTERRUPTED = "interrupted"

# Point status values.
POINT_OK = "ok"
POINT_WRONG = "wrong"  # validation found wrong elements
POINT_ERROR = "error"  # the call raised an MPI error
POINT_NOT_RUNNABLE = "not_runnable"  # cannot run in this setting (reason in `note`)

EMPTY = "empty"  # the collective name of the harness floor: a timed region with nothing in it
PAIR_LABELS = {"intra": "intra-node", "inter": "inter-node", "all": "all pairs"}  # the pair field's values

# What identifies a point: two points with equal identities measured the same thing. Every report
# groups, matches and titles by these (fabricprobe.report), --resume keys by them (point_key).
IDENTITY = (
    "collective",
    "algorithm",
    "dtype",
    "op",
    "in_place",
    "mode",
    "pair",
    "density",
    "buffer",
    "transfer",
    "nranks",
    "bytes",
)


@cache
def _identity_type(fields: tuple[str, ...]) -> type:
    return namedtuple("Identity", fields)


def identity(point: Mapping[str, Any], without: tuple[str, ...] = ()) -> tuple:
    """The point's identifying fields (less `without`) as a named tuple, in IDENTITY order."""
    fields = tuple(f for f in IDENTITY if f not in without)
    return _identity_type(fields)(*(point[f] for f in fields))


def is_dense_baseline(point: Mapping[str, Any]) -> bool:
    """The point a sparse allreduce is compared with: the library's own MPI_Allreduce, measured and ok,
    timed between barriers, out of place (the cost model's and the sparse report's one baseline)."""
    return (
        point["collective"] == "allreduce"
        and point["algorithm"] == "library"
        and point["status"] == POINT_OK
        and point["mode"] == "barrier"
        and not point["in_place"]
    )


def point_key(
    collective: str,
    algorithm: str,
    dtype: str,
    op: str,
    in_place: bool,
    mode: str,
    nbytes: int,
    pair: str = "",
    density: float = 0.0,
    sub_nranks: int = 0,
    buffer: str = "host",
    transfer: str = "",
) -> str:
    """The point's identity as the `key` string --resume matches (sub_nranks: the sub-communicator's size,
    0 for the whole job). Its spelling is part of the schema: files written before keep resuming."""
    parts = [collective, algorithm, dtype, op, "inplace" if in_place else "outofplace", mode, str(nbytes)]
    return "|".join(
        parts
        + ([pair] if pair else [])
        + ([f"d{density:g}"] if density else [])
        + ([f"n{sub_nranks}"] if sub_nranks else [])
        + ([f"{buffer}-{transfer or 'local'}"] if buffer != "host" else [])
    )


POINT_FIELDS: list[tuple[str, str, str]] = [
    ("index", "i4", "position of the point in the run, also its samples dataset name"),
    ("key", "S200", "identity of the point, used by --resume"),
    (
        "collective",
        "S24",
        "allreduce, reduce, bcast, allgather, reduce_scatter, alltoall, barrier, latency, bw, bibw, empty",
    ),
    (
        "algorithm",
        "S64",
        '"library" for the MPI library\'s own, "library:NAME" for one of its algorithms forced (tune-sweep); '
        "otherwise the hand-written algorithm",
    ),
    (
        "forced_by",
        "S8",
        "how a library:NAME point's algorithm was forced: launch (the launch's environment), mpit (switched "
        "at run time through the MPI tool interface); empty otherwise and in files before it",
    ),
    (
        "served_by",
        "S200",
        "the library component that served a library point and, for a hierarchical one, each level's "
        '(mpienv.coll_path: "han (inter-node: libnbc, node-local: tuned)", "tuned", "CH4 (composition: auto)"); '
        "empty for fabricprobe's own algorithms, non-collectives and in files before it",
    ),
    ("dtype", "S12", "float32, float64, int32, int64; byte for point-to-point"),
    ("op", "S8", "sum, max, min, prod; none for collectives that do not reduce"),
    ("in_place", "?", "MPI_IN_PLACE was used"),
    ("root", "i4", "root rank of rooted collectives"),
    ("pair", "S8", "point-to-point pair: intra (same node), inter (across nodes), all (r and r+n/2); empty otherwise"),
    ("density", "f8", "sparse tests: fraction of the n elements each rank contributes (k = density·n); 0 otherwise"),
    ("buffer", "S8", "where the buffers live: host (numpy), cupy or numba (device memory); empty in files before it"),
    (
        "transfer",
        "S12",
        "device buffers: direct (GPUDirect), staged or pipelined (through pinned host memory); "
        "empty for host buffers and local tests",
    ),
    (
        "mode",
        "S12",
        "barrier (untimed barrier between calls), loop (back-to-back calls) or window; one-sided tests: their "
        "synchronization (flush, flush_local, lock, lock_all, fence, pscw)",
    ),
    ("timer", "S8", "native (C calls from a compiled loop) or python (mpi4py calls)"),
    ("nranks", "i4", "communicator size"),
    ("requested_bytes", "i8", "the size asked for on the command line"),
    ("bytes", "i8", "S: size the point is reported under (nccl-tests definition), after rounding to whole elements"),
    ("count", "i8", "count argument of the MPI call (per rank; per peer for alltoall)"),
    ("iterations", "i4", "timed iterations"),
    ("warmup", "i4", "untimed warm-up iterations"),
    ("batches", "i4", "timed batches (adaptive repetition)"),
    ("stop_reason", "S16", "converged, time_cap, iteration_cap or fixed"),
    (
        "window_s",
        "f8",
        "window mode: the width w of the windows (call i starts at t0 + i·w on every rank); 0 otherwise",
    ),
    (
        "windows_missed",
        "i8",
        "window mode: windows some rank reached after their start, left untimed on every rank (counted in "
        "iterations, not in the statistics; a batch that missed every window and was run again counts in "
        "neither); 0 otherwise",
    ),
    ("min_s", "f8", "fastest iteration (iteration time = max over ranks)"),
    ("median_s", "f8", "median iteration"),
    ("mean_s", "f8", "mean iteration"),
    ("p90_s", "f8", "90th percentile iteration"),
    ("p99_s", "f8", "99th percentile iteration"),
    ("max_s", "f8", "slowest iteration"),
    ("std_s", "f8", "standard deviation of iterations"),
    ("ci_low_s", "f8", "95% confidence interval of the median, low end"),
    ("ci_high_s", "f8", "95% confidence interval of the median, high end"),
    ("osu_avg_s", "f8", "OMB's Avg Latency: mean over ranks of per-rank means"),
    ("osu_min_s", "f8", "OMB -f Min: min over ranks of per-rank means"),
    ("osu_max_s", "f8", "OMB -f Max: max over ranks of per-rank means"),
    ("algbw_gbps", "f8", "bytes / median_s / 1e9"),
    ("busbw_gbps", "f8", "algbw_gbps * busbw_factor"),
    ("busbw_factor", "f8", "nccl-tests bus-bandwidth factor for this collective and nranks"),
    ("slowest_rank", "i4", "rank slowest in the most iterations"),
    ("bytes_sent", "i8", "sparse allreduce: bytes the busiest rank sent in one call; -1 when not counted"),
    ("result_nnz", "i8", "sparse allreduce: nonzeros of the result on rank 0 (n once it went dense); -1 otherwise"),
    ("wrong", "i8", "elements that failed validation (first call, steady state), summed over ranks; -1: none"),
    ("checked", "i8", "elements validated (first call and steady state), summed over ranks"),
    ("status", "S16", "ok, wrong, error, not_runnable"),
    ("note", "S200", "why a point is not ok, or a remark"),
    ("started_unix", "f8", "start of the point, seconds since the epoch (rank 0's clock)"),
    (
        "overall_s",
        "f8",
        "non-blocking collectives: OMB's Overall, the call started, computation of the point's median, "
        "then the wait (median over iterations of the slowest rank); 0 otherwise",
    ),
    ("compute_s", "f8", "non-blocking collectives: OMB's Compute, the computation alone (as overall_s); 0 otherwise"),
    (
        "overlap_pct",
        "f8",
        "non-blocking collectives: OMB's overlap, max(0, 100·(1 − (overall_s − compute_s) / median_s)); 0 otherwise",
    ),
    ("duration_s", "f8", "wall time of the point including warm-up and validation"),
]

POINT_DTYPE = np.dtype([(name, kind) for name, kind, _ in POINT_FIELDS])
STRING_FIELDS = tuple(name for name, kind, _ in POINT_FIELDS if kind.startswith("S"))

# Run attributes stored as JSON text (everything else is a plain HDF5 scalar attribute).
JSON_ATTRS = (
    "config",
    "hosts",
    "rank_nodes",
    "topology_ranks_per_node",
    "rank_cpus",
    "ranks_per_node",
    "cores_per_node",
    "environment",
    "notes",
    "resumed_at",
    "gpu",
    "rank_gpus",
    "runtime_switch",
    "tune_sweep",
    "watchdog",
    "bound_probe",
    "clock_sync",
    "startup",
    "buffer_memory",
)


def make_row(values: dict) -> np.ndarray:
    """One table row from a dict; missing fields are zero/empty. A string too long for its field is
    an error, never cut (a cut name would silently stand for another algorithm); only the free-text
    note is cut to fit."""
    row = np.zeros(1, dtype=POINT_DTYPE)
    for name in POINT_DTYPE.names:
        if name not in values:
            continue
        value = values[name]
        if name in STRING_FIELDS:
            width = POINT_DTYPE[name].itemsize
            value = str(value).encode("utf-8")
            if len(value) > width and name != "note":
                raise ValueError(f"{name} {value.decode()!r} is longer than the {width} bytes the schema holds")
        row[name] = value
    return row


# What a field a file predates stands for (otherwise empty/zero): every point before `buffer` was on host memory.
PREDATING = {"buffer": "host"}


def row_to_dict(row: np.void) -> dict:
    """A table row as a dict with every current field (fields a file predates read as PREDATING says,
    else empty/zero)."""
    present = set(row.dtype.names)
    out = {}
    for name in POINT_DTYPE.names:
        if name not in present and name in PREDATING:
            out[name] = PREDATING[name]
            continue
        value = row[name] if name in present else np.zeros(1, POINT_DTYPE)[0][name]
        if name in STRING_FIELDS:  # text from a file: its control characters escaped (console.as_text)
            out[name] = as_text(bytes(value).decode("utf-8", "replace"))
        elif isinstance(value, np.bool_):
            out[name] = bool(value)
        elif isinstance(value, np.integer):
            out[name] = int(value)
        else:
            out[name] = float(value)
    return out
