"""MPICH's compiled-in selection trees (read out of the libmpi mpi4py loads), and which MPIR algorithm
its own tree picks for a call: a rule naming that algorithm changes nothing, so `tune` writes none
(docs/tuning.md, Decisive files).

The walk is MPICH's (src/mpi/coll/src/csel.c): at each level the keys are tried in order, the first
whose condition holds is followed. A condition this cannot tell from a tune-sweep's point (whether the
communicator has a node hierarchy, its ranks per node, a key it does not know; "comm_size<N" at
exactly N, which MPICH's csel.c evaluates as <=) is followed both ways, and the answer is kept only
where both ways agree."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from fabricprobe.errors import UsageError

UNKNOWN = object()  # a condition this cannot decide
# What MPICH's csel.c compares for each tuned collective, from fabricprobe's message size S (the whole
# buffer, specs' nbytes) on p ranks: (avg_msg_size, total_msg_size, count in elements) as functions of
# (S, p, element size); None where csel.c defines none for the collective.
_SIZES = {
    "allreduce": (lambda s, p, e: s, lambda s, p, e: s * p, lambda s, p, e: s // e),
    "bcast": (lambda s, p, e: s, lambda s, p, e: s * p, lambda s, p, e: s // e),
    "reduce": (lambda s, p, e: s, lambda s, p, e: s * p, lambda s, p, e: s // e),
    "alltoall": (lambda s, p, e: s // p, lambda s, p, e: s, None),
    "allgather": (None, lambda s, p, e: s, lambda s, p, e: s // (p * e)),
    "reduce_scatter": (None, lambda s, p, e: s, lambda s, p, e: s // (p * e)),  # MPI_Reduce_scatter_block
}


def loaded_libmpi() -> Path:
    """The libmpi mpi4py loads here (found by loading it, without initialising MPI)."""
    code = (
        "import mpi4py; mpi4py.rc.initialize = False\nfrom mpi4py import MPI\n"
        "from fabricprobe.mpienv.library import loaded_libmpi_paths\nprint(loaded_libmpi_paths()[0])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or not out.stdout.strip():
        raise UsageError("could not find the libmpi that mpi4py loads")
    return Path(out.stdout.strip())


def default_trees(libmpi: Path) -> dict[str, dict]:
    """MPICH's compiled-in selection trees: {"mpir": ..., "posix": ..., "ch4": ...}."""
    data = libmpi.read_bytes()
    trees = {}
    for match in re.finditer(rb'\{\s*"collective=', data):
        depth, i = 0, match.start()
        while i < len(data):
            c = data[i]
            if c == 0x7B:
                depth += 1
            elif c == 0x7D:
                depth -= 1
                if depth == 0:
                    break
            elif c == 0:
                break
            i += 1
        try:
            tree = json.loads(data[match.start() : i + 1])
        except ValueError:
            continue
        text = json.dumps(tree)
        if "algorithm=MPIR_" in text and "MPIDI_POSIX" not in text and "composition=" not in text:
            trees.setdefault("mpir", tree)
        elif "MPIDI_POSIX_mpi_" in text:
            trees.setdefault("posix", tree)
        elif "composition=MPIDI_" in text:
            trees.setdefault("ch4", tree)
    if "mpir" not in trees:
        raise UsageError(f"{libmpi} holds no MPICH selection tree (is this MPICH 4 or later?)")
    trees["_symbols"] = data  # type: ignore[assignment]  # for checking algorithm names exist
    return trees


def mpir_choice(tree: dict, collective: str, json_name: str, nranks: int, nbytes: int, itemsize: int) -> str | None:
    """The MPIR algorithm ("recursive_doubling") MPICH's own MPIR `tree` picks for an intra-communicator
    call of a built-in commutative op, out of place; None where the tree's answer depends on what a
    point does not say, or the collective is not in it."""
    node = tree.get(f"collective={json_name}")
    if node is None or collective not in _SIZES:
        return None
    avg, total, count = (f(nbytes, nranks, itemsize) if f else None for f in _SIZES[collective])
    facts = {"nranks": nranks, "avg": avg, "total": total, "count": count}
    found = _walk(node, facts)
    prefix = f"MPIR_{json_name.capitalize()}_intra_"
    return found[len(prefix) :] if found and found.startswith(prefix) else None


def _walk(node: dict, facts: dict) -> str | None:
    """The leaf's algorithm name, following MPICH's first-match order; None where undecided."""
    for key, child in node.items():
        if key.startswith("algorithm="):
            return key.split("=", 1)[1]
        holds = _condition(key, facts)
        if holds is True:
            return _walk(child, facts)
        if holds is UNKNOWN:  # both ways: the child, or the keys after this one
            rest = dict(list(node.items())[list(node).index(key) + 1 :])
            one, other = _walk(child, facts), _walk(rest, facts)
            return one if one == other else None
    return None


def _condition(key: str, facts: dict):
    """True, False, or UNKNOWN for one of MPICH's selection keys."""
    n = facts["nranks"]
    if key.endswith("=any"):
        return True
    exact = {
        "comm_type=intra": True,
        "comm_type=inter": False,
        "is_commutative=yes": True,
        "is_commutative=no": False,
        "is_op_built_in=yes": True,
        "is_op_built_in=no": False,
        "is_sendbuf_inplace=yes": False,
        "is_sendbuf_inplace=no": True,
        "is_multi_threaded=no": True,  # fabricprobe's ranks run MPI_THREAD_SINGLE
        "is_multi_threaded=yes": False,
        "comm_size=pow2": n & (n - 1) == 0,
    }
    if key in exact:
        return exact[key]
    if key == "count<pow2":
        return UNKNOWN if facts["count"] is None else facts["count"] < 1 << (n.bit_length() - 1)
    m = re.fullmatch(r"(comm_size|avg_msg_size|total_msg_size|count)(<=|<)(\d+)", key)
    if not m:
        return UNKNOWN  # comm_hierarchy, comm_size=node_comm_size, comm_avg_ppn, ...
    what, op, bound = m.group(1), m.group(2), int(m.group(3))
    value = n if what == "comm_size" else facts[{"avg_msg_size": "avg", "total_msg_size": "total"}.get(what, what)]
    if value is None:
        return UNKNOWN
    if what == "comm_size" and op == "<" and value == bound:
        return UNKNOWN  # csel.c evaluates comm_size<N as <= N
    return value <= bound if op == "<=" else value < bound
