"""The header's "served by" lines: which component of the library served the run's library points, per
communicator (the points' served_by, engine.served). On one node it says tuned and nobody needs it; on
several nodes it says whether a coll/tuned tuning file could have been consulted at all."""

from __future__ import annotations

from typing import Any

from fabricprobe.mpienv.coll_path import CommShape
from fabricprobe.store import Run


def _shape(hosts: list[str], nranks: int) -> str:
    return CommShape.of_hosts(hosts[:nranks]).describe() if hosts else f"{nranks} ranks"


def served_lines(run: Run) -> list[str]:
    """One line per communicator size: "on 4 ranks of 2 nodes: allreduce, bcast: han (...); alltoall: tuned"."""
    by_size: dict[int, dict[str, list[str]]] = {}
    for p in run.points:
        path = p.get("served_by") or ""
        if not path:
            continue
        names = by_size.setdefault(int(p["nranks"]), {}).setdefault(path, [])
        if p["collective"] not in names:
            names.append(p["collective"])
    hosts: list[Any] = list(run.attrs.get("hosts") or [])
    lines = []
    for nranks in sorted(by_size):
        parts = [f"{', '.join(names)}: {path}" for path, names in by_size[nranks].items()]
        lines.append(f"served on {_shape(hosts, nranks)}: " + "; ".join(parts))
    return lines
