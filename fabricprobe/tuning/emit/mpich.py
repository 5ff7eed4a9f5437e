"""MPICH outputs: JSON selection trees and the control variables that load them.

MPICH replaces its whole tree with the file it is given (a partial file aborts at MPI_Init), so the
trees written here are MPICH's own compiled-in defaults — read out of the very libmpi mpi4py loads —
with the measured parts spliced in:

- the MPIR tree (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE): for each tuned collective, its
  "comm_type=intra" subtree becomes a chain of communicator-size sections ("comm_size<=N", which
  MPICH evaluates as <=, and a "comm_size=any" catch-all; rules only on the sizes they were measured
  on, MPICH's original subtree on every other) of message-size rules ("avg_msg_size<=N" for
  allreduce, bcast and reduce; "total_msg_size<=N" for allgather, reduce_scatter_block and alltoall,
  the sizes MPICH defines for them); every chain ends in an "=any" catch-all, and ranges where the
  default won keep MPICH's original subtree.
- the POSIX tree (MPIR_CVAR_CH4_POSIX_COLL_SELECTION_TUNING_JSON_FILE), for bcast, allreduce and
  reduce: on one node MPICH's shared-memory path takes these over after a few calls, bypassing the
  MPIR tree; the spliced POSIX tree keeps that path where the default won and hands the other ranges
  to the MPIR tree. MPICH 5.0.2's POSIX parser knows no "use MPIR" leaf; a search that finds no leaf
  does use MPIR (that is how MPICH's own tree sends multi-threaded runs there), so those ranges lead
  to a dead end: "is_multi_threaded=yes" inside the "is_multi_threaded=no" branch, never true.
- the CH4 tree (MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE), where a composition won on a
  communicator with a hierarchy (several nodes, more than one rank on some node:
  tuning.plan.mpich_composition): the collective's "comm_type=intra" subtree becomes
  "comm_hierarchy=parent" (MPICH's key for a communicator with node and node-leader
  sub-communicators, the one its own CH4 tree uses) over communicator-size sections of message-size
  rules naming `composition=MPIDI_<Coll>_intra_composition_<letter>`, and "comm_hierarchy=any" with
  MPICH's original subtree. A composition reached through the tree runs without the checks CH4 makes
  when the variable forces it (alpha's commutative op for allreduce and reduce), so those leaves
  are guarded like the MPIR ones.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from fabricprobe.errors import UsageError
from fabricprobe.tuning import COLLECTIVES
from fabricprobe.tuning.choose.rules import Range, Table
from fabricprobe.tuning.emit.site_syntax import shell_export
from fabricprobe.tuning.plan.library import DEFAULT, names
from fabricprobe.tuning.plan.mpich_composition import is_composition, letter

MPIR_DEFAULT = "mpir"  # candidate: MPICH's own MPIR tree, without the POSIX shared-memory path

# What an algorithm needs of a call (MPICH's src/mpi/coll/coll_algorithms.txt "restrictions"). A forced
# CVAR falls back when they fail; a JSON leaf does not: reduce_scatter_allgather reached with a
# user-defined op aborts with "Internal error" (found by tune --verify). So every leaf is guarded, and
# calls that fail the guard take MPICH's original subtree. k_reduce_scatter_allgather needs a
# commutative op only: with a user-defined one it runs and sums correctly (tests/test_tuning_mpi.py),
# so user ops in its ranges run the algorithm that was measured, and the trace can verify it. The
# smp algorithms need a parent communicator (one with node and node-roots communicators): they call
# the collective again on those, where an unguarded smp leaf is reached on a communicator without a
# hierarchy and MPICH 4.0 aborts ("Assertion failed in file src/mpi/coll/bcast/...": found in the
# Slurm lab, bcast smp on 2 ranks of one node, and the 4-rank default whose node communicators hit it).
RESTRICTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("bcast", "smp"): ("parent-comm",),
    ("allreduce", "reduce_scatter_allgather"): ("size-ge-pof2", "builtin-op"),
    ("allreduce", "k_reduce_scatter_allgather"): ("commutative",),
    ("allreduce", "ring"): ("commutative",),
    ("allreduce", "smp"): ("commutative", "parent-comm"),
    ("reduce", "reduce_scatter_gather"): ("size-ge-pof2", "builtin-op"),
    ("reduce", "smp"): ("commutative", "parent-comm"),
    ("reduce_scatter", "pairwise"): ("commutative",),
    ("reduce_scatter", "recursive_halving"): ("commutative",),
    ("reduce_scatter", "noncommutative"): ("power-of-two",),
    ("bcast", "scatter_recursive_doubling_allgather"): ("power-of-two",),
    ("allgather", "recursive_doubling"): ("power-of-two",),
    ("alltoall", "brucks"): ("noinplace",),
    ("alltoall", "pairwise"): ("noinplace",),
    ("alltoall", "scattered"): ("noinplace",),
    ("alltoall", "pairwise_sendrecv_replace"): ("inplace",),
    # CH4 compositions (ch4_coll.h's checks when forced; the default CH4 tree takes another composition
    # for a non-commutative op). Every composition leaf is already under "comm_hierarchy=parent".
    ("allreduce", "composition_alpha"): ("commutative",),
    ("allreduce", "composition_delta"): ("commutative",),
    ("reduce", "composition_alpha"): ("commutative",),
    ("reduce", "composition_beta"): ("commutative",),
}
# restriction -> (condition under which the algorithm may run, the key for everything else). A yes/no
# condition's other side is its complement, not "=any": MPICH 4.0's selection parser knows
# comm_size=any, count=any, avg_msg_size=any but no is_*=any ("unknown key is_op_built_in=any",
# an assertion in csel.c at MPI_Init; the keys it accepts are strings in libmpich.so.12), and 5.0
# reads the complements just as well.
_GUARDS = {
    "builtin-op": ("is_op_built_in=yes", "is_op_built_in=no"),
    "commutative": ("is_commutative=yes", "is_commutative=no"),
    "power-of-two": ("comm_size=pow2", "comm_size=any"),
    "inplace": ("is_sendbuf_inplace=yes", "is_sendbuf_inplace=no"),
    "noinplace": ("is_sendbuf_inplace=no", "is_sendbuf_inplace=yes"),
    "parent-comm": ("comm_hierarchy=parent", "comm_hierarchy=any"),  # MPICH's own trees use this pair
}


# Parameters a leaf must carry: a JSON leaf without them gets zeros (k = 0: "Internal error" abort on
# the first call, found by tune --verify's smoke run), while the forced CVAR that was measured used
# these CVARs' values. JSON key -> CVAR whose value (read from mpivars) the leaf gets.
PARAMS: dict[tuple[str, str], dict[str, str]] = {
    ("allreduce", "k_reduce_scatter_allgather"): {
        "k": "ALLREDUCE_RECEXCH_KVAL",
        "single_phase_recv": "ALLREDUCE_RECEXCH_SINGLE_PHASE_RECV",
    },
    ("allreduce", "recexch"): {
        "k": "ALLREDUCE_RECEXCH_KVAL",
        "single_phase_recv": "ALLREDUCE_RECEXCH_SINGLE_PHASE_RECV",
    },
    ("allreduce", "recursive_multiplying"): {"k": "ALLREDUCE_RECURSIVE_MULTIPLYING_KVAL"},
    ("allreduce", "tree"): {
        "tree_type": "ALLREDUCE_TREE_TYPE",
        "k": "ALLREDUCE_TREE_KVAL",
        "chunk_size": "ALLREDUCE_TREE_PIPELINE_CHUNK_SIZE",
        "buffer_per_child": "ALLREDUCE_TREE_BUFFER_PER_CHILD",
    },
    ("bcast", "tree"): {
        "tree_type": "BCAST_TREE_TYPE",
        "k": "BCAST_TREE_KVAL",
        "is_non_blocking": "BCAST_IS_NON_BLOCKING",
    },
    ("bcast", "pipelined_tree"): {
        "tree_type": "BCAST_TREE_TYPE",
        "k": "BCAST_TREE_KVAL",
        "is_non_blocking": "BCAST_IS_NON_BLOCKING",
        "chunk_size": "BCAST_TREE_PIPELINE_CHUNK_SIZE",
        "recv_pre_posted": "BCAST_RECV_PRE_POST",
    },
    ("allgather", "k_brucks"): {"k": "ALLGATHER_BRUCKS_KVAL"},
    ("allgather", "recexch_doubling"): {
        "k": "ALLGATHER_RECEXCH_KVAL",
        "single_phase_recv": "ALLGATHER_RECEXCH_SINGLE_PHASE_RECV",
    },
    ("allgather", "recexch_halving"): {
        "k": "ALLGATHER_RECEXCH_KVAL",
        "single_phase_recv": "ALLGATHER_RECEXCH_SINGLE_PHASE_RECV",
    },
    ("alltoall", "k_brucks"): {"k": "ALLTOALL_BRUCKS_KVAL"},
}
PARAM_FALLBACK = {
    "k": "2",
    "single_phase_recv": "0",
    "tree_type": "knomial_1",
    "chunk_size": "0",
    "buffer_per_child": "0",
    "is_non_blocking": "1",
    "recv_pre_posted": "0",
}


def leaf_params(collective: str, algorithm: str, cvars: dict[str, str]) -> dict[str, dict]:
    """The leaf's parameter object, e.g. {"k=2": {}, "single_phase_recv=0": {}}."""
    out = {}
    for key, cvar in PARAMS.get((collective, algorithm), {}).items():
        value = os.environ.get(f"MPIR_CVAR_{cvar}") or cvars.get(f"MPIR_CVAR_{cvar}") or PARAM_FALLBACK[key]
        out[f"{key}={value}"] = {}
    return out


def needs_builtin_op(collective: str, algorithm: str) -> bool:
    return "builtin-op" in RESTRICTIONS.get((collective, algorithm), ())


def guarded(collective: str, algorithm: str, leaf: dict, fallback: dict) -> dict:
    """`leaf` where the algorithm's restrictions hold, a copy of `fallback` everywhere else."""
    node = leaf
    for restriction in reversed(RESTRICTIONS.get((collective, algorithm), ())):
        if restriction == "size-ge-pof2":  # MPICH's "count<pow2": fewer elements than ranks' power of two
            node = {"count<pow2": copy.deepcopy(fallback), "count=any": node}
        else:
            ok, rest = _GUARDS[restriction]
            node = {ok: node, rest: copy.deepcopy(fallback)}
    return node


def _chain(collective: str, ranges: list[Range], leaf) -> dict[str, Any]:
    """Message-size rules in order, ending in the "=any" catch-all MPICH requires."""
    key = names(collective).mpich_size_key
    chain: dict[str, Any] = {}
    for i, r in enumerate(ranges):
        cond = f"{key}=any" if r.hi is None or i == len(ranges) - 1 else f"{key}<={r.hi - 1}"
        chain[cond] = leaf(r)
    return chain


def _sections(sections: dict[int, list[Range]], make_chain, default: dict) -> dict[str, Any]:
    """Communicator-size sections: the rules measured on c ranks serve exactly c ranks; every size
    nothing was measured on (below, between, above) keeps a copy of `default`, MPICH's own subtree."""
    out: dict[str, Any] = {}
    below = 0  # the sizes up to here are covered
    for c in sorted(sections):
        if c - 1 > below:
            out[f"comm_size<={c - 1}"] = copy.deepcopy(default)
        out[f"comm_size<={c}"] = make_chain(sections[c])
        below = c
    out["comm_size=any"] = copy.deepcopy(default)
    return out


def mpir_tree(table: Table, trees: dict) -> dict:
    tree = copy.deepcopy(trees["mpir"])
    symbols = trees.get("_symbols", b"")
    for coll, sections in table.rules.items():
        if all(_not_mpir(r.winner) for rs in sections.values() for r in rs):
            continue
        node = tree[f"collective={names(coll).mpich_json}"]
        original = node["comm_type=intra"]

        def leaf(r: Range, coll=coll, original=original):
            if _not_mpir(r.winner):
                return copy.deepcopy(original)
            name = f"MPIR_{names(coll).mpich_function}_intra_{r.winner}"
            _exists(symbols, name)
            leaf = {f"algorithm={name}": leaf_params(coll, r.winner, trees.get("_cvars", {}))}
            return guarded(coll, r.winner, leaf, original)

        node["comm_type=intra"] = _sections(sections, lambda rs, leaf=leaf, coll=coll: _chain(coll, rs, leaf), original)
    return tree


def _exists(symbols: bytes, name: str) -> None:
    """A leaf names a function this libmpi has (`symbols`: its bytes; empty: not checked)."""
    if symbols and name.encode() not in symbols:
        raise UsageError(f"MPICH here has no {name}; the tuning file would abort MPI_Init")


def _not_mpir(winner: str) -> bool:
    """Whether a range keeps MPICH's own MPIR subtree: the default's, or a composition's (the CH4 tree's)."""
    return winner in (DEFAULT, MPIR_DEFAULT) or is_composition(winner)


def _keeps_posix(winner: str) -> bool:
    """Whether a range keeps the POSIX path: the default's, or a composition's (whose node-local step it is)."""
    return winner == DEFAULT or is_composition(winner)


def ch4_tree(table: Table, trees: dict) -> dict | None:
    """The CH4 tree with the compositions that won, on hierarchical communicators of the sizes they
    were measured on; None where no composition won."""
    mine = {
        coll: {n: rs for n, rs in sections.items() if any(is_composition(r.winner) for r in rs)}
        for coll, sections in table.rules.items()
    }
    mine = {coll: sections for coll, sections in mine.items() if sections}
    if not mine:
        return None
    if "ch4" not in trees:
        raise UsageError("this MPICH holds no CH4 selection tree: its compositions cannot be written")
    tree = copy.deepcopy(trees["ch4"])
    symbols = trees.get("_symbols", b"")
    for coll, sections in mine.items():
        node = tree[f"collective={names(coll).mpich_json}"]
        original = node["comm_type=intra"]

        def leaf(r: Range, coll=coll, original=original):
            if not is_composition(r.winner):
                return copy.deepcopy(original)
            name = f"MPIDI_{names(coll).mpich_function}_intra_composition_{letter(r.winner)}"
            _exists(symbols, name)
            return guarded(coll, r.winner, {f"composition={name}": {}}, original)

        node["comm_type=intra"] = {
            "comm_hierarchy=parent": _sections(
                sections, lambda rs, leaf=leaf, coll=coll: _chain(coll, rs, leaf), original
            ),
            "comm_hierarchy=any": copy.deepcopy(original),
        }
    return tree


def posix_tree(table: Table, trees: dict) -> dict | None:
    """The POSIX tree with ranges won by an MPIR algorithm handed to the MPIR tree; None if not needed."""
    if "posix" not in trees:
        return None
    tree = copy.deepcopy(trees["posix"])
    changed = False
    for coll in (c for c in COLLECTIVES if names(c).mpich_posix):
        sections = table.rules.get(coll)
        if not sections or all(_keeps_posix(r.winner) for rs in sections.values() for r in rs):
            continue
        node = tree.get(f"collective={names(coll).mpich_json}")
        if node is None:
            continue
        parent, cond, default_leaf = _leaf(node)
        mpir_leaf = {"is_multi_threaded=yes": copy.deepcopy(default_leaf)}  # never matches: MPICH uses MPIR

        def leaf(r: Range, default_leaf=default_leaf, mpir_leaf=mpir_leaf):
            return copy.deepcopy(default_leaf if _keeps_posix(r.winner) else mpir_leaf)

        parent[cond] = _sections(sections, lambda rs, leaf=leaf, coll=coll: _chain(coll, rs, leaf), default_leaf)
        changed = True
    return tree if changed else None


def _leaf(node: dict) -> tuple[dict, str, dict]:
    """Follow a chain of single conditions to its algorithm leaf: (parent, condition, leaf)."""
    parent, cond = node, ""
    while True:
        key = next(iter(node))
        if key.startswith("algorithm="):
            return parent, cond, {key: node[key]}
        parent, cond, node = node, key, node[key]


FILENAMES = {"mpir": "mpich_mpir_tuned.json", "posix": "mpich_posix_tuned.json", "ch4": "mpich_ch4_tuned.json"}


def files(table: Table, trees: dict) -> dict[str, tuple[str, str]]:
    """The trees' files: level ("mpir", "posix", "ch4") -> (file name, JSON text); the POSIX and CH4
    trees only where a rule changes them."""
    texts = {"mpir": mpir_tree(table, trees), "posix": posix_tree(table, trees), "ch4": ch4_tree(table, trees)}
    return {k: (FILENAMES[k], json.dumps(tree, indent=1) + "\n") for k, tree in texts.items() if tree is not None}


def load_env(files: dict[str, Path]) -> dict[str, str]:
    env = {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(files["mpir"].resolve())}
    if "posix" in files:
        env["MPIR_CVAR_CH4_POSIX_COLL_SELECTION_TUNING_JSON_FILE"] = str(files["posix"].resolve())
    if "ch4" in files:
        env["MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE"] = str(files["ch4"].resolve())
    return env


def load_lines(files: dict[str, Path], case: list[str] | None = None) -> str:
    """The lines that load the trees; `case`: comment lines saying what job they were measured in (JSON
    has no comments: Table.case_lines)."""
    lines = ["# MPICH: use fabricprobe's tuned selection trees (MPICH aborts at MPI_Init if a file is malformed)"]
    lines += case or []
    lines += [shell_export(k, v) for k, v in load_env(files).items()]
    return "\n".join(lines) + "\n"
