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
from fabricprobe.mpienv.datatypes import mpi_op

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


def _bytes_for(collective: str, buf: np.ndarray, comm: Any) -> int:
    """S as the table measured it: the whole vector, or the whole gathered/scattered buffer."""
    return int(buf.nbytes * (comm.size if collective == "allgather" else 1))


def allreduce(sendbuf: Any, recvbuf: Any = None, op: str = "sum", comm: Any = None) -> Any:
    """recvbuf = the reduction of every rank's sendbuf (sendbuf None: in place on recvbuf)."""
    comm = _comm(comm)
    target = recvbuf if recvbuf is not None else np.empty_like(sendbuf)
    source = sendbuf if sendbuf is not None else target
    name = algorithm_for("allreduce", comm.size, _bytes_for("allreduce", source, comm))
    if name == collectives.LIBRARY:
        from mpi4py import MPI

        comm.Allreduce(MPI.IN_PLACE if sendbuf is None else sendbuf, target, op=mpi_op(MPI, op))
    else:
        collectives.get("allreduce", name).run(comm, sendbuf, target, op, 0)
    return target


def bcast(buf: Any, root: int = 0, comm: Any = None) -> Any:
    comm = _comm(comm)
    name = algorithm_for("bcast", comm.size, _bytes_for("bcast", buf, comm))
    if name == collectives.LIBRARY:
        comm.Bcast(buf, root=root)
    else:
        collectives.get("bcast", name).run(comm, None, buf, "sum", root)
    return buf


def allgather(sendbuf: Any, recvbuf: Any, comm: Any = None) -> Any:
    comm = _comm(comm)
    name = algorithm_for("allgather", comm.size, _bytes_for("allgather", sendbuf, comm))
    if name == collectives.LIBRARY:
        comm.Allgather(sendbuf, recvbuf)
    else:
        collectives.get("allgather", name).run(comm, sendbuf, recvbuf, "sum", 0)
    return recvbuf


def loaded_from() -> str | None:
    return _loaded_from
