"""What a reader of a run must be told before trusting its numbers."""

from __future__ import annotations

import json

from fabricprobe.mpienv.spinning import spin_warning
from fabricprobe.report.buffers import buffer_note, buffer_warning
from fabricprobe.store import Run
from fabricprobe.store.schema import EMPTY


def run_warnings(run: Run) -> list[str]:
    attrs = run.attrs
    out = []
    if attrs.get("oversubscribed") and attrs.get("lab"):
        spec = attrs.get("lab_spec") or {}
        cores = (json.loads(spec) if isinstance(spec, str) else spec).get("machine_cores", "?")
        out.append(
            f"oversubscribed: the lab's {attrs.get('nranks')} ranks share one machine's {cores} cores. "
            "Times include scheduler waits: compare them with each other, not with real nodes."
        )
    elif attrs.get("oversubscribed"):
        ranks = attrs.get("ranks_per_node") or []
        cores = attrs.get("cores_per_node") or []
        out.append(
            f"oversubscribed: {max(ranks, default=0)} ranks on a node with {min(cores, default=0)} cores. "
            "Ranks share cores, so times include scheduler waits: compare them with each other, "
            "not with other machines."
        )
    spinning = spin_warning(attrs)
    if spinning:
        out.append(spinning + ".")
    missed = buffer_warning(attrs)
    if missed:
        out.append(missed + ".")
    requested, provided = attrs.get("thread_level_requested"), attrs.get("thread_level_provided")
    if requested and provided and requested != provided:
        out.append(f"thread level {requested} was requested but the library provided {provided}.")
    if provided == "multiple" and attrs.get("mpi_vendor") == "MPICH":
        out.append(
            "MPICH at MPI_THREAD_MULTIPLE takes slower small-message paths (~5x at 8 B); "
            "numbers are not comparable with single-threaded runs."
        )
    if run.status not in ("complete", ""):
        reason = attrs.get("status_reason", "")
        out.append(
            f"run is {run.status}{': ' + reason if reason else ''}; "
            f"resume it with `fabricprobe sweep --resume {run.path}`."
            if run.status != "aborted"
            else f"run was aborted{': ' + reason if reason else ''}."
        )
    points = [p for p in run.points if p["collective"] != EMPTY]
    wrong = [p for p in points if p["status"] == "wrong"]
    errors = [p for p in points if p["status"] == "error"]
    capped = [p for p in points if p["status"] == "ok" and p["stop_reason"] in ("time_cap", "iteration_cap")]
    if wrong:
        out.append(f"{len(wrong)} point(s) FAILED validation (see #wrong).")
    if errors:
        out.append(f"{len(errors)} point(s) raised errors: {errors[0]['note']}")
    if capped:
        target = (run.config or {}).get("ci_target", 0)
        out.append(
            f"{len(capped)} of {len(points)} points hit the time cap before their median's 95% CI "
            f"narrowed to ±{target * 100:.0f}% (column ±CI); treat those medians as rougher."
        )
    return out


def run_notes(run: Run) -> list[str]:
    """What the plan left out, and why; and what the buffers' setting means for the rows (report/buffers.py)."""
    setting = buffer_note(run)
    return list(run.attrs.get("notes") or []) + ([setting] if setting else [])
