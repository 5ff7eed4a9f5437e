"""Collectives that call whatever a fabricprobe selection file chose for the communicator, its
topology and the message size at hand: the MPI library's own, or one of fabricprobe's hand-written
algorithms (dense or sparse).

    from fabricprobe import tuned
    tuned.load("tuning/fabricprobe_selection.json")      # or FABRICPROBE_SELECTION=path
    tuned.allreduce(grad, out, op="sum", comm=comm)
    tuned.last_choice()                                   # "hierarchical", "library", ...

A file is refused (UsageError, one line) when it was made for another MPI library or version, or for
another job shape: the world's size and nodes (virtual nodes included) must be the ones tuned — the
measurements say nothing about another shape. Where the file has no answer (a collective it did not
tune, a sub-communicator size or density it did not measure) the call goes to the library, and a
warning says so once per case. Without a file every call goes to the library.

Buffers are numpy arrays (or device arrays where the algorithm runs on them); op is sum, max, min
or prod. The measured size is the collective's S: the larger buffer, the dense size for sparse.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np

from fabricprobe import collectives
from fabricprobe.console import warn_line
from fabricprobe.errors import UsageError
from fabricprobe.mpienv import topology
from fabricprobe.specs import SPECS
from fabricprobe.tuning.choose.rules import winner_at
from fabricprobe.tuning.choose.selection import Section, Selection, describe_layout, library_line
from fabricprobe.tuning.emit.selection import parse
from fabricprobe.tuning.plan.own import SPARSE, reference

DENSITY_FACTOR = 2.0  # a sparse call uses the section of the nearest measured density within this factor

_selection: Selection | None = None
_loaded_from: str | None = None
_warned: set[tuple] = set()
_last: str = ""


def _comm(comm: Any) -> Any:
    if comm is not None:
        return comm
    from mpi4py import MPI

    return MPI.COMM_WORLD


def read(path: str) -> Selection:
    """The selection in a file, unchecked against this job (UsageError when unreadable)."""
    try:
        with open(path) as f:
            doc = json.load(f)
        sel = parse(doc)
    except OSError as exc:
        raise UsageError(f"cannot read selection file {path}: {exc.strerror}") from None
    except ValueError as exc:  # JSON errors and FormatError
        raise UsageError(f"{path}: {exc}") from None
    unknown = sorted(
        {
            f"{s.collective}/{r.winner}"
            for s in sel.sections
            for r in s.ranges
            if r.winner != s.reference and collectives.get(s.collective, r.winner) is None
        }
    )
    if unknown:
        raise UsageError(f"{path} names algorithms this fabricprobe does not have: {', '.join(unknown)}")
    return sel


def check(sel: Selection, path: str, library_version: str, size: int, ranks_per_node: list[int]) -> None:
    """Refuse a selection made for another library, version or job shape (one line naming both)."""
    mine = library_line(library_version)
    if sel.library_version != mine:
        raise UsageError(
            f"{path} was tuned with {sel.library_version!r}, but this job runs {mine!r}: "
            "run tune-sweep and tune with this library"
        )
    if sel.world_size != size or tuple(sel.world_ranks_per_node) != tuple(ranks_per_node):
        raise UsageError(
            f"{path} was tuned for {sel.world_size} ranks as {describe_layout(sel.world_ranks_per_node, sel.virtual)}, "
            f"but this job has {size} ranks as {describe_layout(ranks_per_node)}: "
            "tune this shape (tune-sweep -n, --ranks-per-node), or run with the shape tuned"
        )


def load(path: str | None = None, comm: Any = None) -> Selection | None:
    """Use the selection file at path (default: $FABRICPROBE_SELECTION; none = the library everywhere),
    checked against this job: comm (default COMM_WORLD) with its active topology (virtual if set).
    Collective over comm (finding its nodes is, the first time); every rank loads the same file."""
    global _selection, _loaded_from, _last
    path = path or os.environ.get("FABRICPROBE_SELECTION")
    _warned.clear()
    _last = ""
    if not path:
        _selection, _loaded_from = None, None
        return None
    sel = read(path)
    from mpi4py import MPI

    world = _comm(comm)
    check(sel, path, MPI.Get_library_version(), world.size, topology.active(world).ranks_per_node)
    _selection, _loaded_from = sel, path
    return sel


def _section(collective: str, size: int, ranks_per_node: tuple[int, ...], density: float) -> Section | None:
    if _selection is None:
        return None
    fitting = [
        s
        for s in _selection.sections
        if s.collective == collective and s.comm_size == size and s.ranks_per_node == ranks_per_node
    ]
    if collective != SPARSE:
        return fitting[0] if fitting else None
    near = [s for s in fitting if density > 0 and abs(math.log(s.density / density)) <= math.log(DENSITY_FACTOR)]
    return min(near, key=lambda s: abs(math.log(s.density / density)), default=None)


def algorithm_for(collective: str, comm: Any, nbytes: int, density: float = 0.0) -> str:
    """The algorithm the loaded selection names for this call: "library" (the sparse allreduce:
    TopkA) where it names none; a case the file did not measure is warned about once."""
    fallback = reference(collective)
    if _selection is None:
        return fallback
    comm = _comm(comm)
    layout = tuple(topology.active(comm).ranks_per_node)
    section = _section(collective, comm.size, layout, density)
    if section is None:
        key = (collective, comm.size, layout, round(density, 9))
        if key not in _warned:
            _warned.add(key)
            what = f"{collective}{f' at density {density:g}' if collective == SPARSE else ''}"
            warn_line(
                f"{_loaded_from} has no answer for {what} on {comm.size} ranks as {describe_layout(layout)}: "
                f"{fallback} is used"
            )
        return fallback
    return winner_at(section.ranges, nbytes)


def run(collective: str, send: Any, recv: Any, op: str = "sum", root: int = 0, comm: Any = None) -> str:
    """The selected implementation of a dense collective on these buffers; returns its name."""
    global _last
    comm = _comm(comm)
    case = SPECS[collective].case_over(comm, send, recv, op, root)
    name = algorithm_for(collective, comm, case.layout.nbytes)
    collectives.get(collective, name).call(case)()
    _last = name
    return name


def allreduce(sendbuf: Any, recvbuf: Any = None, op: str = "sum", comm: Any = None) -> Any:
    """recvbuf = the reduction of every rank's sendbuf (sendbuf None: in place on recvbuf)."""
    target = recvbuf if recvbuf is not None else np.empty_like(sendbuf)
    run("allreduce", sendbuf, target, op, 0, comm)
    return target


def reduce(sendbuf: Any, recvbuf: Any, op: str = "sum", root: int = 0, comm: Any = None) -> Any:
    run("reduce", sendbuf, recvbuf, op, root, comm)
    return recvbuf


def bcast(buf: Any, root: int = 0, comm: Any = None) -> Any:
    run("bcast", None, buf, "sum", root, comm)
    return buf


def allgather(sendbuf: Any, recvbuf: Any, comm: Any = None) -> Any:
    run("allgather", sendbuf, recvbuf, "sum", 0, comm)
    return recvbuf


def reduce_scatter(sendbuf: Any, recvbuf: Any, op: str = "sum", comm: Any = None) -> Any:
    run("reduce_scatter", sendbuf, recvbuf, op, 0, comm)
    return recvbuf


def alltoall(sendbuf: Any, recvbuf: Any, comm: Any = None) -> Any:
    run("alltoall", sendbuf, recvbuf, "sum", 0, comm)
    return recvbuf


def sparse_allreduce(sent: Any, result: Any, density: float, comm: Any = None) -> str:
    """result = the exact sum of every rank's sparse vector `sent` (a SparseVector of density
    `density`), by the sparse algorithm selected for its dense size; returns its name."""
    global _last
    comm = _comm(comm)
    name = algorithm_for(SPARSE, comm, int(sent.n) * np.dtype(sent.val.dtype).itemsize, density)
    collectives.get(SPARSE, name).run(comm, sent, result, "sum", 0)
    _last = name
    return name


def last_choice() -> str:
    """The algorithm the latest call on this process ran ("" before any)."""
    return _last


def loaded() -> Selection | None:
    return _selection


def loaded_from() -> str | None:
    return _loaded_from
