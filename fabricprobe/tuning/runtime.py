"""Collectives that call whatever a fabricprobe selection table chose for the communicator size and
message size at hand: the MPI library's own, or one of fabricprobe's hand-written algorithms.

    from fabricprobe import tuned
    tuned.load("tuning/fabricprobe_selection.json")      # or FABRICPROBE_SELECTION=path
    tuned.allreduce(grad, out, op="sum", comm=comm)

Without a table every call goes to the library. Buffers are numpy arrays (or device arrays where a
backend is registered); op is sum, max, min or prod.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from fabricprobe import collectives
from fabricprobe.errors import UsageError
from fabricprobe.specs import SPECS

_table: dict[str, list[dict[str, Any]]] = {}
_loaded_from: str | None = None


def load(path: str | None = None) -> None:
    """Use the selection table at path (default: $FABRICPROBE_SELECTION; none = the library everywhere)."""
    global _table, _loaded_from
    path = path or os.environ.get("FABRICPROBE_SELECTION")
    if not path:
        _table, _loaded_from = {}, None
        return
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read selection table {path}: {exc}") from None
    if doc.get("format") != "fabricprobe-selection":
        raise UsageError(f"{path} is not a fabricprobe selection table")
    _table, _loaded_from = doc["collectives"], path


def algorithm_for(collective: str, comm_size: int, nbytes: int) -> str:
    """The implementation the table names ("library" when it names none)."""
    sections = _table.get(collective)
    if not sections:
        return collectives.LIBRARY
    fitting = [s for s in sections if s["comm_size"] <= comm_size] or sections[:1]
    rules = max(fitting, key=lambda s: s["comm_size"])["rules"]
    for rule in rules:
        if rule["min_bytes"] <= nbytes and (rule["max_bytes"] is None or nbytes < rule["max_bytes"]):
            return rule["algorithm"] if collectives.get(collective, rule["algorithm"]) else collectives.LIBRARY
    return collectives.LIBRARY


def _comm(comm: Any) -> Any:
    if comm is not None:
        return comm
    from mpi4py import MPI

    return MPI.COMM_WORLD


def _run(collective: str, comm: Any, send: Any, recv: Any, op: str, root: int) -> None:
    """The selected implementation of `collective` on these buffers: the library's (its spec's mpi4py
    call) or a hand-written one. S is what the table measured: the larger buffer."""
    case = SPECS[collective].case_over(comm, send, recv, op, root)
    name = algorithm_for(collective, comm.size, case.layout.nbytes)
    collectives.get(collective, name).call(case)()


def allreduce(sendbuf: Any, recvbuf: Any = None, op: str = "sum", comm: Any = None) -> Any:
    """recvbuf = the reduction of every rank's sendbuf (sendbuf None: in place on recvbuf)."""
    target = recvbuf if recvbuf is not None else np.empty_like(sendbuf)
    _run("allreduce", _comm(comm), sendbuf, target, op, 0)
    return target


def bcast(buf: Any, root: int = 0, comm: Any = None) -> Any:
    _run("bcast", _comm(comm), None, buf, "sum", root)
    return buf


def allgather(sendbuf: Any, recvbuf: Any, comm: Any = None) -> Any:
    _run("allgather", _comm(comm), sendbuf, recvbuf, "sum", 0)
    return recvbuf


def loaded_from() -> str | None:
    return _loaded_from
